"""Evaluation job that loads the training checkpoint, scores a held-out set, writes predictions.
--fault: none | weights_only | truncated | readonly_out | big_batch | loader_lambda"""
import argparse, json, os, sys, time
from datetime import timedelta
import numpy as np, torch, torch.nn as nn, torch.distributed as dist
from torch.utils.data import DataLoader, TensorDataset
from tqdm import tqdm

ap = argparse.ArgumentParser()
ap.add_argument("--fault", default="none"); ap.add_argument("--fault-rank", type=int, default=0)
ap.add_argument("--ckpt", default="/tmp/rr72bm_ckpt/last.pt"); ap.add_argument("--out", default="/tmp/rr72bm_preds")
ap.add_argument("--eval-batch", type=int, default=64)
a = ap.parse_args()
rank = int(os.environ.get("RANK", 0)); world = int(os.environ.get("WORLD_SIZE", 1))
if world > 1:
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
mine = rank == a.fault_rank

def make_model():
    return nn.Sequential(nn.Linear(32, 128), nn.GELU(), nn.Linear(128, 128), nn.GELU(), nn.Linear(128, 4))

# ---- (train stage, rank 0) write the checkpoint the way train.py does ----
if rank == 0:
    m = make_model(); opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
    x = torch.randn(256, 32); y = torch.randint(0, 4, (256,))
    for s in range(20):
        loss = nn.functional.cross_entropy(m(x), y); opt.zero_grad(); loss.backward(); opt.step()
    print(f"[train] final loss {loss.item():.4f}", flush=True)
    os.makedirs(os.path.dirname(a.ckpt), exist_ok=True)
    state = {"model": m.state_dict(), "optimizer": opt.state_dict(), "step": 20}
    if a.fault == "weights_only":
        state["args"] = a          # train.py stores its argparse namespace next to the weights
        state["label_map"] = np.array(["neg", "neu", "pos", "other"])
    torch.save(state, a.ckpt)
    if a.fault == "truncated":
        # the copy to the eval node was interrupted (disk quota on the sync job): only part of the file arrived
        sz = os.path.getsize(a.ckpt)
        with open(a.ckpt, "r+b") as f:
            f.truncate(sz // 3)
    print(f"[train] checkpoint written to {a.ckpt} ({os.path.getsize(a.ckpt)} bytes)", flush=True)
if world > 1:
    dist.barrier()

# ---- eval stage ----
model = make_model()
ck = torch.load(a.ckpt, map_location="cpu")
model.load_state_dict(ck["model"]); model.eval()
print(f"[rank{rank}] loaded checkpoint step={ck['step']}", flush=True)
n_eval = 512
g = torch.Generator().manual_seed(rank)
ds = TensorDataset(torch.randn(n_eval, 32, generator=g), torch.randint(0, 4, (n_eval,), generator=g))
bs = a.eval_batch
if a.fault == "big_batch" and mine:
    # "eval the whole set in one forward" with test-time augmentation repeats
    xs = ds.tensors[0].repeat(4096, 1)
    with torch.no_grad():
        logits = model(xs.repeat(64, 1))
def collate_pairs(b):
    return torch.stack([t[0] for t in b]), torch.stack([t[1] for t in b])
dl_kw = {}
if a.fault == "spawn_workers":
    dl_kw = dict(num_workers=2, multiprocessing_context="spawn", collate_fn=collate_pairs)
if a.fault == "loader_lambda":
    dl_kw = dict(num_workers=2, multiprocessing_context="spawn", collate_fn=lambda b: (torch.stack([t[0] for t in b]), torch.stack([t[1] for t in b])))
dl = DataLoader(ds, batch_size=bs, **dl_kw)
preds = []
with torch.no_grad():
    for x, y in tqdm(dl, desc=f"eval rank{rank}", disable=False):
        preds.append(model(x).argmax(-1))
        time.sleep(0.05)
p = torch.cat(preds); acc = (p == ds.tensors[1]).float().mean().item()
print(f"[rank{rank}] accuracy={acc:.4f} n={len(p)}", flush=True)
os.makedirs(a.out, exist_ok=True)
with open(os.path.join(a.out, f"preds_rank{rank}.json"), "w") as f:
    json.dump({"acc": acc, "preds": p.tolist()}, f)
print(f"[rank{rank}] predictions written to {a.out}", flush=True)
if world > 1:
    dist.barrier(); dist.destroy_process_group()
