"""Custom accelerate training loop for a tiny GPT-2 classifier (run with `accelerate launch`)."""
import argparse, os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import make_tokenizer, make_model, sentences

p = argparse.ArgumentParser()
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--grad-accum", type=int, default=1)
p.add_argument("--ckpt-dir", default="accel_ckpt")
p.add_argument("--precision", default=None)
a = p.parse_args()

import torch
from torch.utils.data import DataLoader
from accelerate import Accelerator
from accelerate.logging import get_logger
from accelerate.utils import set_seed
import logging
from tqdm.auto import tqdm

logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s",
                    datefmt="%m/%d/%Y %H:%M:%S", level=logging.INFO)
logger = get_logger(__name__)

kw = {}
if a.precision:
    kw["mixed_precision"] = a.precision
acc = Accelerator(gradient_accumulation_steps=a.grad_accum, **kw)
logger.info(acc.state, main_process_only=False)
set_seed(0)
tok = make_tokenizer(pad=True)
model = make_model(tok, kind="cls")
texts = sentences(256, seed=9)
labels = [int("good" in t or "yes" in t) for t in texts]
enc = tok(texts, padding="max_length", truncation=True, max_length=24, return_tensors="pt")
data = [{"input_ids": enc["input_ids"][i], "attention_mask": enc["attention_mask"][i],
         "labels": torch.tensor(labels[i])} for i in range(len(texts))]
dl = DataLoader(data, batch_size=16, shuffle=True)
opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
model, opt, dl = acc.prepare(model, opt, dl)
step = 0
for ep in range(a.epochs):
    model.train()
    bar = tqdm(dl, disable=not acc.is_local_main_process, desc=f"epoch {ep}")
    for batch in bar:
        with acc.accumulate(model):
            out = model(**batch)
            acc.backward(out.loss)
            opt.step(); opt.zero_grad()
        step += 1
        bar.set_postfix(loss=f"{out.loss.item():.4f}")
    logger.info(f"epoch {ep}: last loss {out.loss.item():.4f}")
    acc.save_state(os.path.join(a.ckpt_dir, f"epoch_{ep}"))
acc.wait_for_everyone()
logger.info("training finished")
acc.end_training()
