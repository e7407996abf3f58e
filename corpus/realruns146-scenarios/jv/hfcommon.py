"""Shared helpers: a tiny local word-level tokenizer, tiny GPT2 / classifier models, toy text data.
Nothing is downloaded (HF_HUB_OFFLINE=1)."""
import os
import random

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

WORDS = ("the a model loss step batch token train eval gradient rank node data learn rate cat dog bird fish "
         "red green blue fast slow big small good bad happy sad run jump read write open close up down left right").split()


def corpus(n=256, seed=0, minlen=4, maxlen=20):
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(minlen, maxlen))) for _ in range(n)]


def make_tokenizer(pad=True, extra_special=None):
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast
    vocab = {"[UNK]": 0, "[BOS]": 1, "[EOS]": 2}
    if pad:
        vocab["[PAD]"] = len(vocab)
    for w in WORDS:
        vocab[w] = len(vocab)
    tk = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tk.pre_tokenizer = pre_tokenizers.Whitespace()
    kw = dict(tokenizer_object=tk, unk_token="[UNK]", bos_token="[BOS]", eos_token="[EOS]")
    if pad:
        kw["pad_token"] = "[PAD]"
    return PreTrainedTokenizerFast(**kw)


def tiny_gpt2(vocab_size, **kw):
    from transformers import GPT2Config, GPT2LMHeadModel
    cfg = GPT2Config(vocab_size=vocab_size, n_layer=2, n_embd=kw.pop("n_embd", 64), n_head=2, n_positions=64, **kw)
    return GPT2LMHeadModel(cfg)


def tiny_cls(vocab_size, num_labels=3, **kw):
    from transformers import BertConfig, BertForSequenceClassification
    cfg = BertConfig(vocab_size=vocab_size, hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=128, max_position_embeddings=64, num_labels=num_labels, **kw)
    return BertForSequenceClassification(cfg)


def lm_dataset(tok, n=256, seed=0, maxlen=24, pad=True):
    from datasets import Dataset
    ds = Dataset.from_dict({"text": corpus(n, seed)})

    def enc(b):
        out = tok(b["text"], truncation=True, max_length=maxlen, padding="max_length" if pad else False)
        out["labels"] = [list(x) for x in out["input_ids"]]
        return out
    return ds.map(enc, batched=True, remove_columns=["text"])


def cls_dataset(tok, n=256, seed=0, num_labels=3, maxlen=24):
    from datasets import Dataset
    rng = random.Random(seed)
    texts = corpus(n, seed)
    labels = [rng.randrange(num_labels) for _ in texts]
    ds = Dataset.from_dict({"text": texts, "label": labels})
    return ds.map(lambda b: tok(b["text"], truncation=True, max_length=maxlen, padding="max_length"), batched=True)
