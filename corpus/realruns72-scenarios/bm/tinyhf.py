"""Tiny local HF objects (no downloads)."""
import os
os.environ.setdefault("HF_HUB_OFFLINE", "1")
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast, GPT2Config, GPT2LMHeadModel

WORDS = ("the a cat dog sat on mat ran fast slow red blue model train eval loss step batch token "
         "gpu cpu rank world size data label pred good bad yes no one two three four five").split()

def make_tokenizer(with_pad=True, extra_words=0):
    vocab = {"<unk>": 0, "<eos>": 1}
    if with_pad:
        vocab["<pad>"] = len(vocab)
    for w in WORDS + [f"w{i}" for i in range(extra_words)]:
        vocab[w] = len(vocab)
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    kw = dict(tokenizer_object=tok, unk_token="<unk>", eos_token="<eos>", bos_token="<eos>")
    if with_pad:
        kw["pad_token"] = "<pad>"
    return PreTrainedTokenizerFast(**kw)

def make_gpt2(vocab_size, n_positions=64, seed=0):
    import torch
    torch.manual_seed(seed)
    cfg = GPT2Config(vocab_size=vocab_size, n_positions=n_positions, n_layer=2, n_head=2, n_embd=64,
                     bos_token_id=1, eos_token_id=1)
    return GPT2LMHeadModel(cfg)

PROMPTS = ["the cat sat on", "a dog ran", "model train loss", "rank world size data", "red blue",
           "one two three four five", "the gpu", "batch token step eval"]
