"""A plain PyTorch loop with resume_run's Checkpointer: an MLP with dropout (the RNG states
matter), AdamW, on shuffled data through resume_run.training.ResumableSampler (the data
position matters). The checkpoint, one safetensors file written by save_state_dict, holds the
model, the optimizer, the RNG states, the sampler's position and the step. The lines a user
adds are marked "resume-run"."""
import common  # noqa: I100 (sets seeds and threads first)

import os

import torch
from torch import nn

import resume_run
from resume_run.training import ResumableSampler, rng_state, set_rng_state


def main():
    a = common.parse()
    ck = resume_run.Checkpointer()  # resume-run: the handler, first
    model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Dropout(0.2), nn.Linear(32, 1))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    x = torch.randn(40, 8, generator=torch.Generator().manual_seed(5))
    data = torch.utils.data.TensorDataset(x, x.sum(dim=1, keepdim=True).sin())
    sampler = ResumableSampler(len(data), seed=3)
    # A generator of its own: a new DataLoader iterator draws a seed from it, not from the
    # global RNG that dropout uses (a resumed loop makes its iterator at another moment).
    loader = torch.utils.data.DataLoader(data, batch_size=4, sampler=sampler, drop_last=True,
                                         generator=torch.Generator())

    step, restored = 0, resume_run.restore_dir()
    if restored:  # resume-run: everything the loop needs to go on as if it never stopped
        state = resume_run.load_state_dict(os.path.join(restored, "state.safetensors"))
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        sampler.load_state_dict(state["sampler"])
        set_rng_state(state["rng"])
        step = state["step"]
        common.log("resumed at step %d" % step)
    else:
        common.log("fresh start")
    saves = 0
    while step < a.steps:
        for xb, yb in loader:
            loss = nn.functional.mse_loss(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            step += 1
            common.pace(a, step)
            asked = ck.requested()
            if asked or (a.save_every and step % a.save_every == 0):
                saves += 1
                with ck.commit("step-%d" % step) as tmp:  # resume-run: .step-N.tmp, renamed
                    state = {"model": model.state_dict(), "optimizer": opt.state_dict(),
                             "sampler": sampler.state_dict(), "rng": rng_state(), "step": step}
                    path = os.path.join(tmp, "state.safetensors")
                    if saves == a.crash_at_save:
                        common.crash_in(resume_run, "_fsync_tree", 1)
                    resume_run.save_state_dict(state, path)
                common.log("saved at step %d" % step)
            if asked and ck.should_exit():  # resume-run: the machine is going
                common.log("left at step %d for the notice" % step)
                return
            if step == a.steps:
                break
    common.log("done at step %d" % step)
    common.write_weights(model, a.out)


if __name__ == "__main__":
    main()
