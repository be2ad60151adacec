#!/usr/bin/env python3
"""Writes the seed corpora of fuzz_torch_zip (whole torch.save files) and fuzz_pickle_scan
(their data.pkl) with the real torch.save of Debian's python3-torch. Small tensors keep the
seeds small. Run from the repository root: tests/fuzz/make_torch_corpus.py"""
import io
import os
import pickle
import random
import zipfile

import torch

Z = "tests/fuzz/corpus/fuzz_torch_zip"
P = "tests/fuzz/corpus/fuzz_pickle_scan"


def save(name, obj, **kw):
    buf = io.BytesIO()
    torch.save(obj, buf, **kw)
    data = buf.getvalue()
    with open(os.path.join(Z, name), "wb") as f:
        f.write(data)
    if data[:4] == b"PK\x03\x04":
        z = zipfile.ZipFile(io.BytesIO(data))
        pkl = [n for n in z.namelist() if n.endswith("/data.pkl")][0]
        with open(os.path.join(P, name + ".pkl"), "wb") as f:
            f.write(z.read(pkl))


def main():
    torch.manual_seed(0)
    random.seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.LayerNorm(3), torch.nn.Linear(3, 2))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2)
    for _ in range(3):
        model(torch.randn(2, 4)).sum().backward()
        opt.step()
        sched.step()
    save("optimizer.pt", opt.state_dict())
    save("scheduler.pt", sched.state_dict())
    save("model.bin", model.state_dict())
    save("rng_state.pth", {"python": random.getstate(), "numpy": None,
                           "cpu": torch.get_rng_state()})
    save("lightning.ckpt", {
        "epoch": 1, "global_step": 3, "pytorch-lightning_version": "2.0.0",
        "state_dict": model.state_dict(),
        "optimizer_states": [opt.state_dict()],
        "lr_schedulers": [sched.state_dict()],
        "callbacks": {"ModelCheckpoint{'monitor': None}": {"best_model_score": torch.tensor(0.5),
                                                           "kth": [1, 2, (3, 4)]}},
        "hyper_parameters": {"lr": 1e-3, "layers": [4, 3, 2]},
    })
    base = torch.arange(12.0)
    save("dtypes.pt", {"bf16": torch.ones(3, dtype=torch.bfloat16),
                       "f16": torch.ones(2, dtype=torch.float16), "f64": torch.ones(2, dtype=torch.float64),
                       "i64": torch.arange(3), "bool": torch.tensor([True, False]),
                       "u8": torch.tensor([1, 2], dtype=torch.uint8), "c64": torch.ones(2, dtype=torch.complex64),
                       "view1": base[2:5], "view2": base.view(3, 4).t(),
                       "untyped": torch.UntypedStorage(8), "empty": torch.zeros(0)})
    save("protocol4.pt", {"w": torch.ones(4), "names": ["a", "b"]}, pickle_protocol=4)
    # A run past step 2048: Adam's F32 `step` scalars at 4097 (FP16 would make them 4096),
    # F32 position ids FP16/BF16 cannot hold (2000..4099), an EMA decay BF16 rounds to 1.0,
    # and moments big enough to be rounded (tests/unit/test_precision.c).
    big = torch.nn.Linear(32, 32)
    adam = torch.optim.Adam(big.parameters(), lr=1e-3)
    for _ in range(2):
        big(torch.randn(2, 32)).sum().backward()
        adam.step()
    for st in adam.state.values():
        st["step"].fill_(4097.0)
    save("adam_step.pt", {"optimizer": adam.state_dict(),
                          "position_ids": torch.arange(2000, 4100, dtype=torch.float32),
                          "ema_decay": torch.tensor([0.9999, 0.999])})
    save("legacy.pt", {"w": torch.ones(4)}, _use_new_zipfile_serialization=False)
    # A pickle that would call os.system if it were executed: the scanner only reads it.
    # Variants the torch plug-in must store byte-exact: compressed entries, a big-endian
    # byteorder record; and a ZIP64-extra archive (zipfile's force_zip64).
    src = zipfile.ZipFile(os.path.join(Z, "model.bin"))
    for name, method, extra in (("deflated.pt", zipfile.ZIP_DEFLATED, None),
                                ("bigendian.pt", zipfile.ZIP_STORED, b"big"),
                                ("little.pt", zipfile.ZIP_STORED, b"little")):
        with zipfile.ZipFile(os.path.join(Z, name), "w", method) as out:
            for info in src.infolist():
                out.writestr(info.filename.replace("model/", "archive/"), src.read(info.filename))
            if extra:
                out.writestr("archive/byteorder", extra)
    with zipfile.ZipFile(os.path.join(Z, "zip64.pt"), "w", zipfile.ZIP_STORED) as out:
        for info in src.infolist():
            with out.open(info.filename, "w", force_zip64=True) as f:
                f.write(src.read(info.filename))
    class Evil:
        def __reduce__(self):
            return (os.system, ("touch /tmp/rr-pickle-scan-ran",))
    with open(os.path.join(P, "malicious.pkl"), "wb") as f:
        f.write(pickle.dumps({"w": Evil()}, protocol=2))
    with zipfile.ZipFile(os.path.join(Z, "malicious.pt"), "w", zipfile.ZIP_STORED) as out:
        out.writestr("archive/data.pkl", pickle.dumps({"w": Evil()}, protocol=2))
        out.writestr("archive/version", b"3\n")


if __name__ == "__main__":
    main()
