"""Tiny HF Trainer fine-tuning with selectable configuration mistakes (realrun set 62 ah)."""
import argparse, logging, os, sys, random
import torch, torch.nn as nn
from datasets import Dataset
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import (GPT2Config, GPT2LMHeadModel, GPT2ForSequenceClassification,
                          PreTrainedTokenizerFast, Trainer, TrainingArguments,
                          DataCollatorForLanguageModeling, DataCollatorWithPadding, default_data_collator)

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--out", default="/tmp/rr62ah_out")
p.add_argument("--steps", type=int, default=30)
p.add_argument("--resume", default=None)
p.add_argument("--n-embd", type=int, default=64)
p.add_argument("--freeze-emb", action="store_true")
p.add_argument("--unused-head", action="store_true")
p.add_argument("--kill-rank", type=int, default=-1)
p.add_argument("--kill-step", type=int, default=12)
p.add_argument("--save-steps", type=int, default=10)
args = p.parse_args()
logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.INFO)
log = logging.getLogger("finetune")
rank = int(os.environ.get("RANK", "0"))
torch.manual_seed(0); random.seed(0)

WORDS = "the a cat dog sat on mat ran fast slow big small red blue model data loss step train eval".split()
vocab = {"[UNK]": 0, "<|endoftext|>": 1}
for w in WORDS: vocab[w] = len(vocab)
tk = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
tk.pre_tokenizer = pre_tokenizers.Whitespace()
tok = PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="[UNK]", eos_token="<|endoftext|>", bos_token="<|endoftext|>")
if args.fault not in ("no_pad_token", "seqcls_no_pad"):
    tok.pad_token = tok.eos_token
if args.fault == "added_tokens_no_resize":
    tok.add_tokens(["<ctx>", "</ctx>", "<sys>", "</sys>"])

def sent(n):
    return " ".join(random.choice(WORDS) for _ in range(n))
texts = [sent(random.randint(4, 12)) for _ in range(64)]
if args.fault == "added_tokens_no_resize":
    texts = ["<ctx> " + t + " </ctx>" for t in texts]
ds = Dataset.from_dict({"text": texts, "label": [random.randint(0, 1) for _ in texts]})

cfg = GPT2Config(vocab_size=len(vocab), n_layer=2, n_embd=args.n_embd, n_head=2, n_positions=64,
                 bos_token_id=1, eos_token_id=1)

if args.fault in ("seqcls_no_pad", "seqcls_label_oob"):
    cfg.num_labels = 2
    model = GPT2ForSequenceClassification(cfg)
    if args.fault == "seqcls_label_oob":
        cfg.pad_token_id = tok.pad_token_id; model.config.pad_token_id = tok.pad_token_id
        ds = ds.map(lambda e, i: {"label": (i % 5)}, with_indices=True)  # 5 sentiment buckets, num_labels left at 2
    ds = ds.map(lambda e: tok(e["text"], truncation=True, max_length=32), remove_columns=["text"])
    ds = ds.rename_column("label", "labels")
    collator = DataCollatorWithPadding(tok) if args.fault == "seqcls_label_oob" else default_data_collator
else:
    model = GPT2LMHeadModel(cfg)
    if args.fault == "target_column":
        # labels stored under a custom column name; Trainer drops it (remove_unused_columns=True)
        ds = ds.map(lambda e: {**tok(e["text"], padding="max_length", max_length=16, truncation=True)}, remove_columns=["text", "label"])
        ds = ds.map(lambda e: {"target_ids": e["input_ids"]})
        collator = default_data_collator
    elif args.fault == "no_pad_token":
        ds = ds.map(lambda e: tok(e["text"], truncation=True, max_length=32), remove_columns=["text", "label"])
        collator = DataCollatorWithPadding(tok)
    elif args.fault == "keep_text_column":
        ds = ds.map(lambda e: tok(e["text"], truncation=True, max_length=32), remove_columns=["label"])
        collator = DataCollatorForLanguageModeling(tok, mlm=False)
    else:
        ds = ds.map(lambda e: tok(e["text"], truncation=True, max_length=32), remove_columns=["text", "label"])
        collator = DataCollatorForLanguageModeling(tok, mlm=(args.fault == "mlm_collator"))
    if args.fault == "empty_after_filter":
        ds = ds.filter(lambda e: len(e["input_ids"]) >= 64)  # "drop short samples" with max_length 32
    if args.freeze_emb:
        for n_, p_ in model.named_parameters():
            if "wte" in n_ or "wpe" in n_:
                p_.requires_grad_(False)
    if args.unused_head:
        # value head kept from an RLHF experiment; never used in forward()
        model.value_head = nn.Linear(args.n_embd, 1)

