"""Tiny DDP classifier trainer printing metrics in several framework-like formats.

Faults (--fault) are real bugs/misconfigurations that produce numerical failures:
  none       healthy run (noisy loss, harmless warnings)
  badrow     rank --frank reads a shard row containing NaN (missing value parsed as float('nan')) at --fstep
  lrscale    learning rate scaled by batch*world ("linear scaling rule" applied twice) -> explodes
  logsoftmax manual log(softmax(x)) with sharpening temperature -> log(0) = -inf
  ascent     optimizer built with maximize=True (copy-paste from an RL script) -> loss rises steadily
  warmjump   warmup schedule bug: after warmup lr jumps to base_lr*100 -> loss spikes, stays high
  fp16raw    forward in fp16 on un-normalised inputs (0..255 * 4) -> activations overflow, loss scale collapses
  anomaly    detect_anomaly on + feature normalisation through sqrt(sum x^2) of an all-zero row
  sample     eval-time sampling with temperature 0.0 -> nan probabilities in torch.multinomial
  halfmask   fp16 attention mask filled with -1e9
  halfparams model.half() then GradScaler
  clipnf     clip_grad_norm_(error_if_nonfinite=True) after a rank sees an inf input
  lrzero     cosine schedule with total_steps mis-set so lr is 0 from the start (nothing learns)
  desync     rank --frank seeds its model differently and DDP is not used (manual grad average of a subset)
"""
import argparse, math, os, sys, time, warnings, logging, datetime

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--fmt", default="plain")
p.add_argument("--fault", default="none")
p.add_argument("--frank", type=int, default=0)
p.add_argument("--fstep", type=int, default=30)
p.add_argument("--steps", type=int, default=60)
p.add_argument("--every", type=int, default=5)
p.add_argument("--lr", type=float, default=0.05)
p.add_argument("--guard", action="store_true")
p.add_argument("--spawn", type=int, default=0, help="use torch.multiprocessing.spawn with N procs")
p.add_argument("--port", type=int, default=46160)
p.add_argument("--allranks", action="store_true", help="every rank prints its metrics")
p.add_argument("--scaler", default="ds", help="ds|fairseq|torch loss scaler messages")
p.add_argument("--tslog", action="store_true")
p.add_argument("--init-scale", type=float, default=2.0 ** 16)
args = p.parse_args()

NFEAT, NCLS, BS = 32, 10, 32


def make_data(rank, n):
    g = torch.Generator().manual_seed(1234 + rank)
    w = torch.randn(NFEAT, NCLS, generator=torch.Generator().manual_seed(7))
    x = torch.randn(n, NFEAT, generator=g)
    y = (x @ w + 1.5 * torch.randn(n, NCLS, generator=g)).argmax(1)
    if args.fault == "labelshuffle":
        # labels re-read from a file sorted differently than the features
        y = y[torch.randperm(n, generator=torch.Generator().manual_seed(5))]
    return x, y


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(NFEAT, 64)
        self.fc2 = nn.Linear(64, 64)
        self.head = nn.Linear(64, NCLS)

    def forward(self, x):
        if args.fault == "anomaly":
            x = x / torch.sqrt((x * x).sum(-1, keepdim=True))  # L2 normalise
        h = F.relu(self.fc1(x))
        h = F.relu(self.fc2(h))
        return self.head(h)


