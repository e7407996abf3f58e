"""datasets / tokenizer / peft / trl scenarios with the HF Trainer (or trl SFTTrainer) on tiny local models.
--fault selects the problem."""
import argparse
import json
import logging
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hfcommon as C  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--nsteps", type=int, default=30)
p.add_argument("--outdir", default="out_dp")
p.add_argument("--workers", type=int, default=0)
p.add_argument("--numproc", type=int, default=1)
p.add_argument("--datafile", default=None)
p.add_argument("--pylog", action="store_true")
a = p.parse_args()
if a.pylog:
    logging.basicConfig(format="%(asctime)s %(levelname)s [%(name)s] %(message)s", level=logging.INFO)
log = logging.getLogger("job")

import torch  # noqa: E402
from datasets import Dataset, load_dataset  # noqa: E402
from transformers import Trainer, TrainingArguments, DataCollatorWithPadding, DataCollatorForLanguageModeling, set_seed  # noqa: E402

rank = int(os.environ.get("RANK", "0"))
world = int(os.environ.get("WORLD_SIZE", "1"))
set_seed(0)
f = a.fault
targs = dict(output_dir=a.outdir, per_device_train_batch_size=8, max_steps=a.nsteps, logging_steps=5,
             save_strategy="no", report_to="none", use_cpu=True, learning_rate=5e-4,
             dataloader_num_workers=a.workers, ddp_timeout=60)
tok = C.make_tokenizer(pad=(f not in ("no-pad-token",)))
model = C.tiny_gpt2(len(tok), bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id)
collator = None

if f == "map-overflow":
    # chunk long documents into 16-token windows with return_overflowing_tokens, keep the original columns
    raw = Dataset.from_dict({"text": C.corpus(400, maxlen=60, minlen=20), "id": list(range(400))})

    def chunk(batch):
        return tok(batch["text"], truncation=True, max_length=16, return_overflowing_tokens=True)
    ds = raw.map(chunk, batched=True, num_proc=a.numproc)
elif f == "json-bad":
    # jsonl shards exported by another job; one line was cut when the exporter was killed
    ds = load_dataset("json", data_files=a.datafile, split="train")
    ds = ds.map(lambda b: tok(b["text"], truncation=True, max_length=24), batched=True, remove_columns=ds.column_names)
elif f == "no-pad-token":
    # tokenizer without a pad token, dynamic padding collator
    ds = Dataset.from_dict({"text": C.corpus(256)}).map(
        lambda b: tok(b["text"], truncation=True, max_length=24), batched=True, remove_columns=["text"])
    collator = DataCollatorForLanguageModeling(tok, mlm=False)
elif f == "transform-worker":
    # tokenize on the fly in the DataLoader workers; the transform reads a column the raw data does not have
    raw = Dataset.from_dict({"sentence": C.corpus(256), "idx": list(range(256))})

    def on_the_fly(batch):
        enc = tok(batch["text"], truncation=True, max_length=24, padding="max_length")
        enc["labels"] = enc["input_ids"]
        return enc
    raw.set_transform(on_the_fly)
    ds = raw
    targs["remove_unused_columns"] = False
elif f in ("lora-target", "lora-healthy"):
    from peft import LoraConfig, get_peft_model
    # Llama-style names on a GPT2 model ("q_proj","v_proj") vs GPT2's fused "c_attn"
    targets = ["q_proj", "v_proj"] if f == "lora-target" else ["c_attn", "c_proj"]
    cfg = LoraConfig(r=4, lora_alpha=8, lora_dropout=0.05, target_modules=targets, task_type="CAUSAL_LM")
    model = get_peft_model(model, cfg)
    model.print_trainable_parameters()
    ds = C.lm_dataset(tok, n=256)
    if f == "lora-healthy":
        targs.update(gradient_checkpointing=True, max_grad_norm=0.3)
elif f in ("sft-chat", "sft-healthy"):
    from trl import SFTConfig, SFTTrainer
    conv = [{"messages": [{"role": "user", "content": q}, {"role": "assistant", "content": r}]}
            for q, r in zip(C.corpus(128, seed=3, maxlen=8), C.corpus(128, seed=4, maxlen=8))]
    ds = Dataset.from_list(conv)
    if f == "sft-healthy":
        tok.chat_template = ("{% for m in messages %}{{ m['role'] }} {{ m['content'] }} {{ eos_token }}{% endfor %}"
                             "{% if add_generation_prompt %}assistant{% endif %}")
    sargs = SFTConfig(output_dir=a.outdir, per_device_train_batch_size=8, max_steps=a.nsteps, logging_steps=5,
                      save_strategy="no", report_to="none", use_cpu=True, learning_rate=5e-4, max_length=48,
                      dataloader_num_workers=a.workers)
    trainer = SFTTrainer(model=model, args=sargs, train_dataset=ds, processing_class=tok)
    print(f"[rank{rank}] {trainer.train().metrics}", flush=True)
    sys.exit(0)
else:
    ds = C.lm_dataset(tok, n=256)

if a.pylog:
    log.info("rank %d: train dataset %s", rank, ds)
trainer = Trainer(model=model, args=TrainingArguments(**targs), train_dataset=ds, data_collator=collator)
out = trainer.train()
print(f"[rank{rank}] {out.metrics}", flush=True)
trainer.save_model(os.path.join(a.outdir, "final"))
