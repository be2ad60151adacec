#!/usr/bin/env python3
"""Tests for the resume_run package (python/resume_run) and scripts/example_trainer.py.

Run: /usr/bin/python3 tests/python/test_resume_run.py -v   (exits nonzero on failure)
The PyTorch tests run only when torch is importable (Debian: python3-torch).
"""

import importlib.util
import json
import os
import select
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
import unittest
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPTS = os.path.normpath(os.path.join(HERE, "..", "..", "scripts"))
PACKAGE_ROOT = os.path.normpath(os.path.join(HERE, "..", "..", "python"))
sys.path.insert(0, PACKAGE_ROOT)

import resume_run  # noqa: E402
from resume_run import SafetensorsError  # noqa: E402

TRAINER = os.path.join(SCRIPTS, "example_trainer.py")
HAVE_TORCH = importlib.util.find_spec("torch") is not None


def clean_env(**extra):
    """os.environ without any RESUME_RUN_* variable, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RESUME_RUN_")}
    env.update({k: str(v) for k, v in extra.items()})
    return env


class TempDirTest(unittest.TestCase):
    """Each test gets a temp dir and an environment without RESUME_RUN_* variables."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="resume-run-test-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        patcher = mock.patch.dict(os.environ, clean_env(), clear=True)
        patcher.start()
        self.addCleanup(patcher.stop)
        self.ckdir = os.path.join(self.tmp, "checkpoints")
        os.environ["RESUME_RUN_CHECKPOINT_DIR"] = self.ckdir

    def write(self, path, data):
        with open(path, "wb" if isinstance(data, bytes) else "w") as f:
            f.write(data)
        return path


class TestEnvironment(TempDirTest):

    def test_restore_dir_is_none_unless_set(self):
        self.assertIsNone(resume_run.restore_dir())
        os.environ["RESUME_RUN_RESTORE_DIR"] = ""
        self.assertIsNone(resume_run.restore_dir())
        os.environ["RESUME_RUN_RESTORE_DIR"] = "/ck/step-5"
        self.assertEqual(resume_run.restore_dir(), "/ck/step-5")

    def test_checkpoint_dir_is_created_from_env(self):
        self.assertFalse(os.path.exists(self.ckdir))
        self.assertEqual(resume_run.checkpoint_dir(), self.ckdir)
        self.assertTrue(os.path.isdir(self.ckdir))

    def test_checkpoint_dir_default_is_created_under_cwd(self):
        del os.environ["RESUME_RUN_CHECKPOINT_DIR"]
        old = os.getcwd()
        os.chdir(self.tmp)
        try:
            self.assertEqual(resume_run.checkpoint_dir(), "./.resume-run/checkpoints")
            self.assertTrue(os.path.isdir(os.path.join(self.tmp, ".resume-run", "checkpoints")))
        finally:
            os.chdir(old)

    def test_attempt_defaults_to_zero_and_parses_int(self):
        self.assertEqual(resume_run.attempt(), 0)
        os.environ["RESUME_RUN_ATTEMPT"] = "2"
        self.assertEqual(resume_run.attempt(), 2)
        os.environ["RESUME_RUN_ATTEMPT"] = "junk"
        self.assertEqual(resume_run.attempt(), 0)

    def test_notice_parses_json_object(self):
        path = os.path.join(self.tmp, "notice.json")
        os.environ["RESUME_RUN_NOTICE_FILE"] = path
        self.assertIsNone(resume_run.notice())  # no file: no notice
        doc = {"kind": "preempt", "source": "aws", "deadline_unix": 1700000120,
               "received_unix": 1700000000}
        self.write(path, json.dumps(doc))
        self.assertEqual(resume_run.notice(), doc)

    def test_notice_invalid_or_half_written_is_none(self):
        path = os.path.join(self.tmp, "notice.json")
        os.environ["RESUME_RUN_NOTICE_FILE"] = path
        for text in ('{"kind": "pree', "", "not json", "[1, 2]", '"preempt"', b"\xff\xfe{}"):
            self.write(path, text)
            self.assertIsNone(resume_run.notice(), text)

    def test_notice_without_env_is_none(self):
        self.assertIsNone(resume_run.notice())

    def test_parse_signal_accepts_names_with_and_without_sig_and_numbers(self):
        usr1 = int(signal.SIGUSR1)
        for spec in ("USR1", "SIGUSR1", "usr1", str(usr1), usr1):
            self.assertEqual(resume_run.parse_signal(spec), usr1, spec)
        self.assertEqual(resume_run.parse_signal("USR2"), int(signal.SIGUSR2))
        with self.assertRaises(ValueError):
            resume_run.parse_signal("NOPE")

    def test_parse_signal_takes_a_real_time_signal_by_number(self):
        # The agent passes --signal 40 (SIGRTMIN..SIGRTMAX) as RESUME_RUN_SIGNAL=40.
        rt = int(signal.SIGRTMIN) + 6
        self.assertEqual(resume_run.parse_signal(str(rt)), rt)
        self.assertEqual(resume_run.parse_signal(int(signal.SIGRTMAX)), int(signal.SIGRTMAX))
        with self.assertRaises(ValueError):
            resume_run.parse_signal(str(int(signal.SIGRTMAX) + 1))

    def test_import_does_not_import_torch(self):
        code = "import sys, resume_run; sys.exit(1 if 'torch' in sys.modules else 0)"
        r = subprocess.run([sys.executable, "-c", code], cwd=SCRIPTS, env=clean_env())
        self.assertEqual(r.returncode, 0)

    def test_scripts_shim_imports_the_package(self):
        # README's recipe before the package put scripts/ on sys.path: that still works, and
        # gives the package itself, not a second copy.
        code = ("import sys; sys.path.insert(0, sys.argv[1]); import resume_run, resume_run.training; "
                "print(resume_run.__file__); print(resume_run.training.rng_state.__module__)")
        r = subprocess.run([sys.executable, "-c", code, SCRIPTS], env=clean_env(),
                           capture_output=True, text=True, cwd=self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.split(), [os.path.join(PACKAGE_ROOT, "resume_run", "__init__.py"),
                                            "resume_run.training"])

    def test_step_of_reads_the_step_as_the_agent_orders_names(self):
        cases = {"step-1200": 1200, "/ck/checkpoint-30/": 30, "global_step7": 7,
                 "epoch=3-step=1200.ckpt": 1200, "step-5.final": 5, "model-step-20.pt": 20,
                 "xstep-1": None, "model.pt": None, "": None, None: None, "step-": None}
        for name, step in cases.items():
            self.assertEqual(resume_run.step_of(name), step, name)


