"""Training-dynamics family: a small char-level LSTM/MLP LM trained with DDP/gloo on synthetic text.
--fault selects a real bug: sched (warmup formula never caps), explode (no grad clipping on a tanh RNN
with a too-large init), headopt (optimizer built before the head is replaced), nosync (model not wrapped
in DDP), lrzero (scheduler horizon in epochs but stepped per batch), straggler (one rank reads from slow
storage), none (healthy noisy run)."""
import argparse, os, sys, time, math, logging, warnings
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist
sys.path.insert(0, os.path.dirname(__file__))
from common import setup, cleanup

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--rank", type=int, default=1)
p.add_argument("--steps", type=int, default=80)
p.add_argument("--epochs", type=int, default=4)
p.add_argument("--lr", type=float, default=2e-3)
p.add_argument("--warmup", type=int, default=10)
p.add_argument("--style", default="megatron")
p.add_argument("--log-every", type=int, default=5)
p.add_argument("--tqdm", action="store_true")
args = p.parse_args()

V, T = 48, 24
class LM(nn.Module):
    def __init__(s, rnn="lstm"):
        super().__init__()
        s.emb = nn.Embedding(V, 64)
        s.rnn = nn.LSTM(64, 96, batch_first=True) if rnn == "lstm" else nn.RNN(64, 96, batch_first=True, nonlinearity="tanh")
        s.head = nn.Linear(96, V)
    def forward(s, x):
        h, _ = s.rnn(s.emb(x)); return s.head(h)

def batch(g, n=16):
    # synthetic "text": noisy arithmetic sequences, learnable structure
    start = torch.randint(0, V, (n, 1), generator=g); stride = torch.randint(1, 4, (n, 1), generator=g)
    seq = (start + stride * torch.arange(T + 1)) % V
    noise = torch.rand(seq.shape, generator=g) < 0.1
    seq = torch.where(noise, torch.randint(0, V, seq.shape, generator=g), seq)
    return seq[:, :-1], seq[:, 1:]

def main():
    rank, world = setup(60)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s [%(name)s] %(message)s")
    log = logging.getLogger(f"trainer.rank{rank}")
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(100 + rank)
    model = LM("rnn" if args.fault == "explode" else "lstm")
    if args.fault == "explode":
        with torch.no_grad():
            for n_, p_ in model.rnn.named_parameters():
                if "weight_hh" in n_: nn.init.normal_(p_, std=0.12)
    opt_params = model.parameters()
    opt = torch.optim.AdamW(model.parameters() if args.fault != "explode" else model.parameters(),
                            lr=args.lr, weight_decay=0.0 if args.fault == "explode" else 0.01)
    if args.fault == "explode":
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    if args.fault == "headopt":
        # "re-initialise the output layer for the new vocabulary" -- done after the optimizer exists
        model.rnn.requires_grad_(False); model.emb.requires_grad_(False)
        model.head = nn.Linear(96, V)
    wrapped = model
    if world > 1 and args.fault != "nosync":
        wrapped = nn.parallel.DistributedDataParallel(model)
    steps_per_epoch = args.steps // args.epochs
    if args.fault == "sched":
        # linear warmup then cosine decay -- bug: the warmup factor is never capped at 1
        lam = lambda s: (s + 1) / args.warmup if s < args.steps else 0.0
    elif args.fault == "lrzero":
        total = args.epochs  # horizon given in epochs, scheduler stepped every batch
        lam = lambda s: max(0.0, 1.0 - s / total)
    else:
        lam = lambda s: min(1.0, (s + 1) / args.warmup) * 0.5 * (1 + math.cos(math.pi * min(s, args.steps) / args.steps))
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lam)
    if rank == 0:
        log.info(f"model params: {sum(p.numel() for p in model.parameters())}, world size {world}, steps {args.steps}, lr {args.lr}")
    it = range(1, args.steps + 1)
    if args.tqdm and rank == 0:
        from tqdm import tqdm
        it = tqdm(it, desc="train", dynamic_ncols=False, ncols=100, mininterval=0)
    t_last = time.time(); skipped = 0
    for step in it:
        td = time.time()
        x, y = batch(g)
        if args.fault == "straggler" and rank == args.rank:
            time.sleep(0.12)  # samples fetched one by one from the slow object-store mount
        data_ms = (time.time() - td) * 1000
        logits = wrapped(x)
        loss = F.cross_entropy(logits.reshape(-1, V), y.reshape(-1),
                               reduction="sum" if args.fault == "explode" else "mean")  # ported from a per-token-sum codebase
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if args.fault == "explode":
            gn = torch.norm(torch.stack([p_.grad.norm() for p_ in model.parameters() if p_.grad is not None]))
        else:
            gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step(); sched.step()
        if step % args.log_every == 0:
            lv = loss.detach().clone()
            if world > 1 and args.fault != "nosync":
                dist.all_reduce(lv); lv /= world
            now = time.time(); ms = (now - t_last) * 1000 / args.log_every; t_last = now
            lr = opt.param_groups[0]["lr"]
            if args.fault == "straggler":
                log.info(f"step {step} | loss {lv.item():.4f} | step time {ms:.1f} ms | data time {data_ms:.1f} ms | lr {lr:.2e}")
            elif rank == 0:
                if args.tqdm:
                    it.set_postfix(loss=f"{lv.item():.3f}", lr=f"{lr:.1e}")
                elif args.style == "megatron":
                    print(f" [{time.strftime('%Y-%m-%d %H:%M:%S')}] iteration {step:8d}/{args.steps:8d} | consumed samples: {step*16*world:10d} | elapsed time per iteration (ms): {ms:.1f} | learning rate: {lr:.6E} | global batch size: {16*world:5d} | lm loss: {lv.item():.6E} | loss scale: 1.0 | grad norm: {gn.item():.3f} | number of skipped iterations: {skipped:3d} | number of nan iterations:   0 |", flush=True)
                else:
                    log.info(f"step={step} loss={lv.item():.4f} ppl={math.exp(min(lv.item(), 50)):.2f} grad_norm={gn.item():.3f} lr={lr:.3e}")
        if step % steps_per_epoch == 0:
            if args.fault == "nosync" and world > 1:
                # cheap replica-consistency probe used by our eval hook
                cs = torch.tensor([sum(p_.double().sum().item() for p_ in model.parameters())])
                allc = [torch.zeros(1, dtype=torch.float64) for _ in range(world)]
                dist.all_gather(allc, cs.double())
                if rank == 0:
                    log.info(f"epoch {step // steps_per_epoch} done; parameter checksum per rank: " + ", ".join(f"r{i}={c.item():.6f}" for i, c in enumerate(allc)))
            elif rank == 0:
                log.info(f"epoch {step // steps_per_epoch} done")
    if world > 1: dist.barrier()
    if rank == 0:
        torch.save(model.state_dict(), os.path.join("/tmp", f"ck_{args.fault}_final.pt"))
        log.info("saved final checkpoint; training complete")
    cleanup()

if __name__ == "__main__":
    main()
