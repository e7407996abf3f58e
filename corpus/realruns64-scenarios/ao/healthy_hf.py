"""Healthy runs with HF/Lightning stacks (noisy but fine): tiny GPT-2 via accelerate, or a
Lightning module. Nothing is downloaded: models are built from configs, data is random ids."""
import os, sys, time, argparse
os.environ.setdefault("HF_HUB_OFFLINE", "1")
import torch, torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def run_accelerate(args):
    from accelerate import Accelerator
    from transformers import GPT2Config, GPT2LMHeadModel, get_linear_schedule_with_warmup
    acc = Accelerator(gradient_accumulation_steps=2, log_with=None)
    cfg = GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=512, n_positions=64)
    model = GPT2LMHeadModel(cfg)
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(0, 512, (256, 32), generator=g)
    dl = DataLoader(TensorDataset(ids), batch_size=8, shuffle=True)
    opt = torch.optim.AdamW(model.parameters(), lr=5e-4)
    sched = get_linear_schedule_with_warmup(opt, 5, args.steps)
    model, opt, dl, sched = acc.prepare(model, opt, dl, sched)
    from tqdm.auto import tqdm
    bar = tqdm(total=args.steps, disable=not acc.is_local_main_process, ncols=90)
    step = 0
    while step < args.steps:
        for (b,) in dl:
            with acc.accumulate(model):
                out = model(input_ids=b, labels=b)
                acc.backward(out.loss)
                acc.clip_grad_norm_(model.parameters(), 1.0)
                opt.step(); sched.step(); opt.zero_grad()
            step += 1; bar.update(1); bar.set_postfix(loss=f"{out.loss.item():.3f}")
            if step >= args.steps:
                break
    bar.close()
    acc.wait_for_everyone()
    acc.print(f"done: {step} steps, final loss {out.loss.item():.4f}")
    unwrapped = acc.unwrap_model(model)
    if acc.is_main_process:
        unwrapped.save_pretrained(args.out, safe_serialization=True)
        acc.print(f"saved to {args.out}")
    acc.end_training()


def run_lightning(args):
    import lightning as L

    class Lit(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.net = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4))
        def training_step(self, batch, i):
            x, y = batch
            loss = nn.functional.cross_entropy(self.net(x), y)
            self.log("train_loss", loss, prog_bar=True)
            return loss
        def validation_step(self, batch, i):
            x, y = batch
            self.log("val_loss", nn.functional.cross_entropy(self.net(x), y))
        def configure_optimizers(self):
            return torch.optim.Adam(self.parameters(), lr=1e-3)

    g = torch.Generator().manual_seed(0)
    x = torch.randn(1024, 32, generator=g); y = torch.randint(0, 4, (1024,), generator=g)
    tr = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True)
    va = DataLoader(TensorDataset(x[:128], y[:128]), batch_size=32)
    trainer = L.Trainer(max_epochs=3, accelerator="cpu", devices=1, default_root_dir=args.out,
                        log_every_n_steps=5, enable_model_summary=True)
    trainer.fit(Lit(), tr, va)
    print("best/last checkpoint:", trainer.checkpoint_callback.best_model_path)


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--stack", choices=["accelerate", "lightning"], default="accelerate")
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--out", default="/tmp/rr64ao_out/hf")
    args = p.parse_args()
    run_accelerate(args) if args.stack == "accelerate" else run_lightning(args)
