# Shared helpers: tiny local tokenizer, tiny local datasets, tiny models (no downloads).
import os, random
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

WORDS = ("the a an cat dog bird sat ran flew on over under mat log tree red blue green big small "
         "happy sad fast slow quick lazy fox jumps sleeps eats food water sun moon day night good bad "
         "movie film great terrible boring fun plot actor scene music loved hated it was is very not").split()


def build_tokenizer(pad=True, mask=False, extra_tokens=0, model_max_length=512):
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast
    vocab = {"[UNK]": 0, "[BOS]": 1, "[EOS]": 2}
    if pad:
        vocab["[PAD]"] = len(vocab)
    if mask:
        vocab["[MASK]"] = len(vocab)
    for w in WORDS:
        vocab[w] = len(vocab)
    for i in range(extra_tokens):
        vocab[f"<extra_{i}>"] = len(vocab)
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    kw = dict(tokenizer_object=tok, unk_token="[UNK]", bos_token="[BOS]", eos_token="[EOS]",
              model_max_length=model_max_length)
    if pad:
        kw["pad_token"] = "[PAD]"
    if mask:
        kw["mask_token"] = "[MASK]"
    return PreTrainedTokenizerFast(**kw)


def make_texts(n, seed=0, min_len=4, max_len=14):
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        k = rng.randint(min_len, max_len)
        out.append(" ".join(rng.choice(WORDS) for _ in range(k)))
    return out


def make_cls_dataset(n=64, seed=0, num_classes=2, **kw):
    from datasets import Dataset
    texts = make_texts(n, seed, **kw)
    labels = [("great" in t or "good" in t or "loved" in t) * 1 % num_classes for t in texts]
    return Dataset.from_dict({"text": texts, "label": labels})


def tiny_gpt2(vocab_size, n_positions=64):
    from transformers import GPT2Config, GPT2LMHeadModel
    cfg = GPT2Config(vocab_size=vocab_size, n_positions=n_positions, n_embd=64, n_layer=2, n_head=2,
                     bos_token_id=1, eos_token_id=2)
    return GPT2LMHeadModel(cfg)


def tiny_bert_cls(vocab_size, num_labels=2, max_position_embeddings=64, hidden=64, layers=2):
    from transformers import BertConfig, BertForSequenceClassification
    cfg = BertConfig(vocab_size=vocab_size, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=2,
                     intermediate_size=2 * hidden, max_position_embeddings=max_position_embeddings,
                     num_labels=num_labels, pad_token_id=3)
    return BertForSequenceClassification(cfg)