class Printer:
    def __init__(self, rank, world, steps):
        self.rank, self.world, self.steps = rank, world, steps
        self.t0 = time.time()
        self.log = None
        if args.tslog:
            logging.basicConfig(level=logging.INFO,
                                format=f"%(asctime)s %(levelname)s [rank{rank}] %(name)s: %(message)s")
            self.log = logging.getLogger("train")

    def out(self, s):
        if self.log:
            self.log.info(s)
        else:
            print(s, flush=True)

    def header(self):
        f = args.fmt
        if f == "fairseq":
            self.out(f"| distributed init (rank {self.rank}): env://")
            self.out(f"| model mlp, criterion CrossEntropyCriterion")
            self.out(f"| num. model params: {sum(p.numel() for p in Net().parameters())} (num. trained: {sum(p.numel() for p in Net().parameters())})")
            self.out(f"| training on {self.world} devices (cpu)")
        elif f == "mmengine":
            self.out(f"{datetime.datetime.now():%m/%d %H:%M:%S} - mmengine - INFO - Distributed training is {'enabled' if self.world>1 else 'disabled'}, world size {self.world}")
            self.out(f"{datetime.datetime.now():%m/%d %H:%M:%S} - mmengine - INFO - Checkpoints will be saved to /work/rr128/ht/work_dirs/mlp_cls.")
        elif f == "paddle":
            self.out(f"[{datetime.datetime.now():%Y/%m/%d %H:%M:%S}] ppocr INFO: train dataloader has {self.steps} iters")
        elif f == "keras":
            self.out("Epoch 1/1")
        elif f == "plain":
            self.out(f"config: fault={args.fault} steps={self.steps} lr={args.lr} world_size={self.world} batch_size={BS}")
        elif f == "jax":
            self.out(f"I{datetime.datetime.now():%m%d %H:%M:%S}.000000 {os.getpid()} train.py:88] process {self.rank}/{self.world}, local devices: [CpuDevice(id={self.rank})]")

    def metric(self, step, loss, acc, lr, extra=""):
        f, n = args.fmt, self.steps
        el = time.time() - self.t0
        eta = el / max(step, 1) * (n - step)
        if f == "keras":
            w = 30
            done = int(w * step / n)
            bar = "=" * max(done - 1, 0) + (">" if step < n else "=") + "." * (w - done)
            self.out(f"{step:>3d}/{n} [{bar}] - ETA: {int(eta)}s - loss: {loss:.4f} - accuracy: {acc:.4f}{extra}")
        elif f == "mmengine":
            self.out(f"{datetime.datetime.now():%m/%d %H:%M:%S} - mmengine - INFO - Epoch(train) [1][{step:>3d}/{n}]  lr: {lr:.4e}  eta: 0:00:{int(eta):02d}  time: {el/max(step,1):.4f}  data_time: 0.0012  memory: 0  loss: {loss:.4f}  loss_cls: {loss:.4f}  acc: {acc*100:.4f}{extra}")
        elif f == "fairseq":
            self.out(f"| epoch 001 | loss {loss:.3f} | nll_loss {loss/math.log(2) if math.isfinite(loss) else loss:.3f} | ppl {2**(loss/math.log(2)) if math.isfinite(loss) and loss < 50 else float('inf'):.2f} | wps 1830 | ups {step/max(el,1e-3):.1f} | wpb 1024 | bsz {BS} | num_updates {step} | lr {lr:g} | gnorm {extra or 0.0} | clip 0 | oom 0 | wall {int(el)}")
        elif f == "paddle":
            self.out(f"[{datetime.datetime.now():%Y/%m/%d %H:%M:%S}] ppocr INFO: epoch: [1/1], global_step: {step}, lr: {lr:.6f}, acc: {acc:.6f}, norm_edit_dis: {acc:.6f}, loss: {loss:.6f}, avg_reader_cost: 0.00121 s, avg_batch_cost: {el/max(step,1):.5f} s, avg_samples: {BS}, ips: {BS/max(el/max(step,1),1e-3):.2f} samples/s, eta: 0:00:{int(eta):02d}")
        elif f == "jax":
            self.out(f"step {step}: train_loss={loss:.5f}, train_accuracy={acc:.4f}, learning_rate={lr:.2e}{extra}")
        else:
            self.out(f"[rank {self.rank}] step {step}/{n} loss {loss:.4f} acc {acc:.3f} lr {lr:.2e}{extra}")


