"""What a plain PyTorch loop must save besides the weights and the optimizer, so that a resumed
run sees the same random numbers and the same batches as one that never stopped.

    from resume_run.training import ResumableSampler, rng_state, set_rng_state
    sampler = ResumableSampler(len(dataset), seed=0)          # shuffles per epoch from (seed, epoch)
    loader = DataLoader(dataset, batch_size=32, sampler=sampler, drop_last=True,
                        generator=torch.Generator())       # see below
    ...
    state = {"model": model.state_dict(), "optimizer": opt.state_dict(),
             "rng": rng_state(), "sampler": sampler.state_dict(), "step": step}
    resume_run.save_state_dict(state, f"{tmp}/state.safetensors")
    ...
    state = resume_run.load_state_dict(f"{resume_run.restore_dir()}/state.safetensors")
    sampler.load_state_dict(state["sampler"]); set_rng_state(state["rng"])

Give the DataLoader a generator of its own: each new DataLoader iterator draws a seed from
its generator, by default the global RNG that dropout and friends use, and a resumed loop
makes its iterator at another moment than the run that never stopped (after the restore of
the RNG states, not at the start of the epoch), so its random numbers would be one draw off.

Everything returned here is made of ints, lists and tensors, which save_state_dict stores.
torch (and NumPy, when the program imported it) are imported only when used.
"""

import random
import sys

__all__ = ["rng_state", "set_rng_state", "ResumableSampler"]


def rng_state():
    """The states of Python's `random`, NumPy's global generator (when NumPy is imported) and
    torch's CPU generator and CUDA generators (when CUDA is available), as a dict of lists,
    ints and tensors."""
    import torch
    version, internal, gauss = random.getstate()
    state = {"python": [version, list(internal), gauss], "torch": torch.get_rng_state()}
    np = sys.modules.get("numpy")
    if np is not None:
        kind, keys, pos, has_gauss, cached = np.random.get_state()
        state["numpy"] = [kind, [int(k) for k in keys], int(pos), int(has_gauss), float(cached)]
    if torch.cuda.is_available():
        state["cuda"] = list(torch.cuda.get_rng_state_all())
    return state


def set_rng_state(state):
    """Put back the generators saved by rng_state() (CUDA's only when CUDA is available here)."""
    import torch
    version, internal, gauss = state["python"]
    random.setstate((version, tuple(internal), gauss))
    torch.set_rng_state(state["torch"])
    if "numpy" in state:
        import numpy as np
        kind, keys, pos, has_gauss, cached = state["numpy"]
        np.random.set_state((kind, np.array(keys, dtype=np.uint32), pos, has_gauss, cached))
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


class ResumableSampler:
    """A DataLoader sampler over `n` items that can say where it is and start again there.

    Each epoch's order is a permutation drawn from (seed, epoch) by a generator of its own
    (shuffle=False: 0..n-1), so it does not depend on, or disturb, the global RNG. The
    sampler counts the indices it has handed out; state_dict() is {"epoch", "position"} and
    load_state_dict() makes the next iteration continue from there, finishing that epoch
    before starting the next. With DataLoader(num_workers=0) the indices handed out are
    exactly the batches the loop took; worker processes fetch ahead, so with workers save
    `{"epoch": e, "position": batches_taken * batch_size}` yourself.
    """

    def __init__(self, n, shuffle=True, seed=0):
        if n < 0:
            raise ValueError("n must be >= 0")
        self.n, self.shuffle, self.seed = int(n), bool(shuffle), int(seed)
        self.epoch, self.position = 0, 0

    def _order(self, epoch):
        if not self.shuffle:
            return list(range(self.n))
        import torch
        g = torch.Generator()
        g.manual_seed(self.seed * 1_000_003 + epoch)
        return torch.randperm(self.n, generator=g).tolist()

    def __len__(self):
        return self.n

    def __iter__(self):
        """One epoch: from the saved position to its end; the next iteration is the next
        epoch."""
        if self.position >= self.n:
            # The last epoch was handed out whole but its iterator never ran to its end (a
            # loop that takes len(loader) batches, as Lightning's does): this is the next.
            self.epoch, self.position = self.epoch + 1, 0
        order = self._order(self.epoch)
        while self.position < self.n:
            i = order[self.position]
            self.position += 1
            yield i
        self.epoch, self.position = self.epoch + 1, 0

    def state_dict(self):
        if self.position >= self.n:  # the epoch is spent, its iterator just has not ended
            return {"epoch": self.epoch + 1, "position": 0}
        return {"epoch": self.epoch, "position": self.position}

    def load_state_dict(self, state):
        epoch, position = int(state["epoch"]), int(state["position"])
        if epoch < 0 or not 0 <= position <= self.n:
            raise ValueError("sampler state %r does not fit %d items" % (state, self.n))
        self.epoch, self.position = epoch, position
