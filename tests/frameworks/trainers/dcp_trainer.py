"""torch.distributed.checkpoint under torch.distributed.run, with resume_run.dcp.ResumeRun: a
DDP MLP with dropout over gloo, each rank reading its own shard of a shuffled dataset
(DistributedSampler.set_epoch), AdamW. The checkpoint holds the model and optimizer
(get_state_dict), each rank's RNG state and the step; periodic saves use dcp.async_save, the
save the agent asks for is blocking. The lines a user adds are marked "resume-run"."""
import common  # noqa: I100 (sets seeds and threads first)


import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch import nn
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
from torch.distributed.checkpoint.stateful import Stateful

from resume_run.dcp import ResumeRun


class AppState(Stateful):
    """What DCP saves and loads: model and optimizer, and this rank's RNG state (a key of its
    own per rank: DCP keeps one copy of an object saved under the same key by every rank)."""

    def __init__(self, model, opt):
        self.model, self.opt = model, opt

    def state_dict(self):
        msd, osd = get_state_dict(self.model, self.opt)
        return {"model": msd, "optim": osd, "rng_%d" % dist.get_rank(): torch.get_rng_state()}

    def load_state_dict(self, state):
        set_state_dict(self.model, self.opt, model_state_dict=state["model"],
                       optim_state_dict=state["optim"])
        torch.set_rng_state(state["rng_%d" % dist.get_rank()])


def main():
    a = common.parse()
    dist.init_process_group("gloo")
    rr = ResumeRun()  # resume-run: the handler, on every rank
    rank = dist.get_rank()
    torch.manual_seed(100 + rank)  # dropout differs per rank, as on real hardware
    g = torch.Generator().manual_seed(21)
    base = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Dropout(0.2), nn.Linear(32, 1))
    for p in base.parameters():  # the same start on every rank, from its own generator
        with torch.no_grad():
            p.copy_(torch.randn(p.shape, generator=g) * 0.3)
    model = nn.parallel.DistributedDataParallel(base)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    x = torch.randn(48, 8, generator=torch.Generator().manual_seed(5))
    data = torch.utils.data.TensorDataset(x, x.sum(dim=1, keepdim=True).sin())
    sampler = torch.utils.data.distributed.DistributedSampler(data, shuffle=True, seed=9,
                                                              drop_last=True)
    loader = torch.utils.data.DataLoader(data, batch_size=4, sampler=sampler, drop_last=True,
                                         generator=torch.Generator())  # see plain_trainer
    state = {"app": AppState(model, opt)}
    if a.crash_at_save and rank == 0:
        # DCP writes every rank's shard, then the coordinator (rank 0) writes .metadata in
        # FileSystemWriter.finish: rank 0 crashes there, after every shard is on disk.
        common.crash_in(dcp.FileSystemWriter, "finish", a.crash_at_save)

    step = rr.load(state)  # resume-run: dcp.load of the restored step-N
    common.log("resumed at step %d" % step if step else "fresh start")
    epoch, skip = divmod(step, len(loader))
    while step < a.steps:
        sampler.set_epoch(epoch)
        for i, (xb, yb) in enumerate(loader):
            if i < skip:
                continue
            loss = nn.functional.mse_loss(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            step += 1
            common.pace(a, step)
            save, leave = rr.agree()  # resume-run: all-reduce of the flags, the same on every rank
            if save or leave:
                rr.save(state, step)  # resume-run: dcp.save into step-N, .metadata last
                common.log("saved at step %d" % step)
            elif a.save_every and step % a.save_every == 0:
                rr.save(state, step, blocking=not hasattr(dcp, "async_save"))
            if leave:
                rr.wait()
                common.log("left at step %d for the notice" % step)
                dist.destroy_process_group()
                return
            if step == a.steps:
                break
        skip = 0
        epoch += 1
    rr.wait()
    common.log("done at step %d" % step)
    if rank == 0:
        common.write_weights(model.module, a.out)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
