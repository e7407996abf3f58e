"""Tiny causal LM trained with DDP (gloo, CPU).  Faults are selected by flags and
happen through ordinary code paths on one rank.

--fault:
  none            healthy run (with --noisy: warnings that look alarming)
  metric-bug      rank-specific KeyError in the per-rank metric bookkeeping
  vocab-shard     the faulting rank tokenises its shard with a larger vocabulary
  view-bug        hard-coded batch size in a .view() breaks on the short last batch
  long-seq        faulting rank's shard has very long sequences (run under ulimit -v)
  nan-shard       faulting rank's features contain inf -> loss becomes NaN
  aux-head        faulting rank skips the auxiliary head (unused params under DDP)
  vocab-local     vocab size derived from local shard -> different model per rank
  skip-allreduce  faulting rank skips the grad-norm all_reduce (manual sync, no DDP)
  stuck-barrier   faulting rank blocks before monitored_barrier
  native-crash    faulting rank calls a C routine with a NULL pointer
  slow            every rank sleeps per step (for external signals)
"""
import argparse, os, sys, time, math, json, logging, warnings, datetime

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=5)
p.add_argument("--steps", type=int, default=12)
p.add_argument("--batch", type=int, default=8)
p.add_argument("--seq", type=int, default=32)
p.add_argument("--vocab", type=int, default=128)
p.add_argument("--pg-timeout", type=int, default=30)
p.add_argument("--use-logging", action="store_true")
p.add_argument("--progress", action="store_true")
p.add_argument("--noisy", action="store_true")
p.add_argument("--no-ddp", action="store_true")
p.add_argument("--spawn", type=int, default=0, help="start N ranks with torch.multiprocessing.spawn")
p.add_argument("--port", type=int, default=46200)
p.add_argument("--step-sleep", type=float, default=0.0)
args = p.parse_args()


class TinyLM(nn.Module):
    def __init__(self, vocab, d=64, aux=False):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(4096, d)
        self.block = nn.TransformerEncoderLayer(d, 4, 4 * d, dropout=0.0, batch_first=True)
        self.head = nn.Linear(d, vocab)
        self.aux_head = nn.Linear(d, 1) if aux else None

    def forward(self, x, use_aux=True):
        T = x.shape[1]
        h = self.emb(x) + self.pos(torch.arange(T))
        mask = torch.triu(torch.full((T, T), float("-inf")), 1)
        h = self.block(h, src_mask=mask)
        logits = self.head(h)
        aux = self.aux_head(h.mean(1)).squeeze(-1) if (self.aux_head is not None and use_aux) else None
        return logits, aux


def make_shard(rank, world, n):
    g = torch.Generator().manual_seed(1000 + rank)
    vocab = args.vocab
    seq = args.seq
    if args.fault == "vocab-shard" and rank == args.fault_rank:
        vocab = args.vocab + 64  # shard was tokenised with the new, larger tokenizer
    if args.fault == "long-seq" and rank == args.fault_rank:
        seq = 4000  # this rank got the long-document bucket
    data = torch.randint(0, vocab, (n, seq + 1), generator=g)
    feats = torch.randn(n, generator=g)
    if args.fault == "nan-shard" and rank == args.fault_rank:
        feats[args.fault_step * args.batch + 3] = float("inf")  # un-normalised sensor value
    return data, feats


