"""Per-rank data splitting with datasets.distributed.split_dataset_by_node, streaming, barriers.

--mode:
  healthy        streaming json shards split by node; ranks stop together (all_reduce of a 'done' flag)
  stream_uneven  streaming json shards split by node, n_shards % world != 0, loop until own data ends,
                 then barrier + 'save' (ranks with fewer shards leave the training loop early)
  empty          small eval file split by node over more ranks than rows -> some rank gets 0 rows
  slow_rank      --fault-rank has a much bigger shard to tokenize; rank 0 waits in monitored_barrier
  no_barrier     rank 0 preprocesses + save_to_disk, other ranks load_from_disk without waiting
Launch with torchrun (env://) or --spawN N (torch.multiprocessing.spawn).
"""
import argparse
import json
import os
import sys
import time
from datetime import timedelta

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import make_texts, build_tokenizer, build_model  # noqa: E402

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("--mode", default="healthy")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--shards", type=int, default=5)
p.add_argument("--rows-per-shard", type=int, default=160)
p.add_argument("--batch-size", type=int, default=8)
p.add_argument("--pg-timeout", type=int, default=30)
p.add_argument("--barrier-timeout", type=int, default=15)
p.add_argument("--spawn", type=int, default=0)
p.add_argument("--port", type=int, default=38990)
p.add_argument("--work", default="/work/rr89/dt/data/shards")
p.add_argument("--tag", default="run")
p.add_argument("--manual-allreduce", action="store_true", help="average grads by hand instead of DDP")
args = p.parse_args()


def write_shards(root, n, rows):
    os.makedirs(root, exist_ok=True)
    files = []
    for s in range(n):
        fn = os.path.join(root, f"train-{s:05d}-of-{n:05d}.jsonl")
        if not os.path.exists(fn):
            with open(fn + ".tmp", "w") as f:
                k = rows if s < n - 1 else rows // 4  # last export shard is partial
                for i, t in enumerate(make_texts(k, seed=1000 + s)):
                    f.write(json.dumps({"id": s * rows + i, "text": t}) + "\n")
            os.replace(fn + ".tmp", fn)
        files.append(fn)
    return files


def main(rank, world):
    if args.spawn:
        os.environ["MASTER_ADDR"] = "127.0.0.1"
        os.environ["MASTER_PORT"] = str(args.port)
        dist.init_process_group("gloo", rank=rank, world_size=world,
                                timeout=timedelta(seconds=args.pg_timeout))
    else:
        dist.init_process_group("gloo", timeout=timedelta(seconds=args.pg_timeout))
    rank, world = dist.get_rank(), dist.get_world_size()

    import datasets
    from datasets import load_dataset, Dataset
    from datasets.distributed import split_dataset_by_node

    def say(m):
        print(f"[rank {rank}/{world}] {m}", flush=True)

    tok = build_tokenizer()
    root = os.path.join(args.work, args.tag)

    def encode(batch):
        return tok(batch["text"], truncation=True, max_length=48, padding="max_length")

    if args.mode in ("healthy", "stream_uneven"):
        files = write_shards(root, args.shards, args.rows_per_shard)
        stream = load_dataset("json", data_files=files, split="train", streaming=True)
        say(f"streaming dataset with n_shards={stream.num_shards}")
        stream = split_dataset_by_node(stream, rank=rank, world_size=world)
        say(f"after split_dataset_by_node: n_shards={stream.num_shards}")
        stream = stream.map(encode, batched=True, remove_columns=["text", "id"]).with_format("torch")
        loader = torch.utils.data.DataLoader(stream, batch_size=args.batch_size)
    elif args.mode == "empty":
        fn = os.path.join(root, "dev.jsonl")
        if rank == 0:
            os.makedirs(root, exist_ok=True)
            with open(fn, "w") as f:
                for i, t in enumerate(make_texts(args.rows_per_shard, seed=7)):
                    f.write(json.dumps({"id": i, "text": t}) + "\n")
        dist.barrier()
        ds = load_dataset("json", data_files=fn, split="train", cache_dir=os.path.join(root, "cache"))
        ds = split_dataset_by_node(ds, rank=rank, world_size=world)
        say(f"local rows after split_dataset_by_node: {ds.num_rows}")
        ds = ds.map(encode, batched=True, remove_columns=["text", "id"]).with_format("torch")
        sampler = torch.utils.data.RandomSampler(ds)
        loader = torch.utils.data.DataLoader(ds, batch_size=args.batch_size, sampler=sampler)
    elif args.mode == "slow_rank":
        rows = args.rows_per_shard * (60 if rank == args.fault_rank else 1)
        texts = make_texts(rows, seed=rank)
        ds = Dataset.from_dict({"text": texts})
        os.makedirs(root, exist_ok=True)
        say(f"tokenizing {rows} local rows")
        ds = ds.map(lambda ex: tok(ex["text"], truncation=True, max_length=48, padding="max_length"),
                    remove_columns=["text"])  # per-example tokenization
        say("waiting for all ranks to finish preprocessing")
        dist.monitored_barrier(timeout=timedelta(seconds=args.barrier_timeout))
        ds = ds.with_format("torch")
        loader = torch.utils.data.DataLoader(ds, batch_size=args.batch_size, shuffle=True)
    elif args.mode == "no_barrier":
        out = os.path.join(root, "tokenized")
        if rank == 0:
            texts = make_texts(args.rows_per_shard * 20, seed=0)
            ds = Dataset.from_dict({"text": texts}).map(encode, batched=True, remove_columns=["text"])
            ds.save_to_disk(out)
            say(f"saved tokenized dataset to {out}")
        ds = datasets.load_from_disk(out)
        say(f"loaded {ds.num_rows} rows from {out}")
        ds = split_dataset_by_node(ds, rank=rank, world_size=world).with_format("torch")
        loader = torch.utils.data.DataLoader(ds, batch_size=args.batch_size, shuffle=True)
    else:
        raise SystemExit(f"unknown mode {args.mode}")

    model = build_model(tok.vocab_size)
    if args.manual_allreduce:
        for prm in model.parameters():  # same init everywhere
            dist.broadcast(prm.data, 0)
        model.module = model
    else:
        model = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3)
    step = 0
    t0 = time.time()
    it = iter(loader)
    while True:
        batch = next(it, None)
        if args.mode == "healthy":
            flag = torch.tensor([1.0 if batch is None else 0.0])
            dist.all_reduce(flag)  # stop as soon as any rank runs out of data
            if flag.item() > 0:
                say(f"a rank ran out of data at step {step}; stopping all ranks together")
                break
        if batch is None:
            break
        ids = batch["input_ids"]
        loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        if args.manual_allreduce:
            for prm in model.parameters():
                if prm.grad is not None:
                    dist.all_reduce(prm.grad)
                    prm.grad /= world
        opt.step()
        opt.zero_grad()
        if step % 10 == 0:
            say(f"step {step} loss {loss.item():.4f} elapsed {time.time() - t0:.1f}s")
        step += 1
        if args.mode == "slow_rank" and step >= 20:
            break
    say(f"epoch done after {step} steps; syncing before checkpoint")
    dist.barrier()
    if rank == 0:
        torch.save(model.module.state_dict(), os.path.join(root, "final.pt"))
        say("saved final.pt")
    dist.destroy_process_group()


if __name__ == "__main__":
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(main, args=(args.spawn,), nprocs=args.spawn, join=True)
    else:
        main(None, None)
