"""Tiny local model / tokenizer / dataset builders (no downloads)."""
import os, random
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast, GPT2Config, GPT2LMHeadModel

WORDS = ("the cat dog sat on mat ran fast slow red blue green big small model loss step train data "
         "good bad happy sad yes no one two three four five six seven eight nine ten").split()

def make_tokenizer(pad=True, chat_template=None):
    vocab = {"[UNK]": 0, "<|endoftext|>": 1}
    if pad:
        vocab["[PAD]"] = len(vocab)
    for w in WORDS:
        vocab[w] = len(vocab)
    tk = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tk.pre_tokenizer = pre_tokenizers.Whitespace()
    kw = dict(tokenizer_object=tk, unk_token="[UNK]", eos_token="<|endoftext|>", bos_token="<|endoftext|>")
    if pad:
        kw["pad_token"] = "[PAD]"
    t = PreTrainedTokenizerFast(**kw)
    t.model_max_length = 64
    if chat_template:
        t.chat_template = chat_template
    return t

def make_model(tok, n_layer=2, n_embd=64, **kw):
    cfg = GPT2Config(vocab_size=len(tok), n_positions=kw.pop("n_positions", 64), n_layer=n_layer, n_embd=n_embd,
                     n_head=kw.pop("n_head", 4), bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
                     pad_token_id=tok.pad_token_id, **kw)
    return GPT2LMHeadModel(cfg)

def sentences(n, seed=0, lo=4, hi=12):
    r = random.Random(seed)
    return [" ".join(r.choice(WORDS) for _ in range(r.randint(lo, hi))) for _ in range(n)]
