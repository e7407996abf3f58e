"""Lightning DDP scenarios on CPU/gloo. Flags select fault, rank, step."""
import argparse, os, sys, signal, logging, time
from datetime import timedelta
import torch, torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset
import lightning as L
from lightning.pytorch.callbacks import ModelCheckpoint, EarlyStopping, LearningRateMonitor, Callback
from lightning.pytorch.loggers import CSVLogger, TensorBoardLogger
from lightning.pytorch.strategies import DDPStrategy

p = argparse.ArgumentParser()
p.add_argument("--strategy", default="ddp")
p.add_argument("--devices", type=int, default=2)
p.add_argument("--fault", default="none")
p.add_argument("--rank", type=int, default=1)
p.add_argument("--step", type=int, default=6)
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--hidden", type=int, default=32)
p.add_argument("--out", default="/work/rr60/z/tmp/run")
p.add_argument("--resume", default=None)
p.add_argument("--logger", default="csv")
p.add_argument("--manual", action="store_true")
p.add_argument("--pylog", action="store_true")
p.add_argument("--timeout", type=int, default=25)
p.add_argument("--unused", action="store_true")
p.add_argument("--tqdm", action="store_true")
args = p.parse_args()

if args.pylog:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s [%(name)s] %(message)s")
log = logging.getLogger("train")


class Net(L.LightningModule):
    def __init__(self, hidden=32, lr=0.05, manual=False):
        super().__init__()
        self.save_hyperparameters()
        hid = hidden
        if args.fault == "rank-hidden":
            # hidden size read from a per-host config; rank 1 picked up a stale value
            hid = hidden + (16 if int(os.environ.get("LOCAL_RANK", 0)) == args.rank else 0)
        self.body = nn.Sequential(nn.Linear(16, hid), nn.ReLU(), nn.Linear(hid, hid), nn.ReLU())
        self.head = nn.Linear(hid, 4)
        self.aux = nn.Linear(hid, 4)
        if args.fault == "tied-safetensors":
            self.aux.weight = self.head.weight
        self.automatic_optimization = not manual

    def forward(self, x):
        return self.head(self.body(x))

    def training_step(self, batch, idx):
        x, y = batch
        h = self.body(x)
        out = self.head(h)
        if args.fault == "unused-branch" and self.global_rank == args.rank and self.global_step >= args.step:
            out = self.aux(h)  # rank-dependent branch: head unused on this rank
        else:
            out = out + 0.0 * self.aux(h)
        loss = nn.functional.cross_entropy(out, y)
        if args.fault == "selfkill" and self.global_rank == args.rank and self.global_step == args.step:
            os.kill(os.getpid(), signal.SIGKILL)
        if args.fault == "nan-loss-lr" and self.global_step >= args.step:
            pass
        self.log("train_loss", loss, prog_bar=True)
        if args.pylog and idx % 4 == 0:
            log.info("rank %d step %d loss %.4f", self.global_rank, self.global_step, loss.item())
        if not self.automatic_optimization:
            opt = self.optimizers()
            opt.zero_grad()
            self.manual_backward(loss)
            if args.fault == "double-backward" and self.global_step >= args.step and self.global_rank == args.rank:
                # gradient penalty added after the fact, re-using the freed graph
                self.manual_backward(loss * 0.1)
            opt.step()
            return loss
        return loss

    def validation_step(self, batch, idx):
        x, y = batch
        out = self(x)
        loss = nn.functional.cross_entropy(out, y)
        acc = (out.argmax(-1) == y).float().mean()
        if args.fault == "val-rank-only":
            if self.global_rank == 0:
                self.log("val_loss", loss, sync_dist=True)
            else:
                self.log("val_loss", loss)
        else:
            self.log("val_loss", loss, sync_dist=args.fault != "no-sync-warn")
        self.log("val_acc", acc, sync_dist=args.fault != "no-sync-warn")
        return loss

    def configure_optimizers(self):
        if args.fault == "opt-groups":
            opt = torch.optim.SGD([{"params": self.body.parameters()},
                                   {"params": list(self.head.parameters()) + list(self.aux.parameters()), "lr": 0.01}],
                                  lr=self.hparams.lr, momentum=0.9)
        else:
            opt = torch.optim.SGD(self.parameters(), lr=self.hparams.lr, momentum=0.9)
        sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "epoch"}}

    def setup(self, stage):
        if args.fault == "init-twice":
            # leftover from the pre-Lightning script
            torch.distributed.init_process_group("gloo", timeout=timedelta(seconds=args.timeout))


