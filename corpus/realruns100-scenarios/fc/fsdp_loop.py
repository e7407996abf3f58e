"""Hand-written FSDP (v1) training loop on CPU/gloo with selectable wrapping mistakes."""
import argparse
import functools
import logging
import os
import sys
import time
import warnings
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import StateDictType, FullStateDictConfig, ShardedStateDictConfig
from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy, size_based_auto_wrap_policy

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--steps", type=int, default=6)
p.add_argument("--hidden", type=int, default=64)
p.add_argument("--layers", type=int, default=2)
p.add_argument("--spawn", type=int, default=0)
p.add_argument("--port", type=int, default=42370)
p.add_argument("--no-offload", action="store_true")
p.add_argument("--ckpt-dir", default="/work/rr100/fc/tmp/fsdp_ckpt")
args = p.parse_args()


class Block(nn.Module):
    def __init__(self, h):
        super().__init__()
        self.ln = nn.LayerNorm(h)
        self.fc1 = nn.Linear(h, 4 * h)
        self.fc2 = nn.Linear(4 * h, h)

    def forward(self, x):
        return x + self.fc2(F.gelu(self.fc1(self.ln(x))))


class Net(nn.Module):
    def __init__(self, vocab=128, h=64, layers=2):
        super().__init__()
        self.emb = nn.Embedding(vocab, h)
        self.blocks = nn.ModuleList([Block(h) for _ in range(layers)])
        self.head = nn.Linear(h, vocab)

    def forward(self, x):
        h = self.emb(x)
        for b in self.blocks:
            h = b(h)
        return self.head(h)


def main(rank=None, world=None):
    if rank is not None:
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(args.port),
                          RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank))
    logging.basicConfig(stream=sys.stdout, level=logging.INFO,
                        format=f"%(asctime)s | %(levelname)s | rank{os.environ['RANK']} | %(message)s")
    log = logging.getLogger("fsdp_train")
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = Net(h=args.hidden, layers=args.layers)
    if args.fault == "mixed_dtype":
        # "keep the output head in bf16 to save memory" before wrapping
        model.head.to(torch.bfloat16)
    if args.fault == "frozen_emb":
        # freeze the embedding (pretrained) and fine-tune the rest
        model.emb.weight.requires_grad_(False)
    policy = functools.partial(transformer_auto_wrap_policy, transformer_layer_cls={Block})
    if args.fault in ("mixed_dtype", "frozen_emb"):
        policy = None  # wrap the whole model as one FSDP unit
    fsdp = FSDP(model, auto_wrap_policy=policy, use_orig_params=False,
                device_id=torch.device("cpu") if args.fault != "no_device_id" else None)
    if rank == 0:
        log.info("FSDP model:\n%s", fsdp if args.fault != "none" else "<%d FSDP units>" % len(list(FSDP.fsdp_modules(fsdp))))
    opt = torch.optim.AdamW(fsdp.parameters(), lr=1e-3)
    for step in range(1, args.steps + 1):
        x = torch.randint(0, 128, (4, 16))
        logits = fsdp(x)
        loss = F.cross_entropy(logits.reshape(-1, 128).float(), x.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if rank == 0:
            log.info("step %d loss %.4f", step, loss.item())
    os.makedirs(args.ckpt_dir, exist_ok=True)
    if args.fault == "sharded_torch_save":
        # sharded state dict, but saved/loaded with plain torch.save/load and a fresh, unwrapped model
        with FSDP.state_dict_type(fsdp, StateDictType.SHARDED_STATE_DICT):
            sd = fsdp.state_dict()
        torch.save(sd, os.path.join(args.ckpt_dir, f"model_rank{rank}.pt"))
        dist.barrier()
        if rank == 0:
            log.info("saved sharded checkpoint, exporting consolidated model for eval")
            plain = Net(h=args.hidden, layers=args.layers)
            plain.load_state_dict(torch.load(os.path.join(args.ckpt_dir, "model_rank0.pt"), weights_only=False))
    else:
        cfg = FullStateDictConfig(offload_to_cpu=not args.no_offload, rank0_only=True)
        with FSDP.state_dict_type(fsdp, StateDictType.FULL_STATE_DICT, cfg):
            sd = fsdp.state_dict()
        if rank == 0:
            torch.save(sd, os.path.join(args.ckpt_dir, "model_full.pt"))
            log.info("saved full state dict (%d tensors)", len(sd))
    dist.barrier()
    if rank == 0:
        log.info("done")
    dist.destroy_process_group()


if __name__ == "__main__":
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(main, args=(args.spawn,), nprocs=args.spawn, join=True)
    else:
        main()