def run(rank, world):
    if args.use_logging:
        logging.basicConfig(level=logging.INFO,
                            format=f"%(asctime)s %(levelname)s [rank{rank}] %(name)s: %(message)s")
    log = logging.getLogger("train")

    def say(msg):
        if args.use_logging:
            log.info(msg)
        else:
            print(f"[rank {rank}] {msg}", flush=True)

    dist.init_process_group("gloo", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=args.pg_timeout))
    torch.manual_seed(0)
    torch.set_num_threads(1)
    say(f"initialised process group: world_size={world} backend={dist.get_backend()}")

    n = args.batch * args.steps - (3 if args.fault == "view-bug" and rank == args.fault_rank else 0)
    data, feats = make_shard(rank, world, n)
    vocab = args.vocab
    if args.fault == "vocab-local":
        # vocabulary built from the tokens seen in this rank's shard
        vocab = int(data.max()) + 1 + (7 if rank == args.fault_rank else 0)
        if rank == args.fault_rank:
            say("added 7 special tokens found in local shard: <sep>,<cls>,<eot>,<img>,<aud>,<pad2>,<unk2>")
    aux = args.fault in ("aux-head", "nan-shard") or args.noisy
    model = TinyLM(vocab, aux=aux)
    nparams = sum(p.numel() for p in model.parameters())
    say(f"model: TinyLM vocab={vocab} params={nparams}")
    if args.no_ddp:
        ddp = model
        for p_ in model.parameters():
            dist.broadcast(p_.data, 0)
    else:
        ddp = nn.parallel.DistributedDataParallel(model, find_unused_parameters=args.noisy)
    opt = torch.optim.AdamW(ddp.parameters(), lr=3e-3)
    sched = torch.optim.lr_scheduler.StepLR(opt, 5, 0.5)
    if args.noisy:
        sched.step()  # scheduler stepped before optimizer (common ordering slip) -> UserWarning

    steps = range(math.ceil(n / args.batch))
    if args.progress:
        from tqdm import tqdm
        steps = tqdm(steps, desc=f"rank{rank} train", disable=False, mininterval=0, ncols=80)
    stats = {}
    t0 = time.time()
    for step in steps:
        xb = data[step * args.batch:(step + 1) * args.batch]
        fb = feats[step * args.batch:(step + 1) * args.batch]
        x, y = xb[:, :-1], xb[:, 1:]
        if args.fault == "view-bug":
            x = x.contiguous().view(args.batch, args.seq)  # assumes full batches
        use_aux = not (args.fault == "aux-head" and rank == args.fault_rank and step >= args.fault_step)
        logits, a = ddp(x, use_aux=use_aux)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        if a is not None:
            loss = loss + 0.1 * F.mse_loss(a, fb)
        opt.zero_grad()
        loss.backward()
        if args.no_ddp:
            # manual gradient sync
            sq = torch.zeros(1)
            for p_ in model.parameters():
                if p_.grad is not None:
                    dist.all_reduce(p_.grad)
                    p_.grad /= world
                    sq += p_.grad.pow(2).sum()
            if not (args.fault == "skip-allreduce" and rank == args.fault_rank and step == args.fault_step):
                # global grad-norm for clipping; the faulting rank takes the
                # "local norm is small, skip global check" shortcut
                dist.all_reduce(sq)
            else:
                say("grad norm below threshold locally, skipping global clip")
            gnorm = sq.sqrt().item()
            dist.broadcast(torch.tensor([float(step)]), 0)  # step counter sync
        else:
            gnorm = torch.nn.utils.clip_grad_norm_(ddp.parameters(), 1.0).item()
        opt.step()
        sched.step()
        if args.step_sleep:
            time.sleep(args.step_sleep)
        # per-rank bookkeeping
        key = f"loss/rank{rank}"
        if args.fault == "metric-bug" and rank == args.fault_rank and step == args.fault_step:
            key = f"loss/rank_{rank}"  # typo'd key in the straggler-tracking branch
            stats[key + "_ema"] = 0.9 * stats[key] + 0.1 * loss.item()
        stats[key] = loss.item()
        if args.fault == "nan-shard" and not math.isfinite(loss.item()):
            say(f"step {step} loss={loss.item():.4f} grad_norm={gnorm:.3f}")
            raise FloatingPointError(f"Loss is {loss.item()} at step {step} on rank {rank}; aborting (check input data)")
        if args.fault == "native-crash" and rank == args.fault_rank and step == args.fault_step:
            import ctypes
            say("compacting host buffers with libc")
            ctypes.memmove(ctypes.c_void_p(0), ctypes.c_char_p(b"x" * 64), 64)
        if step % 2 == 0 or args.fault == "nan-shard":
            say(f"step {step} loss={loss.item():.4f} grad_norm={gnorm:.3f} lr={sched.get_last_lr()[0]:.2e}")
    if args.fault == "stuck-barrier" and rank == args.fault_rank:
        say("waiting for eval shard lock /work/rr130/hx/tmp/eval.lock")
        while not os.path.exists("/work/rr130/hx/tmp/eval.lock.never"):
            time.sleep(0.5)
            if time.time() - t0 > 60:
                break
    if args.fault == "stuck-barrier":
        say("entering monitored barrier before checkpoint")
        dist.monitored_barrier(timeout=datetime.timedelta(seconds=10), wait_all_ranks=True)
    t = torch.tensor([loss.item()])
    dist.all_reduce(t)
    say(f"done: mean final loss {t.item() / world:.4f} in {time.time() - t0:.1f}s")
    dist.destroy_process_group()


def spawn_entry(rank, world):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(args.port)
    run(rank, world)


if __name__ == "__main__":
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(spawn_entry, args=(args.spawn,), nprocs=args.spawn, join=True)
    else:
        run(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]))
