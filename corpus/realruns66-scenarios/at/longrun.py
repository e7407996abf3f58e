"""Long multi-rank CPU/gloo training loop with selectable log style and an injectable fault.

Usage (torchrun):  longrun.py --style kv --steps 300 --fault NAME --fault-rank R --fault-step S
Usage (spawn):     longrun.py --spawn 3 ...
Usage (single):    longrun.py ...   (no RANK env -> single process)
"""
import argparse, os, sys, time, math, json, logging, datetime, warnings, signal, random

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.distributed as dist
from torch.utils.data import Dataset, DataLoader
from torch.utils.data.distributed import DistributedSampler

p = argparse.ArgumentParser()
p.add_argument("--style", default="kv", choices=["kv", "hf", "megatron", "tqdm", "logging"])
p.add_argument("--steps", type=int, default=300)
p.add_argument("--log-every", type=int, default=1)
p.add_argument("--eval-every", type=int, default=50)
p.add_argument("--ckpt-every", type=int, default=100)
p.add_argument("--ckpt-dir", default="/work/rr66/at/tmp/ckpt")
p.add_argument("--lr", type=float, default=3e-3)
p.add_argument("--bs", type=int, default=8)
p.add_argument("--vocab", type=int, default=512)
p.add_argument("--hidden", type=int, default=64)
p.add_argument("--workers", type=int, default=0)
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=200)
p.add_argument("--spawn", type=int, default=0)
p.add_argument("--pg-timeout", type=int, default=30)
p.add_argument("--noise", action="store_true", help="emit realistic warnings")
p.add_argument("--sleep", type=float, default=0.0)
p.add_argument("--resume", default="")
p.add_argument("--pidfile-dir", default="")
p.add_argument("--best-name", default="best.pt")
p.add_argument("--eval-data", default="/work/rr66/at/tmp/eval_tokens.pt")
args = p.parse_args()

SEQ = 16


class TokenDataset(Dataset):
    """Synthetic LM tokens; a rank may be given a "bad shard" to mimic real data bugs."""

    def __init__(self, n, vocab, seed, bad=None, bad_index=-1):
        g = torch.Generator().manual_seed(seed)
        self.data = torch.randint(0, vocab, (n, SEQ + 1), generator=g)
        self.bad = bad
        self.bad_index = bad_index
        self.raw = [" ".join(str(int(t)) for t in row) for row in self.data[:, :4]]

    def __len__(self):
        return len(self.data)

    def __getitem__(self, i):
        row = self.data[i]
        if self.bad == "oov" and i == self.bad_index:
            # shard was tokenized with a larger tokenizer (vocab 50257) than the model
            row = row.clone(); row[5] = 50256
        if self.bad == "ragged" and i == self.bad_index:
            row = row[:-3]  # record truncated in the shard
        if self.bad == "parse" and i == self.bad_index:
            # a record in the text shard has an empty field; parsing it in the worker fails
            fields = "12 7 ".split(" ")
            _ = [int(f) for f in fields]
        if self.bad == "inf" and i == self.bad_index:
            row = row.clone()
        return {"input_ids": row[:-1], "labels": row[1:], "idx": i}


class TinyLM(nn.Module):
    def __init__(self, vocab, hidden, aux=False):
        super().__init__()
        self.emb = nn.Embedding(vocab, hidden)
        self.l1 = nn.Linear(hidden, hidden * 2)
        self.l2 = nn.Linear(hidden * 2, hidden)
        self.ln = nn.LayerNorm(hidden)
        self.head = nn.Linear(hidden, vocab)
        self.aux_head = nn.Linear(hidden, 4) if aux else None

    def forward(self, x, use_aux=False, scale=None):
        h = self.emb(x)
        if scale is not None:
            h = h * scale
        h = h + self.l2(F.gelu(self.l1(h)))
        h = self.ln(h)
        out = self.head(h)
        if use_aux and self.aux_head is not None:
            return out, self.aux_head(h.mean(1))
        return out


def setup():
    if "RANK" in os.environ:
        dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=args.pg_timeout))
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


