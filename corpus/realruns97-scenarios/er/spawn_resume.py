"""torch.multiprocessing.spawn DDP fine-tune of a tiny GPT-2 that warm-starts from a checkpoint.
Rank 0 loads the checkpoint file and broadcasts the weights (common pattern to avoid N readers).
--ckpt selects what is at the checkpoint path (prepared by --prepare KIND):
  good       torch.save({"model": sd, "args": vars(args)})
  namespace  torch.save({"model": sd, "args": argparse.Namespace(...)})  (older training script)
  lfs        a git-lfs pointer (repo cloned without git lfs pull)
  truncated  the first 60% of a good checkpoint (copy interrupted)
"""
import argparse, os, sys, time, json
from datetime import timedelta

p = argparse.ArgumentParser()
p.add_argument("--ckpt", default="/work/rr97/er/runs/spawn_ckpt/pytorch_model.bin")
p.add_argument("--prepare", default=None)
p.add_argument("--world-size", type=int, default=2)
p.add_argument("--port", default="41351")
p.add_argument("--steps", type=int, default=12)
args = p.parse_args()

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
sys.path.insert(0, os.path.dirname(__file__))
import common


def prepare(kind, path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tok = common.build_tokenizer()
    sd = common.tiny_gpt2(len(tok)).state_dict()
    if kind == "good":
        torch.save({"model": sd, "args": {"lr": 5e-4, "n_embd": 64}}, path)
    elif kind == "namespace":
        torch.save({"model": sd, "args": argparse.Namespace(lr=5e-4, n_embd=64, epochs=3)}, path)
    elif kind == "lfs":
        with open(path, "w") as f:
            f.write("version https://git-lfs.github.com/spec/v1\n"
                    "oid sha256:4d7a2146f1c0e3b8c2a5d6e1b0f9c8d7e6a5b4c3d2e1f0a9b8c7d6e5f4a3b2c1\n"
                    "size 436912\n")
    elif kind == "truncated":
        tmp = path + ".full"
        torch.save({"model": sd, "args": {"lr": 5e-4}}, tmp)
        data = open(tmp, "rb").read()
        open(path, "wb").write(data[: int(len(data) * 0.6)])
        os.remove(tmp)
    print(f"prepared {kind} checkpoint at {path} ({os.path.getsize(path)} bytes)")


def worker(rank, world, a):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = a.port
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=30))
    print(f"[rank {rank}] process group up (world={world})", flush=True)
    tok = common.build_tokenizer()
    model = common.tiny_gpt2(len(tok), seed=rank)
    if rank == 0:
        print(f"[rank 0] loading warm-start checkpoint {a.ckpt}", flush=True)
        ckpt = torch.load(a.ckpt, map_location="cpu")
        missing, unexpected = model.load_state_dict(ckpt["model"], strict=False)
        print(f"[rank 0] loaded; missing={len(missing)} unexpected={len(unexpected)}", flush=True)
    for t in model.state_dict().values():
        dist.broadcast(t, src=0)
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.AdamW(ddp.parameters(), lr=5e-4)
    texts = common.make_texts(256, seed=20 + rank)
    for step in range(a.steps):
        batch = tok(texts[step * 8:(step + 1) * 8], padding=True, truncation=True, max_length=32,
                    return_tensors="pt")
        out = ddp(**batch, labels=batch["input_ids"])
        out.loss.backward(); opt.step(); opt.zero_grad()
        if step % 4 == 0:
            print(f"[rank {rank}] step {step} loss {out.loss.item():.4f}", flush=True)
    dist.barrier()
    if rank == 0:
        print("done", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    if args.prepare:
        prepare(args.prepare, args.ckpt)
        sys.exit(0)
    mp.spawn(worker, args=(args.world_size, args), nprocs=args.world_size, join=True)
