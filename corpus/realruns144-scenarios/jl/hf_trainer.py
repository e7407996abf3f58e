"""Tiny GPT-2 / classifier trained with the HF Trainer; --fault selects a user mistake.

Launch single-process (python) or with torchrun (gloo DDP, Trainer picks up the env)."""
import argparse, os, sys, logging, shutil
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from jlcommon import make_tokenizer, make_gpt2, sentences, WORDS

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--bad-rank", type=int, default=1)
p.add_argument("--bad-step", type=int, default=6)
p.add_argument("--steps", type=int, default=20)
p.add_argument("--out", default="out/trainer")
p.add_argument("--tslog", action="store_true", help="python logging with timestamps")
p.add_argument("--workers", type=int, default=0)
p.add_argument("--resume", default=None)
p.add_argument("--embd", type=int, default=64)
p.add_argument("--heads", type=int, default=2)
p.add_argument("--freeze-emb", action="store_true")
p.add_argument("--pid-dir", default=None, help="write this rank's pid here (for external job control)")
a = p.parse_args()

rank = int(os.environ.get("RANK", "0"))
if a.tslog:
    logging.basicConfig(level=logging.INFO,
                        format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s")
log = logging.getLogger("train")
if a.pid_dir:
    os.makedirs(a.pid_dir, exist_ok=True)
    open(os.path.join(a.pid_dir, f"rank{rank}.pid"), "w").write(str(os.getpid()))

import torch
from torch import nn
import datasets
from transformers import (Trainer, TrainingArguments, DataCollatorForLanguageModeling,
                          GPT2Config, GPT2ForSequenceClassification, TrainerCallback)
import transformers
if a.tslog:
    transformers.utils.logging.set_verbosity_info()
    transformers.utils.logging.disable_default_handler()
    transformers.utils.logging.enable_propagation()

extra = ("zebra", "kite", "lantern", "orbit") if a.fault == "new-words" else ()
tok = make_tokenizer(pad=(a.fault != "no-pad"), extra_words=extra)

texts = sentences(256, seed=1)
if a.fault == "new-words":
    # a later data refresh brought new vocabulary; tokenizer was rebuilt, the model was not resized
    texts = [t + (" zebra kite lantern" if i % 9 == 5 else "") for i, t in enumerate(texts)]

class CaptureSteps(TrainerCallback):
    def on_log(self, args, state, control, logs=None, **kw):
        pass

if a.fault in ("label-float",):
    # sentiment-ish classification: labels read from a CSV column as floats
    labels = [float(i % 3) for i in range(len(texts))]
    enc = tok(texts, truncation=True, max_length=32)
    ds = datasets.Dataset.from_dict({"input_ids": enc["input_ids"], "attention_mask": enc["attention_mask"], "labels": labels})
    cfg = GPT2Config(vocab_size=len(tok), n_embd=a.embd, n_layer=2, n_head=a.heads, n_positions=64,
                     num_labels=3, pad_token_id=tok.pad_token_id)
    torch.manual_seed(0)
    model = GPT2ForSequenceClassification(cfg)
    from transformers import DataCollatorWithPadding
    collator = DataCollatorWithPadding(tok)
elif a.fault == "no-columns":
    # forgot to tokenize: dataset still has only the raw text column
    ds = datasets.Dataset.from_dict({"text": texts})
    model = make_gpt2(vocab_size=len(tok), n_embd=a.embd, n_head=a.heads)
    collator = DataCollatorForLanguageModeling(tok, mlm=False)
else:
    ds = datasets.Dataset.from_dict({"text": texts})
    ds = ds.map(lambda b: tok(b["text"], truncation=True, max_length=32), batched=True, remove_columns=["text"])
    if a.fault == "tied-module":
        class TinyLM(nn.Module):
            """Hand-written LM with the output projection tied to the embedding."""
            def __init__(self, v, d):
                super().__init__()
                self.emb = nn.Embedding(v, d)
                self.rnn = nn.GRU(d, d, batch_first=True)
                self.head = nn.Linear(d, v, bias=False)
                self.head.weight = self.emb.weight  # weight tying
            def forward(self, input_ids, attention_mask=None, labels=None):
                h, _ = self.rnn(self.emb(input_ids))
                logits = self.head(h)
                loss = None
                if labels is not None:
                    loss = nn.functional.cross_entropy(logits[:, :-1].reshape(-1, logits.size(-1)),
                                                       labels[:, 1:].reshape(-1), ignore_index=-100)
                return {"loss": loss, "logits": logits}
        torch.manual_seed(0)
        model = TinyLM(len(tok), a.embd)
    elif a.fault == "unused-head":
        class LMWithAux(nn.Module):
            def __init__(self):
                super().__init__()
                self.lm = make_gpt2(vocab_size=len(tok), n_embd=a.embd, n_head=a.heads)
                self.aux_head = nn.Linear(a.embd, 2)   # auxiliary classifier, only used when aux labels present
            def forward(self, input_ids, attention_mask=None, labels=None, aux_labels=None):
                out = self.lm(input_ids=input_ids, attention_mask=attention_mask, labels=labels,
                              output_hidden_states=aux_labels is not None)
                loss = out.loss
                if aux_labels is not None:
                    loss = loss + nn.functional.cross_entropy(self.aux_head(out.hidden_states[-1][:, -1]), aux_labels)
                return {"loss": loss, "logits": out.logits}
        model = LMWithAux()
    else:
        vs = 49 if a.fault == "new-words" else len(tok)
        model = make_gpt2(vocab_size=vs, n_embd=a.embd, n_head=a.heads)
        if a.freeze_emb:
            for n_, p_ in model.named_parameters():
                if "wte" in n_ or "wpe" in n_:
                    p_.requires_grad_(False)
    collator = DataCollatorForLanguageModeling(tok, mlm=False)

if a.fault == "bad-record":
    class Records(torch.utils.data.Dataset):
        """Reads pre-tokenized records; record 37 came from an older export without input_ids."""
        def __init__(self, base):
            self.rows = [dict(r) for r in base]
            self.rows[37] = {"ids": self.rows[37]["input_ids"], "attention_mask": self.rows[37]["attention_mask"]}
        def __len__(self):
            return len(self.rows)
        def __getitem__(self, i):
            r = self.rows[i]
            return {"input_ids": r["input_ids"], "attention_mask": r["attention_mask"]}
    ds = Records(ds)

kw = dict(output_dir=a.out, per_device_train_batch_size=8, max_steps=a.steps, learning_rate=5e-4,
          logging_steps=2, save_steps=10, report_to="none", use_cpu=True, ddp_timeout=60,
          dataloader_num_workers=a.workers, seed=0, save_strategy="steps")
if a.fault == "best-model":
    kw.update(eval_strategy="steps", eval_steps=5, save_strategy="epoch", load_best_model_at_end=True,
              metric_for_best_model="eval_loss")
if a.fault == "unused-head":
    kw.update(ddp_find_unused_parameters=False)
if a.fault == "bad-record":
    kw.update(shuffle_dataset=False) if False else None
args = TrainingArguments(**kw)

trainer = Trainer(model=model, args=args, train_dataset=ds,
                  eval_dataset=ds.select(range(32)) if a.fault == "best-model" else None,
                  data_collator=collator, processing_class=tok)
log.info("starting training: %d steps, world_size=%s", a.steps, os.environ.get("WORLD_SIZE", "1"))
trainer.train(resume_from_checkpoint=a.resume)
trainer.save_model(os.path.join(a.out, "final"))
log.info("done")
print(f"[rank{rank}] training finished", flush=True)
