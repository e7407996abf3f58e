"""Plain DDP training loop with eval / save / resume / logging phases.
--fault selects a bug in one of the late phases, --rank/--step where it bites."""
import argparse, json, logging, os, sys, time, warnings, math
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--rank", type=int, default=1)
p.add_argument("--step", type=int, default=40)
p.add_argument("--steps", type=int, default=60)
p.add_argument("--out", default="/work/rr54/j/tmp/run")
p.add_argument("--resume", default="")
p.add_argument("--width", type=int, default=32)
p.add_argument("--logfmt", default="print")
p.add_argument("--tqdm", action="store_true")
p.add_argument("--noisy", action="store_true")
p.add_argument("--sleep", type=float, default=0.0)
args = p.parse_args()


class Net(nn.Module):
    def __init__(self, w):
        super().__init__()
        self.emb = nn.Embedding(100, w)
        self.fc1 = nn.Linear(w, w)
        self.head = nn.Linear(w, 100, bias=False)
        self.head.weight = self.emb.weight  # tied
        self.config = {"width": w, "vocab": 100}

    def forward(self, x):
        return self.head(torch.relu(self.fc1(self.emb(x))))


def main(local_rank=None, world=None):
    if local_rank is not None:  # mp.spawn path
        os.environ.update(RANK=str(local_rank), LOCAL_RANK=str(local_rank), WORLD_SIZE=str(world))
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank, world = dist.get_rank(), dist.get_world_size()
    if args.logfmt == "logging":
        logging.basicConfig(level=logging.INFO,
                            format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s")
    log = logging.getLogger("train")
    say = log.info if args.logfmt == "logging" else (lambda m: print(f"[rank{rank}] {m}", flush=True))
    torch.manual_seed(0)
    w = args.width + (8 if args.fault == "ddp_width" and rank == args.rank else 0)
    model = Net(w)
    ddp = DDP(model)
    opt = torch.optim.AdamW(ddp.parameters(), lr=3e-3)
    sched = torch.optim.lr_scheduler.StepLR(opt, 20, 0.5)
    start = 0
    if args.resume:
        say(f"resuming from {args.resume}")
        if args.fault == "resume_weights_only":
            ck = torch.load(args.resume)
        else:
            ck = torch.load(args.resume, map_location="cpu", weights_only=False)
        model.load_state_dict(ck["model"])
        if args.fault == "resume_optim":
            # added weight-decay-free group for biases after the checkpoint was written
            nd = [p_ for n, p_ in model.named_parameters() if n.endswith("bias")]
            dd = [p_ for n, p_ in model.named_parameters() if not n.endswith("bias")]
            opt = torch.optim.AdamW([{"params": dd}, {"params": nd, "weight_decay": 0.0}], lr=3e-3)
        opt.load_state_dict(ck["optim"])
        start = ck["step"]
        say(f"resumed at step {start}")
    if args.noisy and rank == 0:
        warnings.warn("The epoch parameter in `scheduler.step()` was not necessary and is being deprecated",
                      UserWarning)
        sched.step(0)
    g = torch.Generator().manual_seed(rank)
    it = range(start, args.steps)
    if args.tqdm and rank == 0:
        from tqdm import tqdm
        it = tqdm(it, desc="train", mininterval=0, file=sys.stderr)
    losses = []
    for step in it:
        x = torch.randint(0, 100, (16, 8), generator=g)
        y = (x + 1) % 100
        out = ddp(x)
        loss = nn.functional.cross_entropy(out.view(-1, 100), y.view(-1))
        opt.zero_grad()
        loss.backward()
        opt.step(); sched.step()
        losses.append(loss.item())
        time.sleep(args.sleep)
        if step % 5 == 0 and not args.tqdm:
            say(f"step {step} loss {loss.item():.4f} lr {sched.get_last_lr()[0]:.2e}")
        if args.fault == "log_numpy" and step == args.step and rank == args.rank:
            hist = {"loss": loss.numpy()}  # histogram logging
        if args.noisy and step == 10 and rank == 0:
            try:
                with open(os.path.join(args.out, "no_such_dir", "metrics.json")) as f:
                    json.load(f)
            except FileNotFoundError as e:
                log.warning("could not read previous metrics, starting fresh: %s", e) if args.logfmt == "logging" \
                    else print(f"[rank{rank}] WARNING could not read previous metrics, starting fresh: {e}", flush=True)
        if (step + 1) % 20 == 0 or step == args.step:
            evaluate(ddp, model, rank, world, step, say)
            save(ddp, model, opt, rank, step, say)
        if args.fault == "metrics_file" and rank == args.rank:
            os.makedirs(args.out, exist_ok=True)
            stats = {n: p_.grad.flatten().tolist()[:256] for n, p_ in model.named_parameters()}
            with open(os.path.join(args.out, f"grad_stats_rank{rank}.jsonl"), "a") as fh:
                fh.write(json.dumps({"step": step, "loss": loss.item(), "grads": stats}) + "\n")
        if args.fault == "fd_leak" and rank == args.rank:
            os.makedirs(args.out, exist_ok=True)
            fh = open(os.path.join(args.out, f"metrics_rank{rank}.jsonl"), "a")  # never closed
            fh.write(json.dumps({"step": step, "loss": loss.item()}) + "\n"); fh.flush()
            globals().setdefault("_fh", []).append(fh)
    say(f"training done, final loss {sum(losses[-5:]) / 5:.4f}")
    dist.barrier()
    dist.destroy_process_group()


def evaluate(ddp, model, rank, world, step, say):
    ddp.eval()
    n_eval = 0 if args.fault in ("eval_nan_ok",) and rank == 0 else 32
    tot, cnt, correct = torch.zeros(1), torch.zeros(1), torch.zeros(1)
    seqlen = 9 if (args.fault == "eval_shape" and rank == args.rank and step >= args.step) else 8
    with torch.no_grad():
        for _ in range(n_eval // 16):
            x = torch.randint(0, 100, (16, seqlen))
            y = (x + 1) % 100
            out = model(x)
            if args.fault == "eval_shape" and rank == args.rank and step >= args.step:
                y = y[:, :8]
            tot += nn.functional.cross_entropy(out.reshape(-1, 100), y.reshape(-1), reduction="sum")
            cnt += y.numel(); correct += (out.argmax(-1) == y).sum()
    if args.fault == "eval_hang" and rank == args.rank and step >= args.step:
        time.sleep(60)
    if args.fault == "monitored" and rank == args.rank and step >= args.step:
        time.sleep(30)
    if args.fault == "monitored":
        dist.monitored_barrier(timeout=timedelta(seconds=8))
    if args.fault == "collective_mismatch" and rank == args.rank and step >= args.step:
        stats = torch.stack([tot, cnt, correct]).flatten()
        stats = torch.cat([stats, torch.zeros(1)])  # added a new metric on this rank only
        dist.all_reduce(stats)
    else:
        stats = torch.stack([tot, cnt, correct]).flatten()
        dist.all_reduce(stats)
    local_acc = (correct / cnt).item()  # may be nan on a rank with an empty shard
    ppl = math.exp(stats[0].item() / stats[1].item())
    say(f"eval step {step}: eval_loss {stats[0].item() / stats[1].item():.4f} ppl {ppl:.2f} "
        f"local_acc {local_acc} global_acc {(stats[2] / stats[1]).item():.4f}")
    ddp.train()


def save(ddp, model, opt, rank, step, say):
    dist.barrier()
    if args.fault == "kill_save" and rank == args.rank and step >= args.step:
        os.kill(os.getpid(), 9)
    if rank != 0 and args.fault not in ("filename_long",):
        return
    out = args.out
    if args.fault == "save_missing_dir" and step >= args.step:
        out = os.path.join(args.out, "checkpoints", f"epoch_{step // 20}")
    else:
        os.makedirs(out, exist_ok=True)
    name = f"ckpt_{step}.pt"
    if args.fault == "filename_long" and step >= args.step:
        tag = "_".join(f"{k}={v}" for k, v in vars(args).items()).replace("/", "-") * 6
        name = f"ckpt_{step}_{tag}.pt"
    ck = {"model": model.state_dict(), "optim": opt.state_dict(), "step": step + 1}
    if args.fault == "ddp_config" and step >= args.step:
        ck["config"] = ddp.config
    if args.fault == "pickle_lambda" and step >= args.step:
        ck["lr_lambda"] = lambda s: 0.5 ** (s // 20)
    if args.fault == "weights_only_src":
        ck["args"] = args
    if args.fault == "safetensors" and step >= args.step:
        from safetensors.torch import save_file
        save_file(model.state_dict(), os.path.join(out, f"model_{step}.safetensors"))
    path = os.path.join(out, name)
    torch.save(ck, path)
    say(f"saved checkpoint {path} ({os.path.getsize(path)} bytes)")


if __name__ == "__main__":
    if "RANK" in os.environ:
        main()
    else:
        import torch.multiprocessing as mp
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        mp.spawn(main, args=(int(os.environ.get("NPROC", "2")),), nprocs=int(os.environ.get("NPROC", "2")))