class DynamicLossScaler:
    """Dynamic loss scaling in the style of DeepSpeed / fairseq."""

    def __init__(self, rank, init_scale=2.0 ** 16, min_scale=1.0, window=100):
        self.cur_scale, self.min_scale, self.window, self.rank = init_scale, min_scale, window, rank
        self.good = 0

    def update(self, overflow, log):
        if overflow:
            if self.cur_scale == self.min_scale:
                if args.scaler == "fairseq":
                    raise FloatingPointError(
                        f"Minimum loss scale reached ({self.min_scale}). Your loss is probably exploding. "
                        "Try lowering the learning rate, using gradient clipping or increasing the batch size.")
                raise Exception("Current loss scale already at minimum - cannot decrease scale anymore. Exiting run.")
            nxt = max(self.cur_scale / 2, self.min_scale)
            if args.scaler == "fairseq":
                log(f"{datetime.datetime.now():%Y-%m-%d %H:%M:%S} | WARNING | fairseq.trainer | NOTE: gradient overflow detected, ignoring gradient, setting loss scale to: {nxt}")
            else:
                log(f"[{datetime.datetime.now():%Y-%m-%d %H:%M:%S,%f}"[:-3] + f"] [INFO] [loss_scaler.py:183:update_scale] [deepspeed] OVERFLOW! Rank {self.rank} Skipping step. Attempted loss scale: {int(self.cur_scale) if self.cur_scale>=1 else self.cur_scale}, reducing to {int(nxt) if nxt>=1 else nxt}")
            self.cur_scale = nxt
            self.good = 0
        else:
            self.good += 1
            if self.good % self.window == 0:
                self.cur_scale *= 2


