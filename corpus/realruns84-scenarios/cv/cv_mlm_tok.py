"""Tiny MLM pretraining with a locally built WordLevel tokenizer (producer cv)."""
import argparse, os, warnings
import torch
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast, BertConfig, BertForMaskedLM, DataCollatorForLanguageModeling
p = argparse.ArgumentParser(); p.add_argument("--fault", default="none"); args = p.parse_args()
words = "the a model trains on tokens and loss goes down slowly over many steps".split()
vocab = {w: i for i, w in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]"] + words + (["[MASK]"] if args.fault == "none" else []))}
tk = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]")); tk.pre_tokenizer = pre_tokenizers.Whitespace()
specials = dict(pad_token="[PAD]", unk_token="[UNK]", cls_token="[CLS]", sep_token="[SEP]")
if args.fault == "none": specials["mask_token"] = "[MASK]"
tok = PreTrainedTokenizerFast(tokenizer_object=tk, **specials)
print(f"tokenizer: vocab={len(tok)} specials={tok.all_special_tokens}", flush=True)
cfg = BertConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64)
model = BertForMaskedLM(cfg)
print(f"model params: {sum(p.numel() for p in model.parameters())}", flush=True)
texts = [" ".join(words[i:] + words[:i]) for i in range(len(words))]
enc = [tok(t, truncation=True, max_length=12) for t in texts]
coll = DataCollatorForLanguageModeling(tok, mlm=True, mlm_probability=0.15)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
for step in range(6):
    batch = coll(enc[step % 3 * 4:(step % 3 + 1) * 4])
    out = model(**batch)
    out.loss.backward(); opt.step(); opt.zero_grad()
    print(f"step {step} mlm_loss {out.loss.item():.4f}", flush=True)
print("done", flush=True)
