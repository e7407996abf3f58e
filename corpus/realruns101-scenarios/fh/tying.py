"""Tiny GPT-2 built from config: add special tokens, resize embeddings (tied lm_head), fine-tune, save."""
import argparse, os, sys, json, logging
os.environ.setdefault("HF_HUB_OFFLINE", "1")
import torch, torch.nn.functional as F
from transformers import GPT2Config, GPT2LMHeadModel
from transformers.utils import logging as hf_logging

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none", choices=["none", "safetensors_raw", "load_old"])
p.add_argument("--out", default="/work/rr101/fh/work/tying")
p.add_argument("--steps", type=int, default=6)
a = p.parse_args()
logging.basicConfig(level=logging.INFO, format="%(asctime)s - %(levelname)s - %(name)s - %(message)s")
hf_logging.set_verbosity_info()
log = logging.getLogger("finetune")

torch.manual_seed(0)
cfg = GPT2Config(vocab_size=256, n_positions=64, n_embd=64, n_layer=2, n_head=2)
model = GPT2LMHeadModel(cfg)
os.makedirs(a.out, exist_ok=True)
base = os.path.join(a.out, "base.pt")
torch.save(model.state_dict(), base)
log.info("base model: vocab=%d params=%d tied=%s", cfg.vocab_size, model.num_parameters(),
         model.lm_head.weight.data_ptr() == model.transformer.wte.weight.data_ptr())

# add chat special tokens -> resize
new_vocab = 256 + 3
model.resize_token_embeddings(new_vocab)
log.info("resized embeddings to %d; lm_head %s tied=%s", new_vocab, tuple(model.lm_head.weight.shape),
         model.lm_head.weight.data_ptr() == model.transformer.wte.weight.data_ptr())
if a.fault == "load_old":
    # re-apply the "pretrained" weights after resizing (order of operations swapped in a refactor)
    model.load_state_dict(torch.load(base))

opt = torch.optim.AdamW(model.parameters(), lr=5e-4)
g = torch.Generator().manual_seed(1)
model.train()
for step in range(a.steps):
    ids = torch.randint(0, new_vocab, (4, 32), generator=g)
    out = model(input_ids=ids, labels=ids)
    out.loss.backward(); opt.step(); opt.zero_grad()
    log.info("step %d loss %.4f", step, out.loss.item())

if a.fault == "safetensors_raw":
    from safetensors.torch import save_file
    path = os.path.join(a.out, "model.safetensors")
    log.info("exporting weights to %s", path)
    save_file(model.state_dict(), path, metadata={"format": "pt"})
else:
    model.save_pretrained(os.path.join(a.out, "hf"))
    re = GPT2LMHeadModel.from_pretrained(os.path.join(a.out, "hf"))
    log.info("reloaded: vocab=%d", re.config.vocab_size)
log.info("done")
