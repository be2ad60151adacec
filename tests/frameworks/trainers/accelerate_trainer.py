"""accelerate's Accelerator with resume_run.accelerate.ResumeRun: an MLP with dropout, AdamW, a
linear schedule, a shuffled DataLoader prepared by accelerate; on resume, accelerate's
load_state (model, optimizer, scheduler, RNG states) and skip_first_batches for the data
position (with a seedable sampler, so the resumed epoch has the same order). Runs alone or under torchrun (one process per rank, gloo). The lines a user adds
are marked "resume-run"."""
import common  # noqa: I100 (sets seeds and threads first)

import os

import torch
from accelerate import Accelerator
from accelerate.utils import DataLoaderConfiguration, ProjectConfiguration, set_seed
from torch import nn

import resume_run
from resume_run.accelerate import ResumeRun


def naming_arg(ap):
    ap.add_argument("--auto-naming", action="store_true",
                    help="ProjectConfiguration(automatic_checkpoint_naming=True)")


def main():
    a = common.parse(naming_arg)
    # automatic_checkpoint_naming makes save_state write project_dir/checkpoints/checkpoint_<n>
    # whatever directory it is given: ResumeRun's save must still land under its own name.
    project = ProjectConfiguration(
        project_dir=os.path.join(resume_run.checkpoint_dir(), ".project"),
        automatic_checkpoint_naming=True) if a.auto_naming else None
    # A seedable sampler: each epoch's order comes from (seed, epoch), so the resumed epoch
    # is shuffled as it was and skip_first_batches lands where the save was.
    accelerator = Accelerator(cpu=True, project_config=project,
                              dataloader_config=DataLoaderConfiguration(use_seedable_sampler=True))
    rr = ResumeRun(accelerator)  # resume-run: the handler, on every process
    set_seed(11)
    model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Dropout(0.2), nn.Linear(32, 1))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0 / (1 + 0.1 * s))
    g = torch.Generator().manual_seed(5)
    x = torch.randn(48, 8, generator=g)
    data = torch.utils.data.TensorDataset(x, x.sum(dim=1, keepdim=True).sin())
    loader = torch.utils.data.DataLoader(data, batch_size=4, shuffle=True, drop_last=True,
                                         generator=torch.Generator())  # see plain_trainer
    model, opt, loader, sched = accelerator.prepare(model, opt, loader, sched)
    if a.crash_at_save:
        # save_state: the model (safetensors), then the optimizer (torch.save), scheduler,
        # sampler and RNG states. Crash half-way through the optimizer of the Nth save.
        common.on_nth_call(accelerator, "save_state", a.crash_at_save,
                           lambda: common.crash_in(torch, "save", 1, common.torch_save_half))

    step = rr.load_state()  # resume-run: accelerate's own load_state of the restored step-N
    common.log("resumed at step %d" % step if step else "fresh start")
    epoch, skip = divmod(step, len(loader))
    while step < a.steps:
        loader.set_epoch(epoch)  # the shuffle of each epoch, as an uninterrupted run had it
        batches = accelerator.skip_first_batches(loader, skip) if skip else loader
        skip = 0
        for xb, yb in batches:
            loss = nn.functional.mse_loss(model(xb), yb)
            accelerator.backward(loss)
            opt.step()
            sched.step()
            opt.zero_grad()
            step += 1
            common.pace(a, step)
            save, leave = rr.agree()  # resume-run: every process takes the same decision
            if save or (a.save_every and step % a.save_every == 0):
                rr.save_state(step)  # resume-run: save_state into step-N, renamed when whole
                common.log("saved at step %d" % step)
            if leave:
                common.log("left at step %d for the notice" % step)
                return
            if step == a.steps:
                break
        epoch += 1
    common.log("done at step %d" % step)
    if accelerator.is_main_process:
        common.write_weights(accelerator.unwrap_model(model), a.out)


if __name__ == "__main__":
    main()
