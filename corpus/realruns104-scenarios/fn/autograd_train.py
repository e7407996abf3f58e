"""Small MLP/GRU regression trainer exercising autograd features: custom autograd Functions,
activation checkpointing, hooks, parametrizations, torch.func, manual SGD, caching.
Runs single process, under torchrun (env://) or via --spawn N (torch.multiprocessing.spawn).

--fault:
  none             healthy (checkpoint use_reentrant warning, weight_norm deprecation, hooks)
  fn-count         custom Function (fused scaled-tanh) backward returns too few gradients
  fn-shape         custom Function backward returns a transposed gradient
  manual-sgd       rank does a manual weight-decay update on parameters without no_grad
  inplace-act      activation modified in place after it was saved for backward
  state-carry      recurrent hidden state carried across steps without detach
  ckpt-nondet      non-reentrant checkpoint over a block whose output shape depends on a random mask
  ddp-ckpt-reent   DDP + reentrant checkpoint over a layer that is called twice
  cache-infer      positional table precomputed under torch.inference_mode and reused in training
  func-item        per-sample grads with torch.func.grad on a loss that calls .item()
"""
import argparse, os, sys, time, logging, warnings
from datetime import timedelta
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.distributed as dist
from torch.utils.checkpoint import checkpoint

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=-1, help="-1: all ranks")
p.add_argument("--fault-step", type=int, default=3)
p.add_argument("--steps", type=int, default=10)
p.add_argument("--spawn", type=int, default=0)
p.add_argument("--port", type=int, default=42920)
p.add_argument("--tqdm", action="store_true")
p.add_argument("--keep-unused", action="store_true", help="keep the experimental fused/shared layers in every mode")
p.add_argument("--timestamps", action="store_true")
args = p.parse_args()


class ScaledTanh(torch.autograd.Function):
    """y = tanh(x @ w) * scale, fused forward/backward."""
    @staticmethod
    def forward(ctx, x, w, scale):
        y = torch.tanh(x @ w)
        ctx.save_for_backward(x, w, y)
        ctx.scale = scale
        return y * scale

    @staticmethod
    def backward(ctx, gy):
        x, w, y = ctx.saved_tensors
        g = gy * ctx.scale * (1 - y * y)
        gx = g @ w.t()
        gw = x.t() @ g
        if args.fault == "fn-count":
            return gx, gw            # forgot the None for `scale`
        if args.fault == "fn-shape":
            return gx, g.t() @ x, None  # operands swapped: gives [out, in] instead of [in, out]
        return gx, gw, None


