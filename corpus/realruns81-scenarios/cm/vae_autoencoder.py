"""Conv autoencoder / VAE on synthetic 28x28 'digits'.

--fault: none | bce_logits | nan | anomaly | numpy_log | nonscalar | big_eval | ddp_attr | ckpt_full
"""
import argparse
import logging
import os
import sys
import time
import warnings
from datetime import timedelta

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=0)
p.add_argument("--fault-step", type=int, default=5)
p.add_argument("--steps", type=int, default=20)
p.add_argument("--bs", type=int, default=64)
p.add_argument("--lr", type=float, default=1e-3)
p.add_argument("--latent", type=int, default=8)
p.add_argument("--out-dir", default="/work/rr81/cm/work/vae_out")
p.add_argument("--eval-bs", type=int, default=256)
p.add_argument("--detect-anomaly", action="store_true")
args = p.parse_args()

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s | %(message)s",
                    stream=sys.stdout)
logger = logging.getLogger("vae")

distributed = int(os.environ.get("WORLD_SIZE", "1")) > 1
if distributed:
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    rank, world = dist.get_rank(), dist.get_world_size()
    logger = logging.getLogger(f"vae.rank{rank}")
else:
    rank, world = 0, 1
torch.manual_seed(0)
torch.set_num_threads(1)


class VAE(nn.Module):
    def __init__(self, latent=8):
        super().__init__()
        self.enc = nn.Sequential(nn.Conv2d(1, 16, 4, 2, 1), nn.ReLU(), nn.Conv2d(16, 32, 4, 2, 1), nn.ReLU(),
                                 nn.Flatten())
        self.mu = nn.Linear(32 * 7 * 7, latent)
        self.logvar = nn.Linear(32 * 7 * 7, latent)
        self.dec_fc = nn.Linear(latent, 32 * 7 * 7)
        self.dec = nn.Sequential(nn.ConvTranspose2d(32, 16, 4, 2, 1), nn.ReLU(),
                                 nn.ConvTranspose2d(16, 1, 4, 2, 1))

    def encode(self, x):
        h = self.enc(x)
        return self.mu(h), self.logvar(h)

    def decode(self, z, sigmoid=True):
        h = self.dec(self.dec_fc(z).view(-1, 32, 7, 7))
        return torch.sigmoid(h) if sigmoid else h

    def forward(self, x, sigmoid=True):
        mu, logvar = self.encode(x)
        std = torch.exp(0.5 * logvar)
        z = mu + std * torch.randn_like(std)
        return self.decode(z, sigmoid), mu, logvar


def make_batch(bs, gen):
    # blobs on a 28x28 canvas, values in [0, 1]
    yy, xx = torch.meshgrid(torch.arange(28.), torch.arange(28.), indexing="ij")
    cx = torch.randint(6, 22, (bs, 1, 1), generator=gen).float()
    cy = torch.randint(6, 22, (bs, 1, 1), generator=gen).float()
    img = torch.exp(-((xx - cx) ** 2 + (yy - cy) ** 2) / 18.0)
    return img.unsqueeze(1).clamp(0, 1)


model = VAE(args.latent)
if distributed:
    model = nn.parallel.DistributedDataParallel(model)
opt = torch.optim.Adam(model.parameters(), lr=args.lr)
gen = torch.Generator().manual_seed(100 + rank)
os.makedirs(args.out_dir, exist_ok=True)
logger.info("start training: world=%d steps=%d bs=%d lr=%g", world, args.steps, args.bs, args.lr)

if args.fault == "anomaly" or args.detect_anomaly:
    torch.autograd.set_detect_anomaly(True)

for step in range(args.steps):
    x = make_batch(args.bs, gen)
    if args.fault == "bce_logits":
        # switched decoder to return logits for numerical stability but kept F.binary_cross_entropy
        recon, mu, logvar = model(x, sigmoid=False)
        rec = F.binary_cross_entropy(recon, x, reduction="sum") / x.size(0)
    elif args.fault == "nonscalar":
        recon, mu, logvar = model(x)
        rec = F.binary_cross_entropy(recon, x, reduction="none").sum(dim=(1, 2, 3))  # per-sample
    elif args.fault == "nan":
        recon, mu, logvar = model(x)
        rec = F.mse_loss(recon, x, reduction="sum") / x.size(0)
    else:
        recon, mu, logvar = model(x)
        rec = F.binary_cross_entropy(recon, x, reduction="sum") / x.size(0)
    if args.fault == "anomaly" and step >= args.fault_step:
        # "numerically stable" KL written by hand: log(sigma^2) from std that underflows to 0
        std = torch.exp(0.5 * logvar) * torch.exp(torch.tensor(-120.0))
        kl = -0.5 * torch.sum(1 + torch.log(std ** 2) - mu.pow(2) - std ** 2) / x.size(0)
    else:
        kl = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp()) / x.size(0)
    loss = rec + kl
    if args.fault == "nan":
        if not torch.isfinite(loss):
            logger.error("Loss is %s at step %d, stopping training", loss.item(), step)
            sys.exit(1)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if args.fault == "numpy_log" and step == args.fault_step:
        import numpy as np
        grid = recon[:16].squeeze(1).numpy()
        np.save(os.path.join(args.out_dir, f"recon_{step}.npy"), grid)
    if args.fault == "ddp_attr" and rank == args.fault_rank and step == args.fault_step:
        with torch.no_grad():
            z = torch.randn(16, args.latent)
            samples = model.decode(z)
        torch.save(samples, os.path.join(args.out_dir, f"samples_{step}.pt"))
    if step % 2 == 0 or args.fault == "nan":
        logger.info("step %d loss %.4f rec %.4f kl %.4f", step, loss.item(), rec.item(), kl.item())

if args.fault == "big_eval" or args.fault == "none":
    # full-dataset reconstruction error in one shot
    model.eval()
    with torch.no_grad():
        n_eval = args.eval_bs
        xs = make_batch(n_eval, gen)
        r, _, _ = model(xs)
        err = F.mse_loss(r, xs).item()
    logger.info("eval recon mse over %d images: %.5f", n_eval, err)

if rank == 0:
    path = os.path.join(args.out_dir, "vae_final.pt")
    torch.save((model.module if distributed else model).state_dict(), path)
    logger.info("saved %s", path)
if distributed:
    dist.destroy_process_group()
logger.info("done")