class Printer:
    def __init__(self, rank, world, total):
        self.rank, self.world, self.total = rank, world, total
        self.t0 = time.time()
        self.bar = None
        if args.style == "tqdm":
            from tqdm import tqdm
            self.bar = tqdm(total=total, desc=f"[rank{rank}] train", dynamic_ncols=False, ncols=100,
                            mininterval=0.5, file=sys.stderr)
        if args.style == "logging":
            logging.basicConfig(level=logging.INFO,
                                format=f"%(asctime)s - %(levelname)s - rank{rank} - %(name)s - %(message)s")
        self.log = logging.getLogger("trainer")

    def step(self, step, loss, lr, gnorm, epoch, tps):
        s = args.style
        if s == "kv":
            print(f"[rank {self.rank}] step {step:5d}/{self.total} | loss {loss:.4f} | lr {lr:.3e} | "
                  f"grad_norm {gnorm:.3f} | tok/s {tps:8.1f}", flush=True)
        elif s == "hf":
            if step % 5 == 0:
                print({"loss": round(loss, 4), "grad_norm": round(gnorm, 4), "learning_rate": lr,
                       "epoch": round(epoch, 2)}, flush=True)
        elif s == "megatron":
            if step % 2 == 0:
                el = (time.time() - self.t0) * 1000 / max(step, 1)
                print(f" iteration {step:8d}/{self.total:8d} | consumed samples: {step * args.bs * self.world:10d} | "
                      f"elapsed time per iteration (ms): {el:.1f} | learning rate: {lr:.6E} | global batch size: "
                      f"{args.bs * self.world:5d} | lm loss: {loss:.6E} | loss scale: 1.0 | grad norm: {gnorm:.3f} | "
                      f"number of skipped iterations:   0 | number of nan iterations:   0 |", flush=True)
        elif s == "tqdm":
            self.bar.update(1)
            self.bar.set_postfix(loss=f"{loss:.3f}", lr=f"{lr:.2e}")
            if step % 25 == 0:
                self.bar.write(f"[rank{self.rank}] step {step} loss={loss:.4f} grad_norm={gnorm:.3f}")
        elif s == "logging":
            self.log.info("step=%d loss=%.4f lr=%.3e grad_norm=%.3f tokens_per_sec=%.1f", step, loss, lr, gnorm, tps)

    def info(self, msg):
        if self.bar is not None:
            self.bar.write(msg)
        elif args.style == "logging":
            self.log.info(msg)
        else:
            print(msg, flush=True)

    def close(self):
        if self.bar is not None:
            self.bar.close()


