"""HF Trainer scenarios: tiny GPT2 / tiny classifier built from configs, local word-level tokenizer.
Usage: python hf_trainer.py --fault NAME [--rank R] [--step S] --out DIR
Works single-process (python) or under torchrun (Trainer picks up LOCAL_RANK/WORLD_SIZE)."""
import argparse, os, sys, warnings, logging, math
os.environ.setdefault("HF_HUB_OFFLINE", "1")
import numpy as np
import torch
import torch.nn as nn
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import (GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast, Trainer, TrainingArguments,
                          TrainerCallback, DataCollatorWithPadding, DataCollatorForLanguageModeling,
                          default_data_collator, EarlyStoppingCallback)
from transformers.modeling_outputs import SequenceClassifierOutput
import datasets

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--rank", type=int, default=1)
p.add_argument("--step", type=int, default=3)
p.add_argument("--out", default="/work/rr57/n/runs/tmp")
p.add_argument("--resume", default=None)
p.add_argument("--max-steps", type=int, default=8)
a = p.parse_args()
RANK = int(os.environ.get("RANK", "0"))

WORDS = "the a cat dog sat ran on under mat log tree fast slow red blue big small and then it".split()


def make_tokenizer(pad=True):
    vocab = {"[UNK]": 0, "[BOS]": 1, "[EOS]": 2}
    if pad:
        vocab["[PAD]"] = len(vocab)
    for w in WORDS:
        vocab[w] = len(vocab)
    # extra rare words appended at the end of the vocab
    for w in ["zebra", "quokka", "axolotl"]:
        vocab[w] = len(vocab)
    tk = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tk.pre_tokenizer = pre_tokenizers.Whitespace()
    kw = dict(tokenizer_object=tk, unk_token="[UNK]", bos_token="[BOS]", eos_token="[EOS]")
    if pad:
        kw["pad_token"] = "[PAD]"
    return PreTrainedTokenizerFast(**kw)


def sentences(n, seed=0, rare=False):
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        L = int(rng.integers(4, 12))
        ws = list(rng.choice(WORDS, L))
        if rare and i % 5 == 3:
            ws[1] = "axolotl"
        out.append(" ".join(ws))
    return out


class TinyClassifier(nn.Module):
    """custom classifier (not a PreTrainedModel) with optionally tied in/out embeddings"""
    def __init__(self, vocab=40, dim=32, tie=False, unused=False):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.enc = nn.Linear(dim, dim)
        self.head = nn.Linear(dim, 2)
        self.decoder = nn.Linear(dim, vocab, bias=False)
        if tie:
            self.decoder.weight = self.emb.weight
        self.aux = nn.Linear(dim, dim) if unused else None

    def forward(self, input_ids=None, attention_mask=None, labels=None):
        h = torch.tanh(self.enc(self.emb(input_ids))).mean(1)
        logits = self.head(h)
        loss = nn.functional.cross_entropy(logits, labels) if labels is not None else None
        return SequenceClassifierOutput(loss=loss, logits=logits)


def cls_dataset(tok, n=64, seed=0):
    s = sentences(n, seed)
    enc = tok(s, truncation=True, max_length=16)
    labels = [int("cat" in x) for x in s]
    return datasets.Dataset.from_dict({"input_ids": enc["input_ids"], "attention_mask": enc["attention_mask"], "labels": labels})


class StepLogger(TrainerCallback):
    def on_log(self, args, state, control, logs=None, **kw):
        if state.is_world_process_zero:
            print(f"[rank{RANK}] step {state.global_step} logs {logs}", flush=True)


class FlakyNotifier(TrainerCallback):
    """posts a summary to a (non-existent) local webhook; failures are caught and logged"""
    def on_log(self, args, state, control, logs=None, **kw):
        import urllib.request, traceback
        try:
            urllib.request.urlopen("http://127.0.0.1:9/hook", data=b"{}", timeout=0.5)
        except Exception:
            logging.getLogger("notifier").warning("webhook failed, continuing:\n%s", traceback.format_exc())


class GradNormTracker(TrainerCallback):
    def __init__(self):
        self.hist = {}
    def on_log(self, args, state, control, logs=None, **kw):
        if logs and "grad_norm" in logs:
            self.hist[state.global_step] = logs["grad_norm"]
        if a.fault == "callback_bug" and RANK == a.rank and state.global_step >= a.step:
            # bug: previous step key assumed present, but logging_steps=2 means odd steps are missing
            prev = self.hist[state.global_step - 1]
            print("grad norm ratio", logs["grad_norm"] / prev)


def acc_metrics(ev):
    logits, labels = ev
    if a.fault == "metric_bug":
        preds = logits.argmax(-1)
        # bug: labels come back as np arrays; treat as list of dicts
        return {"accuracy": float(np.mean([p == l["label"] for p, l in zip(preds, labels)]))}
    preds = logits.argmax(-1)
    return {"accuracy": float((preds == labels).mean())}


