"""Lightning module with an EMA callback and a checkpoint callback (CPU DDP)."""
import os, sys, copy, argparse, warnings
import torch, torch.nn.functional as F
import lightning as L
from lightning.pytorch.callbacks import Callback, ModelCheckpoint
from torch.utils.data import TensorDataset, DataLoader
sys.path.insert(0, os.path.dirname(__file__))
from common import MLP, synth

p = argparse.ArgumentParser()
p.add_argument("--devices", type=int, default=2)
p.add_argument("--epochs", type=int, default=3)
p.add_argument("--out-dir", default="/work/rr120/gw/out/lit")
p.add_argument("--ema-decay", type=float, default=0.99)
args = p.parse_args()

class EMACallback(Callback):
    def __init__(self, decay): self.decay = decay; self.ema = None
    def on_fit_start(self, trainer, pl_module):
        self.ema = copy.deepcopy(pl_module.net).eval()
    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        with torch.no_grad():
            for e, p in zip(self.ema.parameters(), pl_module.net.parameters()):
                e.mul_(self.decay).add_(p, alpha=1 - self.decay)
    def on_validation_epoch_end(self, trainer, pl_module):
        x, y = trainer.datamodule_val
        acc = (self.ema(x).argmax(1) == y).float().mean()
        pl_module.log("val/ema_acc", acc, sync_dist=True)

class Lit(L.LightningModule):
    def __init__(self):
        super().__init__(); self.net = MLP(32, 128, 10)
    def training_step(self, batch, i):
        x, y = batch; loss = F.cross_entropy(self.net(x), y)
        self.log("train/loss", loss, prog_bar=True); return loss
    def validation_step(self, batch, i):
        x, y = batch
        self.log("val/acc", (self.net(x).argmax(1) == y).float().mean(), prog_bar=True)
    def configure_optimizers(self):
        opt = torch.optim.AdamW(self.parameters(), lr=1e-3)
        return {"optimizer": opt, "lr_scheduler": torch.optim.lr_scheduler.StepLR(opt, 1, 0.7)}

if __name__ == "__main__":
    L.seed_everything(0)
    X, Y = synth(2048, seed=0); Xv, Yv = X[:256], Y[:256]
    tr = DataLoader(TensorDataset(X, Y), batch_size=32, shuffle=True)
    va = DataLoader(TensorDataset(Xv, Yv), batch_size=64)
    ema = EMACallback(args.ema_decay)
    trainer = L.Trainer(accelerator="cpu", devices=args.devices, strategy="ddp", max_epochs=args.epochs,
                        default_root_dir=args.out_dir, log_every_n_steps=10,
                        callbacks=[ema, ModelCheckpoint(monitor="val/acc", mode="max", save_top_k=2)])
    trainer.datamodule_val = (Xv, Yv)
    trainer.fit(Lit(), tr, va)
    if trainer.is_global_zero:
        print("best checkpoint:", trainer.checkpoint_callback.best_model_path)
