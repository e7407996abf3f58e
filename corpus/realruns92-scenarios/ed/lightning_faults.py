"""Lightning (strategy=ddp on CPU, Lightning's own subprocess launcher) training a tiny GPT-2 built from a config.

--fault none | cassert (C helper asserts on rank --fault-rank at --fault-step) | sigkill-self-oom
--helper runs a profiling helper subprocess that exits non-zero (harmless)
"""
import argparse, ctypes, faulthandler, os, subprocess, sys, warnings
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset
import lightning as L
from transformers import GPT2Config, GPT2LMHeadModel

HERE = os.path.dirname(os.path.abspath(__file__))
p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=8)
p.add_argument("--max-steps", type=int, default=30)
p.add_argument("--faulthandler", action="store_true")
p.add_argument("--helper", action="store_true")
args = p.parse_args()
if args.faulthandler:
    faulthandler.enable()


class Toks(Dataset):
    def __init__(self, n=2048, seq=32):
        rng = np.random.default_rng(0)
        self.x = torch.from_numpy((rng.zipf(1.3, size=(n, seq + 1)) % 256).astype(np.int64))

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i]


class LM(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.model = GPT2LMHeadModel(GPT2Config(vocab_size=256, n_positions=64, n_layer=2, n_head=2, n_embd=64))
        self.fast = ctypes.CDLL(os.path.join(HERE, "libfastops.so"))

    def training_step(self, batch, idx):
        if args.fault == "cassert" and self.global_rank == args.fault_rank and self.global_step == args.fault_step:
            ids = np.ascontiguousarray(batch[0].numpy())
            out = np.empty_like(ids)
            nb = int(self.trainer.datamodule.num_buckets if getattr(self.trainer, "datamodule", None) else 0)
            self.fast.bucketize_checked(ids.ctypes.data_as(ctypes.c_void_p), ctypes.c_size_t(len(ids)),
                                        out.ctypes.data_as(ctypes.c_void_p), ctypes.c_int(nb))
        out = self.model(input_ids=batch[:, :-1], labels=batch[:, :-1])
        self.log("train_loss", out.loss, prog_bar=True)
        return out.loss

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-3)

    def on_train_end(self):
        if args.helper and self.global_rank == 0:
            r = subprocess.run([sys.executable, "-c",
                                "import sys; sys.stderr.write('profiler: no CUPTI available, skipping trace export\\n'); sys.exit(2)"])
            print(f"trace export helper exited with code {r.returncode} (ignored)", flush=True)


if __name__ == "__main__":
    if args.helper:
        subprocess.run(["sh", "-c", "nvidia-smi -L"])
    L.seed_everything(0)
    trainer = L.Trainer(accelerator="cpu", devices=2, strategy="ddp", max_steps=args.max_steps,
                        logger=False, enable_checkpointing=False, log_every_n_steps=5,
                        enable_progress_bar=True)
    trainer.fit(LM(), DataLoader(Toks(), batch_size=8, shuffle=True, num_workers=0))
    if trainer.global_rank == 0:
        print("fit complete", flush=True)