def main_worker(rank, world):
    torch.manual_seed(0)
    torch.set_num_threads(1)
    pr = Printer(rank, world, args.steps)
    if args.pidfile_dir:
        os.makedirs(args.pidfile_dir, exist_ok=True)
        open(os.path.join(args.pidfile_dir, f"rank{rank}.pid"), "w").write(str(os.getpid()))
    distributed = world > 1
    f, fr, fs = args.fault, args.fault_rank, args.fault_step
    me_fault = (rank == fr) or (world == 1)

    bad = None; bad_index = -1
    n_samples = 16384
    if me_fault and f in ("oov", "ragged", "parse"):
        bad = f
    ds = TokenDataset(n_samples, args.vocab, seed=1234, bad=bad)
    if distributed:
        sampler = DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=True, seed=0)
    else:
        sampler = torch.utils.data.RandomSampler(ds, generator=torch.Generator().manual_seed(0))
    order = list(iter(sampler))
    if bad is not None:
        ds.bad_index = order[(fs - 1) * args.bs + 3]
    dl = DataLoader(ds, batch_size=args.bs, sampler=sampler, num_workers=args.workers, drop_last=True,
                    persistent_workers=args.workers > 0)

    model = TinyLM(args.vocab, args.hidden, aux=(f == "unused"))
    if f == "modelmismatch" and rank == fr:
        model = TinyLM(args.vocab, args.hidden, aux=True)
    if args.resume:
        sd = torch.load(args.resume, map_location="cpu")
        model.load_state_dict(sd["model"])
        pr.info(f"[rank {rank}] resumed from {args.resume} (step {sd.get('step')})")
    ddp = nn.parallel.DistributedDataParallel(model) if distributed else model
    opt = torch.optim.AdamW(ddp.parameters(), lr=args.lr, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 20) * 0.5 * (1 + math.cos(math.pi * min(s, args.steps) / args.steps)))
    if args.noise and rank == 0:
        # real-world noise: scheduler stepped before optimizer (UserWarning), deprecated API use
        sched.step()
        warnings.warn("torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly.", UserWarning)
    pr.info(f"[rank {rank}] world_size={world} params={sum(p.numel() for p in model.parameters())} "
            f"batches/epoch={len(dl)} steps={args.steps}")
    if rank == 0:
        os.makedirs(args.ckpt_dir, exist_ok=True)

    step = 0; epoch = 0
    leaked = []
    while step < args.steps:
        if distributed:
            sampler.set_epoch(epoch)
        for batch in dl:
            step += 1
            if step > args.steps:
                break
            t = time.time()
            x, y = batch["input_ids"], batch["labels"]
            # ----------------------------------------------------------- faults at step
            if me_fault and step == fs:
                if f == "segv":
                    import ctypes
                    ctypes.string_at(0)  # native extension dereferences NULL
                elif f == "hang":
                    # waiting on a lock file that another job never releases
                    lock = os.path.join(args.ckpt_dir, "..", "eval.lock")
                    open(lock, "w").close()
                    while os.path.exists(lock):
                        time.sleep(1)
                elif f == "selfkill":
                    pass
                elif f == "bigeval":
                    pass
            if f == "inf" and me_fault and step == fs:
                x = x.clone()
            # aux loss only during warm-up phase (config: aux_loss_steps); DDP built without find_unused_parameters
            use_aux = (f == "unused" and step < fs)
            scale = None
            if f == "overflow" and me_fault and step >= fs:
                scale = torch.tensor(1e38)
            if f == "unused":
                out, aux = ddp(x, use_aux=use_aux) if use_aux else (ddp(x, use_aux=False), None)
            else:
                out = ddp(x, scale=scale) if scale is not None else ddp(x)
                aux = None
            loss = F.cross_entropy(out.reshape(-1, out.size(-1)), y.reshape(-1))
            if aux is not None:
                loss = loss + 0.01 * aux.pow(2).mean()
            if f == "targetdtype" and me_fault and step == fs:
                # label smoothing branch built soft labels with the wrong shape
                soft = F.one_hot(y, args.vocab).float()
                loss = F.cross_entropy(out.reshape(-1, out.size(-1)), soft)
            if f == "inplace" and me_fault and step >= fs:
                # switched to a "numerically safe" NLL once label smoothing warm-up ends
                probs = out.softmax(-1)
                probs.clamp_(min=1e-8)
                loss = -probs.log().gather(-1, y.unsqueeze(-1)).mean()
            if not torch.isfinite(loss):
                print(f"[rank {rank}] Loss is {loss.item()}, stopping training", flush=True)
                sys.exit(1)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            gnorm = float(torch.nn.utils.clip_grad_norm_(ddp.parameters(), 1.0))
            opt.step(); sched.step()
            lr = sched.get_last_lr()[0]
            tps = x.numel() / max(time.time() - t, 1e-6)
            if args.noise and step == 37 and rank == 0:
                warnings.warn(f"Detected grad norm spike at step {step}: grad_norm={gnorm * 40:.1f} (clipped to 1.0)")
            if args.noise and step == 120 and rank == 0:
                try:
                    import wandb  # optional tracker
                except Exception:
                    import traceback
                    traceback.print_exc()
                    print("[rank 0] WARNING: experiment tracker unavailable, continuing with stdout logging only",
                          flush=True)
            if step % args.log_every == 0:
                pr.step(step, loss.item(), lr, gnorm, step / len(dl), tps)
            if f == "fdleak" and rank == fr:
                # per-step metrics appended to a jsonl; handle never closed (bug)
                fh = open(os.path.join(args.ckpt_dir, f"metrics_rank{rank}.jsonl"), "a")
                fh.write(json.dumps({"step": step, "loss": loss.item()}) + "\n"); fh.flush()
                leaked.append(fh)
            if args.sleep:
                time.sleep(args.sleep)
            # ----------------------------------------------------------- eval
            if step % args.eval_every == 0:
                ddp.eval()
                with torch.no_grad():
                    if f == "bigeval" and me_fault and step >= fs:
                        # eval on the full held-out set in one batch (eval_batch_size=-1)
                        xe = torch.randint(0, args.vocab, (200000, SEQ))
                        le = ddp(xe)
                    elif f == "f64" and me_fault and step >= fs:
                        # probe eval on cached sentence features stored as a numpy array
                        import numpy as np
                        feats = torch.from_numpy(np.random.default_rng(0).standard_normal((32, SEQ, args.hidden)))
                        xe = torch.randint(0, args.vocab, (32, SEQ))
                        le = model.head(model.ln(feats))
                    else:
                        xe = torch.randint(0, args.vocab, (32, SEQ))
                        le = ddp(xe)
                    el = F.cross_entropy(le.reshape(-1, le.size(-1)), xe.reshape(-1)).reshape(1)
                if distributed:
                    if f == "desync" and rank == fr and step >= fs:
                        # rank computes per-sample losses instead of the mean
                        el = torch.stack([el[0]] * 4)
                    if f == "monbarrier" and rank == fr and step >= fs:
                        time.sleep(args.pg_timeout * 3)
                    if f == "monbarrier":
                        dist.monitored_barrier(timeout=datetime.timedelta(seconds=10))
                    dist.all_reduce(el)
                    el /= world
                metrics = {"eval_loss": float(el.mean()), "eval_ppl": math.exp(min(float(el.mean()), 20))}
                if f == "keyerror" and rank == fr and step >= fs:
                    pr.info(f"[rank {rank}] new best eval_accuracy={metrics['eval_accuracy']:.4f}")
                if rank == 0:
                    pr.info(f"[rank {rank}] eval @ step {step}: eval_loss={metrics['eval_loss']:.4f} "
                            f"eval_ppl={metrics['eval_ppl']:.2f}")
                ddp.train()
            # ----------------------------------------------------------- checkpoint
            if step % args.ckpt_every == 0 and rank == 0:
                path = os.path.join(args.ckpt_dir, f"checkpoint-{step}.pt")
                if f == "efbig" and step >= fs:
                    import resource
                    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
                    resource.setrlimit(resource.RLIMIT_FSIZE, (200_000, 200_000))
                if f == "xdev" and step >= fs:
                    tmp = f"/dev/shm/ckpt_tmp_{os.getpid()}.pt"
                    torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step}, tmp)
                    os.rename(tmp, path)
                elif f == "longname2" and step >= fs:
                    tag = "_".join(f"{k}={v}" for k, v in sorted(vars(args).items())).replace("/", "-")
                    path = os.path.join(args.ckpt_dir, f"checkpoint-{step}-{tag}.pt")
                    torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step}, path)
                elif f == "longname" and step >= fs:
                    tag = "_".join(f"{k}={v}" for k, v in sorted(vars(args).items()))
                    path = os.path.join(args.ckpt_dir, f"checkpoint-{step}-{tag}-{tag}.pt")
                    torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step}, path)
                else:
                    torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step}, path)
                pr.info(f"[rank {rank}] Saved checkpoint to {path}")
            if step % args.ckpt_every == 0 and f == "reload" and rank == fr and step >= fs:
                # every rank reloads the latest "best" checkpoint for the EMA/eval copy
                best = os.path.join(args.ckpt_dir, args.best_name)
                sd = torch.load(best, map_location="cpu")
                model.load_state_dict(sd["model"])
            if step % args.ckpt_every == 0 and f == "evalmodel" and rank == fr and step >= fs:
                ema = TinyLM(args.vocab, args.hidden * 2)
                ema.load_state_dict(torch.load(os.path.join(args.ckpt_dir, f"checkpoint-{step}.pt"),
                                               map_location="cpu")["model"])
            if step % args.ckpt_every == 0 and f == "evalfile" and rank == fr and step >= fs:
                ev = torch.load(args.eval_data)
        epoch += 1
    pr.close()
    if distributed:
        dist.barrier()
    if rank == 0:
        pr.info(f"[rank 0] training finished: {args.steps} steps in {time.time() - pr.t0:.1f}s")
    if distributed:
        dist.destroy_process_group()


def spawn_entry(local_rank, world):
    os.environ["RANK"] = str(local_rank)
    os.environ["WORLD_SIZE"] = str(world)
    os.environ["LOCAL_RANK"] = str(local_rank)
    r, w = setup()
    main_worker(r, w)


if __name__ == "__main__":
    if args.spawn:
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", "31177")
        import torch.multiprocessing as mp
        mp.spawn(spawn_entry, args=(args.spawn,), nprocs=args.spawn, join=True)
    else:
        r, w = setup()
        main_worker(r, w)
