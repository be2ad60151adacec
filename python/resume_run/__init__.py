"""Trainer-side helper for resume-run (standard library only, Python 3.9+).

The package `resume-run` (`pip install resume-run`) carries this module, the `resume-run`
agent as a console command, and the framework integrations: `resume_run.hf`,
`resume_run.lightning`, `resume_run.accelerate`, `resume_run.dcp`; `resume_run.training`
adds the RNG states and the data position for plain PyTorch loops.

resume-run wraps a training command, asks it for a checkpoint when the machine is about to be
taken back, and restores the newest checkpoint before starting it on a new machine.  This module
is the trainer's half of that contract (docs/trainer-contract.md, "The trainer contract"):

* the environment the agent sets (`restore_dir`, `checkpoint_dir`, `attempt`, `notice`);
* `Checkpointer`: a signal handler that only sets a flag, atomic commits
  (`.<name>.tmp` -> `<name>`), the newest local checkpoint, pruning;
* safetensors reading and writing, for raw bytes (`save_safetensors_raw`) and for PyTorch
  tensors and nested state dicts (`save_state_dict`), with torch imported only when used.

Usage in a PyTorch training loop::

    import os, sys, resume_run as rr
    ck = rr.Checkpointer()                    # first thing: install the handler (flag only)
    step, d = 0, rr.restore_dir()             # d is set only when a checkpoint was restored
    if d:
        model.load_state_dict(rr.load_state_dict(os.path.join(d, "model.safetensors")))
        opt.load_state_dict(rr.load_state_dict(os.path.join(d, "optim.safetensors")))
        step = int(rr.read_safetensors_metadata(os.path.join(d, "model.safetensors"))["step"])
    while step < total_steps:
        step += 1
        train_one_step(model, opt)
        asked = ck.requested()                # the agent sent RESUME_RUN_SIGNAL
        if asked or step % 1000 == 0:
            with ck.commit(f"step-{step}") as tmp:    # .step-N.tmp, renamed to step-N at the end
                rr.save_state_dict(model.state_dict(), os.path.join(tmp, "model.safetensors"),
                                   {"step": str(step)})
                rr.save_state_dict(opt.state_dict(), os.path.join(tmp, "optim.safetensors"))
        if asked and ck.should_exit():        # the notice says this machine is going away
            sys.exit(0)

Files named `*.safetensors` get tensor-aware encoding in the store; by default (`--precision
auto`) F32 tensors come back rounded to FP16/BF16 precision.  Use `--precision exact` or
`--exact GLOB` on the agent for tensors that must come back bit-exact.
"""

import collections
import contextlib
import ctypes
import json
import os
import re
import shutil
import signal
import struct
import sys
import threading

__all__ = [
    "restore_dir", "checkpoint_dir", "attempt", "notice", "parse_signal", "step_of",
    "Checkpointer", "list_checkpoints", "latest_checkpoint", "agree",
    "SafetensorsError", "DTYPE_BITS", "MAX_HEADER_SIZE",
    "save_safetensors_raw", "load_safetensors_raw", "read_safetensors_metadata",
    "save_safetensors", "load_safetensors", "save_state_dict", "load_state_dict",
]

DEFAULT_CHECKPOINT_DIR = "./.resume-run/checkpoints"
EXIT_KINDS = ("preempt", "terminate")
_NOTICE_MAX_BYTES = 1 << 20
# The step number of a checkpoint name, as agent/catalog/ckpt_order.c reads it: the last of
# step-N, step=N, checkpoint-N, global_stepN at the start of the name or after a character
# that is not a letter or digit (epoch=3-step=1200.ckpt is 1200).
_NAME_STEP = re.compile(r"(?<![A-Za-z0-9])(?:step-|step=|checkpoint-|global_step)([0-9]{1,19})"
                        r"(?![0-9])")
# "step-N": 1 to 19 decimal digits, optionally followed by a suffix that does not start with
# a digit ("step-1200.final"), exactly as agent/catalog/ckpt_order.c parses it.
_STEP_NAME = re.compile(r"step-([0-9]{1,19})(?![0-9])")


# --------------------------------------------------------------------------------------------
# Environment given by the agent
# --------------------------------------------------------------------------------------------

