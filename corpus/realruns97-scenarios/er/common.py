"""Shared helpers: a tiny local word-level tokenizer, tiny GPT2 / classifier models and toy text data.
Nothing is downloaded; everything is built from configs."""
import os, random, json

ASSETS = os.environ.get("ER_ASSETS", "/work/rr97/er/assets")

WORDS = ("the a movie film plot actor acting was is great terrible boring fun loved hated "
         "really very not quite story ending music scene scenes good bad awful brilliant "
         "slow fast long short dialogue character characters script director camera and "
         "but so i we it this that watch again never would recommend to friends".split())


def make_texts(n, seed=0, min_len=4, max_len=18):
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        k = rng.randint(min_len, max_len)
        out.append(" ".join(rng.choice(WORDS) for _ in range(k)))
    return out


def sentiment(text):
    pos = sum(text.count(w) for w in ("great", "loved", "fun", "good", "brilliant"))
    neg = sum(text.count(w) for w in ("terrible", "boring", "hated", "bad", "awful"))
    return 1 if pos >= neg else 0


def build_tokenizer(path=None, with_pad=True, model_max_length=64):
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast
    vocab = {"[UNK]": 0, "<|endoftext|>": 1}
    for w in WORDS:
        vocab.setdefault(w, len(vocab))
    tk = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tk.pre_tokenizer = pre_tokenizers.Whitespace()
    kw = dict(tokenizer_object=tk, unk_token="[UNK]", bos_token="<|endoftext|>",
              eos_token="<|endoftext|>", model_max_length=model_max_length)
    if with_pad:
        kw["pad_token"] = "<|endoftext|>"
    tok = PreTrainedTokenizerFast(**kw)
    if path:
        tok.save_pretrained(path)
    return tok


def tiny_gpt2(vocab_size, n_positions=64, n_embd=64, n_layer=2, seed=0):
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel
    torch.manual_seed(seed)
    cfg = GPT2Config(vocab_size=vocab_size, n_positions=n_positions, n_embd=n_embd,
                     n_layer=n_layer, n_head=4, bos_token_id=1, eos_token_id=1)
    return GPT2LMHeadModel(cfg)


def tiny_classifier(vocab_size, num_labels=2, n_embd=64, seed=0):
    import torch
    from transformers import GPT2Config, GPT2ForSequenceClassification
    torch.manual_seed(seed)
    cfg = GPT2Config(vocab_size=vocab_size, n_positions=64, n_embd=n_embd, n_layer=2, n_head=4,
                     num_labels=num_labels, pad_token_id=1, bos_token_id=1, eos_token_id=1)
    return GPT2ForSequenceClassification(cfg)
