"""Notebook family: notebook-specific setup mistakes around a small training loop.
python nb_misc.py --fault {init_twice,env_missing,start_method,asyncio,onecycle,anomaly,interrupt,healthy_amp} --port P --out X.ipynb"""
import argparse, sys
sys.path.insert(0, "/work/rr77/ca/tools")
from nbmk import write_nb
ap = argparse.ArgumentParser()
ap.add_argument("--fault", required=True); ap.add_argument("--out", required=True)
ap.add_argument("--port", type=int, default=35951)
a = ap.parse_args()
F = a.fault
cells = ["""
import os, time, math, datetime, warnings
import torch, torch.nn as nn, torch.nn.functional as F
from torch.utils.data import TensorDataset, DataLoader
from tqdm.auto import tqdm
torch.manual_seed(0)
print(f"torch {torch.__version__}")
"""]
model_cell = """
X = torch.randn(1000, 20); W = torch.randn(20, 1)
Y = (X @ W + 0.1 * torch.randn(1000, 1)).squeeze(-1)
ds = TensorDataset(X, Y)
loader = DataLoader(ds, batch_size=32, shuffle=True)
model = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 1))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
print(len(ds), "samples,", len(loader), "batches")
"""
def train_cell(epochs=3, extra_step="", sleep="", body_loss="loss = F.mse_loss(model(xb).squeeze(-1), yb)"):
    return """
for epoch in range(%d):
    running = 0.0
    for i, (xb, yb) in enumerate(tqdm(loader, desc=f"Epoch {epoch+1}/%d", leave=False)):
        %s
        opt.zero_grad()
        loss.backward()
        opt.step()%s
        running += loss.item()%s
    print(f"Epoch {epoch+1}: loss={running/len(loader):.4f}")
""" % (epochs, epochs, body_loss, extra_step, sleep)

if F == "init_twice":
    cells.append("""
import torch.distributed as dist
def setup(rank=0, world_size=1):
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1"); os.environ.setdefault("MASTER_PORT", "%d")
    dist.init_process_group("gloo", rank=rank, world_size=world_size, timeout=datetime.timedelta(seconds=20))
    print(f"initialised rank {rank}/{world_size}")
setup()
""" % a.port)
    cells.append(model_cell)
    cells.append("""
from torch.nn.parallel import DistributedDataParallel as DDP
def main():
    setup()                      # same entry point as the torchrun script
    ddp = DDP(model)
    for xb, yb in loader:
        loss = F.mse_loss(ddp(xb).squeeze(-1), yb); opt.zero_grad(); loss.backward(); opt.step()
    print("epoch done", loss.item())
main()
""")
elif F == "env_missing":
    cells.append(model_cell)
    cells.append("""
# copied from train_ddp.py
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data.distributed import DistributedSampler
dist.init_process_group(backend="gloo", init_method="env://", timeout=datetime.timedelta(seconds=20))
local_rank = int(os.environ.get("LOCAL_RANK", 0))
sampler = DistributedSampler(ds)
""")
elif F == "start_method":
    cells.append("""
import torch.multiprocessing as mp
mp.set_start_method("spawn")
print("start method:", mp.get_start_method())
""")
    cells.append(model_cell)
    cells.append(train_cell(1))
    cells.append("""
# evaluation with parallel workers (from eval.py)
import torch.multiprocessing as mp
if __name__ == "__main__":
    mp.set_start_method("spawn")
    loader_eval = DataLoader(ds, batch_size=128, num_workers=2)
    with torch.no_grad():
        mse = sum(F.mse_loss(model(xb).squeeze(-1), yb, reduction="sum").item() for xb, yb in loader_eval) / len(ds)
    print("eval mse", mse)
""")
elif F == "asyncio":
    cells.append("""
import asyncio, json, random
async def fetch_shard(i):
    await asyncio.sleep(0.05)          # remote object store read
    g = torch.Generator().manual_seed(i)
    return torch.randn(200, 20, generator=g)
async def fetch_all(n):
    return await asyncio.gather(*(fetch_shard(i) for i in range(n)))
""")
    cells.append(model_cell)
    cells.append(train_cell(2))
    cells.append("""
# pull the extra shards for the next stage
shards = asyncio.run(fetch_all(8))
X2 = torch.cat(shards); print(X2.shape)
""")
elif F == "onecycle":
    cells.append(model_cell.replace("batch_size=32, shuffle=True", "batch_size=48, shuffle=True"))
    cells.append("""
EPOCHS = 4
steps_per_epoch = len(ds) // 48
sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=1e-2, epochs=EPOCHS, steps_per_epoch=steps_per_epoch)
print("steps_per_epoch", steps_per_epoch)
""")
    cells.append(train_cell(4, extra_step="\n        sched.step()"))
elif F == "anomaly":
    cells.append(model_cell)
    cells.append("""
torch.autograd.set_detect_anomaly(True)
def nll_gaussian(pred, target, log_var_head):
    var = log_var_head.exp()
    return 0.5 * (torch.log(var) + (pred - target) ** 2 / var).mean()
log_var = nn.Parameter(torch.zeros(1))
opt.add_param_group({"params": [log_var], "lr": 5.0})
""")
    cells.append(train_cell(3, body_loss="loss = nll_gaussian(model(xb).squeeze(-1), yb, log_var * 40)"))
elif F == "interrupt":
    cells.append(model_cell)
    cells.append("""
import signal, threading
threading.Timer(7.0, lambda: os.kill(os.getpid(), signal.SIGINT)).start()   # = pressing "Interrupt kernel"
""")
    cells.append(train_cell(20, sleep="\n        time.sleep(0.01)"))
write_nb(cells, a.out)
