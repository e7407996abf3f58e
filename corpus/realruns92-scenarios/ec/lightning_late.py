"""Tiny Lightning runs that fail late: validation sanity check, callbacks, checkpointing, resume."""
import argparse, os, sys, logging
from datetime import timedelta
import torch, torch.nn as nn, torch.nn.functional as F
from torch.utils.data import Dataset, DataLoader
import lightning as L
from lightning.pytorch.callbacks import ModelCheckpoint, EarlyStopping, LearningRateMonitor, TQDMProgressBar
from lightning.pytorch.strategies import DDPStrategy

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--devices", type=int, default=2)
p.add_argument("--strategy", default="ddp")
p.add_argument("--epochs", type=int, default=4)
p.add_argument("--root", default="/work/rr92/ec/runs/pl")
p.add_argument("--ckpt-path", default=None)
p.add_argument("--ckpt-every", type=int, default=0)
p.add_argument("--run-name", default="pl-toy")
p.add_argument("--log-file", default=None)
p.add_argument("--bar", action="store_true")
args = p.parse_args()

if args.log_file:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s [%(process)d] %(name)s: %(message)s",
                        handlers=[logging.StreamHandler(sys.stdout)])
log = logging.getLogger("train")

class Toy(Dataset):
    def __init__(self, n, seed, dict_items=False):
        g = torch.Generator().manual_seed(seed)
        self.x = torch.randn(n, 32, generator=g)
        w = torch.randn(32, 4, generator=torch.Generator().manual_seed(0))
        self.y = (self.x @ w).argmax(1)
        self.dict_items = dict_items
    def __len__(self): return len(self.x)
    def __getitem__(self, i):
        if self.dict_items:
            return {"features": self.x[i], "target": self.y[i]}
        return self.x[i], self.y[i]

class Head(nn.Module):
    def __init__(self): super().__init__(); self.a = nn.Linear(32, 64); self.b = nn.Linear(64, 4)
    def forward(self, x): return self.b(F.gelu(self.a(x)))

class Net(L.LightningModule):
    def __init__(self, lr=3e-3, hidden=64, run_name="pl-toy", notes=None):
        super().__init__()
        self.save_hyperparameters()
        self.net = Head()
    def training_step(self, batch, i):
        x, y = batch
        loss = F.cross_entropy(self.net(x), y)
        self.log("train_loss", loss, prog_bar=True, on_step=True)
        if args.log_file and i % 10 == 0:
            log.info("rank %d epoch %d step %d train_loss %.4f", self.global_rank, self.current_epoch, self.global_step, loss.item())
        return loss
    def validation_step(self, batch, i):
        if args.fault == "val_dict_batch":
            x, y = batch                      # val loader was switched to the dict-style dataset
            logits = self.net(x)
        else:
            x, y = batch
            logits = self.net(x)
        loss = F.cross_entropy(logits, y)
        acc = (logits.argmax(1) == y).float().mean()
        self.log("val_loss", loss, prog_bar=True, sync_dist=True)
        if args.fault == "rank0_only_log":
            if self.trainer.is_global_zero:
                self.log("val_acc", acc, sync_dist=True)
        elif args.fault == "none_loud":
            self.log("val_acc", acc)          # forgot sync_dist: Lightning only warns
        else:
            self.log("val_acc", acc, sync_dist=True)
        if args.log_file:
            log.info("rank %d val batch %d loss %.4f acc %.3f", self.global_rank, i, loss.item(), acc.item())
    def configure_optimizers(self):
        opt = torch.optim.AdamW(self.parameters(), lr=self.hparams.lr)
        return {"optimizer": opt, "lr_scheduler": torch.optim.lr_scheduler.StepLR(opt, 2, 0.5)}

def main():
    L.seed_everything(7)
    train = DataLoader(Toy(2048, 1), batch_size=16, shuffle=True)
    val = DataLoader(Toy(256, 2, dict_items=(args.fault == "val_dict_batch")), batch_size=32,
                     shuffle=(args.fault == "none_loud"))
    cbs = [LearningRateMonitor()]
    if args.bar:
        cbs.append(TQDMProgressBar(refresh_rate=10))
    fname = "{epoch}-{step}-{val_loss:.3f}"
    if args.fault == "long_ckpt_name":
        # experiment tag assembled from the sweep config so every checkpoint is self-describing
        tag = "_".join(f"{k}={v}" for k, v in dict(model="toy-mlp-gelu", hidden=64, lr=3e-3, wd=0.01, sched="steplr-2-0.5",
                        data="toy2048-seed1-4class-standardized", aug="none", bs=16, acc=1, prec="32-true", seed=7,
                        notes="ablation-no-dropout-no-layernorm-baseline-rerun-after-cluster-migration-v3").items())
        fname = tag + "-{epoch}-{step}-{val_loss:.4f}-{val_acc:.4f}"
    ck = ModelCheckpoint(dirpath=os.path.join(args.root, "ckpt"), filename=fname, save_top_k=-1,
                         every_n_train_steps=args.ckpt_every or None, save_last=True)
    cbs.append(ck)
    if args.fault == "earlystop_missing":
        cbs.append(EarlyStopping(monitor="val_f1", mode="max", patience=2))
    if args.fault == "rank0_only_log":
        cbs.append(EarlyStopping(monitor="val_acc", mode="max", patience=3))
    strategy = args.strategy
    if strategy in ("ddp", "ddp_spawn") and args.devices > 1:
        strategy = DDPStrategy(start_method="spawn" if strategy == "ddp_spawn" else "popen",
                               process_group_backend="gloo", timeout=timedelta(seconds=45))
    trainer = L.Trainer(accelerator="cpu", devices=args.devices, strategy=strategy, max_epochs=args.epochs,
                        default_root_dir=args.root, callbacks=cbs, log_every_n_steps=(100 if args.fault == "none_loud" else 5),
                        enable_progress_bar=args.bar, num_sanity_val_steps=2)
    model = Net(run_name=args.run_name, notes=argparse.Namespace(src="sweep-17", owner="ml-team") if args.fault == "ns_hparams" else None)
    trainer.fit(model, train, val, ckpt_path=args.ckpt_path)
    if trainer.is_global_zero:
        print("best:", ck.best_model_path, ck.best_model_score, flush=True)

if __name__ == "__main__":
    main()