class TestCheckpointer(TempDirTest):

    def make(self, **kw):
        ck = resume_run.Checkpointer(**kw)
        self.addCleanup(ck.close)
        return ck

    def listdir(self):
        return sorted(os.listdir(self.ckdir))

    def test_handler_taken_back_from_a_native_library(self):
        # LLVM (loaded by an OpenCL driver on a GPU image) replaces SIGUSR1's handler below
        # Python, which still reports the Checkpointer's: the agent's signal would vanish.
        # Here libc's signal() sets the process's handler to "ignore" behind Python's back.
        import ctypes
        ck = self.make()
        libc = ctypes.CDLL(None)
        libc.signal.restype = ctypes.c_void_p
        libc.signal.argtypes = [ctypes.c_int, ctypes.c_void_p]
        libc.signal(ck.signum, ctypes.c_void_p(1))  # SIG_IGN
        self.assertEqual(signal.getsignal(ck.signum), ck._on_signal)  # Python cannot tell
        self.assertFalse(ck.requested())  # polled before the notice, as every step does
        os.kill(os.getpid(), ck.signum)
        time.sleep(0.05)
        self.assertTrue(ck.requested())

    def test_commit_writes_dot_tmp_and_renames_only_after_block(self):
        ck = self.make()
        with ck.commit("step-3") as tmp:
            self.assertEqual(os.path.basename(tmp), ".step-3.tmp")
            self.assertEqual(os.path.dirname(tmp), self.ckdir)
            self.write(os.path.join(tmp, "a.bin"), b"abc")
            os.mkdir(os.path.join(tmp, "sub"))
            self.write(os.path.join(tmp, "sub", "b.txt"), "b")
            self.assertFalse(os.path.exists(os.path.join(self.ckdir, "step-3")))
            self.assertIsNone(ck.latest())
        self.assertEqual(self.listdir(), ["step-3"])
        final = os.path.join(self.ckdir, "step-3")
        with open(os.path.join(final, "sub", "b.txt")) as f:
            self.assertEqual(f.read(), "b")
        self.assertEqual(ck.latest(), final)

    def test_commit_exception_leaves_neither_final_nor_temp(self):
        ck = self.make()
        with self.assertRaises(RuntimeError):
            with ck.commit("step-4") as tmp:
                self.write(os.path.join(tmp, "half"), b"x")
                raise RuntimeError("disk full")
        self.assertEqual(self.listdir(), [])

    def test_commit_removes_stale_temp_dir(self):
        ck = self.make()
        stale = os.path.join(self.ckdir, ".step-5.tmp")
        os.makedirs(stale)
        self.write(os.path.join(stale, "junk"), b"old")
        with ck.commit("step-5") as tmp:
            self.assertEqual(os.listdir(tmp), [])
        self.assertEqual(self.listdir(), ["step-5"])

    def test_commit_over_existing_name_replaces_it_whole(self):
        ck = self.make()
        with ck.commit("final") as tmp:
            self.write(os.path.join(tmp, "old-only"), b"1")
            self.write(os.path.join(tmp, "both"), b"old")
        with ck.commit("final") as tmp:
            self.write(os.path.join(tmp, "both"), b"new")
        self.assertEqual(self.listdir(), ["final"])
        final = os.path.join(self.ckdir, "final")
        self.assertEqual(os.listdir(final), ["both"])
        with open(os.path.join(final, "both"), "rb") as f:
            self.assertEqual(f.read(), b"new")

    def test_commit_rejects_dot_and_slash_names(self):
        ck = self.make()
        for name in (".hidden", "a/b", "", "../x"):
            with self.assertRaises(ValueError):
                with ck.commit(name):
                    pass
        self.assertEqual(self.listdir(), [])

    def test_signal_handler_only_sets_flag(self):
        ck = self.make()
        self.assertEqual(ck.signum, int(signal.SIGUSR1))
        self.assertFalse(ck.requested())
        os.kill(os.getpid(), signal.SIGUSR1)
        self.assertTrue(ck.requested())
        self.assertEqual(self.listdir(), [])  # no work was done in the handler
        ck.clear()
        self.assertFalse(ck.requested())

    def test_close_restores_previous_handler(self):
        before = signal.getsignal(signal.SIGUSR1)
        ck = resume_run.Checkpointer()
        self.assertNotEqual(signal.getsignal(signal.SIGUSR1), before)
        ck.close()
        self.assertEqual(signal.getsignal(signal.SIGUSR1), before)

    def test_resume_run_signal_usr2_is_honoured(self):
        os.environ["RESUME_RUN_SIGNAL"] = "USR2"
        ck = self.make()
        self.assertEqual(ck.signum, int(signal.SIGUSR2))
        os.kill(os.getpid(), signal.SIGUSR2)
        self.assertTrue(ck.requested())

    def test_resume_run_signal_sig_prefix_and_number(self):
        for spec in ("SIGUSR2", str(int(signal.SIGUSR2))):
            os.environ["RESUME_RUN_SIGNAL"] = spec
            ck = resume_run.Checkpointer()
            try:
                self.assertEqual(ck.signum, int(signal.SIGUSR2))
            finally:
                ck.close()

    def test_commit_clears_request(self):
        ck = self.make()
        os.kill(os.getpid(), signal.SIGUSR1)
        with ck.commit("step-1"):
            pass
        self.assertFalse(ck.requested())

    def test_request_arriving_during_commit_stays_pending(self):
        ck = self.make()
        with ck.commit("step-1"):
            os.kill(os.getpid(), signal.SIGUSR1)
        self.assertTrue(ck.requested())

    def test_failed_commit_keeps_request(self):
        ck = self.make()
        os.kill(os.getpid(), signal.SIGUSR1)
        with self.assertRaises(OSError):
            with ck.commit("step-1"):
                raise OSError("no space")
        self.assertTrue(ck.requested())

    def test_should_exit_for_preempt_and_terminate_not_rebalance(self):
        ck = self.make()
        path = os.path.join(self.tmp, "notice.json")
        os.environ["RESUME_RUN_NOTICE_FILE"] = path
        self.assertFalse(ck.should_exit())
        for kind, expect in (("preempt", True), ("terminate", True),
                             ("rebalance", False), ("maintenance", False)):
            self.write(path, json.dumps({"kind": kind, "source": "file",
                                         "deadline_unix": None, "received_unix": 1}))
            self.assertEqual(ck.should_exit(), expect, kind)
        self.write(path, '{"kind": "pre')
        self.assertFalse(ck.should_exit())

    def test_latest_orders_step_numbers_numerically_and_ignores_dot_dirs(self):
        ck = self.make()
        for name in ("step-10", "step-2", ".step-99.tmp", ".step-50.old"):
            os.makedirs(os.path.join(self.ckdir, name))
        self.write(os.path.join(self.ckdir, "step-70"), b"a file, not a checkpoint")
        self.assertEqual(ck.latest(), os.path.join(self.ckdir, "step-10"))
        self.assertEqual([os.path.basename(p) for p in resume_run.list_checkpoints(self.ckdir)],
                         ["step-2", "step-10"])

    def test_latest_without_step_names_uses_commit_time(self):
        ck = self.make()
        for name in ("zzz", "aaa"):
            with ck.commit(name):
                pass
            time.sleep(0.02)
        self.assertEqual(ck.latest(), os.path.join(self.ckdir, "aaa"))

    def test_latest_step_name_with_suffix_counts_by_number(self):
        ck = self.make()
        # 20 digits is not a step name: it is ordered by commit time, so commit it first.
        for name in ("step-12000000000000000000", "step-1200.final", "step-99"):
            with ck.commit(name):
                pass
            time.sleep(0.01)
        self.assertEqual(ck.latest(), os.path.join(self.ckdir, "step-1200.final"))

    def test_latest_step_name_is_newer_than_other_names(self):
        # As rr_checkpoint_compare: a step-N name is newer than any other name, whatever
        # the commit times, so the order stays transitive.
        ck = self.make()
        with ck.commit("step-1"):
            pass
        time.sleep(0.02)
        with ck.commit("manual"):
            pass
        self.assertEqual(ck.latest(), os.path.join(self.ckdir, "step-1"))

    def test_latest_of_empty_or_missing_dir_is_none(self):
        self.assertIsNone(resume_run.latest_checkpoint(os.path.join(self.tmp, "missing")))
        self.assertIsNone(self.make().latest())

    def test_prune_keeps_newest(self):
        ck = self.make()
        for n in (1, 20, 3, 100):
            with ck.commit("step-%d" % n):
                pass
        os.makedirs(os.path.join(self.ckdir, ".step-7.tmp"))
        ck.prune(10)
        self.assertEqual(len(self.listdir()), 5)
        ck.prune(2)
        self.assertEqual(self.listdir(), [".step-7.tmp", "step-100", "step-20"])
        ck.prune(0)
        self.assertEqual(self.listdir(), [".step-7.tmp"])


