import argparse, os, sys, logging
from datetime import timedelta
os.environ.setdefault("HF_HUB_OFFLINE", "1")
import torch
from transformers import (GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast, Trainer, TrainingArguments,
                          TrainerCallback, DataCollatorWithPadding, DataCollatorForLanguageModeling)
from tokenizers import Tokenizer, models, pre_tokenizers
from datasets import Dataset

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--rank", type=int, default=1)
p.add_argument("--step", type=int, default=6)
p.add_argument("--out", default="/tmp/rr53d_out")
p.add_argument("--steps", type=int, default=12)
a = p.parse_args()
logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s", level=logging.INFO)
log = logging.getLogger("train")
RANK = int(os.environ.get("RANK", 0))

words = "the cat sat on a mat while dog ran far away into big green field and bird sang loud song".split()
vocab = {"[UNK]": 0}
for w in words: vocab.setdefault(w, len(vocab))
if a.fault == "vocab-oob":
    for i in range(200): vocab[f"tok{i}"] = len(vocab)
tk = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]")); tk.pre_tokenizer = pre_tokenizers.Whitespace()
tok = PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="[UNK]")
if a.fault != "no-pad":
    tok.add_special_tokens({"pad_token": "[PAD]"})
texts = []
import random; random.seed(0)
for i in range(96):
    n = random.randint(4, 12)
    ws = random.choices(words, k=n)
    if a.fault == "vocab-oob" and i == 37: ws += ["tok150", "tok199"]
    texts.append(" ".join(ws))
ds = Dataset.from_dict({"text": texts})
def tokf(b):
    if a.fault == "chat":
        msgs = [[{"role": "user", "content": t}] for t in b["text"]]
        return tok(tok.apply_chat_template(msgs, tokenize=False))
    if a.fault == "map-bug":
        return tok(b["txt"])
    return tok(b["text"])
ds = ds.map(tokf, batched=True, remove_columns=["text"])
ds = ds.map(lambda e: {"labels": e["input_ids"]}) if a.fault in ("no-pad",) else ds

nvocab = 64
cfg = GPT2Config(n_layer=2, n_embd=64, n_head=2, vocab_size=nvocab, n_positions=64, bos_token_id=1, eos_token_id=1,
                 pad_token_id=tok.pad_token_id or 0)
torch.manual_seed(0)
model = GPT2LMHeadModel(cfg)

if a.fault == "peft-target":
    from peft import LoraConfig, get_peft_model
    model = get_peft_model(model, LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM"))
if a.fault == "peft-ok":
    from peft import LoraConfig, get_peft_model
    model = get_peft_model(model, LoraConfig(r=4, lora_alpha=8, target_modules=["c_attn"], task_type="CAUSAL_LM"))
    model.print_trainable_parameters()

class FaultCB(TrainerCallback):
    def on_log(self, args, state, control, logs=None, **kw):
        if a.fault == "callback" and RANK == a.rank and state.global_step >= a.step:
            # bug: assumes eval_loss is present in every log dict
            ratio = logs["eval_loss"] / logs["loss"]
            print("ratio", ratio)
    def on_step_end(self, args, state, control, **kw):
        if a.fault == "sigkill" and RANK == a.rank and state.global_step == a.step:
            os.kill(os.getpid(), 9)

kw = dict(output_dir=a.out, per_device_train_batch_size=4, max_steps=a.steps, logging_steps=2, report_to=[],
          use_cpu=True, ddp_backend="gloo", save_strategy="no", disable_tqdm=False, learning_rate=5e-4,
          dataloader_num_workers=0, ddp_timeout=60)
if a.fault == "best-model":
    kw.update(load_best_model_at_end=True, eval_strategy="steps", eval_steps=5, save_strategy="epoch")
if a.fault == "fp16-cpu":
    kw.update(fp16=True)
if a.fault in ("save-ro", "resume-missing", "resume-trunc", "none"):
    kw.update(save_strategy="steps", save_steps=a.step)
if a.fault == "eval-metrics":
    kw.update(eval_strategy="steps", eval_steps=a.step, per_device_eval_batch_size=4)
args = TrainingArguments(**kw)

def compute_metrics(ev):
    preds, labels = ev
    # bug: preds are logits (B,T,V); compare shapes wrongly
    acc = (preds.argmax(-1) == labels).mean()
    return {"acc": float(acc), "ppl": float(ev.metrics["loss"])}

collator = DataCollatorWithPadding(tok) if a.fault == "no-pad" else DataCollatorForLanguageModeling(tok, mlm=False)
split = ds.train_test_split(test_size=16, seed=0)
tr = Trainer(model=model, args=args, train_dataset=split["train"], eval_dataset=split["test"],
             data_collator=collator, callbacks=[FaultCB()],
             compute_metrics=compute_metrics if a.fault == "eval-metrics" else None)
log.info("rank %d starting training, %d samples", RANK, len(split["train"]))
resume = None
if a.fault == "resume-missing":
    resume = os.path.join(a.out, "checkpoint-500")
if a.fault == "resume-trunc":
    resume = os.path.join(a.out, f"checkpoint-{a.step}")
tr.train(resume_from_checkpoint=resume)
log.info("rank %d done", RANK)