def restore_dir():
    """Return RESUME_RUN_RESTORE_DIR (the restored checkpoint's directory), or None.

    The agent sets it only when it restored a checkpoint; the directory sits inside the
    checkpoint directory under the checkpoint's original name.
    """
    value = os.environ.get("RESUME_RUN_RESTORE_DIR")
    return value if value else None


def checkpoint_dir():
    """Return RESUME_RUN_CHECKPOINT_DIR (default ./.resume-run/checkpoints), creating it."""
    path = os.environ.get("RESUME_RUN_CHECKPOINT_DIR") or DEFAULT_CHECKPOINT_DIR
    os.makedirs(path, exist_ok=True)
    return path


def attempt():
    """Return RESUME_RUN_ATTEMPT as an int: 0 on the first launch on this machine, then 1, 2..."""
    try:
        return int(os.environ.get("RESUME_RUN_ATTEMPT", "0"))
    except ValueError:
        return 0


def notice():
    """Return the active notice as a dict, or None.

    Reads RESUME_RUN_NOTICE_FILE, which exists only while a notice is active, e.g.
    {"kind": "preempt", "source": "aws", "deadline_unix": 1700000000, "received_unix": ...}.
    A missing, unreadable, half-written or non-object file gives None.
    """
    path = os.environ.get("RESUME_RUN_NOTICE_FILE")
    if not path:
        return None
    try:
        with open(path, "rb") as f:
            data = f.read(_NOTICE_MAX_BYTES + 1)
        if len(data) > _NOTICE_MAX_BYTES:
            return None
        value = json.loads(data.decode("utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def step_of(path):
    """The step number in a checkpoint's name (step-1200, checkpoint-1200, global_step1200,
    epoch=3-step=1200.ckpt: 1200), or None when the name has none."""
    if not path:
        return None
    found = _NAME_STEP.findall(os.path.basename(os.path.normpath(str(path))))
    return int(found[-1]) if found else None


def _signal_number(number):
    """number when it is a signal: a named one, or a real-time one (SIGRTMIN..SIGRTMAX, which
    the agent passes by number and Python's signal.Signals does not list); ValueError
    otherwise."""
    if signal.SIGRTMIN <= number <= signal.SIGRTMAX:
        return number
    return signal.Signals(number).value


def parse_signal(name):
    """Return the signal number for "USR1", "SIGUSR1", "10", a real-time signal's number
    ("40") or an int; ValueError otherwise."""
    if isinstance(name, int):
        return _signal_number(name)
    text = str(name).strip()
    if text.isdigit():
        return _signal_number(int(text))
    upper = text.upper()
    if not upper.startswith("SIG"):
        upper = "SIG" + upper
    try:
        return signal.Signals[upper].value
    except KeyError:
        raise ValueError("unknown signal name: %r" % (name,)) from None


# --------------------------------------------------------------------------------------------
# Local checkpoints
# --------------------------------------------------------------------------------------------

def _order_key(entry):
    """Sort key of a (name, commit_ms) pair, as rr_checkpoint_compare in agent/catalog/ckpt_order.c:
    step-N names are newer than any other name and compare by N; then the later commit time
    (the directory's ctime, in ms); then the greater name."""
    name, ms = entry
    step = _STEP_NAME.match(name)
    return (1, int(step.group(1)), ms, name) if step else (0, 0, ms, name)


def list_checkpoints(directory):
    """Return the paths of the committed checkpoints in `directory`, oldest first.

    A committed checkpoint is a real directory (not a symlink) whose name does not start with
    '.'; temporary and set-aside directories are dot-directories and are ignored.
    """
    found = []
    try:
        entries = list(os.scandir(directory))
    except FileNotFoundError:
        return []
    for entry in entries:
        if entry.name.startswith("."):
            continue
        try:
            if not entry.is_dir(follow_symlinks=False):
                continue
            ctime_ms = entry.stat(follow_symlinks=False).st_ctime_ns // 1_000_000
        except FileNotFoundError:
            continue
        found.append((entry.name, ctime_ms))
    found.sort(key=_order_key)
    return [os.path.join(directory, name) for name, _ in found]


def latest_checkpoint(directory):
    """Return the path of the newest committed checkpoint in `directory`, or None."""
    paths = list_checkpoints(directory)
    return paths[-1] if paths else None


def _fsync_path(path, flags=os.O_RDONLY):
    fd = os.open(path, flags)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(path):
    _fsync_path(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))


def _fsync_tree(top):
    """fsync every regular file and every directory below (and including) `top`."""
    for entry in os.scandir(top):
        if entry.is_dir(follow_symlinks=False):
            _fsync_tree(entry.path)
        elif entry.is_file(follow_symlinks=False):
            _fsync_path(entry.path)
    _fsync_dir(top)


def _remove(path):
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    elif os.path.lexists(path):
        os.unlink(path)


def _check_name(name):
    if not isinstance(name, str) or not name:
        raise ValueError("checkpoint name must be a non-empty string")
    if name.startswith(".") or "/" in name or "\0" in name:
        raise ValueError("invalid checkpoint name %r: must not start with '.' or contain '/'"
                         % (name,))


class Checkpointer:
    """The trainer's side of "write a checkpoint now".

    Creating it installs a handler for RESUME_RUN_SIGNAL (default USR1).  The handler only
    counts the request; it does no work and calls no previous handler.  Install it early: the
    agent signals only processes that have a handler, and holds a notice until one exists.

    The training loop polls `requested()` between steps and writes a checkpoint with
    `commit(name)`.  A request that arrives while a commit is being written stays pending.
    """

    def __init__(self, directory=None, signum=None, install=True):
        """`directory` defaults to checkpoint_dir(); `signum` to RESUME_RUN_SIGNAL or USR1."""
        self.directory = directory if directory is not None else checkpoint_dir()
        os.makedirs(self.directory, exist_ok=True)
        if signum is None:
            signum = os.environ.get("RESUME_RUN_SIGNAL") or "USR1"
        self.signum = parse_signal(signum)
        self._requests = 0
        self._handled = 0
        self._previous = None
        self._installed = False
        if install:
            self.install()

    def _on_signal(self, signum, frame):
        # Only a flag: the step in progress finishes and the loop does the work.
        self._requests += 1

    def install(self):
        """Install the signal handler (must be called from the main thread)."""
        if not self._installed:
            self._previous = signal.signal(self.signum, self._on_signal)
            self._installed = True

    def close(self):
        """Put back the handler that was there before install()."""
        if self._installed:
            signal.signal(self.signum, self._previous if self._previous is not None
                          else signal.SIG_DFL)
            self._installed = False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def requested(self):
        """True when a checkpoint was asked for and not yet committed."""
        self._keep_handler()
        return self._requests != self._handled

    def _keep_handler(self):
        # A native library can replace the process's handler below Python, which then
        # still reports ours: LLVM does for SIGUSR1 and SIGUSR2 (its "info" and interrupt
        # handlers), loaded for instance by an OpenCL driver (pocl) on GPU images; the
        # agent's signals then vanish. Installing ours again (one sigaction) takes it back
        # before the next request; only the main thread may.
        if (self._installed and signal.getsignal(self.signum) == self._on_signal and
                threading.current_thread() is threading.main_thread()):
            signal.signal(self.signum, self._on_signal)

    def clear(self):
        """Forget pending requests."""
        self._handled = self._requests

    def should_exit(self):
        """True when the active notice says the machine is going away (preempt, terminate)."""
        n = notice()
        return n is not None and n.get("kind") in EXIT_KINDS

    def latest(self):
        """Path of the newest committed checkpoint in the checkpoint directory, or None."""
        return latest_checkpoint(self.directory)

    def prune(self, keep):
        """Delete all but the newest `keep` committed local checkpoints; return what was deleted."""
        if keep < 0:
            raise ValueError("keep must be >= 0")
        paths = list_checkpoints(self.directory)
        doomed = paths[:max(0, len(paths) - keep)]
        for path in doomed:
            shutil.rmtree(path, ignore_errors=True)
        return doomed

    @contextlib.contextmanager
    def commit(self, name):
        """Write a checkpoint atomically; yields the temporary directory to write into.

        The block writes files into `<dir>/.<name>.tmp` (any stale one is removed first).  On
        normal exit every file and directory is fsynced and the directory is renamed to
        `<dir>/<name>`: that rename is the commit the agent watches for.  An existing `<name>`
        is first moved aside to `.<name>.old` and removed afterwards, so `<name>` only ever
        holds a complete checkpoint.  Pending requests seen before the block are cleared.  If
        the block raises, the temporary directory is removed and the exception propagates.
        Commit each checkpoint under a new name (step-N): a step-numbered name is stored
        once; a name without a step number committed again replaces the store's copy.  A
        request that came after the loop last looked, before the block, is cleared by this
        commit, which answers it: check should_exit() after every commit, not only after a
        requested one.  One
        process per node commits a name: two commits of one name at once race on the
        temporary directory.
        """
        _check_name(name)
        os.makedirs(self.directory, exist_ok=True)
        tmp = os.path.join(self.directory, "." + name + ".tmp")
        final = os.path.join(self.directory, name)
        aside = os.path.join(self.directory, "." + name + ".old")
        seen = self._requests
        _remove(tmp)
        os.mkdir(tmp)
        try:
            yield tmp
            _fsync_tree(tmp)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        moved_aside = False
        try:
            if os.path.lexists(final):
                _remove(aside)
                os.rename(final, aside)
                moved_aside = True
            os.rename(tmp, final)
            _fsync_dir(self.directory)
        except BaseException:
            if moved_aside and not os.path.lexists(final):
                os.rename(aside, final)
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        if moved_aside:
            shutil.rmtree(aside, ignore_errors=True)
        self._handled = max(self._handled, seen)


# --------------------------------------------------------------------------------------------
# safetensors: format code (shared by the raw and the torch helpers)
# --------------------------------------------------------------------------------------------

MAX_HEADER_SIZE = 100_000_000

DTYPE_BITS = {
    "BOOL": 8, "F4": 4, "F6_E2M3": 6, "F6_E3M2": 6, "U8": 8, "I8": 8,
    "F8_E5M2": 8, "F8_E4M3": 8, "F8_E8M0": 8, "F8_E4M3FNUZ": 8, "F8_E5M2FNUZ": 8,
    "I16": 16, "U16": 16, "F16": 16, "BF16": 16, "I32": 32, "U32": 32, "F32": 32,
    "C64": 64, "F64": 64, "I64": 64, "U64": 64,
}

_MAX_BYTES = (1 << 64) - 1


def agree(checkpointer, all_reduce_max=None):
    """Multi-node: the (checkpoint, exit) decision every rank of the job takes this step.

    A notice reaches one node first; its agent writes it to the store, the other agents see it
    about a second later and signal their trainers.  So the ranks learn of it at different
    steps, and each must still write the same step.  Call this once per step on every rank:
    it all-reduces (MAX) the "checkpoint requested" and "exit" flags, so when any rank was
    asked, all checkpoint this step, and when any rank's machine is going away, all checkpoint
    and exit after it (even where the notice file was read before the signal came).  Returns
    (checkpoint, exit) as booleans.  A request is counted as handled on every rank
    (`clear()`), also on ranks that were not asked yet, whose signal may come a moment later:
    ask again on such a late signal only if you want one more checkpoint.

    `all_reduce_max` takes a list of ints and returns the element-wise maximum over all
    ranks; by default torch.distributed's all_reduce (MAX) on the default process group, or
    the local flags when torch.distributed is not initialised (a single process).
    """
    flags = [1 if checkpointer.requested() else 0, 1 if checkpointer.should_exit() else 0]
    if all_reduce_max is None:
        all_reduce_max = _torch_all_reduce_max
    agreed = list(all_reduce_max(flags))
    if len(agreed) != 2:
        raise ValueError("all_reduce_max must return two flags")
    # An exit always checkpoints first, also before the request's signal has come: the agent
    # writes the notice file and then signals, and a step can fall in between, on every rank.
    save, leave = bool(agreed[0] or agreed[1]), bool(agreed[1])
    if save:
        checkpointer.clear()
    return save, leave


def _torch_all_reduce_max(flags):
    try:
        import torch
        import torch.distributed as dist
    except ImportError:
        return flags
    if not (dist.is_available() and dist.is_initialized()):
        return flags
    device = None
    if dist.get_backend() == "nccl":  # NCCL reduces CUDA tensors only
        device = torch.device("cuda", torch.cuda.current_device())
    t = torch.tensor(flags, dtype=torch.int64, device=device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return [int(v) for v in t.tolist()]


class SafetensorsError(ValueError):
    """A safetensors file or tensor set that does not follow the format."""


def _tensor_nbytes(name, dtype, shape):
    if dtype not in DTYPE_BITS:
        raise SafetensorsError("tensor %r: unknown dtype %r" % (name, dtype))
    bits = DTYPE_BITS[dtype]
    for dim in shape:
        if type(dim) is not int or dim < 0:
            raise SafetensorsError("tensor %r: bad shape %r" % (name, shape))
        bits *= dim
        if bits > _MAX_BYTES * 8:
            raise SafetensorsError("tensor %r: size overflows" % (name,))
    if bits % 8:
        raise SafetensorsError("tensor %r: %s x %r is not a whole number of bytes"
                               % (name, dtype, shape))
    return bits // 8


def _check_metadata(metadata):
    if metadata is None:
        return None
    if not isinstance(metadata, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()):
        raise SafetensorsError("__metadata__ must map strings to strings")
    return metadata


def _write_safetensors(path, entries, metadata):
    """Write `entries` [(name, dtype, shape, buffer)] as a safetensors file.

    Tensors are laid out by descending element size, then name (as the reference writer
    does), so every tensor is aligned to its element size; the JSON header is padded with
    spaces to a multiple of 8 bytes.
    """
    metadata = _check_metadata(metadata)
    laid_out = []
    for name, dtype, shape, buf in entries:
        if not isinstance(name, str) or name == "__metadata__":
            raise SafetensorsError("invalid tensor name %r" % (name,))
        shape = tuple(shape)
        nbytes = _tensor_nbytes(name, dtype, shape)
        view = memoryview(buf).cast("B")
        if view.nbytes != nbytes:
            raise SafetensorsError("tensor %r: %d bytes of data, %s x %r needs %d"
                                   % (name, view.nbytes, dtype, shape, nbytes))
        laid_out.append((-DTYPE_BITS[dtype], name, dtype, shape, view))
    laid_out.sort(key=lambda e: (e[0], e[1]))
    header = {}
    if metadata:
        header["__metadata__"] = metadata
    offset = 0
    for _, name, dtype, shape, view in laid_out:
        header[name] = {"dtype": dtype, "shape": list(shape),
                        "data_offsets": [offset, offset + view.nbytes]}
        offset += view.nbytes
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False).encode("utf-8")
    text += b" " * (-len(text) % 8)
    if len(text) > MAX_HEADER_SIZE:
        raise SafetensorsError("header of %d bytes exceeds %d" % (len(text), MAX_HEADER_SIZE))
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for entry in laid_out:
            f.write(entry[4])


def _reject_duplicates(pairs):
    obj = {}
    for key, value in pairs:
        if key in obj:
            raise SafetensorsError("duplicate key %r in header" % (key,))
        obj[key] = value
    return obj


def _reject_constant(name):
    raise SafetensorsError("invalid JSON constant %s in header" % (name,))


def _read_header(f):
    """Parse and validate the header of the open file `f`.

    Returns (entries, metadata, data_start) where entries are (name, dtype, shape, begin, end)
    sorted by offset and already checked to be contiguous, sized to their dtype and shape, and
    to cover the rest of the file exactly.
    """
    file_size = os.fstat(f.fileno()).st_size
    f.seek(0)
    prefix = f.read(8)
    if len(prefix) < 8:
        raise SafetensorsError("file too small for a header (%d bytes)" % len(prefix))
    (n,) = struct.unpack("<Q", prefix)
    if n > MAX_HEADER_SIZE:
        raise SafetensorsError("header size %d exceeds %d" % (n, MAX_HEADER_SIZE))
    if 8 + n > file_size:
        raise SafetensorsError("header size %d runs past the end of the file (%d bytes)"
                               % (n, file_size))
    raw = f.read(n)
    if len(raw) != n:
        raise SafetensorsError("short read of the header")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise SafetensorsError("header is not UTF-8: %s" % e) from None
    if not text.startswith("{"):
        raise SafetensorsError("header does not start with '{'")
    try:
        header = json.loads(text, object_pairs_hook=_reject_duplicates,
                            parse_constant=_reject_constant)
    except SafetensorsError:
        raise
    except (ValueError, RecursionError) as e:
        raise SafetensorsError("header is not valid JSON: %s" % e) from None
    if not isinstance(header, dict):
        raise SafetensorsError("header is not a JSON object")
    metadata = _check_metadata(header.pop("__metadata__", None)) or {}
    entries = []
    for name, info in header.items():
        if not isinstance(info, dict):
            raise SafetensorsError("tensor %r: entry is not an object" % (name,))
        dtype, shape, offsets = info.get("dtype"), info.get("shape"), info.get("data_offsets")
        if not isinstance(dtype, str) or not isinstance(shape, list):
            raise SafetensorsError("tensor %r: missing or bad dtype/shape" % (name,))
        if (not isinstance(offsets, list) or len(offsets) != 2
                or any(type(o) is not int or o < 0 for o in offsets)):
            raise SafetensorsError("tensor %r: bad data_offsets %r" % (name, offsets))
        entries.append((name, dtype, tuple(shape), offsets[0], offsets[1]))
    entries.sort(key=lambda e: (e[3], e[4]))
    expected = 0
    for name, dtype, shape, begin, end in entries:
        if begin != expected or end < begin:
            raise SafetensorsError("tensor %r: data_offsets [%d, %d] leave a gap or overlap"
                                   % (name, begin, end))
        nbytes = _tensor_nbytes(name, dtype, shape)
        if nbytes != end - begin:
            raise SafetensorsError("tensor %r: %s x %r needs %d bytes, offsets give %d"
                                   % (name, dtype, list(shape), nbytes, end - begin))
        expected = end
    if 8 + n + expected != file_size:
        raise SafetensorsError("tensors cover %d bytes but the file holds %d after the header"
                               % (expected, file_size - 8 - n))
    return entries, metadata, 8 + n


def save_safetensors_raw(tensors, path, metadata=None):
    """Write a safetensors file from raw tensors, no dependencies.

    `tensors` maps name -> (dtype, shape, data): dtype a safetensors name ("F32", "I64", ...),
    shape a tuple of ints (() for a scalar), data a bytes-like object holding the
    little-endian row-major bytes.  `metadata` is an optional str -> str dict stored as
    `__metadata__`.
    """
    _write_safetensors(path, [(name, t[0], t[1], t[2]) for name, t in tensors.items()],
                       metadata)


def load_safetensors_raw(path):
    """Read a safetensors file strictly.

    Returns (tensors, metadata): tensors maps name -> (dtype, shape tuple, bytes) in file
    order; metadata is the `__metadata__` dict ({} when absent).  Raises SafetensorsError on
    any deviation from the format: header larger than 100,000,000 bytes or past the end of the
    file, invalid UTF-8/JSON, duplicate keys, offsets that are not contiguous from 0, sizes
    that do not match dtype x shape, or trailing bytes.
    """
    with open(path, "rb") as f:
        entries, metadata, start = _read_header(f)
        tensors = {}
        for name, dtype, shape, begin, end in entries:
            f.seek(start + begin)
            data = f.read(end - begin)
            if len(data) != end - begin:
                raise SafetensorsError("tensor %r: short read" % (name,))
            tensors[name] = (dtype, shape, data)
    return tensors, metadata


def read_safetensors_metadata(path):
    """Return the `__metadata__` dict of a safetensors file ({} when absent), reading the header."""
    with open(path, "rb") as f:
        return _read_header(f)[1]


# --------------------------------------------------------------------------------------------
# safetensors: PyTorch tensors (torch imported lazily)
# --------------------------------------------------------------------------------------------

_TORCH_DTYPE_NAMES = (
    ("F64", "float64"), ("F32", "float32"), ("F16", "float16"), ("BF16", "bfloat16"),
    ("I64", "int64"), ("I32", "int32"), ("I16", "int16"), ("I8", "int8"), ("U8", "uint8"),
    ("BOOL", "bool"), ("U16", "uint16"), ("U32", "uint32"), ("U64", "uint64"),
    ("C64", "complex64"), ("F8_E5M2", "float8_e5m2"), ("F8_E4M3", "float8_e4m3fn"),
)
_torch_maps = None


def _torch():
    import torch  # deferred: the module itself must not need torch
    global _torch_maps
    if _torch_maps is None:
        to_torch = {}
        for st_name, attr in _TORCH_DTYPE_NAMES:
            dt = getattr(torch, attr, None)
            if dt is not None:
                to_torch[st_name] = dt
        _torch_maps = (to_torch, {dt: name for name, dt in to_torch.items()})
    if sys.byteorder != "little":
        raise SafetensorsError("torch helpers need a little-endian host")
    return torch, _torch_maps[0], _torch_maps[1]


def _is_torch_tensor(value):
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.Tensor)


