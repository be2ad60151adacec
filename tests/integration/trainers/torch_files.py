"""Commits checkpoints made by real torch.save, for the torch.save format test.

usage: torch_files.py MODE
  hf-lightning  step-1: an HF-Trainer-shaped checkpoint of a small TinyGPT (model.safetensors,
                optimizer.pt, scheduler.pt, rng_state.pth, trainer_state.json), a
                Lightning-shaped lightning.ckpt, and pytorch_model.bin (a plain state_dict,
                which torch.load takes with weights_only=True); step-2: the same files again
                (nothing changed: every record is reused)
  odd           step-1: a legacy (non-zip) torch.save file, one with compressed entries, a
                .bin that is not torch at all
"""
import io
import os
import sys
import zipfile

import torch

import resume_run
import torch_checkpoint


def main(mode):
    ck = resume_run.Checkpointer()
    if mode == "hf-lightning":
        args = torch_checkpoint.parse_args(["--out", "unused", "--steps", "2", "--dim", "64",
                                            "--vocab", "512"])
        hf, lightning = torch_checkpoint.train(args)
        for name in ("step-1", "step-2"):
            with ck.commit(name) as d:
                torch_checkpoint.write_torch(d, hf, lightning)
                torch.save(hf["model"], os.path.join(d, "pytorch_model.bin"))
            print(f"committed {name}", flush=True)
    elif mode == "odd":
        with ck.commit("step-1") as d:
            w = {"w": torch.linspace(-1, 1, 4096)}
            torch.save(w, os.path.join(d, "legacy.pt"), _use_new_zipfile_serialization=False)
            buf = io.BytesIO()
            torch.save(w, buf)
            with zipfile.ZipFile(buf) as src, \
                 zipfile.ZipFile(os.path.join(d, "deflated.pt"), "w", zipfile.ZIP_DEFLATED) as out:
                for info in src.infolist():
                    out.writestr(info.filename.replace("archive/", "deflated/"), src.read(info.filename))
            with open(os.path.join(d, "other.bin"), "wb") as f:
                f.write(os.urandom(10000))
        print("committed step-1", flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
