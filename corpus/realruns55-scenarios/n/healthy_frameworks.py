"""Healthy runs through frameworks / data pipelines that log scary-looking things. --mode selects."""
import argparse, os, sys, logging, math, warnings
import torch, torch.nn as nn
p = argparse.ArgumentParser(); p.add_argument("--mode", required=True); p.add_argument("--steps", type=int, default=24)
a = p.parse_args()
logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
log = logging.getLogger("train")

class DS(torch.utils.data.Dataset):
    def __init__(self, n=64, bad=(13, 41)): self.n, self.bad = n, bad
    def __len__(self): return self.n
    def __getitem__(self, i):
        if i in self.bad:
            # record i was written with the wrong feature width; decode via reshape
            raw = torch.arange(15, dtype=torch.float32)
            try:
                x = raw.view(16)
            except RuntimeError:
                logging.getLogger("data").exception("skipping corrupt record %d, substituting record %d", i, i + 1)
                return self[i + 1]
        g = torch.Generator().manual_seed(i)
        return torch.randn(16, generator=g), int(torch.randint(0, 4, (1,), generator=g))

if a.mode in ("dl-skip", "nan-skip"):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    dl = torch.utils.data.DataLoader(DS(), batch_size=8, shuffle=True, num_workers=2 if a.mode == "dl-skip" else 0)
    step, skipped = 0, 0
    for ep in range(3):
        for x, y in dl:
            if a.mode == "nan-skip" and step in (7, 8, 19):
                x = x.clone(); x[0, 0] = float("inf")  # overflowing feature from an upstream normaliser
            loss = nn.functional.cross_entropy(model(x), y)
            if not torch.isfinite(loss):
                skipped += 1
                log.warning("step %d: non-finite loss %s, skipping batch (skipped %d so far)", step, loss.item(), skipped)
                opt.zero_grad(); step += 1; continue
            opt.zero_grad(); loss.backward()
            gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            if step % 4 == 0: log.info("epoch %d step %d loss %.4f grad_norm %.3f", ep, step, loss.item(), gn)
            step += 1
    log.info("done: %d steps, %d skipped", step, skipped)

if a.mode == "lightning":
    import lightning as L
    class M(L.LightningModule):
        def __init__(s): super().__init__(); s.net = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
        def training_step(s, b, i):
            x, y = b; l = nn.functional.cross_entropy(s.net(x), y); s.log("train_loss", l, prog_bar=True); return l
        def validation_step(s, b, i):
            x, y = b; s.log("val_loss", nn.functional.cross_entropy(s.net(x), y))
        def configure_optimizers(s): return torch.optim.SGD(s.parameters(), lr=0.05)
    tr = torch.utils.data.DataLoader(DS(bad=()), batch_size=8)
    va = torch.utils.data.DataLoader(DS(n=16, bad=()), batch_size=8)
    t = L.Trainer(max_epochs=2, accelerator="cpu", devices=1, log_every_n_steps=2, default_root_dir="/work/rr55/n/tmp/pl", enable_checkpointing=True)
    t.fit(M(), tr, va)

if a.mode == "accelerate":
    from accelerate import Accelerator
    from accelerate.logging import get_logger
    acc = Accelerator(cpu=True)
    alog = get_logger("train")
    from transformers import GPT2Config, GPT2LMHeadModel
    cfg = GPT2Config(n_layer=2, n_embd=64, n_head=2, vocab_size=128, n_positions=32)
    model = GPT2LMHeadModel(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    data = torch.randint(0, 128, (64, 32), generator=torch.Generator().manual_seed(0))
    dl = torch.utils.data.DataLoader(data, batch_size=4)
    model, opt, dl = acc.prepare(model, opt, dl)
    model.gradient_checkpointing_enable()
    for i, b in enumerate(dl):
        out = model(input_ids=b, labels=b, use_cache=True)
        acc.backward(out.loss); opt.step(); opt.zero_grad()
        if i % 2 == 0: alog.info(f"step {i} loss {out.loss.item():.4f}", main_process_only=True)
    acc.wait_for_everyone()
    alog.info("finished", main_process_only=True)
