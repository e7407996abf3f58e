"""Tiny GPT-2 fine-tuning with Hugging Face save_pretrained / from_pretrained and safetensors.

--mode:
  tied_save_file     rank 0 exports weights with safetensors.torch.save_file(model.state_dict())
  load_dir           every rank loads --load-dir with from_pretrained (e.g. a truncated download)
  rank0_save_nobar   rank 0 save_pretrained()s, the other ranks reload it without waiting
  finetune_cls       healthy: start a sequence-classification head from an LM checkpoint
  resize_vocab       healthy: load with a bigger vocab (ignore_mismatched_sizes) and keep training
  export             healthy save_pretrained (prep)
--launch spawn|env|single
"""
import argparse
import logging
import os
import sys
import warnings
from datetime import timedelta

os.environ.setdefault("HF_HUB_OFFLINE", "1")
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP


def get_args():
    p = argparse.ArgumentParser()
    p.add_argument("--mode", default="export")
    p.add_argument("--launch", default="spawn")
    p.add_argument("--nprocs", type=int, default=2)
    p.add_argument("--port", type=int, default=39050)
    p.add_argument("--out", default="/work/rr90/du/hf/out")
    p.add_argument("--load-dir", default="/work/rr90/du/hf/base")
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--timeout", type=int, default=20)
    p.add_argument("--eval-seconds", type=float, default=2.0)
    return p.parse_args()


def batches(rank, vocab, n=8, t=32):
    g = torch.Generator().manual_seed(100 + rank)
    while True:
        ids = torch.randint(0, vocab, (n, t), generator=g)
        ids[:, 1::2] = (ids[:, 0::2] * 7 + 3) % vocab  # learnable pattern
        yield ids


def worker(rank, world, args):
    if world > 1:
        if args.launch == "spawn":
            os.environ["MASTER_ADDR"] = "127.0.0.1"
            os.environ["MASTER_PORT"] = str(args.port)
            dist.init_process_group("gloo", rank=rank, world_size=world,
                                    timeout=timedelta(seconds=args.timeout))
        else:
            dist.init_process_group("gloo", timeout=timedelta(seconds=args.timeout))
            rank, world = dist.get_rank(), dist.get_world_size()
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s - %(levelname)s - rank{rank} - %(name)s - %(message)s")
    log = logging.getLogger("finetune")
    from transformers import GPT2Config, GPT2LMHeadModel, GPT2ForSequenceClassification
    torch.manual_seed(0)

    if args.mode in ("load_dir", "resize_vocab"):
        if args.mode == "resize_vocab":
            cfg = GPT2Config.from_pretrained(args.load_dir)
            cfg.vocab_size = cfg.vocab_size + 64
            model = GPT2LMHeadModel.from_pretrained(args.load_dir, config=cfg, ignore_mismatched_sizes=True)
        else:
            model = GPT2LMHeadModel.from_pretrained(args.load_dir)
    elif args.mode == "finetune_cls":
        model = GPT2ForSequenceClassification.from_pretrained(args.load_dir, num_labels=3)
        model.config.pad_token_id = 0
    else:
        cfg = GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=512, n_positions=64)
        model = GPT2LMHeadModel(cfg)
    log.info("model has %d parameters", sum(p.numel() for p in model.parameters()))
    net = DDP(model) if world > 1 else model
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    vocab = model.config.vocab_size
    data = batches(rank, vocab)
    for step in range(args.steps):
        ids = next(data)
        if args.mode == "finetune_cls":
            labels = ids[:, 0] % 3
            out = net(input_ids=ids, labels=labels)
        else:
            out = net(input_ids=ids, labels=ids)
        opt.zero_grad()
        out.loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % 10 == 0 or step == args.steps - 1:
            log.info("step %d/%d loss=%.4f", step, args.steps, out.loss.item())

    if args.mode == "tied_save_file":
        if rank == 0:
            from safetensors.torch import save_file
            os.makedirs(args.out, exist_ok=True)
            path = os.path.join(args.out, "model.safetensors")
            log.info("exporting weights to %s", path)
            save_file(model.state_dict(), path, metadata={"format": "pt"})
        if world > 1:
            dist.barrier()
    elif args.mode == "rank0_save_nobar":
        if rank == 0:
            log.info("running final evaluation before export")
            import time
            t0 = time.time()
            with torch.no_grad():
                while time.time() - t0 < args.eval_seconds:
                    model(input_ids=next(data))
            os.makedirs(args.out, exist_ok=True)
            model.save_pretrained(args.out)
            log.info("saved to %s", args.out)
        else:
            os.makedirs(args.out, exist_ok=True)
            log.info("reloading exported model from %s for eval", args.out)
            GPT2LMHeadModel.from_pretrained(args.out)
        if world > 1:
            dist.barrier()
    else:
        if rank == 0:
            model.save_pretrained(args.out)
            log.info("saved to %s", args.out)
        if world > 1:
            dist.barrier()
    log.info("done")
    if world > 1:
        dist.destroy_process_group()


def main():
    args = get_args()
    if args.launch == "spawn":
        mp.spawn(worker, args=(args.nprocs, args), nprocs=args.nprocs, join=True)
    elif args.launch == "env":
        worker(int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1)), args)
    else:
        worker(0, 1, args)


if __name__ == "__main__":
    main()
