"""Short LM fine-tune that exports / reloads weights the way many scripts do.

--export safetensors-manual : save the state_dict with safetensors.torch.save_file at the end
--init-from DIR             : start from a local checkpoint dir (from_pretrained)
--init-from hub:NAME        : start from a hub model id (offline machine)
"""
import argparse, os, sys, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import make_tokenizer, make_model, sentences

p = argparse.ArgumentParser()
p.add_argument("--export", default="save_pretrained")
p.add_argument("--init-from", default=None)
p.add_argument("--steps", type=int, default=40)
p.add_argument("--outdir", default="export")
a = p.parse_args()

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, set_seed
from transformers.utils import logging as hf_logging
hf_logging.set_verbosity_info()
logger = hf_logging.get_logger("train_export")
set_seed(0)

if a.init_from and a.init_from.startswith("hub:"):
    name = a.init_from[4:]
    tok = AutoTokenizer.from_pretrained(name)
    model = AutoModelForCausalLM.from_pretrained(name)
elif a.init_from:
    tok = AutoTokenizer.from_pretrained(a.init_from)
    model = AutoModelForCausalLM.from_pretrained(a.init_from)
else:
    tok = make_tokenizer(pad=True)
    model = make_model(tok)
tok.pad_token = tok.pad_token or tok.eos_token
opt = torch.optim.AdamW(model.parameters(), lr=5e-4)
texts = sentences(400, seed=11)
t0 = time.time()
for step in range(a.steps):
    b = tok(texts[step * 8:(step + 1) * 8], padding=True, return_tensors="pt")
    out = model(**b, labels=b["input_ids"].masked_fill(b["attention_mask"] == 0, -100))
    out.loss.backward(); opt.step(); opt.zero_grad()
    if step % 10 == 0:
        logger.info(f"step {step:4d} | loss {out.loss.item():.4f} | {time.time() - t0:.1f}s")

os.makedirs(a.outdir, exist_ok=True)
if a.export == "safetensors-manual":
    from safetensors.torch import save_file
    save_file(model.state_dict(), os.path.join(a.outdir, "model.safetensors"),
              metadata={"format": "pt"})
    model.config.save_pretrained(a.outdir)
else:
    model.save_pretrained(a.outdir)
tok.save_pretrained(a.outdir)
logger.info(f"exported to {a.outdir}")
