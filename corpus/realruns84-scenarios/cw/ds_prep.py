"""Prepare a local CSV/JSON dataset with HF datasets, then train a tiny classifier; --fault picks a data bug."""
import argparse, os, sys, logging
import torch, torch.nn as nn
import torch.distributed as dist
from datetime import timedelta
import datasets
from datasets import Dataset, Features, Value, ClassLabel, load_dataset

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--rank", type=int, default=0)
p.add_argument("--data", default="/work/rr84/cw/data")
a = p.parse_args()
dist_on = "RANK" in os.environ
if dist_on:
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
rank = dist.get_rank() if dist_on else 0
me = rank == a.rank
logging.basicConfig(format=f"%(asctime)s [%(levelname)s] rank{rank}: %(message)s", level=logging.INFO)
log = logging.getLogger(__name__)
datasets.logging.set_verbosity_info()

os.makedirs(a.data, exist_ok=True)
csv = os.path.join(a.data, f"train_r{rank}.csv")
with open(csv, "w") as f:
    f.write("f1,f2,label\n")
    for i in range(200):
        lab = "pos" if i % 3 else "neg"
        if a.fault == "bad_label" and me and i == 137:
            lab = "neutral"
        f.write(f"{i*0.01:.3f},{(i%7)*0.5:.2f},{lab}\n")
    if a.fault == "ragged_csv" and me:
        f.write("0.5,1.0,pos,EXTRA,7\n")
        for i in range(10): f.write(f"{i},1.0,neg,x,y\n")

feats = Features({"f1": Value("float32"), "f2": Value("float32"), "label": ClassLabel(names=["neg", "pos"])})
files = csv
if a.fault == "missing_file" and me:
    files = os.path.join(a.data, "train_r%d_v2.csv" % rank)
ds = load_dataset("csv", data_files={"train": files}, split="train",
                  cache_dir=os.path.join(a.data, f"cache_r{rank}"))
log.info("loaded %d rows, columns=%s", len(ds), ds.column_names)
ds = ds.cast(feats) if a.fault != "none_nocast" else ds
if a.fault == "rm_col" and me:
    ds = ds.remove_columns(["f3"])
ds = ds.map(lambda r: {"x": [r["f1"], r["f2"]]}, remove_columns=["f1", "f2"])
if a.fault == "filter_empty" and me:
    ds = ds.filter(lambda r: r["x"][0] > 100.0)   # threshold meant for unnormalised feature
ds.set_format("torch", columns=["x", "label"])
log.info("train rows after preprocessing: %d", len(ds))
dl = torch.utils.data.DataLoader(ds, batch_size=16, shuffle=True)
model = nn.Linear(2, 2)
if dist_on:
    model = nn.parallel.DistributedDataParallel(model)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for ep in range(2):
    for i, b in enumerate(dl):
        loss = nn.functional.cross_entropy(model(b["x"]), b["label"])
        opt.zero_grad(); loss.backward(); opt.step()
    log.info("epoch %d loss %.4f", ep, loss.item())
if dist_on:
    dist.barrier(); dist.destroy_process_group()
log.info("finished")
