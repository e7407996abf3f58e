"""Evaluate a saved fine-tuned checkpoint: perplexity on held-out toy data."""
import argparse, os, sys, math, logging
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch
from torch.utils.data import DataLoader
from tqdm import tqdm
from transformers import DataCollatorForLanguageModeling
from common_tiny import build_tokenizer, make_texts

p = argparse.ArgumentParser()
p.add_argument("--ckpt", required=True)
args = p.parse_args()
logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s", level=logging.INFO)
log = logging.getLogger("eval")
tok = build_tokenizer()
log.info(f"loading {args.ckpt}")
model = torch.load(args.ckpt, map_location="cpu")   # saved with torch.save(model, ...) by stage 1
model.eval()
enc = [tok(t, truncation=True, max_length=32) for t in make_texts(128, seed=99)]
dl = DataLoader(enc, batch_size=16, collate_fn=DataCollatorForLanguageModeling(tok, mlm=False))
tot = 0.0
for b in tqdm(dl, desc="eval"):
    with torch.no_grad():
        tot += model(**b).loss.item()
log.info(f"perplexity {math.exp(tot/len(dl)):.3f}")
