"""DDP training followed by evaluation / metric aggregation. --fault selects the bug in the eval phase."""
import argparse, os, sys, time, math, logging, warnings, signal
from datetime import timedelta
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist
from torch.utils.data import TensorDataset, DataLoader, DistributedSampler

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--steps", type=int, default=60)
p.add_argument("--log-every", type=int, default=5)
p.add_argument("--use-logging", action="store_true")
p.add_argument("--tqdm", action="store_true")
p.add_argument("--timeout", type=int, default=30)
p.add_argument("--eval-size", type=int, default=256)
args = p.parse_args()

if args.use_logging:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s [%(name)s] %(message)s")
log = logging.getLogger("trainer")
def out(msg):
    if args.use_logging: log.info(msg)
    else: print(msg, flush=True)

def setup():
    if "RANK" in os.environ:
        dist.init_process_group("gloo", timeout=timedelta(seconds=args.timeout))
        return dist.get_rank(), dist.get_world_size()
    return 0, 1

class Net(nn.Module):
    def __init__(s, nin=32, nh=64, ncls=10):
        super().__init__()
        s.fc1 = nn.Linear(nin, nh); s.bn = nn.BatchNorm1d(nh); s.fc2 = nn.Linear(nh, ncls)
    def forward(s, x): return s.fc2(F.relu(s.bn(s.fc1(x))))

