"""Prep: turn a CPU checkpoint into what a GPU job would have written (storages tagged cuda:N),
and write a git-lfs pointer file like a clone without `git lfs pull` leaves behind."""
import hashlib, os, sys
import torch
import torch.serialization as ser

src, dst_cuda, dst_lfs = sys.argv[1:4]
ckpt = torch.load(src, map_location="cpu", weights_only=True)
ser.register_package(1, lambda storage: "cuda:0", lambda obj, loc: None)  # tag as on GPU 0
torch.save(ckpt, dst_cuda)
data = open(src, "rb").read()
with open(dst_lfs, "w") as f:
    f.write("version https://git-lfs.github.com/spec/v1\n"
            f"oid sha256:{hashlib.sha256(data).hexdigest()}\nsize {len(data)}\n")
print("ok")
