# tiny local tokenizer + corpus helpers (no downloads)
import json, os, random
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast

WORDS = ("the model data train loss step rank worker batch token shard cache map fork "
         "stream eval metric score grad layer head embed seq pad mask label text line").split()

def build_tokenizer(with_pad=True):
    vocab = {"[UNK]": 0, "[PAD]": 1, "[EOS]": 2}
    for w in WORDS:
        vocab[w] = len(vocab)
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    kw = dict(tokenizer_object=tok, unk_token="[UNK]", eos_token="[EOS]")
    if with_pad:
        kw["pad_token"] = "[PAD]"
    return PreTrainedTokenizerFast(**kw)

def make_shards(d, n_shards=2, n=64, seed=0):
    os.makedirs(d, exist_ok=True)
    rng = random.Random(seed)
    for s in range(n_shards):
        with open(os.path.join(d, f"shard_{s}.jsonl"), "w") as f:
            for i in range(n):
                k = rng.randint(4, 14)
                f.write(json.dumps({"id": s * n + i, "text": " ".join(rng.choice(WORDS) for _ in range(k))}) + "\n")
