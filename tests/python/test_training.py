#!/usr/bin/env python3
"""Tests for resume_run.training: the RNG states and the data position of a plain PyTorch loop.

Run: /usr/bin/python3 tests/python/test_training.py -v   (Debian's python3-torch)
"""
import os
import random
import shutil
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.normpath(os.path.join(HERE, "..", "..", "python")))

import torch  # noqa: E402

import resume_run  # noqa: E402
from resume_run.training import ResumableSampler, rng_state, set_rng_state  # noqa: E402


class TestResumableSampler(unittest.TestCase):

    def batches(self, sampler, n, batch_size=3):
        """The first n batches of a DataLoader over the sampler, across epochs."""
        loader = torch.utils.data.DataLoader(list(range(sampler.n)), batch_size=batch_size,
                                             sampler=sampler, drop_last=True)
        out = []
        while len(out) < n:
            for b in loader:
                out.append(b.tolist())
                if len(out) == n:
                    break
        return out

    def test_resumed_sampler_gives_the_batches_of_one_that_never_stopped(self):
        for stop in (1, 3, 4, 5, 9):  # mid-epoch, at an epoch's last full batch, later epochs
            whole = self.batches(ResumableSampler(14, seed=5), 12)
            first = ResumableSampler(14, seed=5)
            before = self.batches(first, stop)
            again = ResumableSampler(14, seed=5)
            again.load_state_dict(first.state_dict())
            self.assertEqual(before + self.batches(again, 12 - stop), whole, stop)

    def test_each_epoch_is_a_permutation_from_seed_and_epoch(self):
        s = ResumableSampler(10, seed=1)
        e0, e1 = list(s), list(s)
        self.assertEqual(sorted(e0), list(range(10)))
        self.assertNotEqual(e0, e1)
        self.assertEqual(list(ResumableSampler(10, seed=1)), e0)
        self.assertEqual(list(ResumableSampler(4, shuffle=False)), [0, 1, 2, 3])
        self.assertEqual(s.state_dict(), {"epoch": 2, "position": 0})

    def test_an_epoch_taken_by_count_leaves_no_empty_epoch(self):
        # Lightning takes len(loader) batches and never asks for one more: the sampler's
        # iterator is left at its end without finishing. The next epoch still has batches
        # (it had none, every other epoch), each a permutation of its own.
        s = ResumableSampler(12, seed=2)
        loader = torch.utils.data.DataLoader(list(range(12)), batch_size=3, sampler=s)
        epochs = []
        for _ in range(4):
            it = iter(loader)
            epochs.append(sorted(i for _ in range(len(loader)) for i in next(it).tolist()))
            del it
        self.assertEqual(epochs, [list(range(12))] * 4)
        self.assertEqual(s.state_dict(), {"epoch": 4, "position": 0})

    def test_sampler_leaves_the_global_rng_alone(self):
        torch.manual_seed(3)
        expect = torch.rand(2)
        torch.manual_seed(3)
        list(ResumableSampler(20, seed=9))
        self.assertTrue(torch.equal(torch.rand(2), expect))

    def test_bad_state_is_refused(self):
        s = ResumableSampler(5)
        for bad in ({"epoch": -1, "position": 0}, {"epoch": 0, "position": 6}):
            with self.assertRaises(ValueError):
                s.load_state_dict(bad)


class TestRngState(unittest.TestCase):

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="resume-run-test-")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def test_states_survive_a_safetensors_file(self):
        import numpy as np
        random.seed(1)
        np.random.seed(2)
        torch.manual_seed(3)
        random.random()
        np.random.rand()
        torch.rand(1)
        path = os.path.join(self.tmp, "rng.safetensors")
        resume_run.save_state_dict({"rng": rng_state()}, path)
        expect = (random.random(), float(np.random.rand()), torch.rand(3))
        random.seed(99)
        np.random.seed(99)
        torch.manual_seed(99)
        set_rng_state(resume_run.load_state_dict(path)["rng"])
        got = (random.random(), float(np.random.rand()), torch.rand(3))
        self.assertEqual(got[:2], expect[:2])
        self.assertTrue(torch.equal(got[2], expect[2]))


if __name__ == "__main__":
    unittest.main()
