"""torch.distributed.checkpoint (DCP) under torchrun: save on the agent's signal, on every rank
at the same step.

    import resume_run
    from resume_run.dcp import ResumeRun

    dist.init_process_group("gloo")             # or nccl; under torchrun
    rr = ResumeRun()                            # installs the signal handler (a flag), every rank
    state = {"app": AppState(model, opt)}       # Stateful objects and tensors, as dcp.save takes
    step = rr.load(state)                       # dcp.load of the restored step-N; 0 on a fresh start
    ...                                         # after each step (step += 1), on every rank:
        save, leave = rr.agree()                # all-reduce (MAX) of the flags: same on every rank
        if save or leave:
            rr.save(state, step)                # dcp.save into step-N; .metadata is the commit
        elif step % 1000 == 0:
            rr.save(state, step, blocking=False)  # dcp.async_save where this torch has it
        if leave:
            break

DCP writes every rank's shard (`__R_0.distcp`) and then the coordinator's `.metadata`, the
marker the agent waits for under `--commit auto`. A save asked for by the agent should be
blocking: the agent persists it once `.metadata` exists, and the trainer must not leave
before. An asynchronous save still running is waited for before the next save and by
`wait()`.
"""

import os

import torch.distributed.checkpoint as dcp

from . import Checkpointer, agree, restore_dir, step_of

__all__ = ["ResumeRun"]


class ResumeRun:
    """resume-run for torch.distributed.checkpoint; `directory` defaults to
    RESUME_RUN_CHECKPOINT_DIR, `checkpointer` to a new resume_run.Checkpointer."""

    def __init__(self, directory=None, checkpointer=None):
        self.checkpointer = checkpointer if checkpointer is not None else Checkpointer(directory)
        self.directory = self.checkpointer.directory
        self._pending = None
        self._async_group = None

    def agree(self):
        """(save, leave), the same on every rank: see resume_run.agree."""
        return agree(self.checkpointer)

    def load(self, state):
        """dcp.load the restored checkpoint into `state`, if any; return its step (0 when
        there is none)."""
        path = restore_dir()
        if not path:
            return 0
        dcp.load(state, checkpoint_id=path)
        return step_of(path) or 0

    def save(self, state, step, blocking=True):
        """dcp.save `state` into `step-<step>`, or dcp.async_save when `blocking` is False and
        this torch has it (2.3 and later); return the checkpoint's path. Call it on every
        rank."""
        self.wait()
        path = os.path.join(self.directory, "step-%d" % step)
        if blocking or not hasattr(dcp, "async_save"):
            dcp.save(state, checkpoint_id=path)
        else:
            # The save's collectives run on a thread of their own: give them a process group
            # of their own, so they never interleave with the training loop's (agree()'s
            # all-reduce among them) on the default group.
            if self._async_group is None:
                import torch.distributed as dist
                self._async_group = dist.new_group(backend="gloo")
            self._pending = dcp.async_save(state, checkpoint_id=path,
                                           process_group=self._async_group)
        self.checkpointer.clear()
        return path

    def wait(self):
        """Wait for an asynchronous save still being written."""
        pending, self._pending = self._pending, None
        if pending is not None:
            pending.result()