def _tensor_memory(t):
    """A writable buffer over the bytes of the CPU contiguous tensor `t` (no copy)."""
    nbytes = t.numel() * t.element_size()
    if nbytes == 0:
        return bytearray()
    return (ctypes.c_char * nbytes).from_address(t.data_ptr())


def _torch_entry(name, value, from_torch):
    t = value.detach()
    if t.device.type != "cpu":
        t = t.cpu()
    if hasattr(t, "resolve_conj"):
        t = t.resolve_conj().resolve_neg()
    t = t.contiguous()
    dtype = from_torch.get(t.dtype)
    if dtype is None:
        raise TypeError("tensor %r: dtype %s has no safetensors name" % (name, t.dtype))
    return t, (name, dtype, tuple(t.shape), _tensor_memory(t))


def save_safetensors(tensors, path, metadata=None):
    """Write torch tensors (or raw (dtype, shape, bytes) tuples) to a safetensors file.

    Tensors are detached, moved to the CPU and made contiguous; their bytes are written as
    they are in memory (little-endian).  Supported torch dtypes: F32 F16 BF16 F64 I64 I32 I16
    I8 U8 BOOL (and others the installed torch has).  Tensors sharing memory are written
    as separate copies.
    """
    entries = []
    alive = []  # the CPU copies whose memory the entries point at
    from_torch = None
    for name, value in tensors.items():
        if isinstance(value, tuple):
            entries.append((name, value[0], value[1], value[2]))
        elif _is_torch_tensor(value):
            if from_torch is None:
                from_torch = _torch()[2]
            t, entry = _torch_entry(name, value, from_torch)
            alive.append(t)
            entries.append(entry)
        else:
            raise TypeError("tensor %r: expected a torch.Tensor or a (dtype, shape, bytes) "
                            "tuple, got %s" % (name, type(value).__name__))
    _write_safetensors(path, entries, metadata)


