"""Shared helpers: tiny word-level tokenizer, tiny GPT-2, synthetic text corpus (all local, offline)."""
import os, random
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast, GPT2Config, GPT2LMHeadModel

WORDS = ("the a model train loss step rank node gpu cpu data batch token layer head weight grad "
         "update learn rate warm cosine eval save load check point shard merge fuse split pad mask "
         "label text input output hidden state cache key value query attention block norm bias").split()

def make_tokenizer(extra_words=0, pad=True):
    vocab = {"[UNK]": 0, "[PAD]": 1, "[BOS]": 2, "[EOS]": 3}
    for w in WORDS + [f"w{i}" for i in range(extra_words)]:
        vocab.setdefault(w, len(vocab))
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    kw = dict(tokenizer_object=tok, unk_token="[UNK]", bos_token="[BOS]", eos_token="[EOS]")
    if pad:
        kw["pad_token"] = "[PAD]"
    return PreTrainedTokenizerFast(**kw)

def make_model(vocab_size, n_positions=64, **kw):
    cfg = GPT2Config(vocab_size=vocab_size, n_layer=2, n_embd=64, n_head=2, n_positions=n_positions,
                     bos_token_id=2, eos_token_id=3, pad_token_id=1, **kw)
    return GPT2LMHeadModel(cfg)

def corpus(n, seed=0, extra_words=0, minlen=6, maxlen=20):
    rnd = random.Random(seed)
    pool = WORDS + [f"w{i}" for i in range(extra_words)]
    return [" ".join(rnd.choice(pool) for _ in range(rnd.randint(minlen, maxlen))) for _ in range(n)]
