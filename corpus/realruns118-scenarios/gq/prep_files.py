"""Prepare checkpoint artefacts the format scenarios load (not itself a case).

- good.pt / good.safetensors       : valid weights of TinyLM (untied so safetensors can save it)
- lfs/pytorch_model.bin             : git-lfs pointer text instead of the weights (clone without git lfs pull)
- lfs/model.safetensors             : same for safetensors
- partial/model.safetensors         : download cut off at 60 %
- partial/init.pt                   : copy interrupted at 55 %
- gpu/last.pt                       : checkpoint whose storages are tagged cuda:0 (as written on a GPU node)
"""
import hashlib
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
from ckpt_format import RunConfig, TinyLM  # noqa: E402

out = sys.argv[1] if len(sys.argv) > 1 else "fmt"
for d in ("lfs", "partial", "gpu"):
    os.makedirs(os.path.join(out, d), exist_ok=True)
torch.manual_seed(0)
m = TinyLM(RunConfig(), tie=False)
sd = m.state_dict()
torch.save({"model": sd}, f"{out}/good.pt")
from safetensors.torch import save_file

save_file(sd, f"{out}/good.safetensors", metadata={"format": "pt"})


def lfs_pointer(src, dst):
    data = open(src, "rb").read()
    with open(dst, "w") as f:
        f.write("version https://git-lfs.github.com/spec/v1\n")
        f.write(f"oid sha256:{hashlib.sha256(data).hexdigest()}\n")
        f.write(f"size {len(data)}\n")


lfs_pointer(f"{out}/good.pt", f"{out}/lfs/pytorch_model.bin")
lfs_pointer(f"{out}/good.safetensors", f"{out}/lfs/model.safetensors")

for src, dst, frac in ((f"{out}/good.safetensors", f"{out}/partial/model.safetensors", 0.6),
                       (f"{out}/good.pt", f"{out}/partial/init.pt", 0.55)):
    data = open(src, "rb").read()
    open(dst, "wb").write(data[: int(len(data) * frac)])

# a checkpoint as torch.save writes it on a GPU node: storages carry location "cuda:0"
torch.serialization.register_package(5, lambda obj: "cuda:0" if obj.device.type == "cpu" else None,
                                     lambda obj, loc: None)
torch.save({"model": sd, "step": 12000}, f"{out}/gpu/last.pt")
for root, _, files in os.walk(out):
    for f in files:
        print(os.path.join(root, f), os.path.getsize(os.path.join(root, f)))
