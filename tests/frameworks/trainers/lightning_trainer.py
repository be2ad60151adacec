"""Lightning's Trainer with resume_run.lightning.ResumeRunCallback: a small MLP with dropout
(the RNG states matter) on shuffled data read through a resumable loader (the data position
matters), AdamW and a step scheduler. --package picks the import name: lightning.pytorch or
pytorch_lightning; --accumulate, --min-epochs and --async-io are the Trainer's. The lines a user adds
are marked "resume-run"."""
import common  # noqa: I100 (sets seeds and threads first)

import importlib

import torch
from torch import nn

import resume_run
from resume_run.training import ResumableSampler


def package_arg(ap):
    ap.add_argument("--package", default="lightning.pytorch",
                    choices=["lightning.pytorch", "pytorch_lightning"])
    ap.add_argument("--accumulate", type=int, default=1, help="accumulate_grad_batches")
    ap.add_argument("--min-epochs", type=int, default=None, help="Trainer's min_epochs")
    ap.add_argument("--async-io", action="store_true",
                    help="plugins=[AsyncCheckpointIO()]: saves written on a thread of their own")
    ap.add_argument("--save-last", action="store_true",
                    help="ModelCheckpoint(save_last=True): last.ckpt saved again with each save")


a = common.parse(package_arg)
pl = importlib.import_module(a.package)
if a.package == "pytorch_lightning":
    from resume_run.lightning import callback_for
    ResumeRunCallback = callback_for(pl.Callback)
else:
    from resume_run.lightning import ResumeRunCallback


class Net(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Dropout(0.2), nn.Linear(32, 1))

    def training_step(self, batch, batch_idx):
        x, y = batch
        return nn.functional.mse_loss(self.net(x), y)

    def configure_optimizers(self):
        opt = torch.optim.AdamW(self.parameters(), lr=1e-2)
        return [opt], [torch.optim.lr_scheduler.StepLR(opt, step_size=5, gamma=0.7)]


class ResumableLoader(torch.utils.data.DataLoader):
    """A DataLoader whose position Lightning saves and restores (it has state_dict and
    load_state_dict): the sampler's epoch and position."""

    def __init__(self, dataset, batch_size):
        super().__init__(dataset, batch_size=batch_size, drop_last=True,
                         sampler=ResumableSampler(len(dataset), seed=3),
                         generator=torch.Generator())  # not the global RNG: see plain_trainer

    def state_dict(self):
        return self.sampler.state_dict()

    def load_state_dict(self, state):
        self.sampler.load_state_dict(state)


class Pace(pl.Callback):
    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        if a.accumulate > 1 and (batch_idx + 2) % a.accumulate == 0:
            # The batch before a window's last takes no time, the others do: a notice's
            # signal is seen (at the next batch's end) inside a window, not at its end.
            common.log("step %d" % trainer.global_step)
        else:
            common.pace(a, trainer.global_step)

    def on_save_checkpoint(self, trainer, pl_module, checkpoint):
        common.log("saved at step %d" % trainer.global_step)


def main():
    callback = ResumeRunCallback()  # resume-run: the handler, before training starts
    g = torch.Generator().manual_seed(5)
    x = torch.randn(40, 8, generator=g)
    data = torch.utils.data.TensorDataset(x, x.sum(dim=1, keepdim=True).sin())
    callbacks = [callback, Pace()]
    if a.save_every:
        callbacks.append(pl.callbacks.ModelCheckpoint(
            dirpath=resume_run.checkpoint_dir(), every_n_train_steps=a.save_every, save_top_k=-1,
            save_last=a.save_last))
    if a.crash_at_save:
        # Lightning's atomic save: torch.save into memory, then the file written through an
        # fsspec transaction (a temp file moved onto the name). Crash before that move.
        import fsspec.implementations.local as local
        common.on_nth_call(pl.Trainer, "save_checkpoint", a.crash_at_save,
                           lambda: common.crash_in(local.LocalFileOpener, "commit", 1))
    trainer = pl.Trainer(max_steps=a.steps, accelerator="gpu" if common.DEVICE == "cuda" else "cpu",
                         devices=1, logger=False,
                         enable_progress_bar=False, enable_model_summary=False,
                         enable_checkpointing=bool(a.save_every), callbacks=callbacks,
                         accumulate_grad_batches=a.accumulate, min_epochs=a.min_epochs,
                         plugins=[importlib.import_module(a.package + ".plugins.io")
                                  .AsyncCheckpointIO()] if a.async_io else None,
                         deterministic=True)
    model = Net()
    restored = resume_run.restore_dir()
    common.log("resumed at step %d" % resume_run.step_of(restored) if restored else "fresh start")
    trainer.fit(model, ResumableLoader(data, 4), ckpt_path=restored)  # resume-run: Lightning's own resume
    if trainer.global_step < a.steps:
        common.log("left at step %d for the notice" % trainer.global_step)
        return
    common.log("done at step %d" % trainer.global_step)
    common.write_weights(model, a.out)


if __name__ == "__main__":
    main()
