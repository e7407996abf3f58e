"""accelerate fine-tuning loop: tiny GPT-2 classifier + hand-written adapter after the final layer norm.

--fault:
  none        healthy run
  fp32-island adapter computes its projection in an autocast-disabled region (numerical "stability")
  freeze-order backbone freezing loop runs after the adapter was inserted
"""
import argparse
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
from accelerate import Accelerator
from accelerate.logging import get_logger
from accelerate.utils import set_seed
from torch.utils.data import DataLoader
from tqdm.auto import tqdm
from transformers import DataCollatorWithPadding, GPT2Config, GPT2ForSequenceClassification

sys.path.insert(0, os.path.dirname(__file__))
from common_tiny import build_tokenizer, make_corpus  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--mixed-precision", default="no")
p.add_argument("--epochs", type=int, default=2)
args = p.parse_args()

import logging  # noqa: E402
logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.INFO)
logger = get_logger(__name__)


class Fp32Adapter(nn.Module):
    def __init__(self, ln, dim, r=8, fp32_island=False):
        super().__init__()
        self.ln = ln
        self.down, self.up = nn.Linear(dim, r), nn.Linear(r, dim)
        self.fp32_island = fp32_island
        nn.init.zeros_(self.up.weight)

    def forward(self, h):
        h = self.ln(h)
        z = F.gelu(self.down(h))
        if self.fp32_island:
            with torch.autocast("cpu", enabled=False):
                return h + self.up(z)
        return h + self.up(z)


def main():
    accelerator = Accelerator(mixed_precision=args.mixed_precision, cpu=True)
    logger.info(accelerator.state, main_process_only=False)
    set_seed(0)
    tok = build_tokenizer()
    cfg = GPT2Config(vocab_size=len(tok), n_positions=64, n_embd=64, n_layer=2, n_head=2, num_labels=2,
                     pad_token_id=tok.pad_token_id, bos_token_id=1, eos_token_id=1)
    model = GPT2ForSequenceClassification(cfg)
    model.transformer.ln_f = Fp32Adapter(model.transformer.ln_f, 64, fp32_island=args.fault == "fp32-island")
    if args.fault == "freeze-order":
        # freeze the pretrained backbone (moved below the adapter insertion in a refactor)
        for prm in model.parameters():
            prm.requires_grad = False

    texts, labels = make_corpus(256, seed=0)
    feats = [dict(tok(t, truncation=True, max_length=32), labels=y) for t, y in zip(texts, labels)]
    dl = DataLoader(feats, batch_size=16, shuffle=True, collate_fn=DataCollatorWithPadding(tok))
    opt = torch.optim.AdamW(model.parameters(), lr=5e-4)
    model, opt, dl = accelerator.prepare(model, opt, dl)

    total = args.epochs * len(dl)
    bar = tqdm(range(total), disable=not accelerator.is_local_main_process)
    step = 0
    for epoch in range(args.epochs):
        model.train()
        for batch in dl:
            with accelerator.autocast():
                out = model(**batch)
            accelerator.backward(out.loss)
            opt.step()
            opt.zero_grad()
            step += 1
            bar.update(1)
            if step % 5 == 0:
                loss = accelerator.gather(out.loss.detach()[None]).mean().item()
                logger.info(f"epoch {epoch} step {step} loss {loss:.4f}")
    accelerator.wait_for_everyone()
    accelerator.save_state("/work/rr79/cg/tmp/accel_state")
    logger.info("finished")


if __name__ == "__main__":
    main()
