"""Tiny DDP trainer with preemption/signal handling options (realrun set 62, producer ak).
Flags choose which signal is delivered, by whom, to whom, at which step, and how the script reacts."""
import argparse, os, signal, sys, time, warnings, logging
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=20)
p.add_argument("--step-sleep", type=float, default=0.15)
p.add_argument("--deliver", default="")          # TERM, INT, HUP, USR1, KILL, ALRM
p.add_argument("--deliver-step", type=int, default=5)
p.add_argument("--deliver-rank", type=int, default=0)   # -1: every rank
p.add_argument("--target", default="self")      # self | launcher | group
p.add_argument("--handler", default="none")     # none | save_exit0 | save_exit1 | save_continue | sync_exit0
p.add_argument("--ckpt-dir", default="/work/rr62/ak/ckpt")
p.add_argument("--tslog", action="store_true")
p.add_argument("--tqdm", action="store_true")
p.add_argument("--print-every", type=int, default=1)
p.add_argument("--spawn", type=int, default=0)
p.add_argument("--port", type=int, default=30700)
p.add_argument("--noisy", action="store_true")
args = p.parse_args()

stop_requested = False

def setup_log(rank):
    if args.tslog:
        logging.basicConfig(level=logging.INFO, format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s")
        return logging.getLogger("train").info
    return lambda m: print(f"[rank{rank}] {m}", flush=True)

def save_ckpt(model, opt, step, rank, say):
    os.makedirs(args.ckpt_dir, exist_ok=True)
    path = os.path.join(args.ckpt_dir, f"preempt_rank{rank}_step{step}.pt")
    torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step}, path)
    say(f"checkpoint written to {path}")

def main(rank_arg=None):
    global stop_requested
    if rank_arg is not None:
        os.environ.update(RANK=str(rank_arg), LOCAL_RANK=str(rank_arg), WORLD_SIZE=str(args.spawn),
                          MASTER_ADDR="127.0.0.1", MASTER_PORT=str(args.port))
    distributed = "WORLD_SIZE" in os.environ
    rank = int(os.environ.get("RANK", 0)); world = int(os.environ.get("WORLD_SIZE", 1))
    say = setup_log(rank)
    torch.manual_seed(0); torch.set_num_threads(1)
    if distributed:
        dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4))
    if distributed:
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    sched = torch.optim.lr_scheduler.StepLR(opt, 10)
    if args.noisy:
        sched.step()   # before optimizer.step(): real-world ordering slip, only a warning
        warnings.warn("Detected non-deterministic algorithm use; results may vary between runs", UserWarning)
    state = {"step": 0}

    def handler(signum, frame):
        global stop_requested
        name = signal.Signals(signum).name
        say(f"received {name} at step {state['step']}; handler={args.handler}")
        if args.handler == "save_continue":
            save_ckpt(model, opt, state["step"], rank, say); return
        if args.handler in ("save_exit0", "save_exit1"):
            save_ckpt(model, opt, state["step"], rank, say)
            code = 0 if args.handler == "save_exit0" else 1
            say(f"exiting with code {code} after preemption save")
            sys.exit(code)
        if args.handler == "sync_exit0":
            stop_requested = True
    if args.handler != "none":
        for s in (signal.SIGTERM, signal.SIGUSR1, signal.SIGHUP):
            signal.signal(s, handler)
        say(f"preemption handler '{args.handler}' installed for SIGTERM/SIGUSR1/SIGHUP")

    it = range(args.steps)
    if args.tqdm and rank == 0:
        from tqdm import tqdm
        it = tqdm(it, desc="train", dynamic_ncols=False, ncols=90, mininterval=0)
    g = torch.Generator().manual_seed(rank)
    for step in it:
        state["step"] = step
        x = torch.randn(16, 32, generator=g); y = torch.randint(0, 4, (16,), generator=g)
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step(); sched.step()
        if step % args.print_every == 0 and not (args.tqdm and rank == 0):
            say(f"step {step}/{args.steps} loss {loss.item():.4f} lr {sched.get_last_lr()[0]:.2e}")
        elif args.tqdm and rank == 0:
            it.set_postfix(loss=f"{loss.item():.3f}")
        if args.deliver and step == args.deliver_step and (args.deliver_rank in (-1, rank)):
            sig = getattr(signal, "SIG" + args.deliver)
            tgt = {"self": os.getpid(), "launcher": os.getppid()}.get(args.target)
            if args.target == "group":
                os.killpg(os.getpgid(0), sig)
            else:
                os.kill(tgt, sig)
        if args.handler == "sync_exit0" and distributed:
            flag = torch.tensor([1.0 if stop_requested else 0.0])
            dist.all_reduce(flag)
            if flag.item() > 0:
                say(f"stop flag agreed by all ranks at step {step}")
                save_ckpt(model, opt, step, rank, say)
                dist.destroy_process_group(); say("clean shutdown after preemption notice"); return
        time.sleep(args.step_sleep)
    if distributed:
        dist.barrier(); dist.destroy_process_group()
    say("training finished")

if __name__ == "__main__":
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(main, nprocs=args.spawn, join=True)
    else:
        main()
