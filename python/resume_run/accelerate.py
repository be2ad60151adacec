"""HF accelerate: `Accelerator.save_state` / `load_state` on the agent's signal.

    import resume_run
    from resume_run.accelerate import ResumeRun

    accelerator = Accelerator()
    model, opt, loader, sched = accelerator.prepare(model, opt, loader, sched)
    rr = ResumeRun(accelerator)                 # installs the signal handler (a flag)
    step = rr.load_state()                      # the restored checkpoint's step, 0 on a fresh start
    batches = accelerator.skip_first_batches(loader, step % len(loader)) if step else loader
    ...                                         # after each optimizer step (step += 1):
        save, leave = rr.agree()                # the same answer on every process
        if save or step % 1000 == 0:
            rr.save_state(step)                 # step-N/, committed by a rename
        if leave:
            break                               # the notice says the machine is going

`save_state(step)` has every process write `Accelerator.save_state` into
`.step-N.tmp/` in RESUME_RUN_CHECKPOINT_DIR (model, optimizer, scheduler, sampler and
per-process RNG states, registered objects); the main process then renames it to `step-N`,
which is the commit the agent waits for. `load_state()` is `Accelerator.load_state` of
RESUME_RUN_RESTORE_DIR. accelerate's save_state writes its directory in place with no commit
of its own, so saving it directly into the checkpoint dir would never be persisted.
"""

import os

from . import Checkpointer, _fsync_dir, _fsync_tree, _remove, agree, restore_dir, step_of

__all__ = ["ResumeRun"]


class ResumeRun:
    """resume-run for an `accelerate.Accelerator`; `directory` defaults to
    RESUME_RUN_CHECKPOINT_DIR, `checkpointer` to a new resume_run.Checkpointer."""

    def __init__(self, accelerator, directory=None, checkpointer=None):
        self.accelerator = accelerator
        self.checkpointer = checkpointer if checkpointer is not None else Checkpointer(directory)
        self.directory = self.checkpointer.directory

    def agree(self):
        """(save, leave), the same on every process: see resume_run.agree."""
        return agree(self.checkpointer)

    def load_state(self, **kwargs):
        """Load the restored checkpoint, if any; return its step (0 when there is none)."""
        path = restore_dir()
        if not path:
            return 0
        self.accelerator.load_state(path, **kwargs)
        return step_of(path) or 0

    def save_state(self, step, **kwargs):
        """Save the state as `step-<step>`, committed by a rename; return its path. Call it on
        every process."""
        acc = self.accelerator
        name = "step-%d" % step
        tmp = os.path.join(self.directory, "." + name + ".tmp")
        final = os.path.join(self.directory, name)
        if acc.is_main_process:
            _remove(tmp)
        acc.wait_for_everyone()
        # ProjectConfiguration(automatic_checkpoint_naming=True) makes save_state ignore the
        # directory given and write project_dir/checkpoints/checkpoint_<n> in place, which
        # nothing commits (and the rename below failed): off for this save.
        config = getattr(acc, "project_configuration", None)
        automatic = getattr(config, "automatic_checkpoint_naming", False)
        if automatic:
            config.automatic_checkpoint_naming = False
        try:
            acc.save_state(tmp, **kwargs)
        finally:
            if automatic:
                config.automatic_checkpoint_naming = True
        acc.wait_for_everyone()
        if acc.is_main_process:
            _fsync_tree(tmp)
            _remove(final)
            os.rename(tmp, final)
            _fsync_dir(self.directory)
        acc.wait_for_everyone()
        self.checkpointer.clear()
        return final
