"""DDP + DataLoader workers reading one JSON record per file. --data DIR"""
import argparse, os, json, datetime, logging, sys
import torch, torch.nn as nn, torch.distributed as dist
from torch.utils.data import Dataset, DataLoader, DistributedSampler
p = argparse.ArgumentParser(); p.add_argument("--data", default="jdata"); p.add_argument("--epochs", type=int, default=2); a = p.parse_args()
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30)); rank = dist.get_rank()
logging.basicConfig(level=logging.INFO, format=f"%(asctime)s [rank{rank}] %(levelname)s %(message)s", stream=sys.stdout)
class JsonDir(Dataset):
    def __init__(self, d): self.files = sorted(os.path.join(d, f) for f in os.listdir(d))
    def __len__(self): return len(self.files)
    def __getitem__(self, i):
        with open(self.files[i]) as f: r = json.load(f)
        return torch.tensor(r["x"], dtype=torch.float32), torch.tensor(r["y"])
ds = JsonDir(a.data)
dl = DataLoader(ds, batch_size=8, sampler=DistributedSampler(ds, shuffle=False), num_workers=1, timeout=60)
model = nn.parallel.DistributedDataParallel(nn.Linear(8, 3)); opt = torch.optim.SGD(model.parameters(), lr=0.1)
for ep in range(a.epochs):
    for i, (x, y) in enumerate(dl):
        loss = nn.functional.cross_entropy(model(x), y); opt.zero_grad(); loss.backward(); opt.step()
        if i % 2 == 0: logging.info("epoch %d batch %d loss %.4f", ep, i, loss.item())
logging.info("done"); dist.destroy_process_group()