def header_of(path):
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    return n, blob[8:8 + n], blob[8 + n:]


def make_file(header, data=b"", pad=True):
    """A hand-built safetensors file (for reader tests)."""
    text = json.dumps(header).encode()
    if pad:
        text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data


class TestSafetensorsRaw(TempDirTest):

    def path(self, name="t.safetensors"):
        return os.path.join(self.tmp, name)

    def test_round_trip_with_metadata_scalar_and_empty_tensors(self):
        tensors = {
            "w": ("F32", (2, 3), struct.pack("<6f", 1, 2, 3, 4, 5, -6.5)),
            "scalar": ("I64", (), struct.pack("<q", -7)),
            "empty": ("F16", (0, 4), b""),
            "flags": ("BOOL", (3,), b"\x01\x00\x01"),
            "bf": ("BF16", (2,), b"\x80\x3f\x00\x40"),
            "u8": ("U8", (1, 1, 1), b"\xff"),
        }
        meta = {"step": "12", "note": "h\u00e9llo"}
        resume_run.save_safetensors_raw(tensors, self.path(), meta)
        got, got_meta = resume_run.load_safetensors_raw(self.path())
        self.assertEqual(got_meta, meta)
        self.assertEqual(set(got), set(tensors))
        for name, (dtype, shape, data) in tensors.items():
            self.assertEqual(got[name], (dtype, shape, data), name)
        self.assertEqual(resume_run.read_safetensors_metadata(self.path()), meta)

    def test_no_metadata_reads_back_empty(self):
        resume_run.save_safetensors_raw({"a": ("U8", (1,), b"\x05")}, self.path())
        n, header, _ = header_of(self.path())
        self.assertNotIn(b"__metadata__", header)
        self.assertEqual(resume_run.load_safetensors_raw(self.path())[1], {})

    def test_header_padded_to_8_with_spaces_and_offsets_contiguous(self):
        tensors = {"b": ("F32", (3,), struct.pack("<3f", 1, 2, 3)),
                   "a": ("I8", (5,), bytes(range(5))),
                   "c": ("F64", (1,), struct.pack("<d", 0.5)),
                   "z": ("F16", (0,), b""),
                   "s": ("I16", (), b"\x01\x02")}
        resume_run.save_safetensors_raw(tensors, self.path(), {"k": "v"})
        n, header, data = header_of(self.path())
        self.assertEqual(n % 8, 0)
        self.assertEqual(header[:1], b"{")
        stripped = header.rstrip(b" ")
        self.assertEqual(stripped[-1:], b"}")
        self.assertLess(len(header) - len(stripped), 8)
        doc = json.loads(header)
        self.assertEqual(doc.pop("__metadata__"), {"k": "v"})
        spans = sorted((tuple(info["data_offsets"]), name) for name, info in doc.items())
        pos = 0
        for (begin, end), name in spans:
            self.assertEqual(begin, pos, name)
            self.assertEqual(data[begin:end], tensors[name][2], name)
            pos = end
        self.assertEqual(pos, len(data))
        # Laid out by descending element size: every tensor is aligned to its element size.
        self.assertEqual([name for _, name in spans], ["c", "b", "s", "z", "a"])

    def test_writer_output_is_byte_exact(self):
        resume_run.save_safetensors_raw({"a": ("F32", (2,), struct.pack("<2f", 1.0, -2.0))},
                                        self.path())
        with open(self.path(), "rb") as f:
            blob = f.read()
        text = b'{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}'
        text += b" " * (-len(text) % 8)
        self.assertEqual(blob, struct.pack("<Q", len(text)) + text +
                         b"\x00\x00\x80\x3f\x00\x00\x00\xc0")

    def test_writer_rejects_wrong_data_size_and_bad_input(self):
        bad = [
            {"a": ("F32", (2,), b"\x00" * 7)},
            {"a": ("F99", (1,), b"\x00")},
            {"a": ("F32", (-1,), b"")},
            {"__metadata__": ("U8", (1,), b"\x00")},
        ]
        for tensors in bad:
            with self.assertRaises(SafetensorsError, msg=repr(tensors)):
                resume_run.save_safetensors_raw(tensors, self.path())
        with self.assertRaises(SafetensorsError):
            resume_run.save_safetensors_raw({}, self.path(), {"k": 1})

    def assertRejected(self, blob, why):
        self.write(self.path("bad.safetensors"), blob)
        with self.assertRaises(SafetensorsError, msg=why):
            resume_run.load_safetensors_raw(self.path("bad.safetensors"))

    def test_reader_accepts_hand_built_file(self):
        blob = make_file({"a": {"dtype": "U8", "shape": [2], "data_offsets": [0, 2]},
                          "b": {"dtype": "U8", "shape": [1], "data_offsets": [2, 3]}},
                         b"\x01\x02\x03")
        self.write(self.path(), blob)
        got, meta = resume_run.load_safetensors_raw(self.path())
        self.assertEqual(got, {"a": ("U8", (2,), b"\x01\x02"), "b": ("U8", (1,), b"\x03")})

    def test_reader_rejects_trailing_bytes(self):
        self.assertRejected(make_file({"a": {"dtype": "U8", "shape": [2],
                                             "data_offsets": [0, 2]}}, b"\x01\x02\x00"),
                            "trailing byte")

    def test_reader_rejects_missing_bytes(self):
        self.assertRejected(make_file({"a": {"dtype": "U8", "shape": [2],
                                             "data_offsets": [0, 2]}}, b"\x01"),
                            "truncated data")

    def test_reader_rejects_overlapping_offsets(self):
        self.assertRejected(make_file({
            "a": {"dtype": "U8", "shape": [2], "data_offsets": [0, 2]},
            "b": {"dtype": "U8", "shape": [2], "data_offsets": [1, 3]}}, b"\x00" * 3),
            "overlap")

    def test_reader_rejects_gap_between_tensors(self):
        self.assertRejected(make_file({
            "a": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]},
            "b": {"dtype": "U8", "shape": [1], "data_offsets": [2, 3]}}, b"\x00" * 3),
            "gap")

    def test_reader_rejects_shape_size_mismatch(self):
        self.assertRejected(make_file({"a": {"dtype": "F32", "shape": [2],
                                             "data_offsets": [0, 4]}}, b"\x00" * 4),
                            "F32 x 2 is 8 bytes")

    def test_reader_rejects_bad_header_length(self):
        good = make_file({"a": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}}, b"\x07")
        (n,) = struct.unpack("<Q", good[:8])
        self.assertRejected(struct.pack("<Q", n + 100) + good[8:], "header past end")
        self.assertRejected(struct.pack("<Q", 100_000_001) + good[8:], "header too large")
        self.assertRejected(good[:5], "fewer than 8 bytes")
        self.assertRejected(struct.pack("<Q", n - 3) + good[8:], "header cut inside JSON")

    def test_reader_rejects_bad_json_and_schema(self):
        def raw(text):
            return struct.pack("<Q", len(text)) + text
        self.assertRejected(raw(b'{"a": 1'), "invalid JSON")
        self.assertRejected(raw(b'\xff{}     '), "invalid UTF-8")
        self.assertRejected(raw(b'[]      '), "not an object")
        self.assertRejected(raw(b'{"a":{"dtype":"U8","shape":[0],"data_offsets":[0,0]},'
                                b'"a":{"dtype":"U8","shape":[0],"data_offsets":[0,0]}}'),
                            "duplicate key")
        self.assertRejected(make_file({"__metadata__": {"k": 1}}), "metadata value not str")
        self.assertRejected(make_file({"a": {"dtype": "Q7", "shape": [0],
                                             "data_offsets": [0, 0]}}), "unknown dtype")
        self.assertRejected(make_file({"a": {"dtype": "U8", "shape": [1.0],
                                             "data_offsets": [0, 1]}}, b"\x00"), "float dim")
        self.assertRejected(make_file({"a": {"dtype": "U8", "shape": [1],
                                             "data_offsets": [0]}}, b"\x00"), "one offset")

    def test_reader_accepts_empty_header_object(self):
        self.write(self.path(), make_file({}))
        self.assertEqual(resume_run.load_safetensors_raw(self.path()), ({}, {}))