if args.fault == "custom_tied":
    class TinyLM(nn.Module):
        def __init__(self, V, D):
            super().__init__()
            self.emb = nn.Embedding(V, D); self.rnn = nn.GRU(D, D, batch_first=True)
            self.head = nn.Linear(D, V, bias=False); self.head.weight = self.emb.weight  # weight tying
        def forward(self, input_ids, attention_mask=None, labels=None):
            h, _ = self.rnn(self.emb(input_ids)); logits = self.head(h)
            loss = None
            if labels is not None:
                loss = nn.functional.cross_entropy(logits[:, :-1].reshape(-1, logits.size(-1)), labels[:, 1:].reshape(-1), ignore_index=-100)
            return {"loss": loss, "logits": logits}
    model = TinyLM(len(vocab), args.n_embd)
split = ds.train_test_split(test_size=0.25, seed=0)
train_ds, eval_ds = split["train"], split["test"]

ta = dict(output_dir=args.out, per_device_train_batch_size=4, per_device_eval_batch_size=4,
          max_steps=args.steps, learning_rate=5e-4, logging_steps=5, save_steps=args.save_steps, save_strategy="steps",
          report_to="none", use_cpu=True, dataloader_num_workers=0, disable_tqdm=False, seed=0)
f = args.fault
if f == "best_model_strategy_mismatch":
    ta.update(eval_strategy="epoch", save_strategy="steps", load_best_model_at_end=True, metric_for_best_model="eval_loss")
if f == "evaluation_strategy_renamed":
    ta.update(evaluation_strategy="steps", eval_steps=10)
if f == "gc_use_cache":
    ta.update(gradient_checkpointing=True, eval_strategy="steps", eval_steps=10)
if f == "gc_reentrant_ddp":
    ta.update(gradient_checkpointing=True, gradient_checkpointing_kwargs={"use_reentrant": True}, ddp_find_unused_parameters=True)
if f == "ddp_find_unused_noop":
    ta.update(ddp_find_unused_parameters=True, eval_strategy="steps", eval_steps=15)
if f == "ddp_no_find_unused":
    ta.update(ddp_find_unused_parameters=False)
if f == "eval_no_dataset":
    ta.update(eval_strategy="steps", eval_steps=10)
if f == "metric_best_missing":
    ta.update(eval_strategy="steps", eval_steps=10, load_best_model_at_end=True, metric_for_best_model="accuracy")
if f == "lr_too_high":
    ta.update(learning_rate=5e3, max_grad_norm=0.0, logging_steps=2)
if f == "iterable_no_max_steps":
    ta.update(max_steps=-1, num_train_epochs=2)
if f == "worker_error":
    ta.update(dataloader_num_workers=2)
if f == "epochs_healthy":
    ta.update(max_steps=-1, num_train_epochs=3, eval_strategy="epoch", save_strategy="epoch", load_best_model_at_end=True, logging_steps=4)
if f == "interrupt":
    ta.update(max_steps=100000, logging_steps=20, save_steps=100000)
targs = TrainingArguments(**ta)

if f == "gc_use_cache":
    model.config.use_cache = True
if f == "iterable_no_max_steps":
    train_ds = train_ds.to_iterable_dataset()
if f == "worker_error":
    class Wrapped(torch.utils.data.Dataset):
        def __init__(self, d): self.d = d
        def __len__(self): return len(self.d)
        def __getitem__(self, i):
            ex = self.d[i]
            return {"input_ids": ex["input_ids"], "attention_mask": ex["attention_mask"], "length": ex["n_tokens"]}
    train_ds = Wrapped(train_ds)

from transformers import TrainerCallback
import signal
class KillCB(TrainerCallback):
    def on_step_end(self, a, state, control, **kw):
        if rank == args.kill_rank and state.global_step == args.kill_step:
            # simulate the kernel OOM killer hitting this worker
            os.kill(os.getpid(), signal.SIGKILL)
log.info("rank %d: train=%d eval=%d params=%d", rank, len(train_ds) if hasattr(train_ds, "__len__") else -1,
         len(eval_ds), sum(p.numel() for p in model.parameters()))
trainer = Trainer(model=model, args=targs,
                  train_dataset=None if f == "no_train_dataset" else train_ds,
                  eval_dataset=None if f == "eval_no_dataset" else eval_ds,
                  data_collator=collator, processing_class=tok,
                  callbacks=[KillCB()] if args.kill_rank >= 0 else None)
trainer.train(resume_from_checkpoint=args.resume)
log.info("rank %d: training done, global_step=%d", rank, trainer.state.global_step)
if f not in ("interrupt",):
    trainer.save_model(os.path.join(args.out, "final"))
    log.info("saved final model to %s", os.path.join(args.out, "final"))
