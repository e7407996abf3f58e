"""Hugging Face `datasets` reading local JSON-lines files, feeding a torch DataLoader.

--mode ok|badjson|stream
"""
import argparse, datetime, json, logging, os, random, sys
import torch, torch.nn as nn
import torch.distributed as dist

DATA = "/work/rr98/ev/data/hfjson"
log = logging.getLogger("hfdata")


def build(n_files=3, rows=200, bad=False):
    rows = int(os.environ.get("ROWS_PER_FILE", rows))
    os.makedirs(DATA, exist_ok=True)
    rng = random.Random(0)
    for k in range(n_files):
        p = f"{DATA}/part-{k:02d}.jsonl"
        with open(p, "w") as f:
            for r in range(rows):
                f.write(json.dumps({"x": [rng.random() for _ in range(8)], "label": rng.randint(0, 2)}) + "\n")
                if bad and k == 1 and r == 137:
                    # an exporter that crashed mid-record and then resumed appending
                    f.write('{"x": [0.12, 0.55, 0.91, 0.3\n')


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", default="ok")
    ap.add_argument("--cache", default="/work/rr98/ev/hfcache")
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--max-files", type=int, default=100)
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s | %(name)s | %(levelname)s | %(message)s")
    rank, world = int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))
    if world > 1:
        dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
    if rank == 0:
        build(bad=(args.mode == "badjson"))
    if world > 1:
        dist.barrier()
    import datasets
    from datasets import load_dataset
    files = sorted(os.path.join(DATA, f) for f in os.listdir(DATA) if f.endswith(".jsonl"))[:args.max_files]
    log.info(f"rank {rank}: datasets {datasets.__version__}, {len(files)} files")
    if args.mode == "stream":
        from datasets.distributed import split_dataset_by_node
        ds = load_dataset("json", data_files=files, split="train", streaming=True)
        ds = split_dataset_by_node(ds, rank=rank, world_size=world)
        ds = ds.shuffle(seed=0, buffer_size=64).with_format("torch")
    else:
        ds = load_dataset("json", data_files=files, split="train", cache_dir=args.cache)
        ds = ds.with_format("torch")
        log.info(f"rank {rank}: {ds}")
    dl = torch.utils.data.DataLoader(ds, batch_size=32, num_workers=args.workers)
    model = nn.Linear(8, 3)
    if world > 1:
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for ep in range(args.epochs):
        if hasattr(ds, "set_epoch"):
            ds.set_epoch(ep)
        n = 0
        for b in dl:
            loss = nn.functional.cross_entropy(model(b["x"]), b["label"])
            opt.zero_grad(); loss.backward(); opt.step(); n += 1
        log.info(f"rank {rank} epoch {ep}: {n} steps, last loss {loss.item():.4f}")
    if world > 1:
        dist.barrier(); dist.destroy_process_group()
    log.info(f"rank {rank} done")


if __name__ == "__main__":
    main()
