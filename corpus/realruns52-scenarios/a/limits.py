"""Training loop that also dumps eval logits/embeddings and uses a OneCycle schedule; used under resource limits."""
import argparse, os, sys, time, logging
from datetime import timedelta
import numpy as np
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--steps", type=int, default=10)
p.add_argument("--epochs", type=int, default=1)
p.add_argument("--eval-vocab", type=int, default=50257)
p.add_argument("--eval-tokens", type=int, default=4096)
p.add_argument("--dump", default="/work/rr52/a/tmp/dump")
args = p.parse_args()

def main():
    dist_on = "RANK" in os.environ
    if dist_on:
        dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank = dist.get_rank() if dist_on else 0
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s | %(levelname)s | rank{rank} | %(message)s", stream=sys.stdout)
    log = logging.getLogger("limits")
    model = nn.Sequential(nn.Linear(64, 128), nn.GELU(), nn.Linear(128, 64))
    if dist_on:
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    # bug (onecycle): total_steps computed from steps per epoch, but training runs args.epochs epochs
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=args.steps)
    for ep in range(args.epochs):
        for step in range(args.steps):
            x = torch.randn(32, 64)
            loss = F.mse_loss(model(x), x)
            opt.zero_grad(); loss.backward(); opt.step(); sched.step()
            if step % 2 == 0:
                log.info(f"epoch {ep} step {step} loss {loss.item():.4f} lr {sched.get_last_lr()[0]:.4f}")
        log.info(f"epoch {ep} finished")
    if args.fault == "vmem":
        # full-vocabulary eval logits for the held-out tokens (float32)
        log.info(f"evaluating: logits buffer {args.eval_tokens} x {args.eval_vocab}")
        logits = torch.empty(args.eval_tokens, args.eval_vocab)
        logits.normal_()
        log.info(f"eval ppl proxy {logits.logsumexp(-1).mean().item():.3f}")
    if args.fault == "fsize":
        os.makedirs(args.dump, exist_ok=True)
        emb = np.random.randn(20000, 256).astype(np.float32)
        path = f"{args.dump}/embeddings_rank{rank}.f32"
        log.info(f"writing embeddings {emb.shape} to {path}")
        with open(path, "wb") as f:
            for row_block in np.array_split(emb, 20):
                f.write(row_block.tobytes())
                f.flush()
        log.info("embeddings written")
    if dist_on:
        dist.barrier(); dist.destroy_process_group()

if __name__ == "__main__":
    main()
