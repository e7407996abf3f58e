"""Shared helpers: a tiny GPT-2 style model and a word-level tokenizer built locally (no downloads)."""
import os, random
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast, GPT2Config, GPT2LMHeadModel

WORDS = ("the a model trains on data and every step the loss goes down while the gradient flows "
         "through layers of attention heads with small embeddings for tokens in short sentences "
         "we log metrics save checkpoints evaluate often resume later across ranks and nodes").split()

def make_tokenizer(pad=True, extra_vocab=0):
    vocab = {"<unk>": 0, "<eos>": 1}
    for w in WORDS:
        vocab.setdefault(w, len(vocab))
    for i in range(extra_vocab):
        vocab[f"w{i}"] = len(vocab)
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    kw = dict(tokenizer_object=tok, unk_token="<unk>", eos_token="<eos>", bos_token="<eos>")
    if pad:
        vocab_pad = None
    t = PreTrainedTokenizerFast(**kw)
    if pad:
        t.add_special_tokens({"pad_token": "<pad>"})
    return t

def make_model(vocab_size, n_embd=64, n_layer=2, n_head=4, n_positions=64, seed=0):
    import torch
    torch.manual_seed(seed)
    cfg = GPT2Config(vocab_size=vocab_size, n_embd=n_embd, n_layer=n_layer, n_head=n_head,
                     n_positions=n_positions, bos_token_id=1, eos_token_id=1)
    return GPT2LMHeadModel(cfg)

def make_texts(n=64, seed=0, min_len=4, max_len=14):
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(min_len, max_len))) for _ in range(n)]
