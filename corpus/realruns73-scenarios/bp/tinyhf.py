"""Shared helpers: tiny local tokenizer, tiny GPT-2 built from a config, synthetic corpus. No downloads."""
import os, random
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast, GPT2Config, GPT2LMHeadModel

WORDS = ("the a cat dog bird runs jumps sleeps on under over mat log tree red blue green small big "
         "quickly slowly and or but then today yesterday near far house river hill").split()

def make_tokenizer(with_pad=True):
    vocab = {"[UNK]": 0, "[BOS]": 1, "[EOS]": 2}
    if with_pad:
        vocab["[PAD]"] = len(vocab)
    for w in WORDS:
        vocab[w] = len(vocab)
    tk = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tk.pre_tokenizer = pre_tokenizers.Whitespace()
    kw = dict(tokenizer_object=tk, unk_token="[UNK]", bos_token="[BOS]", eos_token="[EOS]")
    if with_pad:
        kw["pad_token"] = "[PAD]"
    t = PreTrainedTokenizerFast(**kw)
    t.model_max_length = 32
    return t

def make_model(tok, n_layer=2, n_embd=64, vocab_size=None, n_positions=64):
    cfg = GPT2Config(vocab_size=vocab_size or len(tok), n_layer=n_layer, n_embd=n_embd, n_head=4,
                     n_positions=n_positions, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
                     pad_token_id=tok.pad_token_id)
    return GPT2LMHeadModel(cfg)

def sentences(n, seed=0, min_len=4, max_len=14):
    r = random.Random(seed)
    return [" ".join(r.choice(WORDS) for _ in range(r.randint(min_len, max_len))) for _ in range(n)]
