"""torch.multiprocessing.spawn trainer; rank 0 checkpoints the whole model object or a state dict.
Flags: --nprocs, --port, --save-whole-model (torch.save(model) with a lambda hook attribute),
       --eval-batches N (rank 0 runs a validation pass before saving while others wait at barrier),
       --timeout seconds for the process group."""
import argparse, os, datetime, logging, time, warnings
import torch, torch.nn as nn, torch.distributed as dist, torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP


class Model(nn.Module):
    def __init__(self, act=None):
        super().__init__()
        self.l1 = nn.Linear(64, 512)
        self.l2 = nn.Linear(512, 8)
        self.act = act or (lambda t: torch.relu(t))   # configurable activation

    def forward(self, x):
        return self.l2(self.act(self.l1(x)))


def worker(rank, args):
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s %(levelname)s [rank {rank}] %(message)s")
    log = logging.getLogger("spawn_ckpt")
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{args.port}", rank=rank,
                            world_size=args.nprocs, timeout=datetime.timedelta(seconds=args.timeout))
    torch.manual_seed(rank)
    model = Model()
    ddp = DDP(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    os.makedirs(args.out, exist_ok=True)
    for step in range(1, args.steps + 1):
        x = torch.randn(32, 64)
        y = torch.randint(0, 8, (32,))
        loss = nn.functional.cross_entropy(ddp(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        if step % 5 == 0:
            log.info("step=%d loss=%.4f grad_norm=%.3f", step, loss.item(),
                     torch.nn.utils.clip_grad_norm_(model.parameters(), 1e9).item())
        if step % args.save_every == 0:
            if rank == 0:
                if args.eval_batches:
                    log.info("running validation before checkpoint (%d batches)", args.eval_batches)
                    with torch.no_grad():
                        vl = 0.0
                        for _ in range(args.eval_batches):
                            xb = torch.randn(4096, 64)
                            vl += nn.functional.cross_entropy(model(xb), torch.randint(0, 8, (4096,))).item()
                    log.info("val_loss=%.4f", vl / args.eval_batches)
                path = os.path.join(args.out, f"model_step{step}.pt")
                if args.save_whole_model:
                    torch.save(model, path)
                else:
                    torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step}, path)
                log.info("checkpoint written: %s", path)
            dist.barrier()
    log.info("done")
    dist.destroy_process_group()


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--nprocs", type=int, default=2)
    p.add_argument("--port", type=int, default=30840)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--save-every", type=int, default=10)
    p.add_argument("--save-whole-model", action="store_true")
    p.add_argument("--eval-batches", type=int, default=0)
    p.add_argument("--timeout", type=int, default=30)
    p.add_argument("--out", default="/work/rr63/am/ck/spawn")
    args = p.parse_args()
    warnings.filterwarnings("default")
    mp.spawn(worker, args=(args,), nprocs=args.nprocs, join=True)
