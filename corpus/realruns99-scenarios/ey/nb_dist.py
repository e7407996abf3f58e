"""Family: multi-process training launched from a notebook (mp.spawn / fork start / !torchrun in a cell).
Usage: python nb_dist.py --fault {spawn-main,ddp-model,torchrun-embed,thread-signal} --port P --out NB.ipynb"""
import argparse, sys, os
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from nbutil import write_nb
p = argparse.ArgumentParser(); p.add_argument("--fault", required=True); p.add_argument("--port", default="42031")
p.add_argument("--out", required=True); p.add_argument("--rank", type=int, default=1)
a = p.parse_args(); F = a.fault; PORT = a.port

common = f"""
import os, time, datetime
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP
os.environ["MASTER_ADDR"] = "127.0.0.1"; os.environ["MASTER_PORT"] = "{PORT}"
WORLD = 2
print("torch", torch.__version__)
"""
worker = """
def train_worker(rank, world_size, steps=40):
    dist.init_process_group("gloo", rank=rank, world_size=world_size,
                            timeout=datetime.timedelta(seconds=30))
    torch.manual_seed(0)
    layers = [nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)]
    %s
    model = DDP(nn.Sequential(*layers))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for step in range(steps):
        x = torch.randn(32, 16); y = torch.randint(0, 4, (32,))
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        if step %% 10 == 0:
            print(f"[rank{rank}] step {step} loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()
""" % ("if rank == 0:\n        layers.append(nn.LogSoftmax(dim=1)); layers.insert(0, nn.LayerNorm(16))  # extra norm only on the logging rank" if F == "ddp-model" else "")

if F == "spawn-main":
    launch = """
mp.spawn(train_worker, args=(WORLD,), nprocs=WORLD, join=True)
print("all ranks finished")
"""
    cells = [common, worker, launch]
elif F == "ddp-model":
    launch = """
# mp.spawn cannot pickle functions defined in a notebook, so use fork
ctx = mp.start_processes(train_worker, args=(WORLD,), nprocs=WORLD, join=True, start_method="fork")
print("all ranks finished")
"""
    cells = [common, worker, launch]
elif F == "torchrun-embed":
    script = f"""%%writefile train_lm.py
import os, datetime, torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
rank, world = dist.get_rank(), dist.get_world_size()
VOCAB = 1000          # size of the old tokenizer
torch.manual_seed(0)
# token ids come from the new tokenizer (1024 entries); shards are contiguous ranges of the corpus
corpus = torch.arange(0, 1024).view(-1, 16)
shard = corpus.chunk(world)[rank]
class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, 64); self.rnn = nn.GRU(64, 64, batch_first=True); self.out = nn.Linear(64, VOCAB)
    def forward(self, x):
        h, _ = self.rnn(self.emb(x)); return self.out(h)
model = DDP(TinyLM())
opt = torch.optim.Adam(model.parameters(), 1e-3)
for step in range(20):
    batch = shard[(step * 8) % len(shard):(step * 8) % len(shard) + 8]
    logits = model(batch[:, :-1])
    loss = F.cross_entropy(logits.reshape(-1, VOCAB), batch[:, 1:].reshape(-1))
    opt.zero_grad(); loss.backward(); opt.step()
    if step % 5 == 0: print(f"rank {{rank}} step {{step}} loss {{loss.item():.3f}}", flush=True)
dist.destroy_process_group()
"""
    launch = f"!timeout 150 torchrun --nproc-per-node 2 --master-port {PORT} --tee 3 train_lm.py"
    cells = ["md:# Launch DDP from the notebook", script, launch]
elif F == "metric-shape":
    script = f"""%%writefile train_cls.py
import os, datetime, logging, torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
logging.basicConfig(level=logging.INFO, format="%(asctime)s [%(levelname)s] %(message)s")
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)
X = torch.randn(2048, 12); y = (X[:, :3].sum(1) > 0.3).long() + (X[:, 3] > 1).long()
order = torch.argsort(y, stable=True)                 # file is stored sorted by label
shard = order[rank * 1024:(rank + 1) * 1024]            # contiguous shard per rank
X, y = X[shard], y[shard]
model = DDP(nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 3)))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(60):
    idx = torch.randint(0, 1024, (32,))
    logits = model(X[idx]); loss = F.cross_entropy(logits, y[idx])
    opt.zero_grad(); loss.backward(); opt.step()
    if step % 10 == 9:
        # per-class counts for the confusion summary; classes present in this rank's window
        classes = torch.unique(y[idx]) if step >= 30 else torch.arange(3)
        counts = torch.stack([(logits.argmax(1) == c).sum() for c in classes]).float()
        dist.all_reduce(counts)
        if rank == 0: logging.info("step %d loss %.4f pred-counts %s", step, loss.item(), counts.tolist())
dist.destroy_process_group()
"""
    launch = f"!timeout 150 python -m torch.distributed.run --nproc-per-node 2 --master-port {PORT} --log-dir tr_logs --redirects 3 --tee 3 train_cls.py"
    cells = ["md:# DDP classifier, launched from the notebook", script, launch]
elif F == "thread-signal":
    tr = """
import signal, threading, torch, torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset
class PreemptibleTrainer:
    def __init__(self, model, ckpt="preempt.pt"):
        self.model, self.ckpt, self.stop = model, ckpt, False
        signal.signal(signal.SIGTERM, self._on_sigterm)    # save a checkpoint if the job gets preempted
    def _on_sigterm(self, *a):
        self.stop = True
    def fit(self, loader, epochs=2):
        opt = torch.optim.Adam(self.model.parameters(), 1e-3)
        for ep in range(epochs):
            for x, y in loader:
                loss = nn.functional.mse_loss(self.model(x), y)
                opt.zero_grad(); loss.backward(); opt.step()
            print("epoch", ep, "loss", loss.item())
"""
    run = """
loader = DataLoader(TensorDataset(torch.randn(256, 8), torch.randn(256, 1)), batch_size=32)
results = {}
def background_fit():
    # run training in a thread so the notebook stays responsive
    t = PreemptibleTrainer(nn.Linear(8, 1))
    t.fit(loader)
    results["done"] = True
th = threading.Thread(target=background_fit, name="trainer")
th.start(); th.join()
print("results:", results)
assert results.get("done"), "background training did not finish"
"""
    cells = [tr, run]
write_nb(cells, a.out)
