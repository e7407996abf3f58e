"""Lightning ddp_spawn script written as a flat notebook-style file (no __main__ guard)."""
from datetime import timedelta
import torch, torch.nn as nn, torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset
import lightning as L
from lightning.pytorch.strategies import DDPStrategy


class Net(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))

    def training_step(self, batch, i):
        x, y = batch
        loss = F.mse_loss(self.net(x).squeeze(-1), y)
        self.log("loss", loss)
        return loss

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), 1e-2)


x = torch.randn(128, 8)
ds = TensorDataset(x, x.sum(1))
trainer = L.Trainer(accelerator="cpu", devices=2, max_epochs=2, enable_progress_bar=False,
                    strategy=DDPStrategy(start_method="spawn", process_group_backend="gloo",
                                         timeout=timedelta(seconds=30)),
                    logger=False, enable_checkpointing=False)
trainer.fit(Net(), DataLoader(ds, batch_size=16))
print("training done")
