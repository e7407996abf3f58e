"""Raw DDP over a tiny GPT-2, started with torch.multiprocessing.spawn (or plain python)."""
import argparse, os, sys, datetime
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--world", type=int, default=2)
p.add_argument("--port", default="46350")
p.add_argument("--ckpt", default="ckpt_spawn/model.pt")
p.add_argument("--steps", type=int, default=6)
p.add_argument("--launch", default="spawn")   # spawn | env
args = p.parse_args()

import torch, torch.distributed as dist, torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader
import tinyhf

def worker(rank, world, args):
    tok = tinyhf.make_tokenizer()
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=30))
    n_layer = 2
    if args.fault == "cfg_mismatch" and rank == args.fault_rank:
        n_layer = int(os.environ.get("N_LAYER", "3"))   # this rank picked up a different config
    model = tinyhf.make_model(tok, n_layer=n_layer)
    if args.fault == "resume_mismatch":
        big = tinyhf.make_model(tok, n_embd=128) if not os.path.exists(args.ckpt) else None
        if big is not None and rank == 0:
            os.makedirs(os.path.dirname(args.ckpt), exist_ok=True)
            torch.save(big.state_dict(), args.ckpt)
        dist.barrier()
        sd = torch.load(args.ckpt, map_location="cpu")
        model.load_state_dict(sd)
        print(f"[rank{rank}] resumed from {args.ckpt}", flush=True)
    ddp = DDP(model)
    def collate(b):
        enc = tok(b, padding=True, return_tensors="pt")
        enc["labels"] = enc["input_ids"].masked_fill(enc["attention_mask"] == 0, -100)
        return enc
    texts = tinyhf.make_texts(64, seed=rank)
    kw = {}
    if args.fault == "lambda_workers":
        kw = dict(num_workers=2, multiprocessing_context="spawn", collate_fn=lambda b: collate(b))
    else:
        kw = dict(collate_fn=collate)
    dl = DataLoader(texts, batch_size=4, **kw)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
    for step, batch in enumerate(dl):
        if step >= args.steps:
            break
        loss = ddp(**batch).loss
        loss.backward(); opt.step(); opt.zero_grad()
        print(f"[rank{rank}] step {step} loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()

if __name__ == "__main__":
    if args.launch == "env":
        # expects to be started by a launcher that sets RANK/WORLD_SIZE
        dist.init_process_group("gloo", init_method="env://", timeout=datetime.timedelta(seconds=30))
        worker(dist.get_rank(), dist.get_world_size(), args)
    else:
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ["MASTER_PORT"] = args.port
        mp.spawn(worker, args=(args.world, args), nprocs=args.world, join=True)