def load_safetensors(path, device="cpu"):
    """Read a safetensors file into a dict name -> torch.Tensor (file order) on `device`.

    The file is validated like load_safetensors_raw; each tensor's bytes are read straight
    into a freshly allocated tensor.
    """
    return _load_torch(path, device)[0]


def _load_torch(path, device):
    torch, to_torch, _ = _torch()
    out = {}
    with open(path, "rb") as f:
        entries, metadata, start = _read_header(f)
        for name, dtype, shape, begin, end in entries:
            if dtype not in to_torch:
                raise SafetensorsError("tensor %r: dtype %s has no torch equivalent"
                                       % (name, dtype))
            t = torch.empty(shape, dtype=to_torch[dtype])
            if end > begin:
                f.seek(start + begin)
                got = f.readinto(memoryview(_tensor_memory(t)).cast("B"))
                if got != end - begin:
                    raise SafetensorsError("tensor %r: short read" % (name,))
            if device != "cpu":
                t = t.to(device)
            out[name] = t
    return out, metadata


STRUCTURE_KEY = "resume_run.structure"
_STRUCTURE_VERSION = 1


class _Flattener:
    """Turns a nested state dict into (tensors by flat name, a JSON-able structure tree).

    Tree nodes: JSON scalars (str, int, float, bool, None) stand for themselves; containers are
    objects {"dict": [[key, node], ...], "ordered": bool, "attrs": {...}}, {"list": [...]},
    {"tuple": [...]}; a tensor is {"tensor": flat_name}.  Dict keys are kept with their type
    (int keys such as optimizer parameter ids stay ints).
    """

    def __init__(self):
        self.tensors = {}

    def _name(self, path):
        base = ".".join(path) if path else "tensor"
        name, n = base, 1
        while name in self.tensors or name == "__metadata__":
            n += 1
            name = "%s#%d" % (base, n)
        return name

    def node(self, value, path):
        if value is None or isinstance(value, (str, bool)):
            return value
        if isinstance(value, int):
            return int(value)  # also IntEnum and friends
        if isinstance(value, float):
            return float(value)
        if _is_torch_tensor(value):
            name = self._name(path)
            self.tensors[name] = value
            return {"tensor": name}
        if isinstance(value, dict):
            items = []
            for key, item in value.items():
                if not (key is None or isinstance(key, (str, int, float, bool))):
                    raise TypeError("state dict key %r at %s: only str/int/float/bool/None "
                                    "keys are supported" % (key, ".".join(path) or "<top>"))
                items.append([key, self.node(item, path + [str(key)])])
            out = {"dict": items, "ordered": isinstance(value, collections.OrderedDict)}
            meta = getattr(value, "_metadata", None)  # nn.Module.state_dict() version info
            if meta is not None:
                out["attrs"] = {"_metadata": self.node(meta, path + ["_metadata"])}
            return out
        if isinstance(value, list):
            return {"list": [self.node(v, path + [str(i)]) for i, v in enumerate(value)]}
        if isinstance(value, tuple):
            return {"tuple": [self.node(v, path + [str(i)]) for i, v in enumerate(value)]}
        raise TypeError("state dict value of type %s at %s cannot be stored"
                        % (type(value).__name__, ".".join(path) or "<top>"))


