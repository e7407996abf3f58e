"""Tiny local model/tokenizer/dataset builders (no downloads)."""
import os, random
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

WORDS = ("the a model train loss step learn rate token batch data cat dog runs fast slow "
         "gpu cpu rank node hello world good bad yes no answer question user assistant").split()


def make_tokenizer(path=None, pad=False, chat_template=False):
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast
    tok = Tokenizer(models.WordLevel(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tr = trainers.WordLevelTrainer(special_tokens=["<unk>", "<|endoftext|>"])
    tok.train_from_iterator([" ".join(WORDS) + " . , ? !"] * 3, tr)
    t = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>",
                                eos_token="<|endoftext|>", bos_token="<|endoftext|>",
                                model_max_length=64)
    if pad:
        t.pad_token = t.eos_token
    if chat_template:
        t.chat_template = ("{% for m in messages %}{{ m['role'] }} : {{ m['content'] }} . "
                           "{% endfor %}{% if add_generation_prompt %}assistant : {% endif %}")
    if path:
        t.save_pretrained(path)
    return t


def make_model(tok, kind="lm", n_layer=2, n_embd=64, n_head=4, **kw):
    from transformers import GPT2Config, GPT2LMHeadModel, GPT2ForSequenceClassification
    cfg = GPT2Config(vocab_size=len(tok), n_positions=64, n_layer=n_layer, n_embd=n_embd,
                     n_head=n_head, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
                     pad_token_id=tok.pad_token_id, **kw)
    if kind == "cls":
        cfg.num_labels = 2
        return GPT2ForSequenceClassification(cfg)
    return GPT2LMHeadModel(cfg)


def sentences(n, seed=0, lo=4, hi=12):
    r = random.Random(seed)
    return [" ".join(r.choice(WORDS) for _ in range(r.randint(lo, hi))) for _ in range(n)]
