"""Compatibility shim: the helper is now the package python/resume_run (`pip install
resume-run`). Scripts that put scripts/ on sys.path (README's recipe before the package)
get the package through this file, so both ways import the same module."""
import importlib.util
import os
import sys

_PACKAGE = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                         "..", "python", "resume_run"))
# This file is being imported as `resume_run`: load the package under that name in its
# place, whatever the order of sys.path (the import statement hands out
# sys.modules["resume_run"]); its submodules are found through its __path__.
_spec = importlib.util.spec_from_file_location(
    __name__, os.path.join(_PACKAGE, "__init__.py"), submodule_search_locations=[_PACKAGE])
_package = importlib.util.module_from_spec(_spec)
sys.modules[__name__] = _package
_spec.loader.exec_module(_package)
