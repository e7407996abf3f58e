"""Shared helpers: tiny local corpus, tokenizer and GPT-2 model (no downloads)."""
import os
import random

WORDS = ("the model learns a token from data while ranks share gradients across the "
         "gloo backend and every batch is tokenized by a local tokenizer built on cpu "
         "training loss goes down slowly because the network is tiny and the corpus small").split()


def make_texts(n, seed=0, extra=None, extra_every=0):
    rnd = random.Random(seed)
    out = []
    for i in range(n):
        k = rnd.randint(5, 20)
        t = " ".join(rnd.choice(WORDS) for _ in range(k))
        if extra and extra_every and i % extra_every == 0:
            t = t + " " + extra
        out.append(t)
    return out


def build_tokenizer(vocab_size=120, pad=True, save_dir=None):
    from tokenizers import Tokenizer, models, trainers, pre_tokenizers
    from transformers import PreTrainedTokenizerFast
    tok = Tokenizer(models.BPE(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    specials = ["[UNK]", "[BOS]", "[EOS]"] + (["[PAD]"] if pad else [])
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=specials, show_progress=False)
    tok.train_from_iterator(make_texts(400, seed=123), trainer=trainer)
    kw = dict(tokenizer_object=tok, unk_token="[UNK]", bos_token="[BOS]", eos_token="[EOS]",
              model_max_length=512)
    if pad:
        kw["pad_token"] = "[PAD]"
    hf = PreTrainedTokenizerFast(**kw)
    if save_dir:
        hf.save_pretrained(save_dir)
    return hf


def build_model(vocab_size):
    from transformers import GPT2Config, GPT2LMHeadModel
    cfg = GPT2Config(vocab_size=vocab_size, n_layer=2, n_head=2, n_embd=64, n_positions=128)
    return GPT2LMHeadModel(cfg)


def env_rank():
    return int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))
