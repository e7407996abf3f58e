"""Train a small classifier briefly and write the checkpoint variants the eval/export scenarios consume."""
import dataclasses, os, shutil, torch, torch.nn as nn, torch.nn.functional as F
from torch.nn.utils import prune
import sys
sys.path.insert(0, os.path.dirname(__file__))
from common_model import Classifier, TrainConfig

out = "/work/rr124/hg/out/ckpt"
os.makedirs(out, exist_ok=True)
torch.manual_seed(0)
m = Classifier()
opt = torch.optim.AdamW(m.parameters(), lr=3e-3)
W = torch.randn(32, 5, generator=torch.Generator().manual_seed(7))
for _ in range(50):
    x = torch.randn(64, 32); y = (x @ W).argmax(1)
    loss = F.cross_entropy(m(x), y); opt.zero_grad(); loss.backward(); opt.step()
torch.save(m.state_dict(), f"{out}/model.pt")
torch.save({"model": m.state_dict(), "optimizer": opt.state_dict(), "step": 50}, f"{out}/last.ckpt")
# checkpoint with a config object pickled in (common in research code)
torch.save({"model": m.state_dict(), "config": TrainConfig(), "step": 50}, f"{out}/with_config.pt")
# DDP-style keys
torch.save({"module." + k: v for k, v in m.state_dict().items()}, f"{out}/ddp_model.pt")
# truncated copy (copy interrupted)
data = open(f"{out}/last.ckpt", "rb").read()
open(f"{out}/last_partial.ckpt", "wb").write(data[: len(data) // 3])
# git-lfs pointer
import hashlib
open(f"{out}/model_lfs.pt", "w").write(
    "version https://git-lfs.github.com/spec/v1\n"
    f"oid sha256:{hashlib.sha256(data).hexdigest()}\nsize {len(data)}\n")
from safetensors.torch import save_file
save_file(m.state_dict(), f"{out}/model.safetensors")
st = open(f"{out}/model.safetensors", "rb").read()
open(f"{out}/model_trunc.safetensors", "wb").write(st[:40])
# pruned checkpoint (weight_orig / weight_mask left in)
pm = Classifier(); pm.load_state_dict(m.state_dict())
for mod in [pm.encoder[0], pm.encoder[3], pm.head]:
    prune.l1_unstructured(mod, "weight", amount=0.5)
torch.save(pm.state_dict(), f"{out}/pruned_model.pt")
print(sorted(os.listdir(out)))
