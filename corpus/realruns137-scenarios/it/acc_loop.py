"""Tiny accelerate training loop (GPT-2 style LM or MLP) with selectable faults."""
import argparse, os, sys, time, logging, math
import torch, torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset
from accelerate import Accelerator
from accelerate.utils import GradientAccumulationPlugin, InitProcessGroupKwargs, DataLoaderConfiguration, set_seed
from datetime import timedelta
from accelerate.logging import get_logger
from tqdm.auto import tqdm

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=5)
p.add_argument("--steps", type=int, default=30)
p.add_argument("--n-eval", type=int, default=50)
p.add_argument("--accum", type=int, default=1)
p.add_argument("--state-out", default=None)
p.add_argument("--state-in", default=None)
p.add_argument("--hidden", type=int, default=64)
p.add_argument("--timestamps", action="store_true")
p.add_argument("--sleep", type=float, default=0.0)
p.add_argument("--uneven", action="store_true")
p.add_argument("--pg-timeout", type=int, default=30)
args = p.parse_args()

if args.timestamps:
    logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", datefmt="%m/%d/%Y %H:%M:%S", level=logging.INFO)
logger = get_logger("train")

class MLP(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(20, hidden), nn.GELU(), nn.Linear(hidden, hidden), nn.GELU())
        self.cls = nn.Linear(hidden, 5)
        if args.fault == "multitask-unused":
            self.reg = nn.Linear(hidden, 1)   # regression head for the multi-task variant
    def forward(self, x, task="cls"):
        h = self.body(x)
        return self.cls(h) if task == "cls" else self.reg(h)

def main():
    kw = {}
    if args.fault == "accum-plugin-conflict":
        kw["gradient_accumulation_plugin"] = GradientAccumulationPlugin(num_steps=4, sync_with_dataloader=False)
    accelerator = Accelerator(gradient_accumulation_steps=args.accum, dataloader_config=DataLoaderConfiguration(even_batches=not args.uneven),
                              kwargs_handlers=[InitProcessGroupKwargs(timeout=timedelta(seconds=args.pg_timeout))], **kw)
    logger.info(accelerator.state, main_process_only=False)
    set_seed(42)
    g = torch.Generator().manual_seed(0)
    X = torch.randn(512, 20, generator=g); Y = X[:, :5].argmax(-1)
    Xe = torch.randn(args.n_eval, 20, generator=g); Ye = Xe[:, :5].argmax(-1)
    train_dl = DataLoader(TensorDataset(X, Y), batch_size=16, shuffle=True)
    eval_dl = DataLoader(TensorDataset(Xe, Ye), batch_size=8)
    model = MLP(args.hidden)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 10))
    model, opt, train_dl, eval_dl, sched = accelerator.prepare(model, opt, train_dl, eval_dl, sched)
    if args.state_in:
        logger.info(f"Resuming from {args.state_in}", main_process_only=False)
        accelerator.load_state(args.state_in)
    step = 0
    bar = tqdm(total=args.steps, disable=not accelerator.is_local_main_process, desc="train")
    model.train()
    while step < args.steps:
        for x, y in train_dl:
            with accelerator.accumulate(model):
                if args.fault == "multitask-unused" and step % 2 == 1:
                    # odd steps: regression objective on the same features
                    loss = nn.functional.mse_loss(model(x, task="reg").squeeze(-1), y.float())
                else:
                    loss = nn.functional.cross_entropy(model(x), y)
                accelerator.backward(loss)
                opt.step(); sched.step(); opt.zero_grad()
            step += 1
            bar.update(1)
            if args.sleep:
                time.sleep(args.sleep)
            if step % 10 == 0:
                l = accelerator.gather(loss.detach()).mean().item()
                logger.info(f"step {step} loss {l:.4f} lr {sched.get_last_lr()[0]:.2e}")
            if step >= args.steps:
                break
    bar.close()
    # evaluation
    model.eval()
    preds, refs = [], []
    for x, y in eval_dl:
        with torch.no_grad():
            pr = model(x).argmax(-1)
        if args.fault == "gather-uneven":
            pr, yy = accelerator.gather((pr, y))
        else:
            pr, yy = accelerator.gather_for_metrics((pr, y))
        preds.append(pr); refs.append(yy)
    preds = torch.cat(preds); refs = torch.cat(refs)
    logger.info(f"eval samples={len(preds)} (dataset {args.n_eval}) acc={(preds == refs).float().mean():.4f}")
    if args.state_out:
        accelerator.save_state(args.state_out)
        logger.info(f"saved state to {args.state_out}")
    accelerator.wait_for_everyone()
    accelerator.end_training()

if __name__ == "__main__":
    main()
