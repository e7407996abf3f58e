"""FSDP2 (fully_shard) toy LM with torch.distributed.checkpoint (DCP) save/resume.
Launch with torchrun, or `python dcp_fsdp2.py --spawn N` (torch.multiprocessing.spawn)."""
import argparse, os, sys, time, logging
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict, StateDictOptions
from torch.distributed.fsdp import fully_shard

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=30)
p.add_argument("--save-every", type=int, default=10)
p.add_argument("--save-dir", default="dcp_ckpt")
p.add_argument("--resume", default=None)
p.add_argument("--hidden", type=int, default=64)
p.add_argument("--layers", type=int, default=2)
p.add_argument("--vocab", type=int, default=256)
p.add_argument("--optim", default="adamw", choices=["adamw", "sgd"])
p.add_argument("--strict", type=int, default=1)
p.add_argument("--spawn", type=int, default=0, help="use torch.multiprocessing.spawn with this many procs")
p.add_argument("--port", type=int, default=36230)
p.add_argument("--timeout", type=int, default=30)
p.add_argument("--logging", action="store_true")
args = p.parse_args()

class TinyLM(nn.Module):
    def __init__(self, vocab, hidden, layers):
        super().__init__()
        self.emb = nn.Embedding(vocab, hidden)
        self.blocks = nn.ModuleList([nn.Sequential(nn.LayerNorm(hidden), nn.Linear(hidden, 4 * hidden), nn.GELU(), nn.Linear(4 * hidden, hidden)) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(hidden)
        self.head = nn.Linear(hidden, vocab, bias=False)
    def forward(self, x):
        h = self.emb(x)
        for b in self.blocks:
            h = h + b(h)
        return self.head(self.ln_f(h))

def main(local_rank=None, nprocs=None):
    if local_rank is not None:
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(args.port), RANK=str(local_rank), WORLD_SIZE=str(nprocs), LOCAL_RANK=str(local_rank))
    dist.init_process_group("gloo", timeout=timedelta(seconds=args.timeout))
    rank, world = dist.get_rank(), dist.get_world_size()
    if args.logging:
        logging.basicConfig(level=logging.INFO, format=f"%(asctime)s [%(levelname)s] rank{rank} %(name)s: %(message)s", force=True)
    log = logging.getLogger("fsdp2_train")
    say = (lambda m: log.info(m)) if args.logging else (lambda m: print(f"[rank {rank}/{world}] {m}", flush=True))

    torch.manual_seed(0)
    model = TinyLM(args.vocab, args.hidden, args.layers)
    for blk in model.blocks:
        fully_shard(blk)
    fully_shard(model)
    nparams = sum(p_.numel() for p_ in model.parameters())
    say(f"FSDP2 model ready, {nparams} params (global), world={world}")
    if args.optim == "sgd":
        opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    else:
        opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.1)

    start = 0
    if args.resume:
        say(f"loading DCP checkpoint from {args.resume}")
        msd, osd = get_state_dict(model, opt)
        state = {"model": msd, "optim": osd, "meta": {"step": torch.tensor(0)}}
        dcp.load(state, checkpoint_id=args.resume)
        set_state_dict(model, opt, model_state_dict=state["model"], optim_state_dict=state["optim"],
                       options=StateDictOptions(strict=bool(args.strict)))
        start = int(state["meta"]["step"])
        say(f"resumed at step {start}")

    g = torch.Generator().manual_seed(99 + rank)
    data = torch.randint(0, args.vocab, (256, 33), generator=g)
    t0 = time.time()
    for step in range(start, args.steps):
        b = data[torch.randint(0, 256, (8,), generator=g)]
        logits = model(b[:, :-1])
        loss = nn.functional.cross_entropy(logits.reshape(-1, args.vocab), b[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if (step + 1) % 5 == 0:
            l = loss.detach().clone(); dist.all_reduce(l); l /= world
            say(f"step {step+1} loss {l.item():.4f} ({(time.time()-t0)/(step+1-start)*1000:.0f} ms/step)")
        if (step + 1) % args.save_every == 0:
            msd, osd = get_state_dict(model, opt)
            path = os.path.join(args.save_dir, f"step_{step+1:06d}")
            dcp.save({"model": msd, "optim": osd, "meta": {"step": torch.tensor(step + 1)}}, checkpoint_id=path)
            say(f"saved DCP checkpoint to {path}")
    say("done")
    dist.barrier()
    dist.destroy_process_group()

if __name__ == "__main__":
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(main, args=(args.spawn,), nprocs=args.spawn, join=True)
    else:
        main()
