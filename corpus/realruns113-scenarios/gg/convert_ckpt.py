"""Checkpoint conversion utility: torch .bin shards -> single safetensors / fp16 serving checkpoint.

Stage 1 builds a tiny GPT-2 and writes it as a sharded checkpoint (like save_pretrained with max_shard_size),
stage 2 is the conversion the job is about.
--fault: none | tied | fp16_mask | trunc_shard | missing_shard | disk_full
Under torchrun every rank converts its share of the shards, rank 0 writes the index.
"""
import argparse, json, logging, os, sys, time
from datetime import timedelta

import torch
import torch.distributed as dist
from safetensors.torch import save_file, load_file
from transformers import GPT2Config, GPT2LMHeadModel

logging.basicConfig(format="%(asctime)s [%(levelname)s] %(message)s", level=logging.INFO, stream=sys.stdout)
log = logging.getLogger("convert")


def write_shards(model, d, n_shards):
    os.makedirs(d, exist_ok=True)
    sd = model.state_dict()
    keys = list(sd)
    weight_map = {}
    per = (len(keys) + n_shards - 1) // n_shards
    for s in range(n_shards):
        name = f"model-{s + 1:05d}-of-{n_shards:05d}.safetensors"
        part = {k: sd[k].contiguous().clone() for k in keys[s * per:(s + 1) * per]}
        save_file(part, os.path.join(d, name), metadata={"format": "pt"})
        weight_map.update({k: name for k in part})
    with open(os.path.join(d, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": 0}, "weight_map": weight_map}, f, indent=1)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--fault", default="none")
    p.add_argument("--src", default="runs/conv/sharded")
    p.add_argument("--dst", default="runs/conv/out")
    p.add_argument("--shards", type=int, default=4)
    p.add_argument("--dtype", default="float16")
    p.add_argument("--fail-rank", type=int, default=1)
    p.add_argument("--n-embd", type=int, default=128)
    p.add_argument("--n-layer", type=int, default=4)
    args = p.parse_args()
    distributed = "RANK" in os.environ
    if distributed:
        dist.init_process_group("gloo", timeout=timedelta(seconds=25))
    rank = dist.get_rank() if distributed else 0
    world = dist.get_world_size() if distributed else 1
    torch.manual_seed(0)

    cfg = GPT2Config(vocab_size=512, n_layer=args.n_layer, n_head=4, n_embd=args.n_embd, n_positions=128)
    model = GPT2LMHeadModel(cfg)
    if rank == 0:
        write_shards(model, args.src, args.shards)
        log.info("wrote %d source shards to %s", args.shards, args.src)
        if args.fault == "trunc_shard":
            # the 3rd shard came from an interrupted download (wget -c died)
            f = os.path.join(args.src, f"model-00003-of-{args.shards:05d}.safetensors")
            data = open(f, "rb").read()
            open(f, "wb").write(data[: len(data) // 2])
        if args.fault == "missing_shard":
            # only part of the checkpoint was synced to this machine
            os.remove(os.path.join(args.src, f"model-{args.shards:05d}-of-{args.shards:05d}.safetensors"))
    if distributed:
        dist.barrier()

    index = json.load(open(os.path.join(args.src, "model.safetensors.index.json")))
    shard_names = sorted(set(index["weight_map"].values()))
    mine = shard_names[rank::world]
    log.info("rank %d converting shards %s", rank, mine)
    dtype = getattr(torch, args.dtype)
    merged = {}
    for name in mine:
        t0 = time.time()
        part = load_file(os.path.join(args.src, name))
        for k, v in part.items():
            # HF-style rename: transformer.h.N -> model.layers.N
            nk = k.replace("transformer.h.", "model.layers.").replace("transformer.", "model.")
            merged[nk] = v.to(dtype)
        log.info("rank %d: %s -> %d tensors (%.2fs)", rank, name, len(part), time.time() - t0)

    if args.fault == "fp16_mask":
        # serving runtime expects a precomputed additive causal mask buffer per layer
        for i in range(cfg.n_layer):
            mask = torch.empty(cfg.n_positions, cfg.n_positions, dtype=dtype)
            mask.fill_(-1e9)
            merged[f"model.layers.{i}.attn.causal_mask"] = torch.triu(mask, diagonal=1)

    os.makedirs(args.dst, exist_ok=True)
    if args.fault == "tied":
        # convert directly from the in-memory model instead of the shards
        full = {k: v.to(dtype) for k, v in model.state_dict().items()}
        out = os.path.join(args.dst, "model.safetensors")
        log.info("saving %d tensors to %s", len(full), out)
        save_file(model.state_dict(), out, metadata={"format": "pt"})
    else:
        out = os.path.join(args.dst, f"model-rank{rank}.safetensors")
        if args.fault == "disk_full":
            # write an additional fp32 master copy for the optimizer
            torch.save({k: v.float() for k, v in merged.items()}, os.path.join(args.dst, f"master-fp32-rank{rank}.pt"))
        save_file(merged, out, metadata={"format": "pt", "dtype": args.dtype})
        log.info("rank %d wrote %s (%.2f MB)", rank, out, os.path.getsize(out) / 1e6)
    if distributed:
        dist.barrier()
        dist.destroy_process_group()
    log.info("conversion done")


if __name__ == "__main__":
    main()
