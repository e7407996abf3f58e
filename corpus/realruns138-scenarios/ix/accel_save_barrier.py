"""accelerate training loop that saves a checkpoint every N steps.
--bug-barrier-in-main puts accelerator.wait_for_everyone() inside the main-process-only save branch."""
import argparse, os, time
from datetime import timedelta
import torch, torch.nn as nn
from accelerate import Accelerator, InitProcessGroupKwargs

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=40)
p.add_argument("--save-every", type=int, default=10)
p.add_argument("--out", default="tmp/accel_out")
p.add_argument("--bug-barrier-in-main", action="store_true")
p.add_argument("--pg-timeout", type=int, default=30)
args = p.parse_args()

acc = Accelerator(kwargs_handlers=[InitProcessGroupKwargs(timeout=timedelta(seconds=args.pg_timeout))])
acc.print(f"distributed_type={acc.distributed_type} num_processes={acc.num_processes}")
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
data = torch.utils.data.TensorDataset(torch.randn(args.steps * 8 * acc.num_processes, 32),
                                      torch.randint(0, 4, (args.steps * 8 * acc.num_processes,)))
dl = torch.utils.data.DataLoader(data, batch_size=8)
model, opt, dl = acc.prepare(model, opt, dl)
for step, (x, y) in enumerate(dl):
    loss = nn.functional.cross_entropy(model(x), y)
    acc.backward(loss)
    opt.step(); opt.zero_grad()
    if step % 5 == 0:
        l = acc.gather(loss.detach()).mean().item()
        acc.print(f"step {step} loss {l:.4f}")
    if step and step % args.save_every == 0:
        if args.bug_barrier_in_main:
            if acc.is_main_process:
                os.makedirs(args.out, exist_ok=True)
                acc.save(acc.unwrap_model(model).state_dict(), f"{args.out}/step{step}.pt")
                acc.wait_for_everyone()
        else:
            acc.wait_for_everyone()
            if acc.is_main_process:
                os.makedirs(args.out, exist_ok=True)
                acc.save(acc.unwrap_model(model).state_dict(), f"{args.out}/step{step}.pt")
acc.print("training complete")
acc.end_training()
