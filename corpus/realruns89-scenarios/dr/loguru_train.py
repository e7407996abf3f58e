"""DDP char-level LSTM LM trainer using loguru for all logging (logger.catch around main)."""
import argparse, os, sys, time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from loguru import logger

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none", choices=["none", "oom", "nan", "fd_leak", "ckpt_perm"])
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=5)
p.add_argument("--steps", type=int, default=10)
p.add_argument("--out", default="/work/rr89/dr/out/loguru")
p.add_argument("--diagnose", action="store_true")
p.add_argument("--anomaly", action="store_true")
args = p.parse_args()

rank = int(os.environ.get("RANK", 0)); world = int(os.environ.get("WORLD_SIZE", 1))
logger.remove()
logger.add(sys.stderr, level="DEBUG", backtrace=True, diagnose=args.diagnose,
           format="<green>{time:YYYY-MM-DD HH:mm:ss.SSS}</green> | <level>{level: <8}</level> | rank{extra[rank]} | <cyan>{name}</cyan>:<cyan>{function}</cyan>:<cyan>{line}</cyan> - <level>{message}</level>")
logger.configure(extra={"rank": rank})

TEXT = ("the quick brown fox jumps over the lazy dog. " * 40)
VOCAB = sorted(set(TEXT)); stoi = {c: i for i, c in enumerate(VOCAB)}

class CharLM(nn.Module):
    def __init__(self, v, d=48):
        super().__init__()
        self.emb = nn.Embedding(v, d); self.rnn = nn.LSTM(d, d, batch_first=True); self.head = nn.Linear(d, v)
    def forward(self, x):
        h, _ = self.rnn(self.emb(x)); return self.head(h)

def batches(seq_len=32, bs=8, seed=0):
    data = torch.tensor([stoi[c] for c in TEXT])
    g = torch.Generator().manual_seed(seed)
    while True:
        ix = torch.randint(0, len(data) - seq_len - 1, (bs,), generator=g)
        yield torch.stack([data[i:i + seq_len] for i in ix]), torch.stack([data[i + 1:i + seq_len + 1] for i in ix])

@logger.catch(onerror=lambda _: sys.exit(1))
def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=40))
    logger.info("process group up: world_size={} backend={}", world, dist.get_backend())
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(CharLM(len(VOCAB)))
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    if args.anomaly:
        torch.autograd.set_detect_anomaly(True)
        logger.warning("anomaly detection enabled: training will be slower")
    it = batches(seed=rank)
    handles = []
    for step in range(args.steps):
        t0 = time.time()
        x, y = next(it)
        logits = model(x)
        if args.fault == "nan" and rank == args.fault_rank and step >= args.fault_step:
            # confidence penalty with the sampling temperature from the eval config (1e-3) applied to training logits
            probs = (logits / 1e-3).softmax(-1)
            ent = -(probs * probs.log()).sum(-1).mean()
            loss = nn.functional.cross_entropy(logits.reshape(-1, len(VOCAB)), y.reshape(-1)) - 0.1 * ent
        else:
            loss = nn.functional.cross_entropy(logits.reshape(-1, len(VOCAB)), y.reshape(-1))
        opt.zero_grad(); loss.backward(); opt.step()
        logger.info("step {:>3} | loss {:.4f} | {:.1f} ms/it", step, loss.item(), (time.time() - t0) * 1e3)
        if args.fault == "oom" and rank == args.fault_rank and step == args.fault_step:
            # eval rank precomputes a dense (vocab x vocab x seq) transition table for perplexity
            logger.debug("building n-gram transition cache for eval")
            cache = torch.zeros(len(VOCAB) ** 2 * 2048, 4096 // 8, dtype=torch.float32)
            logger.debug("cache ready: {} MB", cache.numel() * 4 // 2**20)
        if args.fault == "fd_leak" and rank == args.fault_rank:
            # streaming writer keeps one open file per sampled sequence
            os.makedirs(f"{args.out}/samples/rank{rank}", exist_ok=True)
            for k in range(40):
                handles.append(open(f"{args.out}/samples/rank{rank}/s{step}_{k}.txt", "w"))
                handles[-1].write("".join(VOCAB[i] for i in x[k % len(x)].tolist()))
        if step and step % 4 == 0 or args.fault == "ckpt_perm" and step == args.fault_step:
            if rank == 0 or args.fault == "ckpt_perm" and rank == args.fault_rank:
                os.makedirs(f"{args.out}/ckpt", exist_ok=True)
                torch.save(model.module.state_dict(), f"{args.out}/ckpt/last.pt")
                logger.success("saved checkpoint {}/ckpt/last.pt", args.out)
    dist.barrier()
    logger.success("done: final loss {:.4f}", loss.item())
    dist.destroy_process_group()

if __name__ == "__main__":
    main()