class ExtraState:
    def __init__(self, seen):
        self.seen = seen


class FaultCallback(Callback):
    def on_train_batch_end(self, trainer, pl_module, outputs, batch, idx):
        if args.fault == "rank-stop" and trainer.global_rank == args.rank and trainer.global_step >= args.step:
            # per-rank "loss plateau" heuristic that never consults the other ranks
            trainer.should_stop = True
        if args.fault == "wrapper-attr" and trainer.global_step == args.step and trainer.global_rank == args.rank:
            print("head norm", trainer.model.head.weight.norm().item())

    def on_validation_epoch_end(self, trainer, pl_module):
        if args.fault == "callback-keyerror" and trainer.global_rank == args.rank:
            m = trainer.callback_metrics
            print(f"[rank {trainer.global_rank}] val metrics: {sorted(m)}")
            print("best so far", m["val/acc"])

    def on_save_checkpoint(self, trainer, pl_module, checkpoint):
        if args.fault == "weights-only":
            checkpoint["extra_state"] = ExtraState(trainer.global_step)

    def on_train_end(self, trainer, pl_module):
        if args.fault == "tied-safetensors" and trainer.global_rank == 0:
            from safetensors.torch import save_file
            os.makedirs(args.out, exist_ok=True)
            save_file(pl_module.state_dict(), os.path.join(args.out, "model.safetensors"))
        if args.fault == "weights-only" and trainer.global_rank == 0:
            ck = trainer.checkpoint_callback.best_model_path
            print("re-loading", ck, "for export")
            sd = torch.load(ck)
            print(len(sd["state_dict"]))


def main():
    torch.manual_seed(0)
    X = torch.randn(256, 16); Y = (X[:, :4].argmax(-1))
    Xv = torch.randn(64, 16); Yv = (Xv[:, :4].argmax(-1))
    tr = DataLoader(TensorDataset(X, Y), batch_size=16, shuffle=True)
    va = DataLoader(TensorDataset(Xv, Yv), batch_size=16)
    model = Net(args.hidden, manual=args.manual)
    monitor = "val_acc" if args.fault != "monitor-missing" else "val/accuracy"
    cbs = [ModelCheckpoint(dirpath=os.path.join(args.out, "ckpt"), monitor=monitor, mode="max", save_top_k=2, save_last=True),
           FaultCallback()]
    if args.fault in ("none", "early-stop", "rank-stop", "no-sync-warn"):
        cbs.append(EarlyStopping(monitor="val_loss", patience=3, mode="min"))
    if args.tqdm:
        from lightning.pytorch.callbacks import TQDMProgressBar
        cbs.append(TQDMProgressBar(refresh_rate=2))
    if args.logger != "off" or args.fault == "lrmon-nologger":
        cbs.append(LearningRateMonitor(logging_interval="epoch"))
    if args.logger == "csv":
        logger = CSVLogger(args.out, name="csv")
    elif args.logger == "tb":
        logger = TensorBoardLogger(args.out, name="tb")
    else:
        logger = False
    if args.strategy in ("ddp", "ddp_spawn"):
        strat = DDPStrategy(process_group_backend="gloo", timeout=timedelta(seconds=args.timeout),
                            start_method="spawn" if args.strategy == "ddp_spawn" else "popen",
                            find_unused_parameters=args.unused)
    else:
        strat = args.strategy
    trainer = L.Trainer(accelerator="cpu", devices=args.devices, strategy=strat, max_epochs=args.epochs,
                        callbacks=cbs, logger=logger, log_every_n_steps=4, enable_model_summary=True,
                        num_sanity_val_steps=1)
    trainer.fit(model, tr, va, ckpt_path=args.resume)
    if trainer.global_rank == 0:
        print("done; best:", trainer.checkpoint_callback.best_model_path, "score", trainer.checkpoint_callback.best_model_score)


if __name__ == "__main__":
    main()
