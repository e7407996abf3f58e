"""Tiny GPT-2 fine-tune on a locally built tokenizer and datasets.map; finishes normally
but emits the usual scary-looking warnings (truncation, gradient checkpointing + use_cache)."""
import os, logging, warnings
os.environ["HF_HUB_OFFLINE"] = "1"
import torch
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast, GPT2Config, GPT2LMHeadModel
from transformers.utils import logging as hf_logging
from datasets import Dataset
hf_logging.set_verbosity_warning()
logging.basicConfig(level=logging.INFO, format="%(asctime)s - %(levelname)s - %(name)s - %(message)s")
log = logging.getLogger("finetune")
words = "the a cat dog sat ran on over mat fox quick lazy brown jumps hello world".split()
vocab = {w: i for i, w in enumerate(["<unk>", "<eos>"] + words)}
tk = Tokenizer(models.WordLevel(vocab, unk_token="<unk>")); tk.pre_tokenizer = pre_tokenizers.Whitespace()
tok = PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="<unk>", eos_token="<eos>", pad_token="<eos>", model_max_length=32)
torch.manual_seed(0)
texts = [" ".join(words[(i * 3 + j) % len(words)] for j in range(10 + (i % 40))) for i in range(64)]
ds = Dataset.from_dict({"text": texts})
probe = tok(texts[-1])  # long sample: warns about model_max_length
ds = ds.map(lambda b: tok(b["text"], truncation=True, max_length=32, padding="max_length"), batched=True, remove_columns=["text"])
ds.set_format("torch")
cfg = GPT2Config(vocab_size=len(tok), n_layer=2, n_head=2, n_embd=64, n_positions=64)
model = GPT2LMHeadModel(cfg)
model.gradient_checkpointing_enable()
model.train()
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
dl = torch.utils.data.DataLoader(ds, batch_size=8, shuffle=True)
for step, batch in enumerate(dl):
    out = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], labels=batch["input_ids"], use_cache=True)
    out.loss.backward(); torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0); opt.step(); opt.zero_grad()
    log.info("step %d loss %.4f", step, out.loss.item())
model.save_pretrained("/tmp/eh_hf_out", safe_serialization=True)
log.info("saved to /tmp/eh_hf_out")
