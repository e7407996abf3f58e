"""torch.multiprocessing.spawn DDP loop for a tiny GPT-2 (tied embeddings) with periodic checkpointing."""
import argparse, os, sys, time
from datetime import timedelta
import torch, torch.distributed as dist, torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP
from tqdm import tqdm
from transformers import GPT2Config, GPT2LMHeadModel
import common

def get_args():
    p = argparse.ArgumentParser()
    p.add_argument("--fault", default="none")
    p.add_argument("--world", type=int, default=2)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--save-every", type=int, default=10)
    p.add_argument("--out", default="/tmp/rr65ar_spawn")
    p.add_argument("--resume", default=None)
    p.add_argument("--port", default="31080")
    return p.parse_args()

def save_ckpt(model, opt, step, args):
    os.makedirs(args.out, exist_ok=True)
    if args.fault == "safetensors-save":
        from safetensors.torch import save_file
        save_file(model.module.state_dict(), os.path.join(args.out, f"step{step}.safetensors"))
    else:
        torch.save({"model": model.module.state_dict(), "opt": opt.state_dict(), "step": step, "args": args},
                   os.path.join(args.out, f"step{step}.pt"))

def worker(rank, args):
    os.environ["MASTER_ADDR"] = "127.0.0.1"; os.environ["MASTER_PORT"] = args.port
    dist.init_process_group("gloo", rank=rank, world_size=args.world, timeout=timedelta(seconds=60))
    torch.manual_seed(0)
    tok = common.build_tokenizer()
    cfg = GPT2Config(vocab_size=len(tok), n_layer=2, n_embd=64, n_head=2, n_positions=64,
                     bos_token_id=tok.eos_token_id, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)
    model = GPT2LMHeadModel(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=5e-4)
    start = 0
    if args.resume:
        ck = torch.load(args.resume, map_location="cpu")
        model.load_state_dict(ck["model"]); opt.load_state_dict(ck["opt"]); start = ck["step"]
    model = DDP(model)
    texts = common.sentences(64 * args.world, seed=5)[rank::args.world]
    enc = tok(texts, truncation=True, max_length=16, padding="max_length", return_tensors="pt")
    bar = tqdm(range(start, args.steps), desc=f"rank{rank}", disable=rank != 0, mininterval=0.5)
    for step in bar:
        i = (step * 8) % 64
        ids = enc["input_ids"][i:i + 8]
        loss = model(input_ids=ids, attention_mask=enc["attention_mask"][i:i + 8], labels=ids).loss
        opt.zero_grad(); loss.backward(); opt.step()
        bar.set_postfix(loss=f"{loss.item():.3f}")
        if (step + 1) % args.save_every == 0 and rank == 0:
            save_ckpt(model, opt, step + 1, args)
        dist.barrier()
    if rank == 0:
        print(f"finished {args.steps} steps, final loss {loss.item():.4f}")
    dist.destroy_process_group()

if args_fault_unguarded := ("--fault" in sys.argv and "no-main-guard" in sys.argv):
    # quick-experiment version of the launcher written at module level
    _a = get_args()
    mp.spawn(worker, args=(_a,), nprocs=_a.world, join=True)

if __name__ == "__main__" and not args_fault_unguarded:
    a = get_args()
    mp.spawn(worker, args=(a,), nprocs=a.world, join=True)
