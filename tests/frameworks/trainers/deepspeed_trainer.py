"""DeepSpeed's engine on the CPU (DS_ACCELERATOR=cpu, one process under torch.distributed.run)
with resume_run.agree: an MLP with dropout, DeepSpeed's AdamW (torch's implementation) and
a warmup schedule, shuffled data. On the signal, engine.save_checkpoint writes global_stepN/
and then `latest` (the commit); the RNG states and the step go in its client_state (DeepSpeed
keeps no RNG states of its own). On resume engine.load_checkpoint reads `latest`, which
restore writes again. The lines a user adds are marked "resume-run"."""
import common  # noqa: I100 (sets seeds and threads first)

import os

import deepspeed
import torch
from torch import nn

import resume_run
from resume_run.training import ResumableSampler, rng_state, set_rng_state


def main():
    a = common.parse()
    ck = resume_run.Checkpointer()  # resume-run: the handler, first
    model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Dropout(0.2), nn.Linear(32, 1))
    config = {"train_batch_size": 4, "steps_per_print": 10**9,
              "optimizer": {"type": "AdamW", "params": {"lr": 1e-2, "torch_adam": True}},
              "scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": 5}}}
    engine, _, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(),
                                           config=config)
    x = torch.randn(40, 8, generator=torch.Generator().manual_seed(5))
    data = torch.utils.data.TensorDataset(x, x.sum(dim=1, keepdim=True).sin())
    sampler = ResumableSampler(len(data), seed=3)
    loader = torch.utils.data.DataLoader(data, batch_size=4, sampler=sampler, drop_last=True,
                                         generator=torch.Generator())
    out = resume_run.checkpoint_dir()
    if a.crash_at_save:
        # save_checkpoint: the model states, then the optimizer states (torch.save), then
        # `latest`. Crash half-way through the first file of the Nth save.
        common.on_nth_call(engine, "save_checkpoint", a.crash_at_save,
                           lambda: common.crash_in(torch, "save", 1, common.torch_save_half))

    step = 0
    if resume_run.restore_dir():  # resume-run: DeepSpeed's own resume reads `latest`
        _, client = engine.load_checkpoint(out)
        sampler.load_state_dict(client["sampler"])
        set_rng_state(client["rng"])
        step = client["step"]
        common.log("resumed at step %d" % step)
    else:
        common.log("fresh start")
    while step < a.steps:
        for xb, yb in loader:
            loss = nn.functional.mse_loss(engine(xb), yb)
            engine.backward(loss)
            engine.step()
            step += 1
            common.pace(a, step)
            save, leave = resume_run.agree(ck)  # resume-run: the same decision on every rank
            if save or (a.save_every and step % a.save_every == 0):
                engine.save_checkpoint(out, client_state={  # resume-run: global_stepN, then latest
                    "step": step, "sampler": sampler.state_dict(), "rng": rng_state()})
                common.log("saved at step %d" % step)
            if leave:
                common.log("left at step %d for the notice" % step)
                return
            if step == a.steps:
                break
    common.log("done at step %d" % step)
    common.write_weights(engine.module, a.out)


if __name__ == "__main__":
    main()