def _rebuild(node, tensors):
    if not isinstance(node, dict):
        return node
    if "tensor" in node:
        return tensors[node["tensor"]]
    if "list" in node:
        return [_rebuild(v, tensors) for v in node["list"]]
    if "tuple" in node:
        return tuple(_rebuild(v, tensors) for v in node["tuple"])
    if "dict" in node:
        cls = collections.OrderedDict if node.get("ordered") else dict
        out = cls((key, _rebuild(v, tensors)) for key, v in node["dict"])
        for attr, v in node.get("attrs", {}).items():
            setattr(out, attr, _rebuild(v, tensors))
        return out
    raise SafetensorsError("bad structure node %r" % (node,))


def save_state_dict(state_dict, path, metadata=None):
    """Write a (possibly nested) PyTorch state dict to one safetensors file.

    Works for model.state_dict() (tensors keep their own names, so the file loads with any
    safetensors reader) and optimizer.state_dict() (tensors get dotted names such as
    "state.0.exp_avg").  Everything that is not a tensor — param_groups, python-number step
    counters, int keys, tuples, None — is kept as JSON in `__metadata__["resume_run.structure"]`
    so that load_state_dict rebuilds the same structure.  `metadata` adds str -> str entries.
    """
    flat = _Flattener()
    tree = flat.node(state_dict, [])
    meta = {"format": "pt"}
    meta.update(_check_metadata(metadata) or {})
    meta[STRUCTURE_KEY] = json.dumps({"version": _STRUCTURE_VERSION, "tree": tree},
                                     separators=(",", ":"), allow_nan=True)
    save_safetensors(flat.tensors, path, meta)


def load_state_dict(path, device="cpu"):
    """Read a file written by save_state_dict and rebuild the state dict on `device`.

    A plain safetensors file without the structure entry comes back as a dict of its tensors.
    """
    tensors, metadata = _load_torch(path, device)
    text = metadata.get(STRUCTURE_KEY)
    if text is None:
        return tensors
    try:
        doc = json.loads(text)
    except ValueError as e:
        raise SafetensorsError("bad %s: %s" % (STRUCTURE_KEY, e)) from None
    if not isinstance(doc, dict) or doc.get("version") != _STRUCTURE_VERSION:
        raise SafetensorsError("unsupported %s version" % STRUCTURE_KEY)
    try:
        return _rebuild(doc["tree"], tensors)
    except (KeyError, TypeError) as e:
        raise SafetensorsError("bad %s: %s" % (STRUCTURE_KEY, e)) from None
