"""Tiny local GPT-2 + word-level tokenizer + toy instruction dataset (no downloads)."""
import random
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast, GPT2Config, GPT2LMHeadModel

WORDS = ("the a an cat dog bird fish runs jumps sits eats sleeps on under over near big small red blue green "
         "fast slow happy sad house tree river hill car road sun moon star sky water food loves sees finds "
         "question answer user assistant please tell me about what is why how when where who").split()

def build_tokenizer(with_pad=True, extra_tokens=0):
    vocab = {"[UNK]": 0, "<|endoftext|>": 1}
    for w in WORDS:
        vocab.setdefault(w, len(vocab))
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    kw = dict(tokenizer_object=tok, unk_token="[UNK]", eos_token="<|endoftext|>", bos_token="<|endoftext|>")
    hf = PreTrainedTokenizerFast(**kw)
    if with_pad:
        hf.pad_token = hf.eos_token
    if extra_tokens:
        hf.add_special_tokens({"additional_special_tokens": [f"<extra_{i}>" for i in range(extra_tokens)]})
    return hf

def base_vocab_size():
    return len(build_tokenizer(with_pad=False))

def build_model(vocab_size=None, n_layer=2, n_embd=64):
    cfg = GPT2Config(vocab_size=vocab_size or base_vocab_size(), n_positions=64, n_layer=n_layer,
                     n_embd=n_embd, n_head=4, bos_token_id=1, eos_token_id=1)
    return GPT2LMHeadModel(cfg)

def make_texts(n, seed=0):
    r = random.Random(seed)
    out = []
    for _ in range(n):
        k = r.randint(4, 14)
        out.append(" ".join(r.choice(WORDS) for _ in range(k)))
    return out

def make_chat(n, seed=0):
    r = random.Random(seed)
    rows = []
    for t in make_texts(n, seed):
        rows.append({"messages": [{"role": "user", "content": "tell me about " + t.split()[0]},
                                  {"role": "assistant", "content": t}]})
    return rows
