"""Notebook-style Lightning script converted to a .py file: no __main__ guard, strategy='ddp_spawn'."""
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
import lightning as L

class Lit(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 1))
    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = nn.functional.mse_loss(self.net(x), y)
        self.log("loss", loss, prog_bar=True)
        return loss
    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-2)

x = torch.randn(256, 8); y = x.sum(1, keepdim=True)
dl = DataLoader(TensorDataset(x, y), batch_size=16)
trainer = L.Trainer(accelerator="cpu", devices=2, strategy="ddp_spawn", max_epochs=1, logger=False,
                    enable_checkpointing=False)
trainer.fit(Lit(), dl)