def main():
    rank, world = setup()
    torch.manual_seed(0)
    N = 2048
    X = torch.randn(N, 32); W = torch.randn(32, 10); Y = (X @ W).argmax(1)
    ds = TensorDataset(X, Y)
    sampler = DistributedSampler(ds, num_replicas=world, rank=rank) if world > 1 else None
    dl = DataLoader(ds, batch_size=32, sampler=sampler, shuffle=sampler is None)
    model = Net()
    if world > 1:
        model = nn.parallel.DistributedDataParallel(model, find_unused_parameters=args.fault == "none_warn")
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, args.steps)
    if args.fault == "none_warn":
        sched.step()  # warm-start the schedule (calls scheduler before the first optimizer step)
    step = 0; t0 = time.time()
    it = iter(dl); ep = 0
    bar = None
    if args.tqdm and rank == 0:
        from tqdm import tqdm
        bar = tqdm(total=args.steps, desc="train", file=sys.stdout, mininterval=0, ncols=90)
    while step < args.steps:
        try: xb, yb = next(it)
        except StopIteration:
            ep += 1
            if sampler: sampler.set_epoch(ep)
            it = iter(dl); xb, yb = next(it)
        model.train()
        loss = F.cross_entropy(model(xb), yb)
        opt.zero_grad(); loss.backward()
        gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step(); sched.step(); step += 1
        if bar is not None:
            bar.update(1); bar.set_postfix(loss=f"{loss.item():.4f}")
        if step % args.log_every == 0 and (rank == 0 or args.use_logging):
            out(f"[rank{rank}] epoch {ep} step {step}/{args.steps} loss {loss.item():.4f} grad_norm {gn.item():.3f} lr {sched.get_last_lr()[0]:.2e} ({(time.time()-t0)/step*1000:.1f} ms/step)")
    if bar is not None: bar.close()
    out(f"[rank{rank}] training done, running evaluation")

    # ---------------- evaluation ----------------
    Xe = torch.randn(args.eval_size, 32); Ye = (Xe @ W).argmax(1)
    if args.fault == "eval_empty":
        # bug: eval split filtered with wrong key -> empty
        keep = Ye > 10
        Xe, Ye = Xe[keep], Ye[keep]
    eds = TensorDataset(Xe, Ye)
    esampler = DistributedSampler(eds, num_replicas=world, rank=rank, shuffle=False) if world > 1 else None
    edl = DataLoader(eds, batch_size=64, sampler=esampler)
    out(f"[rank{rank}] eval samples on this rank: {len(esampler) if esampler else len(eds)}")
    net = model.module if world > 1 else model

    if args.fault == "eval_rank0_only":
        # bug: evaluation only on rank 0, but through the DDP wrapper (broadcast_buffers) and with a metric all_reduce inside
        if rank == 0:
            model.eval(); correct = torch.zeros(1); total = torch.zeros(1)
            with torch.no_grad():
                for xb, yb in edl:
                    correct += (model(xb).argmax(1) == yb).sum(); total += len(yb)
            dist.all_reduce(correct); dist.all_reduce(total)
            out(f"[rank0] eval acc {(correct/total).item():.4f}")
        dist.barrier()
        out(f"[rank{rank}] finished")
        dist.destroy_process_group(); return

    model.eval()
    _open_handles = []
    all_preds, all_labels, losses = [], [], []
    if args.fault == "eval_numpy":
        ctx = torch.enable_grad()
    else:
        ctx = torch.no_grad()
    with ctx:
        for i, (xb, yb) in enumerate(edl):
            logits = net(xb)
            losses.append(F.cross_entropy(logits, yb, reduction="sum").item())
            if args.fault == "eval_numpy" and rank == args.fault_rank:
                import numpy as np
                all_preds.append(np.argmax(logits.softmax(-1).numpy(), axis=1))
            else:
                all_preds.append(logits.argmax(1))
            all_labels.append(yb)
            if args.fault == "pred_files":
                # dump per-sample predictions for error analysis (bug: handles never closed)
                os.makedirs(f"/work/rr82/co/tmp_out/preds/rank{rank}", exist_ok=True)
                for j in range(len(yb)):
                    fh = open(f"/work/rr82/co/tmp_out/preds/rank{rank}/b{i}_{j}.txt", "w")
                    fh.write(f"{all_preds[-1][j].item()} {yb[j].item()}\n"); _open_handles.append(fh)
            if args.fault == "eval_kill" and rank == args.fault_rank and i == 1:
                os.kill(os.getpid(), signal.SIGKILL)
            if args.fault == "eval_oom" and rank == args.fault_rank:
                # keep full probability matrix over a large "vocab" projection for calibration metrics
                big = torch.randn(xb.shape[0], 64).repeat(1, 1) @ torch.randn(64, 4_000_000)
                all_preds[-1] = big.argmax(1) % 10
    if args.fault == "eval_numpy":
        import numpy as np
        preds = torch.as_tensor(np.concatenate(all_preds)) if rank == args.fault_rank else torch.cat(all_preds)
    else:
        preds = torch.cat(all_preds)
    labels = torch.cat(all_labels)
    n = len(labels)
    avg_loss = sum(losses) / n
    if args.fault == "metric_shape":
        # per-class confusion counts: bug uses number of classes seen on this rank
        ncls = int(torch.cat([preds, labels]).max().item()) + 1
        conf = torch.zeros(ncls, ncls)
        for pr, lb in zip(preds, labels): conf[lb, pr] += 1
        out(f"[rank{rank}] local confusion matrix {tuple(conf.shape)}")
        dist.all_reduce(conf)
        out(f"[rank{rank}] macro acc {(conf.diag()/conf.sum(1).clamp(min=1)).mean():.4f}")
    elif args.fault == "metric_topk":
        # per-batch accuracy, assumes every eval batch is full
        per_batch = (preds.view(-1, 64) == labels.view(-1, 64)).float().mean(1)
        out(f"[rank{rank}] eval acc {per_batch.mean():.4f} (min batch {per_batch.min():.4f})")
    elif args.fault == "metric_dict":
        metrics = {"eval_loss": avg_loss, "eval_acc": (preds == labels).float().mean().item()}
        out(f"[rank{rank}] perplexity {math.exp(metrics['eval_los'])}")
    else:
        acc = (preds == labels).float().mean()
        t = torch.tensor([acc.item() * n, avg_loss * n, float(n)])
        if world > 1: dist.all_reduce(t)
        if args.fault in ("none_warn",):
            import numpy as np
            pn, ln = preds.numpy(), labels.numpy()
            per_cls = [float(np.mean(pn[ln == c] == c)) for c in range(12)]  # label space has 12 ids, 2 unused
            out(f"[rank{rank}] per-class recall {['%.2f' % v for v in per_cls]}")
        if rank == 0:
            out(f"[rank0] eval loss {t[1]/t[2]:.4f} acc {t[0]/t[2]:.4f} over {int(t[2])} samples")
    if world > 1:
        dist.barrier(); dist.destroy_process_group()
    out(f"[rank{rank}] done")

if __name__ == "__main__":
    main()
