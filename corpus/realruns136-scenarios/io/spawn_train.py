"""mp.spawn-launched DDP training; flags select start-up misconfiguration."""
import argparse, os, time, sys
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist, torch.multiprocessing as mp

def worker(rank, args):
    if args.fault != "no_master_env":
        os.environ.setdefault("MASTER_ADDR", args.master_addr)
        os.environ.setdefault("MASTER_PORT", str(args.master_port))
    world = args.world_size
    print(f"[worker {rank}] init_process_group(world_size={world}, MASTER_ADDR={os.environ.get('MASTER_ADDR')}, MASTER_PORT={os.environ.get('MASTER_PORT')})", flush=True)
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=args.pg_timeout))
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 1)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    scaler = torch.cuda.amp.GradScaler() if args.amp_scaler else None  # copied from the GPU recipe
    for step in range(args.steps):
        x = torch.randn(8, 16); y = x.sum(1, keepdim=True)
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        if rank == 0 and step % 10 == 0:
            print(f"step {step:3d}  mse {loss.item():.4f}", flush=True)
        time.sleep(0.03)
    dist.destroy_process_group()
    print(f"[worker {rank}] done", flush=True)

if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--nprocs", type=int, default=2)
    p.add_argument("--world-size", type=int, default=int(os.environ.get("WORLD_SIZE", 2)))
    p.add_argument("--master-addr", default="127.0.0.1")
    p.add_argument("--master-port", type=int, default=46550)
    p.add_argument("--fault", default="none")
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--auto-port", action="store_true")
    p.add_argument("--amp-scaler", action="store_true")
    p.add_argument("--pg-timeout", type=int, default=20)
    args = p.parse_args()
    if args.auto_port:
        import socket, logging
        logging.basicConfig(format="%(asctime)s %(levelname)s %(message)s", level=logging.INFO)
        for port in range(args.master_port, args.master_port + 5):
            try:
                with socket.socket() as s:
                    s.bind(("127.0.0.1", port))
                args.master_port = port
                break
            except OSError:
                logging.exception("MASTER_PORT %d is not usable, trying the next one", port)
        logging.info("using MASTER_PORT=%d", args.master_port)
    print(f"spawning {args.nprocs} workers", flush=True)
    mp.spawn(worker, args=(args,), nprocs=args.nprocs, join=True)