class TestExampleTrainer(TempDirTest):

    def run_trainer(self, ckdir, *args, env=None, check=True):
        e = clean_env(RESUME_RUN_CHECKPOINT_DIR=ckdir, **(env or {}))
        r = subprocess.run([sys.executable, TRAINER, "--step-time", "0"] + list(args),
                           env=e, cwd=self.tmp, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, universal_newlines=True, timeout=120)
        if check:
            self.assertEqual(r.returncode, 0, r.stderr)
        return r

    def out(self, name):
        with open(os.path.join(self.tmp, name)) as f:
            return json.load(f)

    def test_resumed_run_ends_identical_to_uninterrupted_run(self):
        a_dir = os.path.join(self.tmp, "a")
        self.run_trainer(a_dir, "--steps", "60", "--out", "a.json")
        b_dir = os.path.join(self.tmp, "b")
        self.run_trainer(b_dir, "--steps", "30", "--out", "half.json")
        restore = os.path.join(b_dir, "step-30")
        self.assertTrue(os.path.isfile(os.path.join(restore, "model.safetensors")))
        r = self.run_trainer(b_dir, "--steps", "60", "--out", "b.json",
                             env={"RESUME_RUN_RESTORE_DIR": restore})
        self.assertIn("resumed from step 30", r.stdout)
        a, b = self.out("a.json"), self.out("b.json")
        self.assertEqual(a["step"], 60)
        self.assertEqual(a, b)
        self.assertNotEqual(self.out("half.json")["sha256"], a["sha256"])
        self.assertIn("done step 60 sha256 %s" % a["sha256"], r.stdout)

    def test_checkpoint_files_are_f32_safetensors_and_state_json(self):
        d = os.path.join(self.tmp, "ck")
        self.run_trainer(d, "--steps", "10", "--checkpoint-every", "5", "--keep-local", "0")
        self.assertEqual(sorted(os.listdir(d)), ["step-10", "step-5"])
        tensors, meta = resume_run.load_safetensors_raw(
            os.path.join(d, "step-10", "model.safetensors"))
        self.assertEqual(meta, {"step": "10"})
        self.assertEqual({t[0] for t in tensors.values()}, {"F32"})
        self.assertEqual(tensors["fc1.weight"][1], (16, 8))
        with open(os.path.join(d, "step-10", "state.json")) as f:
            self.assertEqual(json.load(f)["step"], 10)

    def test_keep_local_prunes_old_checkpoints(self):
        d = os.path.join(self.tmp, "ck")
        self.run_trainer(d, "--steps", "40", "--checkpoint-every", "10", "--keep-local", "2")
        self.assertEqual(sorted(os.listdir(d)), ["step-30", "step-40"])

    def test_signal_with_preempt_notice_checkpoints_exits_and_resumes_identically(self):
        steps = "400"
        self.run_trainer(os.path.join(self.tmp, "a"), "--steps", steps, "--out", "a.json")
        d = os.path.join(self.tmp, "b")
        notice = os.path.join(self.tmp, "notice.json")
        env = clean_env(RESUME_RUN_CHECKPOINT_DIR=d, RESUME_RUN_NOTICE_FILE=notice)
        p = subprocess.Popen([sys.executable, TRAINER, "--steps", steps, "--step-time", "0.01",
                              "--checkpoint-every", "0"], env=env, cwd=self.tmp,
                             stdout=subprocess.PIPE, universal_newlines=True)
        self.addCleanup(p.kill)
        ready, _, _ = select.select([p.stdout], [], [], 30)
        self.assertTrue(ready, "trainer did not start")
        self.assertIn("training from step 0", p.stdout.readline())  # handler is installed
        time.sleep(0.3)
        self.write(notice, json.dumps({"kind": "preempt", "source": "file",
                                       "deadline_unix": None, "received_unix": 0}))
        p.send_signal(signal.SIGUSR1)
        rest, _ = p.communicate(timeout=60)
        self.assertEqual(p.returncode, 0)
        lines = rest.splitlines()
        self.assertTrue(lines[-1].startswith("checkpointed at step "), rest)
        stopped = int(lines[-1].split()[3].rstrip(","))
        self.assertLess(stopped, int(steps))
        self.assertEqual(os.listdir(d), ["step-%d" % stopped])
        os.unlink(notice)
        r = self.run_trainer(d, "--steps", steps, "--out", "b.json",
                             env={"RESUME_RUN_RESTORE_DIR": os.path.join(d, "step-%d" % stopped),
                                  "RESUME_RUN_ATTEMPT": "0"})
        self.assertIn("resumed from step %d" % stopped, r.stdout)
        self.assertEqual(self.out("a.json"), self.out("b.json"))

    def test_signal_without_exit_notice_checkpoints_and_continues(self):
        d = os.path.join(self.tmp, "ck")
        env = clean_env(RESUME_RUN_CHECKPOINT_DIR=d, RESUME_RUN_SIGNAL="USR2")
        p = subprocess.Popen([sys.executable, TRAINER, "--steps", "200", "--step-time", "0.01",
                              "--checkpoint-every", "0", "--keep-local", "0"], env=env,
                             cwd=self.tmp, stdout=subprocess.PIPE, universal_newlines=True)
        self.addCleanup(p.kill)
        self.assertIn("training from", p.stdout.readline())
        p.send_signal(signal.SIGUSR2)
        rest, _ = p.communicate(timeout=60)
        self.assertEqual(p.returncode, 0)
        self.assertIn("done step 200", rest)
        self.assertNotIn("exiting for preemption", rest)
        self.assertEqual(len(os.listdir(d)), 2, os.listdir(d))  # on request + final
        self.assertIn("step-200", os.listdir(d))

    def test_fail_at_step_fails_only_on_first_attempt(self):
        d = os.path.join(self.tmp, "ck")
        r = self.run_trainer(d, "--steps", "30", "--checkpoint-every", "10",
                             "--fail-at-step", "25", check=False)
        self.assertEqual(r.returncode, 3)
        self.assertEqual(sorted(os.listdir(d)), ["step-10", "step-20"])
        r = self.run_trainer(d, "--steps", "30", "--fail-at-step", "25", "--out", "r.json",
                             env={"RESUME_RUN_ATTEMPT": "1",
                                  "RESUME_RUN_RESTORE_DIR": os.path.join(d, "step-20")})
        self.assertIn("resumed from step 20", r.stdout)
        self.run_trainer(os.path.join(self.tmp, "clean"), "--steps", "30", "--out", "c.json")
        self.assertEqual(self.out("r.json"), self.out("c.json"))


