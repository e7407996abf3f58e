"""accelerate scenarios: --fault selects the bug, --frank the rank, --fstep the step."""
import argparse, os, sys, time, logging
from datetime import timedelta
import torch, torch.nn as nn, torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset
from accelerate import Accelerator
from accelerate.utils import InitProcessGroupKwargs, set_seed
from accelerate.logging import get_logger

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--frank", type=int, default=1)
p.add_argument("--fstep", type=int, default=5)
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--outdir", default="runs/acc")
p.add_argument("--mp", default="no")
args = p.parse_args()

logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", datefmt="%m/%d/%Y %H:%M:%S", level=logging.INFO)
logger = get_logger(__name__)

def main():
    kw = InitProcessGroupKwargs(timeout=timedelta(seconds=30))
    acc = Accelerator(mixed_precision=args.mp, kwargs_handlers=[kw], gradient_accumulation_steps=2)
    logger.info(acc.state, main_process_only=False)
    set_seed(0)
    x = torch.randn(512, 32); y = (x[:, :4].sum(1) > 0).long()
    dl = DataLoader(TensorDataset(x, y), batch_size=16, shuffle=True)
    model = nn.Sequential(nn.Linear(32, 64), nn.GELU(), nn.Linear(64, 2))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model, opt, dl = acc.prepare(model, opt, dl)
    step = 0
    for ep in range(args.epochs):
        model.train()
        for xb, yb in dl:
            with acc.accumulate(model):
                loss = F.cross_entropy(model(xb), yb)
                acc.backward(loss)
                opt.step(); opt.zero_grad()
            step += 1
            if step % 5 == 0:
                logger.info(f"epoch {ep} step {step} loss {loss.item():.4f}")
            if args.fault == "main_only_barrier" and step == args.fstep and acc.is_main_process:
                # make sure the output dir exists before the other ranks write to it
                os.makedirs(args.outdir, exist_ok=True)
                acc.wait_for_everyone()
        losses = acc.gather_for_metrics(loss.detach().reshape(1))
        logger.info(f"epoch {ep} mean loss across ranks {losses.mean().item():.4f}")
        if args.fault == "save_state_ro" or args.fault == "none":
            acc.save_state(os.path.join(args.outdir, f"epoch_{ep}"))
    acc.wait_for_everyone()
    logger.info("done")
    acc.end_training()

if __name__ == "__main__":
    main()
