import argparse, os, sys, logging, dataclasses, warnings
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist
import torch.multiprocessing as mp

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--rank", type=int, default=0)
p.add_argument("--step", type=int, default=5)
p.add_argument("--steps", type=int, default=10)
p.add_argument("--world", type=int, default=2)
p.add_argument("--out", default="/tmp/rr53d_ck")
p.add_argument("--load", default=None)
p.add_argument("--spawn", action="store_true")
p.add_argument("--port", default="29670")
a = p.parse_args()

@dataclasses.dataclass
class RunConfig:
    d_model: int = 32
    vocab: int = 50
    lr: float = 3e-3

class TinyLM(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.emb = nn.Embedding(c.vocab, c.d_model)
        self.body = nn.Sequential(nn.Linear(c.d_model, c.d_model), nn.GELU(), nn.LayerNorm(c.d_model))
        self.head = nn.Linear(c.d_model, c.vocab, bias=False)
        self.head.weight = self.emb.weight  # weight tying
    def forward(self, x):
        return self.head(self.body(self.emb(x)))

def worker(rank, world):
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1"); os.environ.setdefault("MASTER_PORT", a.port)
    logging.basicConfig(format=f"%(asctime)s [rank{rank}] %(levelname)s %(message)s", level=logging.INFO, force=True)
    log = logging.getLogger()
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=30))
    cfg = RunConfig()
    torch.manual_seed(0)
    model = TinyLM(cfg)
    ddp = nn.parallel.DistributedDataParallel(model)
    groups = [{"params": [p for n, p in model.named_parameters() if "body" in n or "emb" in n]}]
    if a.fault == "optim-mismatch":
        # new code version: head bias/norm params get their own no-decay group
        groups = [{"params": [p for n, p in model.named_parameters() if n.endswith("weight") and "body.2" not in n]},
                  {"params": [p for n, p in model.named_parameters() if not (n.endswith("weight") and "body.2" not in n)], "weight_decay": 0.0}]
    opt = torch.optim.AdamW(groups, lr=cfg.lr)
    sched = torch.optim.lr_scheduler.StepLR(opt, 3, 0.5)
    start = 0
    if a.load:
        log.info("resuming from %s", a.load)
        if a.fault == "weights-only" or a.fault == "lfs":
            ck = torch.load(a.load, map_location="cpu")
        else:
            ck = torch.load(a.load, map_location="cpu", weights_only=False)
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["optim"])
        start = ck["step"]
        log.info("resumed at step %d", start)
    g = torch.Generator().manual_seed(rank)
    for step in range(start, start + a.steps):
        x = torch.randint(0, cfg.vocab, (8, 12), generator=g)
        logits = ddp(x[:, :-1])
        loss = nn.functional.cross_entropy(logits.reshape(-1, cfg.vocab), x[:, 1:].reshape(-1))
        opt.zero_grad(); loss.backward(); opt.step(); sched.step()
        if step % 2 == 0:
            log.info("step %d loss %.4f lr %.2e", step, loss.item(), sched.get_last_lr()[0])
        if step == a.step and rank == a.rank and a.fault in ("tied-safetensors", "save", "weights-only", "perm"):
            os.makedirs(a.out, exist_ok=True)
            if a.fault == "tied-safetensors":
                from safetensors.torch import save_file
                path = os.path.join(a.out, f"step{step}.safetensors")
                log.info("saving %s", path)
                save_file(model.state_dict(), path)
            else:
                path = os.path.join(a.out, f"step{step}.pt")
                log.info("saving %s", path)
                torch.save({"model": model.state_dict(), "optim": opt.state_dict(), "step": step + 1, "config": cfg}, path)
        if step == a.step and a.fault in ("tied-safetensors", "save", "weights-only", "perm"):
            dist.barrier()
    dist.destroy_process_group()
    log.info("finished")

if __name__ == "__main__":
    if a.spawn:
        mp.spawn(worker, args=(a.world,), nprocs=a.world)
    else:
        worker(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]))