@unittest.skipUnless(HAVE_TORCH, "torch is not importable (install python3-torch for "
                                 "/usr/bin/python3 to run the PyTorch state-dict tests)")
class TestTorchStateDict(TempDirTest):

    @classmethod
    def setUpClass(cls):
        import torch
        cls.torch = torch

    def assertSameStructure(self, a, b, where="<top>"):
        torch = self.torch
        self.assertIs(type(a), type(b), where)
        if isinstance(a, torch.Tensor):
            self.assertEqual(a.dtype, b.dtype, where)
            self.assertEqual(a.shape, b.shape, where)
            self.assertTrue(torch.equal(a, b), where)
        elif isinstance(a, dict):
            self.assertEqual(list(a.keys()), list(b.keys()), where)
            for k in a:
                self.assertSameStructure(a[k], b[k], "%s.%s" % (where, k))
            self.assertEqual(getattr(a, "_metadata", None), getattr(b, "_metadata", None))
        elif isinstance(a, (list, tuple)):
            self.assertEqual(len(a), len(b), where)
            for i, (x, y) in enumerate(zip(a, b)):
                self.assertSameStructure(x, y, "%s.%d" % (where, i))
        else:
            self.assertEqual(a, b, where)

    def train(self, model, opt, steps, seed):
        torch = self.torch
        g = torch.Generator().manual_seed(seed)
        for _ in range(steps):
            x = torch.randn(8, 4, generator=g)
            loss = model(x).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()

    def test_linear_and_adamw_state_round_trip_exactly(self):
        torch = self.torch
        torch.manual_seed(0)
        model = torch.nn.Linear(4, 3)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-2, betas=(0.8, 0.99))
        self.train(model, opt, 2, seed=1)
        mpath, opath = os.path.join(self.tmp, "model.safetensors"), os.path.join(
            self.tmp, "optim.safetensors")
        resume_run.save_state_dict(model.state_dict(), mpath, {"step": "2"})
        resume_run.save_state_dict(opt.state_dict(), opath)
        self.assertSameStructure(model.state_dict(), resume_run.load_state_dict(mpath))
        self.assertSameStructure(opt.state_dict(), resume_run.load_state_dict(opath))
        self.assertEqual(resume_run.read_safetensors_metadata(mpath)["step"], "2")
        # The model file is a plain safetensors file with the model's own tensor names.
        raw, _ = resume_run.load_safetensors_raw(mpath)
        self.assertEqual(sorted(raw), ["bias", "weight"])
        self.assertEqual(raw["weight"][0], "F32")

        # Restoring into fresh objects and training on gives identical results.
        model2 = torch.nn.Linear(4, 3)
        opt2 = torch.optim.AdamW(model2.parameters(), lr=0.5)
        model2.load_state_dict(resume_run.load_state_dict(mpath))
        opt2.load_state_dict(resume_run.load_state_dict(opath))
        self.train(model, opt, 3, seed=2)
        self.train(model2, opt2, 3, seed=2)
        self.assertSameStructure(model.state_dict(), model2.state_dict())
        self.assertSameStructure(opt.state_dict(), opt2.state_dict())

    def test_python_number_steps_int_keys_and_nesting_survive(self):
        torch = self.torch
        state = {"state": {0: {"step": 7, "buf": torch.arange(3.0)},
                           1: {"step": 7.5, "flag": None}},
                 "param_groups": [{"lr": 0.1, "betas": (0.9, 0.999), "params": [0, 1],
                                   "nesterov": True, "name": "g"}],
                 "a.b": torch.ones(1), "a": {"b": torch.zeros(1)}}
        path = os.path.join(self.tmp, "s.safetensors")
        resume_run.save_state_dict(state, path)
        self.assertSameStructure(state, resume_run.load_state_dict(path))

    def test_unsupported_values_are_rejected(self):
        with self.assertRaises(TypeError):
            resume_run.save_state_dict({"f": lambda: 1}, os.path.join(self.tmp, "x"))

    def test_tensor_dtypes_round_trip_through_shared_format_code(self):
        torch = self.torch
        base = torch.arange(-6, 6).reshape(3, 4)
        tensors = {
            "f32": base.float() / 3, "f16": base.half(), "bf16": base.bfloat16() / 7,
            "f64": base.double() / 9, "i64": base.long() * 1000003, "i32": base.int(),
            "i16": base.short(), "i8": base.to(torch.int8), "u8": (base + 6).to(torch.uint8),
            "bool": base > 0, "scalar": torch.tensor(2.5), "empty": torch.zeros(0, 5),
            "noncontig": base.float().t(), "slice": base.float()[1:, 2:],
        }
        path = os.path.join(self.tmp, "d.safetensors")
        resume_run.save_safetensors(tensors, path, {"m": "1"})
        got = resume_run.load_safetensors(path)
        self.assertEqual(set(got), set(tensors))
        for name, t in tensors.items():
            self.assertEqual(got[name].dtype, t.dtype, name)
            self.assertEqual(got[name].shape, t.shape, name)
            self.assertTrue(torch.equal(got[name], t), name)
        raw, meta = resume_run.load_safetensors_raw(path)
        self.assertEqual(meta, {"m": "1"})
        self.assertEqual(raw["f32"][0], "F32")
        self.assertEqual(raw["bf16"][0], "BF16")
        self.assertEqual(raw["bool"][0], "BOOL")
        self.assertEqual(raw["noncontig"][2], struct.pack("<12f", *base.float().t().flatten()
                                                          .tolist()))


