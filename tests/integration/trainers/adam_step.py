"""Commits step-4097: a small MLP and its Adam state from a run past step 2048, as torch.save
(optimizer.pt) and as safetensors (optimizer.safetensors, model.safetensors), beside F32
position ids. The MLP trains a few real steps; then Adam's `step` (an F32 scalar tensor in
torch's optimizer state) is set to 4097, where 4097 steps would take seconds: FP16 holds
integers exactly only up to 2048 and would make it 4096, BF16 only up to 256.

usage: adam_step.py
"""
import os

import torch

import resume_run


def main():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.Tanh(), torch.nn.Linear(64, 1))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x, y = torch.randn(128, 64), torch.randn(128, 1)
    for _ in range(5):
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
    for state in opt.state.values():
        state["step"].fill_(4097.0)
    ck = resume_run.Checkpointer()
    with ck.commit("step-4097") as d:
        torch.save(opt.state_dict(), os.path.join(d, "optimizer.pt"))
        resume_run.save_state_dict(opt.state_dict(), os.path.join(d, "optimizer.safetensors"))
        resume_run.save_state_dict(model.state_dict(), os.path.join(d, "model.safetensors"))
        torch.save({"position_ids": torch.arange(2000, 4100, dtype=torch.float32)},
                   os.path.join(d, "buffers.pt"))
    print("committed step-4097", flush=True)


if __name__ == "__main__":
    main()
