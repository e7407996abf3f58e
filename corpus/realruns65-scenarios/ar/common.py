"""Shared helpers: tiny local tokenizer and toy text/label data (nothing downloaded)."""
import os, random
from tokenizers import Tokenizer, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

ASSETS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "assets")
WORDS = ("the model learns a small task from short reviews good bad great awful fine boring "
         "movie plot actor scene music long short happy sad love hate again never always").split()

def sentences(n, seed=0, min_len=4, max_len=14):
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(min_len, max_len))) for _ in range(n)]

def build_tokenizer(with_pad=True, name="tok"):
    path = os.path.join(ASSETS, name)
    if not os.path.exists(os.path.join(path, "tokenizer.json")):
        tok = Tokenizer(models.WordLevel(unk_token="[UNK]"))
        tok.pre_tokenizer = pre_tokenizers.Whitespace()
        tr = trainers.WordLevelTrainer(special_tokens=["[UNK]", "[PAD]", "[CLS]", "[SEP]", "[EOS]"])
        tok.train_from_iterator(sentences(500), tr)
        os.makedirs(path, exist_ok=True)
        fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", eos_token="[EOS]")
        fast.save_pretrained(path)
    fast = PreTrainedTokenizerFast.from_pretrained(path)
    if with_pad:
        fast.pad_token = "[PAD]"
    return fast
