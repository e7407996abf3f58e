"""Multi-node data-pipeline scenarios: each global rank reads its own shard from node-local storage.

Faults come from the node's files (corrupt/missing/stale shards) or from real code paths selected by flags:
  --shard-mode epoch      iterate whole shard per epoch (ranks with shorter shards leave the loop early)
  --handle-cache          keep one open file handle per record (leaks fds; shows under a low `ulimit -n`)
  --label-map PATH        remap labels through a node-local json map (looked up inside the dataset)
  --check-finite          stop when the loss is not finite (like many research codebases do)
"""
import json, math, os, sys, time, warnings
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
import mnlib


class HandleCacheShard(Dataset):
    """Bug: caches an open handle per record index 'for speed' and never closes them."""
    def __init__(self, path):
        self.path = path
        with open(path) as f:
            self.offsets = []
            off = 0
            for line in f:
                self.offsets.append(off)
                off += len(line.encode())
        self.handles = {}

    def __len__(self):
        return len(self.offsets)

    def __getitem__(self, i):
        fh = self.handles.get(i)
        if fh is None:
            fh = open(self.path, "rb")
            self.handles[i] = fh
        fh.seek(self.offsets[i])
        rec = json.loads(fh.readline())
        return torch.tensor(rec["ids"]), torch.tensor(rec["label"])


class MappedShard(mnlib.JsonlShard):
    def __init__(self, path, label_map):
        super().__init__(path)
        self.label_map = label_map

    def __getitem__(self, i):
        ids, label = super().__getitem__(i)
        name = json.loads(self.lines[i]).get("tag", f"c{int(label)}")
        return ids, torch.tensor(self.label_map[name])


def main():
    p = mnlib.base_parser()
    p.add_argument("--shard-mode", choices=["steps", "epoch"], default="steps")
    p.add_argument("--handle-cache", action="store_true")
    p.add_argument("--label-map", default=None)
    p.add_argument("--check-finite", action="store_true")
    p.add_argument("--noisy", action="store_true", help="emit the usual harmless warnings")
    p.add_argument("--class-stats", default=None, help="optional json with per-class loss weights")
    p.add_argument("--cache-lock", action="store_true")
    p.add_argument("--lock-timeout", type=float, default=20)
    p.add_argument("--grad-clip", type=float, default=0.0)
    args = p.parse_args()

    rank, world, local_rank, log = mnlib.setup(args)
    data_dir = os.path.join(mnlib.NODE_ROOT, "data")
    shard = os.path.join(data_dir, f"shard-{rank:05d}.jsonl")
    if args.cache_lock:
        # local rank 0 refreshes the node-local shard index under the node's cache lock
        from filelock import FileLock
        lock_path = os.path.join(mnlib.NODE_ROOT, "scratch", "shard_cache.lock")
        if local_rank == 0:
            log.info(f"acquiring node cache lock {lock_path}")
            with FileLock(lock_path, timeout=args.lock_timeout):
                with open(os.path.join(mnlib.NODE_ROOT, "scratch", "shard_index.json"), "w") as f:
                    json.dump(sorted(os.listdir(data_dir)), f)
            log.info("node shard index refreshed")
        dist.barrier()
    log.info(f"loading shard {shard}")
    if args.handle_cache:
        ds = HandleCacheShard(shard)
    elif args.label_map:
        with open(args.label_map) as f:
            ds = MappedShard(shard, json.load(f))
    else:
        ds = mnlib.JsonlShard(shard)
    log.info(f"shard has {len(ds)} records")
    class_weights = None
    if args.class_stats:
        try:
            with open(args.class_stats) as f:
                class_weights = torch.tensor(json.load(f)["weights"])
        except FileNotFoundError:
            import logging
            logging.getLogger("train").exception(
                f"class statistics {args.class_stats} not found; continuing with uniform class weights")
    loader = DataLoader(ds, batch_size=args.batch_size, shuffle=True, num_workers=args.workers,
                        drop_last=True, persistent_workers=args.workers > 0)

    model = DDP(mnlib.TinyClassifier(args.vocab, args.hidden), find_unused_parameters=args.noisy)
    scaler = torch.amp.GradScaler("cuda", enabled=args.noisy)  # shared config with the GPU cluster
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=max(args.steps, 1))
    if args.noisy:
        # the scheduler is stepped once before training "to warm it up": torch warns about the order
        sched.step()

    def train_step(step, ids, labels):
        logits = model(ids)
        loss = F.cross_entropy(logits, labels, weight=class_weights)
        if args.check_finite and not math.isfinite(loss.item()):
            log.info(f"Loss is {loss.item()}, stopping training")
            sys.exit(1)
        opt.zero_grad()
        loss.backward()
        if args.grad_clip:
            norm = torch.nn.utils.clip_grad_norm_(model.parameters(), args.grad_clip)
        opt.step()
        sched.step()
        return loss

    t0 = time.time()
    if args.shard_mode == "epoch":
        step = 0
        for epoch in range(args.epochs):
            for ids, labels in loader:
                loss = train_step(step, ids, labels)
                if step % 5 == 0:
                    avg = mnlib.allreduce_mean(loss.item(), world)
                    if rank == 0:
                        log.info(f"epoch {epoch} step {step} loss {avg:.4f}")
                step += 1
                time.sleep(args.sleep)
            log.info(f"epoch {epoch} finished after {step} steps")
        log.info("all epochs finished, shutting down")
        dist.destroy_process_group()
        return
    else:
        for step, (ids, labels), bar in mnlib.iterate(args, loader, log, rank):
            loss = train_step(step, ids, labels)
            if step % 5 == 0 or step == args.steps - 1:
                avg = mnlib.allreduce_mean(loss.item(), world)
                if bar is not None:
                    bar.set_postfix(loss=f"{avg:.4f}")
                elif rank == 0:
                    log.info(f"step {step} loss {avg:.4f} lr {sched.get_last_lr()[0]:.5f} "
                             f"{(time.time()-t0)/(step+1):.3f}s/it")
            time.sleep(args.sleep)
    dist.barrier()
    if rank == 0:
        log.info(f"training done in {time.time()-t0:.1f}s")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
