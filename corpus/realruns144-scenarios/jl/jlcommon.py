"""Tiny local models/tokenizers/data for the HF-stack scenarios (no downloads)."""
import os, random
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast, GPT2Config, GPT2LMHeadModel

WORDS = ("the a cat dog sat on mat ran to park big small red blue green house tree "
         "bird flew over under near far quick slow jumped fox lazy sun moon star "
         "one two three four five six seven eight nine ten plus minus equals is what").split()

def make_tokenizer(pad=True, extra_words=()):
    specials = ["<unk>", "<eos>"] + (["<pad>"] if pad else [])
    vocab = {w: i for i, w in enumerate(specials + WORDS + list(extra_words))}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    kw = dict(tokenizer_object=tok, unk_token="<unk>", eos_token="<eos>", bos_token="<eos>")
    if pad:
        kw["pad_token"] = "<pad>"
    return PreTrainedTokenizerFast(**kw)

def make_gpt2(vocab_size=64, n_embd=64, n_layer=2, n_head=2, n_positions=64, seed=0, **kw):
    import torch
    torch.manual_seed(seed)
    cfg = GPT2Config(vocab_size=vocab_size, n_embd=n_embd, n_layer=n_layer, n_head=n_head,
                     n_positions=n_positions, bos_token_id=1, eos_token_id=1, pad_token_id=2, **kw)
    return GPT2LMHeadModel(cfg)

def sentences(n, seed=0, lo=4, hi=12):
    r = random.Random(seed)
    return [" ".join(r.choice(WORDS) for _ in range(r.randint(lo, hi))) for _ in range(n)]
