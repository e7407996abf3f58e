"""Tiny GPT-2 (built from a config, no downloads) trained with DDP; exports / imports safetensors.

--export-raw      : rank 0 exports weights with safetensors.torch.save_file(model.state_dict())
--init-from DIR   : every rank starts from a local HF checkpoint directory (from_pretrained)
--save-pretrained : rank 0 writes DIR with save_pretrained at the end
"""
import argparse, os, time, warnings
from datetime import timedelta

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=20)
p.add_argument("--export-raw", default=None)
p.add_argument("--init-from", default=None)
p.add_argument("--save-pretrained", default=None)
p.add_argument("--bf16", action="store_true")
args = p.parse_args()

from transformers import GPT2Config, GPT2LMHeadModel
from transformers.utils import logging as hf_logging


def main():
    distributed = "RANK" in os.environ
    if distributed:
        dist.init_process_group("gloo", timeout=timedelta(seconds=40))
    rank = dist.get_rank() if distributed else 0
    world = dist.get_world_size() if distributed else 1
    hf_logging.set_verbosity_info() if rank == 0 else None
    torch.manual_seed(0)
    if args.init_from:
        model = GPT2LMHeadModel.from_pretrained(args.init_from)
    else:
        cfg = GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=512, n_positions=64)
        model = GPT2LMHeadModel(cfg)
    ddp = DDP(model) if distributed else model
    opt = torch.optim.AdamW(model.parameters(), lr=5e-4)
    t0 = time.time()
    for step in range(args.steps):
        g = torch.Generator().manual_seed(step * 31 + rank)
        ids = torch.randint(0, 512, (4, 32), generator=g)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.bf16):
            out = ddp(input_ids=ids, labels=ids)
        opt.zero_grad()
        out.loss.backward()
        opt.step()
        if step % 5 == 0 or step == args.steps - 1:
            print(f"[rank{rank}] step {step:3d}/{args.steps} loss={out.loss.item():.4f} "
                  f"tok/s={(step+1)*4*32*world/(time.time()-t0):.0f}", flush=True)
    if rank == 0 and args.export_raw:
        from safetensors.torch import save_file
        os.makedirs(os.path.dirname(args.export_raw) or ".", exist_ok=True)
        print(f"[rank0] exporting weights to {args.export_raw}", flush=True)
        save_file(model.state_dict(), args.export_raw, metadata={"format": "pt", "step": str(args.steps)})
    if rank == 0 and args.save_pretrained:
        model.save_pretrained(args.save_pretrained)
        print(f"[rank0] saved to {args.save_pretrained}", flush=True)
    if distributed:
        dist.barrier()
        dist.destroy_process_group()
    print(f"[rank{rank}] finished", flush=True)


if __name__ == "__main__":
    main()
