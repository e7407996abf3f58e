"""Lightning Trainer(strategy=ddp, accelerator=cpu, devices=N) on a tiny GPT-2 LM.
--fault selects a bug/misconfiguration; --rank/--step select where it bites."""
import argparse, os, sys, csv
from datetime import timedelta
sys.path.insert(0, os.path.dirname(__file__))
import tinyhf
import torch
import lightning as L
from lightning.pytorch.strategies import DDPStrategy
from lightning.pytorch.callbacks import ModelCheckpoint, Callback
from torch.utils.data import DataLoader, Dataset

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--rank", type=int, default=1)
p.add_argument("--step", type=int, default=4)
p.add_argument("--devices", type=int, default=2)
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--out", default="runs/lit")
p.add_argument("--workers", type=int, default=0)
a = p.parse_args()

tok = tinyhf.make_tokenizer()

class TextDS(Dataset):
    def __init__(self, n, seed, fixed=True):
        self.items = [tok(t, truncation=True, max_length=16)["input_ids"] for t in tinyhf.make_texts(n, seed=seed, min_len=16 if fixed else 4, max_len=20)]
    def __len__(self): return len(self.items)
    def __getitem__(self, i): return torch.tensor(self.items[i])

class LitLM(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.lm = tinyhf.make_model(len(tok))
        self.aux_head = torch.nn.Linear(64, 2)   # auxiliary length classifier
    def training_step(self, batch, idx):
        out = self.lm(input_ids=batch, labels=batch, output_hidden_states=True)
        loss = out.loss
        use_aux = True
        if a.fault == "unused" and self.global_rank == a.rank and self.global_step >= a.step:
            use_aux = False  # aux loss disabled after warm-up on this rank's curriculum
        if use_aux:
            h = out.hidden_states[-1][:, -1]
            loss = loss + 0.1 * torch.nn.functional.cross_entropy(self.aux_head(h), (batch[:, 0] % 2))
        self.log("train_loss", loss, prog_bar=True)
        return loss
    def validation_step(self, batch, idx):
        out = self.lm(input_ids=batch, labels=batch)
        name = "valid/loss" if a.fault == "monitor" else "val_loss"
        self.log(name, out.loss, sync_dist=True)
    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-3)

class SampleDumper(Callback):
    """writes per-step sample statistics to a CSV next to the run"""
    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        if a.fault == "csvcb" and trainer.global_rank == 0 and trainer.global_step == a.step:
            path = os.path.join(a.out, "analysis", f"step{trainer.global_step:06d}", "samples.csv")
            with open(path, "w") as f:
                csv.writer(f).writerows(batch.tolist())

train = TextDS(96, 1, fixed=(a.fault != "collate"))
val = TextDS(32, 2)
ckpt = ModelCheckpoint(dirpath=os.path.join(a.out, "ckpt"), monitor="val_loss", mode="min", save_top_k=1)
trainer = L.Trainer(strategy=DDPStrategy(timeout=timedelta(seconds=40)), accelerator="cpu", devices=a.devices,
                    max_epochs=a.epochs, log_every_n_steps=2, callbacks=[ckpt, SampleDumper()],
                    default_root_dir=a.out, enable_model_summary=True)
trainer.fit(LitLM(), DataLoader(train, batch_size=4, shuffle=True, num_workers=a.workers),
            DataLoader(val, batch_size=4, num_workers=a.workers))
if trainer.global_rank == 0:
    print("best checkpoint:", ckpt.best_model_path, "score", ckpt.best_model_score)
