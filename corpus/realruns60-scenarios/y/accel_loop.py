"""Custom accelerate training loop (tiny GPT-2, CPU, gloo) with rank-0 checkpointing.

Launched with `accelerate launch`, torchrun, or `--spawn N` (torch.multiprocessing.spawn).
--fault selects an induced problem.
"""
import argparse, json, os, sys, time, warnings
from dataclasses import dataclass
from datetime import timedelta

import torch

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--steps", type=int, default=30)
p.add_argument("--save-every", type=int, default=10)
p.add_argument("--ckpt", default="/tmp/rr60y_accel_ckpt")
p.add_argument("--resume", default=None)
p.add_argument("--n-embd", type=int, default=64)
p.add_argument("--spawn", type=int, default=0)
p.add_argument("--port", type=int, default=30190)
p.add_argument("--mp", default="no")
p.add_argument("--step-sleep", type=float, default=0.0)
args = p.parse_args()


@dataclass
class LoaderState:
    epoch: int
    consumed: int
    shard_order: list


def main(local_rank=None):
    if local_rank is not None:  # mp.spawn path
        os.environ.update(RANK=str(local_rank), LOCAL_RANK=str(local_rank), WORLD_SIZE=str(args.spawn),
                          MASTER_ADDR="127.0.0.1", MASTER_PORT=str(args.port))
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from accelerate import Accelerator, InitProcessGroupKwargs
    from accelerate.utils import set_seed
    from transformers import GPT2Config, GPT2LMHeadModel, get_linear_schedule_with_warmup
    from tqdm.auto import tqdm

    acc = Accelerator(cpu=True, mixed_precision=args.mp,
                      kwargs_handlers=[InitProcessGroupKwargs(backend="gloo", timeout=timedelta(seconds=20))])
    set_seed(1234)
    rank = acc.process_index
    cfg = GPT2Config(vocab_size=256, n_positions=64, n_layer=2, n_embd=args.n_embd, n_head=4)
    model = GPT2LMHeadModel(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.01)
    data = torch.randint(0, 256, (512, 32))
    dl = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(data), batch_size=4, shuffle=True)
    sched = get_linear_schedule_with_warmup(opt, 5, args.steps)
    model, opt, dl, sched = acc.prepare(model, opt, dl, sched)
    acc.print(f"num_processes={acc.num_processes} mixed_precision={acc.mixed_precision} device={acc.device}")

    start = 0
    if args.resume:
        acc.print(f"resuming from {args.resume}")
        if args.fault == "weights_only":
            # only the main process reads the loader meta-state, then broadcasts it
            meta = [None]
            if acc.is_main_process:
                st = torch.load(os.path.join(args.resume, "loader_state.pt"))
                meta = [st]
            torch.distributed.broadcast_object_list(meta, src=0)
            start = meta[0]["step"]
        acc.load_state(args.resume)

    bar = tqdm(total=args.steps, initial=start, disable=not acc.is_local_main_process, desc="train")
    step = start
    it = iter(dl)
    while step < args.steps:
        try:
            (x,) = next(it)
        except StopIteration:
            it = iter(dl)
            (x,) = next(it)
        out = model(input_ids=x, labels=x)
        acc.backward(out.loss)
        opt.step(); sched.step(); opt.zero_grad()
        step += 1
        if args.step_sleep:
            time.sleep(args.step_sleep)
        loss = acc.gather(out.loss.detach()).mean().item()
        bar.update(1)
        if step % 5 == 0:
            bar.set_postfix(loss=f"{loss:.4f}")
            acc.print({"loss": round(loss, 4), "lr": sched.get_last_lr()[0], "step": step})
        if step % args.save_every == 0:
            d = os.path.join(args.ckpt, f"step_{step}")
            acc.wait_for_everyone()
            acc.save_state(d)
            if acc.is_main_process:
                torch.save({"step": step, "loader": LoaderState(0, step * 4, [0, 1, 2])},
                           os.path.join(d, "loader_state.pt"))
                with open(os.path.join(args.ckpt, "latest.json"), "w") as f:
                    json.dump({"step": step, "path": d}, f)
            acc.wait_for_everyone()
    bar.close()
    acc.print("training finished")
    acc.end_training()


if __name__ == "__main__":
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(main, nprocs=args.spawn, join=True)
    else:
        main()
