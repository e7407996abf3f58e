"""Runs that finish normally but print alarming-looking output along the way.
--mode ddp       : DDP with find_unused_parameters, an lr scheduler stepped early, a batch with a
                   non-finite loss that is skipped, gradient clipping warnings (torchrun).
--mode fallback  : single process; the shared checkpoint dir is not writable, the error is logged
                   with its traceback and checkpoints go to a local fallback dir.
--mode hftrainer : tiny GPT-2 trained with the Hugging Face Trainer (its own warnings)."""
import argparse, os, sys, math, logging, warnings
from datetime import timedelta
import torch, torch.nn as nn

p = argparse.ArgumentParser()
p.add_argument("--mode", choices=["ddp", "fallback", "hftrainer"], required=True)
p.add_argument("--steps", type=int, default=40)
p.add_argument("--ckpt-dir", default="runs/shared_ckpt")
p.add_argument("--fallback-dir", default="runs/local_ckpt")
p.add_argument("--outdir", default="runs/hf_out")
args = p.parse_args()
torch.set_num_threads(1)

if args.mode == "ddp":
    import torch.distributed as dist
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    rank = dist.get_rank(); world = dist.get_world_size()
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s %(levelname)s rank{rank}: %(message)s")
    log = logging.getLogger()
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.enc = nn.Linear(16, 32); self.head = nn.Linear(32, 4); self.aux = nn.Linear(32, 4)
        def forward(self, x, use_aux=False):
            h = torch.relu(self.enc(x))
            return self.head(h) + (self.aux(h) if use_aux else 0)
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(Net(), find_unused_parameters=True)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=15, gamma=0.5)
    sched.step()   # stepped once before training (resuming style), triggers a warning
    g = torch.Generator().manual_seed(rank)
    for step in range(1, args.steps + 1):
        x = torch.randn(32, 16, generator=g); y = torch.randint(0, 4, (32,), generator=g)
        if step == 13 and rank == 1:
            x[3, 5] = float("inf")   # one corrupt feature value in this batch
        out = model(x, use_aux=(step % 2 == 0))
        loss = nn.functional.cross_entropy(out, y)
        flag = torch.tensor([0.0 if torch.isfinite(loss) else 1.0]); dist.all_reduce(flag)
        if flag.item() > 0:
            log.warning(f"step {step}: non-finite loss ({loss.item()}) on {int(flag.item())} rank(s), skipping this batch on all ranks")
            opt.zero_grad(set_to_none=True)
            continue
        opt.zero_grad(); loss.backward()
        gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        if gn > 2.0: log.warning(f"step {step}: gradient norm {gn:.2f} clipped to 0.5")
        opt.step(); sched.step()
        if step % 10 == 0:
            l = loss.detach().clone(); dist.all_reduce(l); log.info(f"step {step} loss {l.item()/world:.4f} lr {sched.get_last_lr()[0]:.4f}")
    dist.barrier()
    log.info("training complete")
    dist.destroy_process_group()

elif args.mode == "fallback":
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    log = logging.getLogger("trainer")
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(20, 64), nn.Tanh(), nn.Linear(64, 1))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    w = torch.randn(20, 1)
    def save(step):
        state = {"step": step, "model": model.state_dict(), "opt": opt.state_dict()}
        try:
            os.makedirs(args.ckpt_dir, exist_ok=True)
            torch.save(state, os.path.join(args.ckpt_dir, f"ckpt_{step}.pt"))
            log.info(f"checkpoint saved to {args.ckpt_dir}")
        except OSError:
            log.exception(f"could not write checkpoint to shared dir {args.ckpt_dir}; falling back to {args.fallback_dir}")
            os.makedirs(args.fallback_dir, exist_ok=True)
            torch.save(state, os.path.join(args.fallback_dir, f"ckpt_{step}.pt"))
            log.warning(f"checkpoint for step {step} saved to fallback dir {args.fallback_dir} (copy it to shared storage later)")
    for step in range(1, args.steps + 1):
        x = torch.randn(64, 20); y = x @ w
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        if step % 10 == 0:
            log.info(f"step {step} loss {loss.item():.4f}")
        if step % 20 == 0:
            save(step)
    log.info(f"finished {args.steps} steps, final loss {loss.item():.4f}")

else:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments
    from torch.utils.data import Dataset
    class Seqs(Dataset):
        def __init__(self, n): 
            g = torch.Generator().manual_seed(0)
            self.x = torch.randint(0, 256, (n, 32), generator=g)
        def __len__(self): return len(self.x)
        def __getitem__(self, i): return {"input_ids": self.x[i], "labels": self.x[i]}
    model = GPT2LMHeadModel(GPT2Config(vocab_size=256, n_positions=64, n_embd=64, n_layer=2, n_head=2))
    ta = TrainingArguments(output_dir=args.outdir, max_steps=args.steps, per_device_train_batch_size=8,
                           logging_steps=10, save_steps=20, report_to=[], use_cpu=True,
                           eval_strategy="steps", eval_steps=20, per_device_eval_batch_size=8,
                           dataloader_num_workers=0, learning_rate=5e-4)
    tr = Trainer(model=model, args=ta, train_dataset=Seqs(256), eval_dataset=Seqs(32))
    tr.train()
    print("final eval:", tr.evaluate())