def main():
    logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s", level=logging.INFO)
    torch.manual_seed(0)
    f = a.fault
    common = dict(output_dir=a.out, per_device_train_batch_size=4, per_device_eval_batch_size=4,
                  logging_steps=2, report_to=[], max_steps=a.max_steps, save_strategy="no",
                  eval_strategy="no", use_cpu=True, disable_tqdm=False, seed=0)
    cbs = [StepLogger()]
    compute_metrics = None

    if f in ("lm", "vocab_oob", "no_pad", "lm_resume", "resume_mismatch", "resume_missing", "resume_corrupt",
             "noisy_ok", "iterable_no_maxsteps", "empty_filter"):
        tok = make_tokenizer(pad=(f != "no_pad"))
        vocab = len(tok)
        if f == "vocab_oob":
            vocab = len(tok) - 3  # config written before the 3 rare words were added to the tokenizer
        if f == "resume_mismatch":
            cfg = GPT2Config(n_layer=2, n_embd=96, n_head=2, vocab_size=vocab, n_positions=32)
        else:
            cfg = GPT2Config(n_layer=2, n_embd=64, n_head=2, vocab_size=vocab, n_positions=32)
        model = GPT2LMHeadModel(cfg)
        if tok.pad_token_id is not None:
            model.config.pad_token_id = tok.pad_token_id
        texts = sentences(80, seed=1, rare=(f == "vocab_oob"))
        ds = datasets.Dataset.from_dict({"text": texts})
        ds = ds.map(lambda b: tok(b["text"], truncation=True, max_length=24), batched=True, remove_columns=["text"])
        if f == "empty_filter":
            # keep only examples with >= 16 tokens ("long enough for packing")
            ds = ds.filter(lambda ex: len(ex["input_ids"]) >= 16)
        if f == "no_pad":
            coll = DataCollatorWithPadding(tok)
            ds = ds.map(lambda b: {"labels": b["input_ids"]}, batched=True)
        else:
            coll = DataCollatorForLanguageModeling(tok, mlm=False)
        if f == "iterable_no_maxsteps":
            ds = ds.to_iterable_dataset()
            common["max_steps"] = -1
            common["num_train_epochs"] = 1
        if f in ("lm_resume", "resume_mismatch", "resume_missing", "resume_corrupt"):
            common.update(save_strategy="steps", save_steps=4)
        if f == "noisy_ok":
            warnings.simplefilter("always")
            cbs.append(FlakyNotifier())
            common.update(eval_strategy="steps", eval_steps=4)
        args = TrainingArguments(**common)
        evds = ds.select(range(16)) if f == "noisy_ok" else None
        tr = Trainer(model=model, args=args, train_dataset=ds, eval_dataset=evds, data_collator=coll,
                     processing_class=tok, callbacks=cbs)
        if f == "noisy_ok":
            # legacy utilities still used in this codebase
            for i in range(6):
                warnings.warn("`torch.cuda.amp.autocast(args...)` is deprecated. Please use `torch.amp.autocast('cuda', args...)` instead.", FutureWarning)
        tr.train(resume_from_checkpoint=a.resume)
        print(f"[rank{RANK}] training done, global_step={tr.state.global_step}", flush=True)
        return

    if f in ("chat_sft", "json_data"):
        tok = make_tokenizer()
        model = GPT2LMHeadModel(GPT2Config(n_layer=2, n_embd=64, n_head=2, vocab_size=len(tok), n_positions=64))
        if f == "json_data":
            # training conversations exported by the labelling tool to a local jsonl file
            ds = datasets.load_dataset("json", data_files={"train": a.resume}, split="train")
        else:
            s_ = sentences(40, seed=2)
            ds = datasets.Dataset.from_dict({"messages": [[{"role": "user", "content": x}, {"role": "assistant", "content": y}]
                                                           for x, y in zip(s_[::2], s_[1::2])]})
        def fmt(ex):
            ids = tok.apply_chat_template(ex["messages"], tokenize=True, truncation=True, max_length=48)
            return {"input_ids": ids}
        ds = ds.map(fmt, remove_columns=["messages"])
        args = TrainingArguments(**common)
        tr = Trainer(model=model, args=args, train_dataset=ds, data_collator=DataCollatorForLanguageModeling(tok, mlm=False),
                     processing_class=tok, callbacks=cbs)
        tr.train()
        return

    # classification family
    tok = make_tokenizer()
    ds = cls_dataset(tok, 64, 0)
    evds = cls_dataset(tok, 16, 5)
    coll = DataCollatorWithPadding(tok)
    model = TinyClassifier(vocab=len(tok), tie=(f == "tied_save"), unused=(f in ("ddp_unused", "aux_save")))
    if f in ("aux_save", "aux_resume"):
        common.update(save_strategy="steps", save_steps=4)
    compute_metrics = acc_metrics
    if f == "best_mismatch":
        common.update(eval_strategy="steps", eval_steps=2, save_strategy="epoch", load_best_model_at_end=True)
    if f == "earlystop_nobest":
        common.update(eval_strategy="steps", eval_steps=2, save_strategy="steps", save_steps=2,
                      metric_for_best_model="eval_accuracy")
        cbs.append(EarlyStoppingCallback(early_stopping_patience=2))
    if f == "metric_name":
        common.update(eval_strategy="steps", eval_steps=2, save_strategy="steps", save_steps=4,
                      load_best_model_at_end=True, metric_for_best_model="f1")
    if f == "metric_bug":
        common.update(eval_strategy="steps", eval_steps=4)
    if f == "tied_save":
        common.update(save_strategy="steps", save_steps=4)
    if f == "default_collator":
        coll = default_data_collator
    if f == "callback_bug":
        cbs.append(GradNormTracker())
    if f == "ddp_unused":
        common.update(ddp_find_unused_parameters=False)
    if f == "earlystop_ok":
        common.update(eval_strategy="steps", eval_steps=2, save_strategy="steps", save_steps=2,
                      load_best_model_at_end=True, metric_for_best_model="eval_loss", max_steps=40)
        cbs.append(EarlyStoppingCallback(early_stopping_patience=2, early_stopping_threshold=0.5))
    args = TrainingArguments(**common)
    tr = Trainer(model=model, args=args, train_dataset=ds, eval_dataset=evds, data_collator=coll,
                 compute_metrics=compute_metrics, callbacks=cbs)
    tr.train(resume_from_checkpoint=a.resume)
    print(f"[rank{RANK}] training done, global_step={tr.state.global_step}", flush=True)


if __name__ == "__main__":
    main()
