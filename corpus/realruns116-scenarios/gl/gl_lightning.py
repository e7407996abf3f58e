"""Lightning regression on synthetic data; healthy run that emits the usual Lightning warnings."""
import argparse, os, warnings
import torch
import torch.nn as nn
import lightning as L

p = argparse.ArgumentParser()
p.add_argument('--epochs', type=int, default=3)
p.add_argument('--root', default='/work/rr116/gl/run/pl_root')
a = p.parse_args()


class Reg(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))

    def training_step(self, batch, i):
        x, y = batch
        loss = nn.functional.mse_loss(self.net(x), y)
        self.log('train_loss', loss, prog_bar=True)
        return loss

    def validation_step(self, batch, i):
        x, y = batch
        self.log('val_loss', nn.functional.mse_loss(self.net(x), y))

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.05)


g = torch.Generator().manual_seed(0)
x = torch.randn(512, 16, generator=g)
y = x[:, :1] * 2 - x[:, 1:2] + 0.1 * torch.randn(512, 1, generator=g)
ds = torch.utils.data.TensorDataset(x, y)
tr, va = torch.utils.data.random_split(ds, [448, 64], generator=g)
trainer = L.Trainer(max_epochs=a.epochs, accelerator='cpu', devices=1, default_root_dir=a.root,
                    log_every_n_steps=5, enable_checkpointing=True)
trainer.fit(Reg(), torch.utils.data.DataLoader(tr, batch_size=32, shuffle=True),
            torch.utils.data.DataLoader(va, batch_size=32))
print('best checkpoint:', trainer.checkpoint_callback.best_model_path)
