"""Lightning regression module trained with DDP on CPU; deliberately noisy but healthy."""
import argparse, warnings
import torch, torch.nn as nn
import lightning as L
from torch.utils.data import DataLoader, TensorDataset

p = argparse.ArgumentParser()
p.add_argument('--epochs', type=int, default=3)
p.add_argument('--devices', type=int, default=2)
args = p.parse_args()

class Reg(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))
        self.aux = nn.Linear(32, 1)   # auxiliary head kept for a later experiment (unused)
    def training_step(self, b, i):
        x, y = b
        loss = nn.functional.mse_loss(self.net(x), y)
        self.log('train_loss', loss, prog_bar=True)
        return loss
    def validation_step(self, b, i):
        x, y = b
        self.log('val_loss', nn.functional.mse_loss(self.net(x), y))   # no sync_dist
    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-2)

torch.manual_seed(0)
X = torch.randn(512, 8); Y = X[:, :2].sum(1, keepdim=True)
tr = DataLoader(TensorDataset(X, Y), batch_size=32)
va = DataLoader(TensorDataset(X[:64], Y[:64]), batch_size=32)
trainer = L.Trainer(max_epochs=args.epochs, accelerator='cpu', devices=args.devices,
                    strategy='ddp_find_unused_parameters_true' if args.devices > 1 else 'auto',
                    log_every_n_steps=20, default_root_dir='pl_out', enable_model_summary=True)
trainer.fit(Reg(), tr, va)
