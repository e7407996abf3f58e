"""Checkpoint save/resume scenarios. torchrun (env RANK), --spawn N, or single process.
--phase train: train and save; --phase resume: load and continue."""
import argparse, dataclasses, datetime, logging, os, sys, time, warnings
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--mode", required=True)
p.add_argument("--phase", default="train")
p.add_argument("--ckpt-dir", default="runs/ckpt")
p.add_argument("--steps", type=int, default=20)
p.add_argument("--save-every", type=int, default=10)
p.add_argument("--width", type=int, default=64)
p.add_argument("--extra-group", action="store_true")
p.add_argument("--spawn", type=int, default=0)
p.add_argument("--port", type=int, default=41860)
p.add_argument("--log-fmt", default="plain")
p.add_argument("--big", action="store_true")
args = p.parse_args()

@dataclasses.dataclass
class RunConfig:
    width: int = 64
    lr: float = 1e-3
    note: str = "baseline"

class Net(nn.Module):
    def __init__(self, width=64, vocab=0):
        super().__init__()
        self.vocab = vocab
        if vocab:
            self.emb = nn.Embedding(vocab, width)
        self.body = nn.Sequential(nn.Linear(32 if not vocab else width, width), nn.GELU(), nn.Linear(width, width), nn.GELU())
        self.head = nn.Linear(width, vocab if vocab else 10, bias=not vocab)
        if vocab:
            self.head.weight = self.emb.weight  # tied input/output embeddings
    def forward(self, x):
        if self.vocab:
            x = self.emb(x).mean(1)
        return self.head(self.body(x))

def log_setup(rank):
    fmt = f"%(asctime)s %(levelname)s [rank{rank}] %(message)s" if args.log_fmt == "logging" else "%(message)s"
    logging.basicConfig(level=logging.INFO, format=fmt)
    logging.captureWarnings(args.log_fmt == "logging")
    return logging.getLogger("ckpt")

def data(rank, n=256):
    g = torch.Generator().manual_seed(100 + rank)
    x = torch.randn(n, 32, generator=g); y = (x[:, :10]).argmax(1)
    return x, y

def train_steps(net, opt, rank, log, start, steps, sched=None, on_save=None):
    x, y = data(rank)
    for step in range(start + 1, start + steps + 1):
        i = (step * 16) % (len(x) - 16)
        if args.mode == "sched_warn" and sched is not None and step == start + 1:
            sched.step()  # "warmup" scheduler stepped at the top of the loop
        loss = F.cross_entropy(net(x[i:i+16]), y[i:i+16])
        opt.zero_grad(); loss.backward(); opt.step()
        if sched is not None and args.mode == "sched_warn":
            sched.step(step)  # deprecated epoch argument
        if step % 5 == 0:
            lr = opt.param_groups[0]["lr"]
            log.info(f"step {step} loss {loss.item():.4f} lr {lr:.2e}")
        if on_save is not None and step % args.save_every == 0:
            on_save(step)
    return loss

