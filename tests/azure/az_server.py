"""The Azure CLI, kept loaded between the calls of one test (tests/integration/azurelib.sh's
azcli): each `az` process spends 2 s of CPU (5-13 s on a loaded 2-core machine) loading its
command table before it sends a request, and an Azure test makes up to a dozen calls. This
runs the same CLI, Debian's azure-cli, through its documented entry point
(azure.cli.core.get_default_cli().invoke, what `az` itself calls), one call at a time.

Requests come through the FIFO REQ: NUL-separated fields, the caller's working directory, the
path for its stdout, the path for its stderr, the number of environment entries, those
entries (NAME=VALUE: the caller's AZURE_* and REQUESTS_CA_BUNDLE, which replace the
server's), then az's arguments. The exit status goes back through the FIFO REP.

Usage: /usr/bin/python3 az_server.py REQ REP (Debian's python3: azure-cli lives in its
dist-packages, not in a venv)."""
import os
import sys
import threading
import time

os.environ["AZ_INSTALLER"] = "DEB"
from azure.cli.core import get_default_cli  # noqa: E402  (after AZ_INSTALLER, as /usr/bin/az)


class _Stderr:
    """sys.stderr for the whole process, written to the current call's file: the CLI's
    logging handlers and progress bars keep the stream they first saw, across calls."""

    def __init__(self, target):
        self.target = target

    def write(self, s):
        return self.target.write(s)

    def flush(self):
        self.target.flush()

    def isatty(self):
        return False


_STDERR = _Stderr(sys.stderr)
sys.stderr = _STDERR


def invoke(args, out, err):
    saved, _STDERR.target = _STDERR.target, err
    try:
        return get_default_cli().invoke(args, out_file=out)
    except SystemExit as e:  # argument errors and --help end this way
        return e.code if isinstance(e.code, int) else 1
    finally:
        _STDERR.target = saved


def _exit_with_parent():
    """Ends the server when the test's shell is gone (killed at ctest's timeout, its EXIT
    trap never run): the server would otherwise wait on its FIFO for ever."""
    parent = os.getppid()
    while os.getppid() == parent:
        time.sleep(1)
    os._exit(0)


def serve(req, rep):
    threading.Thread(target=_exit_with_parent, daemon=True).start()
    # Loaded before the first request (the test starts this beside Azurite): the storage
    # commands' table, the part that costs seconds.
    with open(os.devnull, "w") as null:
        invoke(["storage", "blob", "list", "--help"], null, null)
    base_env = {k: v for k, v in os.environ.items()}
    while True:
        with open(req, "rb") as f:
            data = f.read()
        if not data:
            continue
        fields = data.decode().split("\0")
        cwd, out_path, err_path, n = fields[0], fields[1], fields[2], int(fields[3])
        env, args = fields[4:4 + n], fields[4 + n:]
        if args and args[-1] == "":
            args.pop()
        os.environ.clear()
        os.environ.update(base_env)
        for k in list(os.environ):
            if k.startswith("AZURE_") or k == "REQUESTS_CA_BUNDLE":
                del os.environ[k]
        for e in env:
            k, _, v = e.partition("=")
            os.environ[k] = v
        os.chdir(cwd)
        with open(out_path, "w") as out, open(err_path, "w") as err:
            try:
                rc = invoke(args, out, err)
            except Exception as e:  # noqa: BLE001  (reported as az would, and the server goes on)
                print("az_server: %s: %s" % (type(e).__name__, e), file=err)
                rc = 1
        with open(rep, "w") as f:
            f.write("%d\n" % (rc or 0))


if __name__ == "__main__":
    serve(sys.argv[1], sys.argv[2])
