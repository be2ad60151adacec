"""Compatibility shim: the helper is now the package python/resume_run (`pip install
resume-run`). Scripts that put scripts/ on sys.path (README's recipe before the package)
get the package through this file, so both ways import the same module."""
import os
import sys

_PACKAGE_ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                              "..", "python"))
if _PACKAGE_ROOT not in sys.path:
    sys.path.insert(0, _PACKAGE_ROOT)
# This file is being imported as `resume_run`: step aside so the import below finds the
# package, then stand for it (the import statement hands out sys.modules["resume_run"]).
del sys.modules[__name__]
import resume_run  # noqa: E402,F401  (the package)