def run(rank, world):
    log = log_setup(rank)
    if world > 1:
        dist.init_process_group("gloo", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=30))
    torch.manual_seed(0)
    mode, ck = args.mode, args.ckpt_dir
    os.makedirs(ck, exist_ok=True) if mode not in ("permission", "disk_full") else None
    width = args.width
    if mode in ("disk_full", "efbig") and args.big:
        width = 256
    net0 = Net(width, vocab=(200 if mode == "st_shared" else 0))
    net = nn.parallel.DistributedDataParallel(net0) if world > 1 else net0
    if args.extra_group:
        decay = [p_ for n, p_ in net0.named_parameters() if p_.ndim > 1]
        no_decay = [p_ for n, p_ in net0.named_parameters() if p_.ndim <= 1]
        opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}], lr=1e-3)
    else:
        opt = torch.optim.AdamW(net0.parameters(), lr=1e-3)
    if rank == 0:
        log.info(f"[{mode}/{args.phase}] world={world} width={width} params={sum(q.numel() for q in net0.parameters())}")

    if args.phase == "train":
        sched = None
        if mode == "sched_warn":
            sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=3e-3, total_steps=args.steps + 5)
        if mode == "lambda_pickle":
            sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_lambda=lambda s: min(1.0, (s + 1) / 5))
        def on_save(step):
            if mode in ("truncated",):
                path = f"{ck}/shard_rank{rank}.pt"
                torch.save({"model": net0.state_dict(), "opt": opt.state_dict(), "step": step}, path)
                log.info(f"[rank{rank}] saved {path}")
            elif rank == 0:
                if mode == "weights_only":
                    torch.save({"model": net0.state_dict(), "opt": opt.state_dict(), "step": step,
                                "args": args, "config": RunConfig(width=width)}, f"{ck}/last.pt")
                elif mode == "ddp_prefix":
                    torch.save(net.state_dict(), f"{ck}/model_step{step}.pt")
                elif mode in ("optim_groups", "optim_shape", "strict_false_ok", "sched_warn"):
                    torch.save({"model": net0.state_dict(), "opt": opt.state_dict(), "step": step}, f"{ck}/last.pt")
                elif mode == "lambda_pickle":
                    torch.save({"model": net0.state_dict(), "opt": opt.state_dict(), "scheduler": sched, "step": step}, f"{ck}/last.pt")
                elif mode in ("disk_full", "permission"):
                    path = f"{ck}/ckpt_step{step:05d}.pt"
                    torch.save({"model": net0.state_dict(), "opt": opt.state_dict(), "step": step}, path)
                elif mode == "efbig":
                    path = f"{ck}/ckpt_step{step:05d}.pt"
                    with open(path, "wb") as fh:
                        torch.save({"model": net0.state_dict(), "opt": opt.state_dict(), "step": step}, fh)
                elif mode in ("st_shared", "st_trunc"):
                    from safetensors.torch import save_file
                    save_file(net0.state_dict(), f"{ck}/model.safetensors")
                else:
                    raise SystemExit("unknown mode " + mode)
                log.info(f"saved checkpoint at step {step} -> {ck}")
            if world > 1:
                dist.barrier()
        if mode == "st_shared":
            def on_save2(step):
                if rank == 0:
                    from safetensors.torch import save_file
                    save_file(net0.state_dict(), f"{ck}/model.safetensors"); log.info("saved")
                if world > 1: dist.barrier()
            xs = torch.randint(0, 200, (256, 12)); ys = torch.randint(0, 200, (256,))
            for step in range(1, args.steps + 1):
                i = (step * 16) % 240
                loss = F.cross_entropy(net(xs[i:i+16]), ys[i:i+16]); opt.zero_grad(); loss.backward(); opt.step()
                if step % 5 == 0: log.info(f"step {step} loss {loss.item():.4f}")
                if step % args.save_every == 0: on_save2(step)
        else:
            train_steps(net, opt, rank, log, 0, args.steps, sched=sched, on_save=on_save)
        log.info(f"[rank{rank}] phase train done")
    else:  # resume
        if mode == "truncated":
            path = f"{ck}/shard_rank{rank}.pt"
            log.info(f"[rank{rank}] resuming from {path}")
            sd = torch.load(path, map_location="cpu")
            net0.load_state_dict(sd["model"]); opt.load_state_dict(sd["opt"]); start = sd["step"]
        elif mode in ("weights_only", "optim_groups", "optim_shape", "sched_warn", "lambda_pickle"):
            path = f"{ck}/last.pt"
            log.info(f"resuming from {path}")
            sd = torch.load(path, map_location="cpu")
            if mode == "optim_shape":
                # new width: re-create only the changed layers, keep the rest
                own = net0.state_dict()
                sd_m = {k: v for k, v in sd["model"].items() if own[k].shape == v.shape}
                missing = net0.load_state_dict(sd_m, strict=False)
                log.info(f"loaded model with {missing}")
            else:
                net0.load_state_dict(sd["model"])
            opt.load_state_dict(sd["opt"]); start = sd["step"]
            log.info(f"resumed at step {start}")
        elif mode == "ddp_prefix":
            path = sorted(os.listdir(ck))[-1]
            log.info(f"evaluating {ck}/{path}")
            net0.load_state_dict(torch.load(f"{ck}/{path}", map_location="cpu"))
            start = 0
        elif mode == "strict_false_ok":
            sd = torch.load(f"{ck}/last.pt", map_location="cpu")
            model_sd = {k: v for k, v in sd["model"].items() if not k.startswith("head.")}
            res = net0.load_state_dict(model_sd, strict=False)
            log.info(f"Loaded pretrained backbone: {res}")
            warnings.warn(f"Some weights of Net were not initialized from the model checkpoint at {ck}/last.pt and are newly initialized: {res.missing_keys}\nYou should probably TRAIN this model on a down-stream task to be able to use it for predictions and inference.")
            start = 0
        elif mode in ("lfs", "st_trunc"):
            if mode == "lfs":
                path = f"{ck}/pytorch_model.bin"; log.info(f"loading pretrained weights from {path}")
                sd = torch.load(path, map_location="cpu")
            else:
                from safetensors.torch import load_file
                path = f"{ck}/model.safetensors"; log.info(f"loading pretrained weights from {path}")
                sd = load_file(path)
            net0.load_state_dict(sd); start = 0
        else:
            raise SystemExit("unknown mode " + mode)
        if world > 1: dist.barrier()
        train_steps(net, opt, rank, log, start, args.steps)
        log.info(f"[rank{rank}] resumed training finished")
    if world > 1:
        dist.barrier(); dist.destroy_process_group()

def spawn_entry(rank, world):
    run(rank, world)

if __name__ == "__main__":
    if "RANK" in os.environ:
        run(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]))
    elif args.spawn:
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1"); os.environ["MASTER_PORT"] = str(args.port)
        import torch.multiprocessing as mp
        mp.spawn(spawn_entry, args=(args.spawn,), nprocs=args.spawn, join=True)
    else:
        run(0, 1)
