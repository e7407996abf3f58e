"""Lightning training of a small tabular classifier with in-model batch standardisation.

--fault none      healthy
--fault deadfeat  from --fault-step on, feature 5 of --fault-rank's batches is a dead sensor (constant 0):
                  the batch standardisation divides 0 by sqrt(var=0)
--anomaly         Trainer(detect_anomaly=True)
--nanguard        stop with an explicit finite-loss check inside training_step
"""
import argparse, os, sys, math, warnings
import torch, torch.nn as nn, torch.nn.functional as F
import lightning as L
from torch.utils.data import DataLoader, Dataset

p = argparse.ArgumentParser()
p.add_argument('--fault', default='none')
p.add_argument('--fault-rank', type=int, default=1)
p.add_argument('--fault-step', type=int, default=30)
p.add_argument('--anomaly', action='store_true')
p.add_argument('--nanguard', action='store_true')
p.add_argument('--epochs', type=int, default=4)
p.add_argument('--lr', type=float, default=2e-3)
p.add_argument('--devices', type=int, default=2)
p.add_argument('--logn', type=int, default=5)
p.add_argument('--spikes', action='store_true')
p.add_argument('--strategy', default='ddp')
args = p.parse_args()

NF, NC, N = 16, 5, 640


class DS(Dataset):
    def __init__(self, seed):
        g = torch.Generator().manual_seed(seed)
        self.x = torch.randn(N, NF, generator=g) * 3 + 1
        W = torch.randn(NF, NC, generator=torch.Generator().manual_seed(4))
        self.y = (self.x @ W).argmax(-1)

    def __len__(self):
        return N

    def __getitem__(self, i):
        return self.x[i], self.y[i]


class Net(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(NF, 64), nn.Tanh(), nn.Linear(64, NC))

    def forward(self, x):
        mu = x.mean(0, keepdim=True)
        sd = ((x - mu) ** 2).mean(0, keepdim=True).sqrt()
        return self.net((x - mu) / sd)

    def training_step(self, batch, idx):
        x, y = batch
        if args.fault == 'deadfeat' and self.global_rank == args.fault_rank and self.global_step >= args.fault_step:
            x = x.clone()
            x[:, 5] = 0.0
        if args.spikes and self.global_rank == args.fault_rank and self.global_step in (args.fault_step, args.fault_step + 21):
            y = torch.randint(0, NC, y.shape)
        loss = F.cross_entropy(self(x), y)
        if args.nanguard and not torch.isfinite(loss):
            raise ValueError(f'loss is NaN at step {self.global_step} (rank {self.global_rank})')
        self.log('train_loss', loss, prog_bar=True)
        return loss

    def validation_step(self, batch, idx):
        x, y = batch
        out = self(x)
        self.log('val_loss', F.cross_entropy(out, y), prog_bar=True, sync_dist=True)
        self.log('val_acc', (out.argmax(-1) == y).float().mean(), prog_bar=True, sync_dist=True)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.hparams.get('lr', args.lr))


if __name__ == '__main__':
    L.seed_everything(0)
    trainer = L.Trainer(accelerator='cpu', devices=args.devices, strategy=args.strategy if args.devices > 1 else 'auto',
                        max_epochs=args.epochs, detect_anomaly=args.anomaly, log_every_n_steps=args.logn,
                        enable_checkpointing=False, logger=L.pytorch.loggers.CSVLogger('tmp/lit_logs'),
                        num_sanity_val_steps=0)
    trainer.fit(Net(), DataLoader(DS(1), batch_size=16, shuffle=True), DataLoader(DS(2), batch_size=64))
