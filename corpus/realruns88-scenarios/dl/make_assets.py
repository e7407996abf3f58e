# builds a tiny local word-level tokenizer and a tiny text-classification corpus (no downloads)
import json, os, random
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast
out = "/work/rr88/dl/assets"
random.seed(0)
words = ("the a movie film plot actor great bad boring fun loved hated story ending music scene "
         "slow fast funny sad good terrible brilliant dull long short script director").split()
vocab = {"[UNK]": 0, "[PAD]": 1, "[BOS]": 2, "[EOS]": 3}
for w in words: vocab[w] = len(vocab)
tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
tok.pre_tokenizer = pre_tokenizers.Whitespace()
# variant 1: with pad token
fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", bos_token="[BOS]", eos_token="[EOS]")
fast.save_pretrained(f"{out}/tok")
# variant 2: GPT-2 style, no pad token configured
fast2 = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", bos_token="[BOS]", eos_token="[EOS]")
fast2.save_pretrained(f"{out}/tok_nopad")
rows = []
for i in range(256):
    n = random.randint(4, 14)
    text = " ".join(random.choice(words) for _ in range(n))
    rows.append({"text": text, "label": random.randint(0, 2)})
with open(f"{out}/reviews.jsonl", "w") as f:
    for r in rows: f.write(json.dumps(r) + "\n")
print("ok", len(vocab))