class AgreeTest(unittest.TestCase):
    """agree(): every rank takes the same (checkpoint, exit) decision in the same step."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.tmp)
        self.notice_path = os.path.join(self.tmp, "notice.json")
        patcher = mock.patch.dict(os.environ, {"RESUME_RUN_NOTICE_FILE": self.notice_path})
        patcher.start()
        self.addCleanup(patcher.stop)

    def _ranks(self, n):
        cks = [resume_run.Checkpointer(directory=os.path.join(self.tmp, "r%d" % i),
                                       install=False) for i in range(n)]
        return cks

    def _step(self, cks):
        """One step on every rank, with an all-reduce (MAX) over the ranks' flags."""
        flags = [[1 if c.requested() else 0, 1 if c.should_exit() else 0] for c in cks]
        reduced = [max(f[k] for f in flags) for k in range(2)]
        return [resume_run.agree(c, lambda mine: reduced) for c in cks]

    def test_a_request_on_one_rank_makes_every_rank_checkpoint_the_same_step(self):
        cks = self._ranks(3)
        self.assertEqual(self._step(cks), [(False, False)] * 3)
        cks[1]._on_signal(signal.SIGUSR1, None)   # only rank 1's agent has heard so far
        self.assertEqual(self._step(cks), [(True, False)] * 3)
        self.assertFalse(any(c.requested() for c in cks))   # handled everywhere
        self.assertEqual(self._step(cks), [(False, False)] * 3)

    def test_a_notice_on_one_node_makes_every_rank_exit_after_the_step(self):
        cks = self._ranks(2)
        with open(self.notice_path, "w") as f:
            json.dump({"kind": "preempt", "deadline_unix": None}, f)
        cks[0]._on_signal(signal.SIGUSR1, None)
        # Both see the notice file here (same environment); rank 1's request is not yet there.
        self.assertEqual(self._step(cks), [(True, True)] * 2)

    def test_a_notice_seen_before_its_signal_still_checkpoints_before_the_exit(self):
        # The agent writes the notice file, then signals: a step can fall in between, on
        # every rank. Leaving then without a checkpoint would lose the work since the last.
        cks = self._ranks(2)
        with open(self.notice_path, "w") as f:
            json.dump({"kind": "preempt", "deadline_unix": None}, f)
        self.assertEqual(self._step(cks), [(True, True)] * 2)
        self.assertFalse(any(c.requested() for c in cks))
        with open(self.notice_path, "w") as f:   # a notice that is not an exit: no request
            json.dump({"kind": "rebalance", "deadline_unix": None}, f)
        self.assertEqual(self._step(cks), [(False, False)] * 2)

    def test_without_torch_distributed_the_local_flags_are_the_decision(self):
        ck = self._ranks(1)[0]
        self.assertEqual(resume_run.agree(ck), (False, False))
        ck._on_signal(signal.SIGUSR1, None)
        self.assertEqual(resume_run.agree(ck), (True, False))
        self.assertFalse(ck.requested())

    def test_a_reduction_of_the_wrong_shape_is_refused(self):
        ck = self._ranks(1)[0]
        with self.assertRaises(ValueError):
            resume_run.agree(ck, lambda mine: [1])


if __name__ == "__main__":
    unittest.main()
