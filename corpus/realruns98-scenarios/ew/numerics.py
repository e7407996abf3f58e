"""Numerics scenarios: NaN/inf losses, exploding grads, anomaly detection, bf16, loss scale.
Run under torchrun (env RANK set), with --spawn N (torch.multiprocessing), or as a single process."""
import argparse, datetime, logging, math, os, sys, time
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--mode", required=True)
p.add_argument("--bad-rank", type=int, default=1)
p.add_argument("--bad-step", type=int, default=5)
p.add_argument("--steps", type=int, default=30)
p.add_argument("--lr", type=float, default=1e-2)
p.add_argument("--spawn", type=int, default=0)
p.add_argument("--port", type=int, default=41850)
p.add_argument("--log-fmt", default="plain")
p.add_argument("--tqdm", action="store_true")
p.add_argument("--detect-anomaly", action="store_true")
p.add_argument("--clip", type=float, default=0.0)
args = p.parse_args()

def setup_log(rank):
    if args.log_fmt == "logging":
        logging.basicConfig(level=logging.INFO, format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s")
    else:
        logging.basicConfig(level=logging.INFO, format="%(message)s")
    return logging.getLogger("train")

class MLP(nn.Module):
    def __init__(self, d_in=32, d_h=64, n_cls=10):
        super().__init__()
        self.fc1 = nn.Linear(d_in, d_h); self.fc2 = nn.Linear(d_h, d_h); self.head = nn.Linear(d_h, n_cls)
    def forward(self, x):
        return self.head(torch.relu(self.fc2(torch.relu(self.fc1(x)))))

def make_data(rank, n=512, d=32, n_cls=10):
    g = torch.Generator().manual_seed(1234 + rank)
    w = torch.randn(d, n_cls, generator=torch.Generator().manual_seed(7))
    x = torch.randn(n, d, generator=g); y = (x @ w).argmax(1)
    return x, y

def batches(x, y, bs=32):
    while True:
        for i in range(0, len(x) - bs + 1, bs):
            yield x[i:i+bs], y[i:i+bs]

def run(rank, world):
    log = setup_log(rank)
    torch.manual_seed(0)
    if world > 1:
        dist.init_process_group("gloo", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=30))
    if rank == 0:
        log.info(f"world_size={world} mode={args.mode} lr={args.lr} torch={torch.__version__}")
    mode = args.mode
    torch.autograd.set_detect_anomaly(args.detect_anomaly)
    if args.detect_anomaly and rank == 0:
        log.info("autograd anomaly detection enabled (slow)")

    if mode == "sparse_adam":
        model = nn.Sequential(nn.EmbeddingBag(1000, 32, mode="mean", sparse=True), nn.Linear(32, 10))
    elif mode == "div_norm":
        model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 16))
        proto = nn.Parameter(torch.randn(10, 16)); model.register_parameter("proto", proto)
    elif mode == "rnn_explode":
        model = nn.RNN(8, 64, batch_first=True, nonlinearity="relu")
        head = nn.Linear(64, 1); model.add_module("head", head)
        with torch.no_grad():
            model.weight_hh_l0.copy_(torch.eye(64) * 2.2 + 0.05 * torch.randn(64, 64))  # "identity init" trick for ReLU RNNs, gain mistyped
    else:
        model = MLP()
    if mode == "bad_init":
        for m in model.modules():
            if isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, std=40.0)   # "kaiming" typo'd as a fixed huge std
    if mode == "lossscale":
        model = model.half()
    ddp = None
    if world > 1 and mode not in ("lossscale",):
        ddp = nn.parallel.DistributedDataParallel(model)
    net = ddp if ddp is not None else model
    opt_cls = torch.optim.Adam if mode in ("sparse_adam",) else torch.optim.SGD
    opt = opt_cls(model.parameters(), lr=args.lr) if opt_cls is torch.optim.Adam else torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)

    x, y = make_data(rank)
    if mode == "log_zero" and rank == args.bad_rank:
        # one-hot-ish probabilities exported by a preprocessing step with a hard 0 entry
        pass
    it = batches(x, y)
    loss_scale = 2.0 ** 16; good_steps = 0; min_scale = 1.0
    bar = None
    if args.tqdm and rank == 0:
        from tqdm import tqdm
        bar = tqdm(total=args.steps, desc="train", file=sys.stderr, mininterval=0, ncols=90)
    t0 = time.time()
    for step in range(1, args.steps + 1):
        xb, yb = next(it)
        if mode == "nan_lr":
            loss = F.cross_entropy(net(xb), yb)
        elif mode == "bad_init":
            loss = F.cross_entropy(net(xb), yb)
        elif mode == "log_zero":
            logits = net(xb)
            probs = torch.softmax(logits, -1)
            if rank == args.bad_rank and step >= args.bad_step:
                probs = probs * (torch.arange(10) != yb[:, None]).float() + 0.0 * probs  # label smoothing bug zeroes the target prob
                probs = probs.clone(); probs[0, yb[0]] = 0.0
            loss = -(torch.log(probs.gather(1, yb[:, None]))).mean()
        elif mode == "div_norm":
            feats = net(xb)
            if rank == args.bad_rank and step >= args.bad_step:
                feats = feats.clone(); feats[3] = 0.0  # padded row: all-zero feature vector
            z = feats / feats.norm(dim=-1, keepdim=True)
            pr = model.proto / model.proto.norm(dim=-1, keepdim=True)
            loss = F.cross_entropy(z @ pr.t() * 10.0, yb)
        elif mode == "sqrt_dist":
            h = net(xb)
            if rank == args.bad_rank and step >= args.bad_step:
                h = h.clone(); h[5] = h[4]  # duplicated sample in the batch
            d2 = ((h[:, None, :] - h[None, :, :]) ** 2).sum(-1)
            dist_m = torch.sqrt(d2 + 0.0)
            loss = F.cross_entropy(h, yb) + 1e-3 * dist_m.mean()
        elif mode == "rnn_explode":
            seq = xb[:, :32].reshape(-1, 4, 8).repeat(1, 10, 1) * 3
            out, _ = model(seq)
            pred = model.head(out[:, -1]).squeeze(-1)
            loss = F.mse_loss(pred, yb.float())
        elif mode in ("diverge", "spike_recover"):
            loss = F.cross_entropy(net(xb), yb)
            if mode == "spike_recover" and step == args.bad_step:
                xb2 = xb * 120.0
                loss = F.cross_entropy(net(xb2), yb)
        elif mode == "lossscale":
            xh = xb.half() * (3000.0 if step >= args.bad_step else 1.0)  # un-normalised pixel inputs after a preprocessing change
            loss = F.cross_entropy(model(xh).float(), yb)
        elif mode == "sparse_adam":
            idx = (xb.abs() * 100).long().clamp(max=999)
            loss = F.cross_entropy(net(idx), yb)
        else:
            raise SystemExit(f"unknown mode {mode}")

        opt.zero_grad(set_to_none=True)
        if mode == "lossscale":
            (loss * loss_scale).backward()
            overflow = any((not torch.isfinite(q.grad).all()) for q in model.parameters() if q.grad is not None)
            if overflow:
                if loss_scale <= min_scale:
                    log.error(f"step {step}: Current loss scale already at minimum ({loss_scale}) - cannot decrease scale anymore. Exiting run.")
                    sys.exit(1)
                loss_scale /= 2.0; good_steps = 0
                log.warning(f"step {step}: gradient overflow, skipping step, reducing loss scale to {loss_scale}")
                continue
            for q in model.parameters(): q.grad.div_(loss_scale)
            good_steps += 1
            if good_steps % 1000 == 0: loss_scale *= 2
            opt.step()
            log.info(f"step {step} loss {loss.item():.4f} scale {loss_scale}")
            continue
        loss.backward()
        if args.clip > 0:
            gn = torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip, error_if_nonfinite=True)
        else:
            gn = torch.norm(torch.stack([q.grad.norm() for q in model.parameters() if q.grad is not None and not q.grad.is_sparse]))
        opt.step()
        lv = loss.item()
        if bar is not None:
            bar.set_postfix(loss=f"{lv:.4f}"); bar.update(1)
        if step % 1 == 0:
            msg = f"step {step}/{args.steps} loss {lv:.4f} grad_norm {float(gn):.3e} lr {args.lr:g} ({time.time()-t0:.1f}s)"
            if bar is not None: bar.write(msg)
            else: log.info(msg)
        if mode not in ("diverge",) and not math.isfinite(lv):
            log.error(f"[rank{rank}] Loss is {lv}, stopping training")
            sys.exit(1)
    if bar is not None: bar.close()
    if world > 1:
        dist.barrier(); dist.destroy_process_group()
    log.info(f"[rank{rank}] training finished")

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