class FusedLayer(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.w = nn.Parameter(torch.randn(d_in, d_out) * d_in ** -0.5)

    def forward(self, x):
        return ScaledTanh.apply(x, self.w, 1.5)


class Net(nn.Module):
    def __init__(self, d=32, fault="none"):
        super().__init__()
        self.fault = fault
        self.inp = nn.Linear(16, d)
        self.fused = FusedLayer(16, d)
        self.blk = nn.Sequential(nn.Linear(d, d), nn.ReLU(), nn.Linear(d, d))
        self.shared = nn.Linear(d, d)
        self.out = nn.Linear(d, 1)
        if fault in ("fn-count", "fn-shape", "none"):
            self.inp = None  # replaced by the fused input layer
        elif not args.keep_unused:
            self.fused = None
        if fault != "ddp-ckpt-reent" and not args.keep_unused:
            self.shared = None
        if fault == "none":
            self.out = nn.utils.weight_norm(self.out)
        self.pos = None

    def forward(self, x, training_step=0):
        if self.fault in ("fn-count", "fn-shape", "none"):
            h = self.fused(x)
        else:
            h = self.inp(x)
        if self.fault == "inplace-act":
            a = torch.sigmoid(h)
            z = self.blk(a)
            a.mul_(0.5)  # "free" rescale of the gate, reused below
            h = z + a
        elif self.fault == "ckpt-nondet":
            def block(t):
                keep = torch.rand(t.shape[0]) > 0.3
                return self.blk(t[keep]).sum(0, keepdim=True).expand(t.shape[0], -1)
            h = checkpoint(block, h, use_reentrant=False, preserve_rng_state=False)
        elif self.fault == "ddp-ckpt-reent":
            h = checkpoint(self.shared, h, use_reentrant=True)
            h = checkpoint(self.shared, torch.relu(h), use_reentrant=True)
        elif self.fault == "none":
            h = checkpoint(self.blk, h)  # no use_reentrant -> warning
        else:
            h = self.blk(h)
        if self.fault == "cache-infer":
            if self.pos is None:
                with torch.inference_mode():
                    self.pos = torch.sin(torch.arange(h.shape[-1]).float() / 4.0)
            h = h * self.pos
        return self.out(h)


def setup_logging(rank):
    if args.timestamps:
        logging.basicConfig(level=logging.INFO,
                            format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s")


def run(rank, world):
    setup_logging(rank)
    log = logging.getLogger("trainer")
    say = log.info if args.timestamps else (lambda m: print(m, flush=True))
    distributed = world > 1
    if distributed:
        dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=30))
    torch.manual_seed(0)
    torch.set_num_threads(1)
    faulty = args.fault_rank in (-1, rank)
    net = Net(fault=args.fault)
    model = net
    if distributed:
        model = nn.parallel.DistributedDataParallel(
            net, find_unused_parameters=(args.fault == "ddp-ckpt-reent"))
    if args.fault == "none":
        # monitor gradient norms with hooks
        for n, prm in net.named_parameters():
            prm.register_hook(lambda g, n=n: g)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    g = torch.Generator().manual_seed(100 + rank)
    X = torch.randn(256, 16, generator=g)
    Y = (X[:, :4].sum(1, keepdim=True) * 0.5).tanh()
    rnn = nn.GRUCell(16, 16) if args.fault == "state-carry" else None
    hidden = torch.zeros(32, 16)
    it = range(args.steps)
    if args.tqdm and rank == 0:
        from tqdm import tqdm
        it = tqdm(it, desc="train", dynamic_ncols=False, ncols=90)
    for step in it:
        idx = torch.randint(0, 256, (32,), generator=g)
        xb, yb = X[idx], Y[idx]
        if args.fault == "func-item" and faulty and step >= args.fault_step:
            from torch.func import grad, vmap, functional_call
            params = {k: v.detach() for k, v in net.named_parameters()}

            def loss_one(prm, x, y):
                pred = functional_call(net, prm, (x.unsqueeze(0),))
                l = F.mse_loss(pred, y.unsqueeze(0))
                # clip very large per-sample losses
                return l if l.item() < 10.0 else l.clamp(max=10.0)
            per_sample = vmap(grad(loss_one), in_dims=(None, 0, 0))(params, xb, yb)
            say(f"rank {rank} step {step} per-sample grad norm {per_sample['out.weight'].norm():.4f}")
        if rnn is not None:
            hidden = rnn(xb, hidden)
            xb = hidden
        pred = model(xb)
        loss = F.mse_loss(pred, yb)
        opt.zero_grad()
        loss.backward()
        if args.fault == "manual-sgd" and faulty and step == args.fault_step:
            # decoupled weight decay applied by hand before the optimizer step
            for prm in net.parameters():
                prm.mul_(1 - 0.05 * 1e-2)
        opt.step()
        if args.tqdm and rank == 0:
            it.set_postfix(loss=f"{loss.item():.4f}")
        else:
            say(f"rank {rank} step {step} loss {loss.item():.5f}")
        time.sleep(0.05)
    if distributed:
        dist.barrier()
        dist.destroy_process_group()
    say(f"rank {rank} done, final loss {loss.item():.5f}")


def spawn_entry(rank, world):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(args.port)
    run(rank, world)


if __name__ == "__main__":
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(spawn_entry, args=(args.spawn,), nprocs=args.spawn, join=True)
    elif "RANK" in os.environ:
        run(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]))
    else:
        run(0, 1)