def main(rank=None, world=None):
    if rank is None:
        rank = int(os.environ.get("RANK", 0))
        world = int(os.environ.get("WORLD_SIZE", 1))
    else:
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(args.port))
    distributed = world > 1
    if distributed:
        dist.init_process_group("gloo", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=40))
    torch.manual_seed(0 if not (args.fault == "desync" and rank == args.frank) else 99)
    pr = Printer(rank, world, args.steps)
    show = rank == 0 or args.allranks
    x, y = make_data(rank, args.steps * BS + 512)
    if args.fault in ("fp16raw", "ampcollapse"):
        x = (x.clamp(-2, 2) + 2) * 63.75 * 4  # raw 0..255 "pixel" values, scaled by 4 augmentation bug
    model = Net()
    if args.fault == "halfparams":
        model = model.half()
    if distributed and args.fault != "desync":
        model = nn.parallel.DistributedDataParallel(model)
    lr = args.lr
    if args.fault == "lrscale":
        lr = args.lr * BS * world  # linear scaling rule applied to an lr that was already scaled
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9, maximize=(args.fault == "ascent"))
    if args.fault == "lrzero":
        total = 0  # cfg.total_steps read from an unset env var -> 0
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 0.5 * (1 + math.cos(math.pi * min(1.0, s / max(total, 1)))) if total else 0.0)
    elif args.fault == "warmjump":
        warm = args.fstep
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: (s + 1) / warm if s < warm else 100.0)  # bug: meant 1.0
    else:
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 0.999 ** s)
    if args.fault == "none":
        # harmless but alarming: scheduler stepped once before the first optimizer step
        sched.step()
    if args.fault == "anomaly":
        torch.autograd.set_detect_anomaly(True)
    scaler = DynamicLossScaler(rank, init_scale=args.init_scale, window=20) if args.fault in ("fp16raw", "fp16ok") else None
    tscaler = torch.amp.GradScaler("cpu") if args.fault in ("halfparams", "ampcollapse") else None
    if show:
        pr.header()
    it = None
    if args.fmt == "tqdm" and show:
        from tqdm import tqdm
        it = tqdm(range(1, args.steps + 1), desc=f"Epoch 0", file=sys.stderr, mininterval=0, ncols=100)
    steps = it if it is not None else range(1, args.steps + 1)
    for step in steps:
        xb = x[(step - 1) * BS: step * BS].clone()
        yb = y[(step - 1) * BS: step * BS]
        if args.fault in ("badrow", "clipnf") and rank == args.frank and step == args.fstep:
            xb[3, 5] = float("nan") if args.fault == "badrow" else float("inf")
        if args.fault == "anomaly" and rank == args.frank and step == args.fstep:
            xb[7].zero_()  # padded row in the batch
        if args.fault == "halfparams":
            xb = xb.half()
        if args.fault in ("fp16raw", "fp16ok", "ampcollapse"):
            with torch.autocast("cpu", dtype=torch.float16):
                out = model(xb)
                loss = F.cross_entropy(out.float(), yb)
        elif args.fault == "logsoftmax":
            out = model(xb)
            prob = torch.softmax(out / 0.01, -1)  # sharpened "confidence" temperature
            loss = -torch.log(prob[torch.arange(len(yb)), yb]).mean()
        elif args.fault == "halfmask":
            out = model(xb)
            scores = out.unsqueeze(2) * out.unsqueeze(1)
            if step >= args.fstep:  # fp16 attention scores switched on after the fp32 warmup phase
                scores = scores.half()
            mask = torch.triu(torch.ones(NCLS, NCLS, dtype=torch.bool), 1)
            scores = scores.masked_fill(mask, -1e9)
            out = out + scores.float().softmax(-1).mean(-1)
            loss = F.cross_entropy(out, yb)
        else:
            out = model(xb)
            loss = F.cross_entropy(out.float(), yb)
        opt.zero_grad(set_to_none=True)
        if scaler:
            (loss * scaler.cur_scale).backward()
            gn = torch.stack([p.grad.float().norm() for p in model.parameters() if p.grad is not None]).norm()
            of = torch.tensor([0.0 if torch.isfinite(gn) else 1.0])
            if distributed:
                dist.all_reduce(of)
            overflow = bool(of.item())
            scaler.update(overflow, pr.out)
            if not overflow:
                for p_ in model.parameters():
                    p_.grad.div_(scaler.cur_scale)
                opt.step()
        elif tscaler:
            tscaler.scale(loss).backward()
            tscaler.unscale_(opt)
            gnorm = torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
            tscaler.step(opt)
            tscaler.update()
        else:
            loss.backward()
            if args.fault == "desync" and distributed:
                # manual gradient averaging (DDP removed while debugging); the head is forgotten
                for n_, p_ in model.named_parameters():
                    if not n_.startswith("head"):
                        dist.all_reduce(p_.grad)
                        p_.grad /= world
            if args.fault == "clipnf":
                gnorm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, error_if_nonfinite=True)
            else:
                gnorm = torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
            opt.step()
        sched.step()
        lval = loss.item()
        if args.guard and not math.isfinite(lval):
            raise FloatingPointError(f"Loss is {lval}, stopping training")
        if args.fault == "desync" and distributed and step % args.every == 0:
            chk = torch.tensor([sum(float(p_.sum()) for p_ in model.parameters())])
            allc = [torch.zeros(1) for _ in range(world)]
            dist.all_gather(allc, chk)
            vals = [round(float(c), 4) for c in allc]
            if show:
                pr.out(f"param checksum per rank: {vals}")
            if len(set(vals)) > 1 and args.guard:
                raise RuntimeError(f"Model parameters differ across ranks at step {step}: checksums {vals}")
        if step % args.every == 0 and show:
            acc = (out.float().argmax(1) == yb).float().mean().item()
            if it is not None:
                it.set_postfix(loss=f"{lval:.4f}", acc=f"{acc:.3f}")
            else:
                pr.metric(step, lval, acc, sched.get_last_lr()[0],
                          extra=(f"  loss_scale: {tscaler.get_scale():.4e}  grad_norm: {float(gnorm):.4f}" if args.fault == "ampcollapse" else ""))
        if args.fault == "sample" and step % 20 == 0:
            with torch.no_grad():
                temp = 0.0 if step >= args.fstep else 1.0  # eval cfg: temperature=0 meant greedy
                logits = model(x[:4])
                probs = torch.softmax(logits / temp, -1)
                nxt = torch.multinomial(probs, 1)
                if show:
                    pr.out(f"sampled classes at step {step}: {nxt.view(-1).tolist()}")
    if it is not None:
        it.close()
    if show:
        pr.out(f"Training finished: {args.steps} steps, final loss {lval:.4f}")
    if distributed:
        dist.barrier()
        dist.destroy_process_group()


if __name__ == "__main__":
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(main, args=(args.spawn,), nprocs=args.spawn, join=True)
    else:
        main()
