"""Tensor-parallel (DTensor / parallelize_module) training of a tiny attention model on CPU/gloo."""
import argparse, os, time, logging, math
from datetime import timedelta
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor.parallel import parallelize_module, ColwiseParallel, RowwiseParallel

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--dp", type=int, default=1)
p.add_argument("--tp", type=int, default=2)
p.add_argument("--dim", type=int, default=64)
p.add_argument("--heads", type=int, default=4)
p.add_argument("--vocab", type=int, default=96)
p.add_argument("--seq", type=int, default=16)
p.add_argument("--bs", type=int, default=4)
p.add_argument("--steps", type=int, default=6)
p.add_argument("--lr", type=float, default=1e-3)
p.add_argument("--workers", type=int, default=0)
p.add_argument("--timeout", type=int, default=30)
args = p.parse_args()


class Attn(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.h, self.hd = h, d // h
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))

    def forward(self, x):
        B, T, _ = x.shape
        tp = dist.get_world_size(tp_group) if tp_group is not None else 1
        nh = self.h // tp  # heads held locally
        q = self.q(x).view(B, T, nh, self.hd).transpose(1, 2)
        k = self.k(x).view(B, T, nh, self.hd).transpose(1, 2)
        v = self.v(x).view(B, T, nh, self.hd).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.o(y.transpose(1, 2).reshape(B, T, nh * self.hd))


class MLP(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(args.vocab, args.dim)
        self.ln1, self.ln2 = nn.LayerNorm(args.dim), nn.LayerNorm(args.dim)
        self.attn, self.mlp = Attn(args.dim, args.heads), MLP(args.dim)
        self.head = nn.Linear(args.dim, args.vocab)

    def forward(self, idx):
        h = self.emb(idx)
        h = h + self.attn(self.ln1(h))
        h = h + self.mlp(self.ln2(h))
        return self.head(h)


class Tokens(torch.utils.data.Dataset):
    def __len__(self):
        return 512

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        return torch.randint(0, args.vocab, (args.seq + 1,), generator=g)


tp_group = None


def main():
    global tp_group
    dist.init_process_group("gloo", timeout=timedelta(seconds=args.timeout))
    rank, world = dist.get_rank(), dist.get_world_size()
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s [%(levelname)s] rank{rank} %(message)s")
    log = logging.getLogger("tp")
    log.info("config dp=%d tp=%d dim=%d heads=%d world=%d", args.dp, args.tp, args.dim, args.heads, world)
    mesh = init_device_mesh("cpu", (args.dp, args.tp), mesh_dim_names=("dp", "tp"))
    tp_mesh = mesh["tp"]
    tp_group = tp_mesh.get_group()
    torch.manual_seed(0)
    model = Net()
    plan = {
        "attn.q": ColwiseParallel(), "attn.k": ColwiseParallel(), "attn.v": ColwiseParallel(),
        "attn.o": RowwiseParallel(),
        "mlp.fc1": ColwiseParallel(), "mlp.fc2": RowwiseParallel(),
    }
    if args.fault == "plan-missing-fc2":
        del plan["mlp.fc2"]  # fc2 renamed in model refactor and dropped from the TP plan
    if args.fault == "stale-plan-one-rank" and rank == args.fault_rank:
        # this rank read a stale sharding config (mlp sharded the other way round)
        plan["mlp.fc1"], plan["mlp.fc2"] = RowwiseParallel(), ColwiseParallel()
    parallelize_module(model, tp_mesh, plan)
    log.info("parallelized: attn.q.weight=%s", type(model.attn.q.weight).__name__ + str(tuple(model.attn.q.weight.to_local().shape)))
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 3))
    dl = torch.utils.data.DataLoader(Tokens(), batch_size=args.bs, num_workers=args.workers, shuffle=False)
    if args.fault == "healthy-noise":
        sched.step()  # warmup scheduler "initialised" before the first optimizer step
    t0 = time.time()
    for step, batch in enumerate(dl):
        if step >= args.steps:
            break
        x, y = batch[:, :-1], batch[:, 1:]
        if args.fault == "healthy-noise":
            with torch.cpu.amp.autocast(dtype=torch.bfloat16):
                logits = model(x)
        else:
            logits = model(x)
        loss = F.cross_entropy(logits.float().reshape(-1, args.vocab), y.reshape(-1))
        loss.backward()
        opt.step(); sched.step(); opt.zero_grad()
        log.info("step %d loss %.4f lr %.2e tok/s %.0f", step, loss.item(), sched.get_last_lr()[0],
                 (step + 1) * x.numel() / (time.time() - t0))
    dist.barrier()
    log.info("done")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
