"""Lightning: a `Callback` that saves through the Trainer's own `save_checkpoint` on the agent's
signal. Works with both import names, `lightning.pytorch` and `pytorch_lightning`.

    import resume_run
    from resume_run.lightning import ResumeRunCallback

    trainer = Trainer(..., callbacks=[ResumeRunCallback()])
    trainer.fit(model, datamodule, ckpt_path=resume_run.restore_dir())

On the checkpoint signal, at the end of the current training batch, every rank agrees to save
(the strategy's reduce_boolean_decision) and the Trainer writes
`epoch=E-step=S.ckpt` into RESUME_RUN_CHECKPOINT_DIR: through `trainer.save_checkpoint` into
`.epoch=E-step=S.ckpt.tmp`, then renamed onto its name (the rename is the commit the agent
waits for, whatever TMPDIR Lightning's own atomic save uses). When the notice says the machine
is going, the Trainer stops after that save (`trainer.should_stop`). `ckpt_path` is None on a
fresh start and the restored `.ckpt` after a restore; Lightning's own resume puts back the
model, optimizers, schedulers, loops and the state of resumable data loaders. Lightning keeps
no RNG states in its checkpoints: the callback adds every rank's (Python, NumPy, torch CPU
and CUDA; resume_run.training.rng_state) to each checkpoint the Trainer writes, and puts the
rank's own back when training starts from one, so dropout and other random draws go on as in
a run that never stopped.

Lightning's SLURMEnvironment with `auto_requeue` takes SIGUSR1 (its requeue signal) to save
and requeue the job itself, the agent's default checkpoint signal. Lightning installs that
handler only when the signal has none yet, so creating this callback first (it installs its
handler) keeps the agent's meaning; if another handler took the signal by the time training
starts, the callback puts its own back and says so. Or give the agent another signal
(`--signal USR2`) or use `SLURMEnvironment(auto_requeue=False)`.

`ResumeRunCallback` derives from `lightning.pytorch.Callback` when `lightning` is installed,
else from `pytorch_lightning.Callback`; `callback_for(Callback)` makes the class for either
(`from pytorch_lightning import Callback`) when both are installed.
"""

import os
import signal
import sys

from . import Checkpointer, _fsync_dir, _fsync_path, _fsync_tree
from .training import rng_state, set_rng_state

__all__ = ["ResumeRunCallback", "callback_for"]

_classes = {}


def callback_for(base):
    """The ResumeRunCallback class deriving from `base` (a Lightning Callback class)."""
    if base not in _classes:
        _classes[base] = type("ResumeRunCallback", (_Mixin, base),
                              {"__module__": __name__, "__doc__": _Mixin.__doc__})
    return _classes[base]


class _Mixin:
    """Saves with `trainer.save_checkpoint` at the end of the batch in which the agent's signal
    came, and stops the Trainer after it when the notice says the machine is going.

    `dirpath` defaults to RESUME_RUN_CHECKPOINT_DIR; `checkpointer` is a resume_run.Checkpointer
    to share with other code. Create it before `trainer.fit()`: it installs the signal handler
    (which only sets a flag) from the main thread.
    """

    def __init__(self, dirpath=None, checkpointer=None):
        super().__init__()
        if checkpointer is None:
            checkpointer = Checkpointer(dirpath)
        self.checkpointer = checkpointer
        self.dirpath = checkpointer.directory if dirpath is None else dirpath
        self._restored_rng = None
        self._seen_step = None

    def state_dict(self):
        # Called on every rank for each checkpoint the Trainer writes (rank 0 writes it).
        return {"rng_states": _gather(rng_state())}

    def load_state_dict(self, state):
        states = state.get("rng_states") or []
        rank = _rank()
        # Put back when training starts, after Lightning's own restore.
        self._restored_rng = states[rank] if rank < len(states) else None

    def on_train_start(self, trainer, pl_module):
        self._seen_step = trainer.global_step
        if self._restored_rng is not None:
            set_rng_state(self._restored_rng)
            self._restored_rng = None
        ck = self.checkpointer
        current = signal.getsignal(ck.signum)
        if ck._installed and current != ck._on_signal:
            print("resume_run.lightning: %s had another handler (Lightning's SLURM requeue?); "
                  "the agent's checkpoint signal is ResumeRunCallback's again"
                  % signal.Signals(ck.signum).name, file=sys.stderr, flush=True)
            signal.signal(ck.signum, ck._on_signal)

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        # Only where the optimizer stepped (the same global_step on every rank): inside a
        # gradient-accumulation window the gradients so far are in no checkpoint, and the
        # resumed run would differ from an uninterrupted one. The request stays pending.
        stepped = trainer.global_step != self._seen_step
        self._seen_step = trainer.global_step
        if not stepped:
            return
        ck = self.checkpointer
        strategy = trainer.strategy
        if not strategy.reduce_boolean_decision(ck.requested(), all=False):
            return
        leave = strategy.reduce_boolean_decision(ck.should_exit(), all=False)
        ck.clear()
        name = "epoch=%d-step=%d.ckpt" % (trainer.current_epoch, trainer.global_step)
        final = os.path.join(self.dirpath, name)
        tmp = os.path.join(self.dirpath, "." + name + ".tmp")
        trainer.save_checkpoint(tmp)  # every rank calls it; rank 0 writes
        if trainer.is_global_zero:
            _wait_for_async_io(strategy)
            # A directory (the DeepSpeed and FSDP strategies' shards) down to every file.
            if os.path.isdir(tmp):
                _fsync_tree(tmp)
            else:
                _fsync_path(tmp)
            os.replace(tmp, final)
            _fsync_dir(self.dirpath)
        strategy.barrier("resume_run.lightning.save")
        if leave:
            # should_stop alone waits for min_epochs / min_steps; this machine is going.
            trainer.fit_loop.min_epochs = 0
            trainer.fit_loop.epoch_loop.min_steps = None
            trainer.should_stop = True


def _wait_for_async_io(strategy):
    """Under AsyncCheckpointIO, save_checkpoint only queued the write on the plugin's one
    worker thread: a no-op queued behind it returns once the file is written (and its
    error, if any, is raised), so that it is synced and renamed whole."""
    io = getattr(strategy, "checkpoint_io", None)
    executor = getattr(io, "_executor", None)
    if executor is None or not hasattr(executor, "submit"):
        return
    executor.submit(lambda: None).result()
    error = getattr(io, "_error", None)
    if error is not None:
        raise error


def _dist():
    try:
        import torch.distributed as dist
    except ImportError:
        return None
    return dist if dist.is_available() and dist.is_initialized() else None


def _rank():
    dist = _dist()
    return dist.get_rank() if dist is not None else 0


def _gather(obj):
    """[obj of rank 0, obj of rank 1, ...] on every rank."""
    dist = _dist()
    if dist is None or dist.get_world_size() == 1:
        return [obj]
    out = [None] * dist.get_world_size()
    dist.all_gather_object(out, obj)
    return out


def _default_base():
    try:
        from lightning.pytorch import Callback
    except ImportError:
        from pytorch_lightning import Callback
    return Callback


ResumeRunCallback = callback_for(_default_base())
