"""DDP training of the tiny LM from numerics.py with long-ish steps, for Ctrl-C / signal scenarios.

--handler none      : default Python behaviour (KeyboardInterrupt)
--handler graceful  : SIGINT/SIGTERM set a flag; ranks agree via all_reduce, rank 0 saves a checkpoint, all exit 0
--handler local     : SIGINT/SIGTERM set a flag; the signalled rank saves its own checkpoint and exits (no agreement)
"""
import argparse, logging, os, signal, sys, time
from datetime import timedelta

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from numerics import TinyLM, masked_ce  # noqa: E402


def get_args():
    p = argparse.ArgumentParser()
    p.add_argument("--handler", default="none", choices=["none", "graceful", "local", "thread"])
    p.add_argument("--steps", type=int, default=400)
    p.add_argument("--sleep", type=float, default=0.3)
    p.add_argument("--ckpt-dir", default="/work/rr89/dq/ckpt")
    p.add_argument("--log-style", dest="log", default="print", choices=["print", "logging", "tqdm"])
    p.add_argument("--spawn", type=int, default=0)
    p.add_argument("--port", type=int, default=38700)
    p.add_argument("--timeout", type=int, default=30)
    p.add_argument("--workers", type=int, default=0)
    return p.parse_args()


class Stream(torch.utils.data.IterableDataset):
    def __init__(self, rank, vocab=96, seq=32):
        self.rank, self.vocab, self.seq = rank, vocab, seq

    def __iter__(self):
        g = torch.Generator().manual_seed(99 + self.rank)
        while True:
            s = int(torch.randint(1, self.vocab, (1,), generator=g))
            d = int(torch.randint(1, 4, (1,), generator=g))
            x = (s + d * torch.arange(self.seq + 1)) % (self.vocab - 1) + 1
            yield x[:-1], x[1:]


STOP = {"flag": False, "sig": None}


def on_signal(signum, frame):
    STOP["flag"] = True
    STOP["sig"] = signal.Signals(signum).name


def run(rank, world, args):
    if args.log == "logging":
        logging.basicConfig(level=logging.INFO,
                            format=f"%(asctime)s %(levelname)s [rank{rank}] %(message)s")
    log = logging.getLogger(__name__)

    def say(msg):
        if args.log == "logging":
            log.info(msg)
        else:
            print(f"[rank{rank}] {msg}", flush=True)

    if "RANK" in os.environ:
        dist.init_process_group("gloo", timeout=timedelta(seconds=args.timeout))
    else:
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{args.port}", rank=rank,
                                world_size=world, timeout=timedelta(seconds=args.timeout))
    if args.handler in ("graceful", "local"):
        signal.signal(signal.SIGINT, on_signal)
        signal.signal(signal.SIGTERM, on_signal)
    elif args.handler == "thread":
        # checkpoint/heartbeat helper thread owns preemption handling
        import threading

        def watcher():
            signal.signal(signal.SIGTERM, on_signal)
            signal.signal(signal.SIGINT, on_signal)
            while True:
                time.sleep(1)
        t = threading.Thread(target=watcher, name="preempt-watcher", daemon=True)
        t.start()
        t.join(timeout=2)
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = TinyLM(96, 64, 1e-6)
    ddp = DDP(model)
    opt = torch.optim.AdamW(ddp.parameters(), lr=3e-3)
    loader = torch.utils.data.DataLoader(Stream(rank), batch_size=16, num_workers=args.workers)
    say(f"pid={os.getpid()} world={world} handler={args.handler} starting training")
    with open(f"/work/rr89/dq/run/pid.{rank}", "w") as f:
        f.write(str(os.getpid()))
    it = enumerate(loader)
    if args.log == "tqdm":
        from tqdm import tqdm
        it = tqdm(it, total=args.steps, desc=f"train[r{rank}]", mininterval=0)
    for step, (x, y) in it:
        if step >= args.steps:
            break
        with torch.autocast("cpu", dtype=torch.bfloat16):
            logits = ddp(x)
        loss = masked_ce(logits, y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if args.log == "tqdm":
            it.set_postfix(loss=f"{loss.item():.3f}")
        elif step % 5 == 0:
            say(f"step {step} loss {loss.item():.4f} lr {opt.param_groups[0]['lr']:.1e}")
        time.sleep(args.sleep)
        if args.handler == "graceful":
            flag = torch.tensor([1.0 if STOP["flag"] else 0.0])
            dist.all_reduce(flag)
            if flag.item() > 0:
                say(f"stop requested ({STOP['sig'] or 'by a peer'}) at step {step}; checkpointing")
                if rank == 0:
                    os.makedirs(args.ckpt_dir, exist_ok=True)
                    path = os.path.join(args.ckpt_dir, f"step{step}.pt")
                    torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step}, path)
                    say(f"saved {path}")
                dist.barrier()
                dist.destroy_process_group()
                say("exiting cleanly")
                return
        elif args.handler == "local" and STOP["flag"]:
            say(f"received {STOP['sig']} at step {step}; saving and exiting")
            os.makedirs(args.ckpt_dir, exist_ok=True)
            path = os.path.join(args.ckpt_dir, f"rank{rank}-step{step}.pt")
            torch.save({"model": model.state_dict(), "step": step}, path)
            say(f"saved {path}; bye")
            sys.exit(0)
    dist.barrier()
    say("training finished")
    dist.destroy_process_group()


def main():
    args = get_args()
    os.makedirs("/work/rr89/dq/run", exist_ok=True)
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(run, args=(args.spawn, args), nprocs=args.spawn, join=True)
    elif "RANK" in os.environ:
        run(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), args)
    else:
        run(0, 1, args)


if __name__ == "__main__":
    main()
