"""Shared helpers: tiny local tokenizer, tiny GPT-2, tiny text dataset (no downloads)."""
import os, random
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast, GPT2Config, GPT2LMHeadModel

WORDS = ("the a cat dog sat on mat ran far near house tree big small red blue green quick slow "
         "jumps over lazy fox bird sings song river flows sea boat sails wind blows hill sun rises "
         "moon sets star shines night day rain falls cloud grey user assistant hello answer question").split()

def make_tokenizer(pad=True, extra_special=()):
    vocab = {"[UNK]": 0, "[EOS]": 1}
    if pad:
        vocab["[PAD]"] = len(vocab)
    for w in WORDS:
        vocab[w] = len(vocab)
    tk = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tk.pre_tokenizer = pre_tokenizers.Whitespace()
    kw = dict(tokenizer_object=tk, unk_token="[UNK]", eos_token="[EOS]")
    if pad:
        kw["pad_token"] = "[PAD]"
    t = PreTrainedTokenizerFast(**kw)
    if extra_special:
        t.add_special_tokens({"additional_special_tokens": list(extra_special)})
    t.model_max_length = 64
    return t

def make_model(vocab_size=None, n_layer=2, n_embd=64, n_positions=64, tie=True, seed=0, **kw):
    import torch
    torch.manual_seed(seed)
    cfg = GPT2Config(vocab_size=vocab_size or (len(WORDS) + 3), n_layer=n_layer, n_embd=n_embd, n_head=4,
                     n_positions=n_positions, tie_word_embeddings=tie, bos_token_id=1, eos_token_id=1, pad_token_id=None, **kw)
    return GPT2LMHeadModel(cfg)

def sentences(n=64, seed=0, lo=4, hi=14):
    r = random.Random(seed)
    return [" ".join(r.choice(WORDS[:-5]) for _ in range(r.randint(lo, hi))) for _ in range(n)]
