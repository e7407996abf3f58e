"""DDP text classifier with rich logging (RichHandler + rich.traceback) and tqdm progress bars."""
import argparse, json, logging, os, sys, time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset, DistributedSampler
from rich.logging import RichHandler
from rich.console import Console
import rich.traceback
from tqdm import tqdm

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none", choices=["none", "shape", "target_dtype", "ragged", "corrupt", "vocab"])
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--steps", type=int, default=12)
p.add_argument("--workers", type=int, default=0)
p.add_argument("--data", default="/work/rr89/dr/data/reviews.jsonl")
p.add_argument("--show-locals", action="store_true")
p.add_argument("--tqdm", action="store_true")
args = p.parse_args()
rank = int(os.environ.get("RANK", 0)); world = int(os.environ.get("WORLD_SIZE", 1))

console = Console(stderr=True, width=110, force_terminal=False)
logging.basicConfig(level="INFO", format=f"[rank{rank}] %(message)s", datefmt="[%X]",
                    handlers=[RichHandler(console=console, rich_tracebacks=True, show_path=True)])
log = logging.getLogger("train")

WORDS = "good bad great awful fine poor nice terrible love hate ok meh superb dull".split()

def write_data(path, n=400, corrupt_at=None):
    import random
    rnd = random.Random(0)
    with open(path, "w") as f:
        for i in range(n):
            toks = [rnd.choice(WORDS) for _ in range(rnd.randint(4, 12))]
            line = json.dumps({"id": i, "text": " ".join(toks), "label": int(sum(WORDS.index(t) % 2 == 0 for t in toks) > len(toks) / 2)})
            if corrupt_at is not None and i == corrupt_at:
                line = line[: len(line) // 2]  # record cut short by an interrupted upload
            f.write(line + "\n")

class Reviews(Dataset):
    def __init__(self, path, pad_to=12, pad=True):
        self.offsets = []; self.path = path; self.pad_to = pad_to; self.pad = pad
        with open(path, "rb") as f:
            off = 0
            for line in f:
                self.offsets.append(off); off += len(line)
        self.vocab = {w: i + 1 for i, w in enumerate(WORDS)}
    def __len__(self): return len(self.offsets)
    def __getitem__(self, i):
        with open(self.path, "rb") as f:
            f.seek(self.offsets[i]); rec = json.loads(f.readline())
        ids = [self.vocab[w] for w in rec["text"].split()]
        if self.pad:
            ids = ids[: self.pad_to] + [0] * (self.pad_to - len(ids))
        return torch.tensor(ids), torch.tensor(rec["label"])

class BagClassifier(nn.Module):
    def __init__(self, vocab, d=32, n_cls=2):
        super().__init__()
        self.emb = nn.Embedding(vocab, d, padding_idx=0); self.ff = nn.Sequential(nn.Linear(d * 12, 64), nn.ReLU(), nn.Linear(64, n_cls))
    def forward(self, x):
        e = self.emb(x)
        return self.ff(e.reshape(e.shape[0], -1))

dist.init_process_group("gloo", timeout=timedelta(seconds=30))
rich.traceback.install(console=console, show_locals=args.show_locals, width=110)

if rank == 0:
    write_data(args.data, corrupt_at=(233 if args.fault == "corrupt" else None))
dist.barrier()
log.info("dataset [bold]%s[/]", args.data, extra={"markup": True})

ds = Reviews(args.data, pad=not (args.fault == "ragged" and rank == args.fault_rank))
vocab_size = len(WORDS) + 1
if args.fault == "vocab" and rank == args.fault_rank:
    ds.vocab = {w: i + 1 for i, w in enumerate(["<unk>", "<bos>", "<eos>"] + WORDS)}  # this host's tokenizer file has special tokens prepended
sampler = DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=True, seed=0)
dl = DataLoader(ds, batch_size=16, sampler=sampler, num_workers=args.workers)
torch.manual_seed(0)
model = nn.parallel.DistributedDataParallel(BagClassifier(vocab_size))
opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
log.info("model has %d parameters; %d batches/epoch", sum(p.numel() for p in model.parameters()), len(dl))

step = 0
for epoch in range(3):
    sampler.set_epoch(epoch)
    it = tqdm(dl, desc=f"rank{rank} epoch {epoch}", disable=not args.tqdm or rank != 0, mininterval=0, ncols=100)
    for x, y in it:
        logits = model(x)
        if args.fault == "shape" and rank == args.fault_rank:
            logits = logits.view(-1)  # flattened for a BCE head that this branch never switched to
        if args.fault == "target_dtype" and rank == args.fault_rank:
            y = y.float()  # labels normalised to [0,1] floats by a shared preprocessing helper
            loss = nn.functional.nll_loss(logits.log_softmax(-1), y)
        else:
            loss = nn.functional.cross_entropy(logits, y)
        opt.zero_grad(); loss.backward(); opt.step()
        acc = (logits.argmax(-1) == y).float().mean().item() if logits.dim() == 2 else 0.0
        if args.tqdm and rank == 0:
            it.set_postfix(loss=f"{loss.item():.4f}", acc=f"{acc:.2f}")
        if step % 3 == 0:
            log.info("epoch %d step %d loss %.4f acc %.3f", epoch, step, loss.item(), acc)
        step += 1
        if step >= args.steps: break
    if step >= args.steps: break
dist.barrier()
log.info("training complete after %d steps", step)
dist.destroy_process_group()
