"""Tiny local tokenizer and toy sentiment corpus (no downloads)."""
import random

from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast

POS = ["good", "great", "fine", "lovely", "nice", "superb", "happy", "bright"]
NEG = ["bad", "awful", "poor", "sad", "ugly", "terrible", "dull", "grim"]
FILL = ["the", "movie", "was", "really", "quite", "a", "plot", "actor", "film", "very",
        "and", "but", "story", "scene", "music", "ending", "i", "thought", "it", "so"]


def build_tokenizer(with_pad=True, with_eos=True):
    words = ["[UNK]", "<|endoftext|>"] + (["[PAD]"] if with_pad else []) + POS + NEG + FILL
    vocab = {w: i for i, w in enumerate(words)}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    kw = dict(tokenizer_object=tok, unk_token="[UNK]")
    if with_eos:
        kw.update(eos_token="<|endoftext|>", bos_token="<|endoftext|>")
    if with_pad:
        kw["pad_token"] = "[PAD]"
    return PreTrainedTokenizerFast(**kw)


def make_corpus(n=256, seed=0, min_len=4, max_len=14):
    rng = random.Random(seed)
    texts, labels = [], []
    for _ in range(n):
        y = rng.randint(0, 1)
        k = rng.randint(min_len, max_len)
        words = [rng.choice(FILL) for _ in range(k)]
        words.insert(rng.randint(0, k), rng.choice(POS if y else NEG))
        texts.append(" ".join(words))
        labels.append(y)
    return texts, labels
