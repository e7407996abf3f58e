"""Local tiny tokenizer / model / dataset builders (no downloads)."""
import os, random
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast, GPT2Config, GPT2LMHeadModel

WORDS = ("the a model trains on tiny data and learns to predict next token loss goes down "
         "slowly while ranks share gradients over gloo with small batches every step of epoch").split()

def make_tokenizer(pad=True):
    vocab = {"<unk>": 0, "<eos>": 1}
    if pad:
        vocab["<pad>"] = 2
    for w in WORDS:
        vocab.setdefault(w, len(vocab))
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    kw = dict(tokenizer_object=tok, unk_token="<unk>", eos_token="<eos>")
    if pad:
        kw["pad_token"] = "<pad>"
    return PreTrainedTokenizerFast(**kw)

def make_model(tok, n_layer=2, n_embd=64, vocab_size=None):
    cfg = GPT2Config(n_layer=n_layer, n_embd=n_embd, n_head=2, n_positions=64,
                     vocab_size=vocab_size or len(tok), bos_token_id=tok.eos_token_id,
                     eos_token_id=tok.eos_token_id)
    return GPT2LMHeadModel(cfg)

def make_texts(n=64, seed=0, lo=4, hi=14):
    r = random.Random(seed)
    return [" ".join(r.choice(WORDS) for _ in range(r.randint(lo, hi))) for _ in range(n)]
