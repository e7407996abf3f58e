"""Lightning Trainer scenarios: hooks, callbacks, loggers, checkpoints under cpu ddp / ddp_spawn."""
import argparse, os, sys, logging, time
from datetime import timedelta
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
import lightning as L
from lightning.pytorch.callbacks import ModelCheckpoint, EarlyStopping, RichProgressBar, TQDMProgressBar, LearningRateMonitor
from lightning.pytorch.loggers import CSVLogger
from lightning.pytorch.strategies import DDPStrategy

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--rank", type=int, default=1)
p.add_argument("--step", type=int, default=5)
p.add_argument("--strategy", default="ddp")
p.add_argument("--devices", type=int, default=2)
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--bar", default="tqdm")
p.add_argument("--hidden", type=int, default=32)
p.add_argument("--groups", type=int, default=1)
p.add_argument("--lr", type=float, default=0.05)
p.add_argument("--out", default="runs/default")
p.add_argument("--ckpt", default=None)
p.add_argument("--logger", default="csv")
p.add_argument("--ckpt-monitor", default="val_loss")
p.add_argument("--early", default=None)
p.add_argument("--timeout", type=int, default=40)
p.add_argument("--pylog", action="store_true")
p.add_argument("--nbatches", type=int, default=16)
p.add_argument("--save-every", type=int, default=0)
p.add_argument("--gallery", type=int, default=200000)
p.add_argument("--sleep", type=float, default=0.0)
args = p.parse_args()

if args.pylog:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s [%(name)s] %(message)s")
log = logging.getLogger("train")


class LitRegressor(L.LightningModule):
    def __init__(self, hidden=32, lr=0.05, groups=1):
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(nn.Linear(16, hidden), nn.ReLU(), nn.Linear(hidden, 1))
        if args.fault == "unused":
            self.aux_head = nn.Linear(hidden, 4)  # auxiliary head only used when aux loss enabled
        if args.fault == "lambda":
            self.loss_fn = lambda a, b: ((a - b) ** 2).mean()
        else:
            self.loss_fn = nn.MSELoss()

    def forward(self, x):
        return self.net(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        if args.sleep:
            time.sleep(args.sleep)  # stands in for a heavier model
        if args.fault == "f64":
            x = torch.from_numpy(x.numpy().astype("float64")) if self.global_step >= args.step else x
        pred = self(x)
        loss = self.loss_fn(pred, y)
        self.log("train_loss", loss, prog_bar=True)
        if args.fault == "dictret" and self.global_rank == args.rank and self.global_step >= args.step:
            return {"train_loss": loss, "pred": pred.detach()}
        if args.fault == "viewbug":
            # flatten assuming full batch of 8
            loss = self.loss_fn(pred.view(8, -1), y.view(8, -1))
        if args.fault == "unused" and self.current_epoch >= 1:
            loss = loss + 0.1 * self.aux_head(torch.relu(self.net[0](x))).pow(2).mean()
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        pred = self(x)
        loss = self.loss_fn(pred, y)
        self.log("val_loss", loss, prog_bar=True, sync_dist=(args.fault != "noisy"))
        if args.fault == "valkey":
            stats = {"mse": loss.item()}
            if self.global_rank == args.rank and batch_idx >= 2:
                self.log("val_mae", stats["mae"])
        return loss

    def on_validation_epoch_end(self):
        if args.fault == "pairwise" and self.global_rank == 0 and not self.trainer.sanity_checking:
            # retrieval metric: embed the whole gallery and compare every pair
            gallery = torch.randn(args.gallery, 16)
            with torch.no_grad():
                emb = self.net[0](gallery)
                dist = torch.cdist(emb, emb)
                recall = (dist.topk(5, largest=False).indices == torch.arange(len(emb))[:, None]).any(1).float().mean()
            self.log("val_recall@5", recall, rank_zero_only=True)

    def configure_optimizers(self):
        if args.fault == "optparams":
            opt = torch.optim.AdamW(self.parameters, lr=self.hparams.lr)
        elif self.hparams.groups == 2:
            opt = torch.optim.SGD([
                {"params": self.net[0].parameters(), "lr": self.hparams.lr},
                {"params": self.net[2].parameters(), "lr": self.hparams.lr * 0.1},
            ], lr=self.hparams.lr, momentum=0.9)
        else:
            opt = torch.optim.SGD(self.parameters(), lr=self.hparams.lr, momentum=0.9)
        sched = torch.optim.lr_scheduler.StepLR(opt, step_size=4, gamma=0.5)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}


def loaders():
    g = torch.Generator().manual_seed(0)
    n = args.nbatches * 8 * args.devices
    x = torch.randn(n, 16, generator=g)
    y = x[:, :4].sum(1, keepdim=True) + 0.1 * torch.randn(n, 1, generator=g)
    if args.fault == "viewbug":
        x, y = x[: n - 5], y[: n - 5]
    tr = DataLoader(TensorDataset(x, y), batch_size=8, shuffle=True)
    va = DataLoader(TensorDataset(x[:64], y[:64]), batch_size=8)
    return tr, va


def main():
    L.seed_everything(42)
    model = LitRegressor(args.hidden, args.lr, args.groups)
    tr, va = loaders()
    cbs = []
    cbs.append(RichProgressBar() if args.bar == "rich" else TQDMProgressBar(refresh_rate=1))
    ck = ModelCheckpoint(dirpath=os.path.join(args.out, "ckpt"), monitor=args.ckpt_monitor, save_last=True,
                         every_n_train_steps=args.save_every or None)
    cbs.append(ck)
    cbs.append(LearningRateMonitor(logging_interval="step"))
    if args.early:
        cbs.append(EarlyStopping(monitor=args.early, patience=2, check_finite=True))
    if args.logger == "tb":
        from lightning.pytorch.loggers import TensorBoardLogger
        logger = TensorBoardLogger(save_dir=args.out, name="tb")
    else:
        logger = CSVLogger(save_dir=args.out, name="csv")
    if args.strategy == "ddp":
        strategy = DDPStrategy(process_group_backend="gloo", timeout=timedelta(seconds=args.timeout))
    elif args.strategy == "ddp_spawn":
        strategy = DDPStrategy(start_method="spawn", process_group_backend="gloo", timeout=timedelta(seconds=args.timeout))
    else:
        strategy = args.strategy
    trainer = L.Trainer(accelerator="cpu", devices=args.devices, strategy=strategy, max_epochs=args.epochs,
                        callbacks=cbs, logger=logger, log_every_n_steps=5, num_sanity_val_steps=2,
                        enable_model_summary=True)
    trainer.fit(model, tr, va, ckpt_path=args.ckpt)
    if trainer.global_rank == 0:
        print(f"best checkpoint: {ck.best_model_path} score={ck.best_model_score}")


if __name__ == "__main__":
    main()
