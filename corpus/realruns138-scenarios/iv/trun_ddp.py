"""DDP training for torchrun (gloo, CPU). Tiny GPT-2-like token model.
Flags: --fault {none,vocab,fullckpt,truncckpt,modelmismatch,fdlimit} --bad-rank R --bad-step S --ckpt-dir D
"""
import argparse, os, sys, time, datetime, logging, warnings
import torch, torch.nn as nn, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

class TinyLM(nn.Module):
    def __init__(self, vocab=100, d=32, layers=1):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.blocks = nn.Sequential(*[nn.Sequential(nn.Linear(d, d), nn.GELU()) for _ in range(layers)])
        self.out = nn.Linear(d, vocab)
    def forward(self, ids):
        return self.out(self.blocks(self.emb(ids)))

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fault", default="none"); ap.add_argument("--bad-rank", type=int, default=1)
    ap.add_argument("--bad-step", type=int, default=8); ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--ckpt-dir", default="ckpt"); ap.add_argument("--save-every", type=int, default=10)
    ap.add_argument("--resume", default=None); ap.add_argument("--progress", action="store_true"); ap.add_argument("--find-unused", action="store_true")
    a = ap.parse_args()
    rank = int(os.environ["RANK"]); world = int(os.environ["WORLD_SIZE"])
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s rank{rank} %(levelname)s %(name)s: %(message)s")
    log = logging.getLogger("trainer")
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    torch.manual_seed(0)
    vocab = 100
    layers = 2 if (a.fault == "modelmismatch" and rank == a.bad_rank) else 1
    model = TinyLM(vocab, layers=layers)
    if a.resume:
        log.info("resuming from %s", a.resume)
        sd = torch.load(a.resume, map_location="cpu")
        model.load_state_dict(sd["model"])
    ddp = DDP(model, find_unused_parameters=a.find_unused)
    opt = torch.optim.AdamW(ddp.parameters(), lr=3e-3)
    g = torch.Generator().manual_seed(rank)
    it = range(a.steps)
    if a.progress and rank == 0:
        from tqdm import tqdm
        it = tqdm(it, desc="train", dynamic_ncols=False, ncols=90)
    handles = []
    for step in it:
        ids = torch.randint(0, vocab, (8, 16), generator=g)
        if a.fault == "vocab" and rank == a.bad_rank and step >= a.bad_step:
            ids[0, 3] = vocab + 27   # tokenizer of this shard added special tokens the model doesn't know
        if a.fault == "fdlimit" and rank == a.bad_rank:
            # per-step shard files are opened for streaming and never closed (leak)
            for k in range(8):
                handles.append(open(os.path.join(a.ckpt_dir, f"shard_{k}.txt"), "a+"))
        logits = ddp(ids[:, :-1])
        loss = nn.functional.cross_entropy(logits.reshape(-1, vocab), ids[:, 1:].reshape(-1))
        opt.zero_grad(); loss.backward(); opt.step()
        if step % 5 == 0 and not a.progress:
            log.info("step %d loss %.4f", step, loss.item())
        if rank == 0 and (step + 1) % a.save_every == 0:
            os.makedirs(a.ckpt_dir, exist_ok=True)
            path = os.path.join(a.ckpt_dir, f"step{step+1}.pt")
            with open(path, "wb") as f:
                torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step + 1}, f)
            log.info("saved checkpoint %s", path)
        time.sleep(0.05)
    dist.barrier()
    if rank == 0: log.info("done, final loss %.4f", loss.item())
    dist.destroy_process_group()

if __name__ == "__main__":
    main()
