"""HF Trainer on a tiny GPT-2 built from config. --fault selects a misconfiguration / bug; --fault-rank the rank."""
import argparse, os, sys, json, math
sys.path.insert(0, os.path.dirname(__file__))
import tinyhf
import torch
from datasets import Dataset
from transformers import (Trainer, TrainingArguments, DataCollatorForLanguageModeling, DataCollatorWithPadding,
                          TrainerCallback, set_seed)

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--out", default="/work/rr73/bp/runs/trainer")
p.add_argument("--max-steps", type=int, default=30)
p.add_argument("--resume", default=None)
p.add_argument("--freeze-embeddings", action="store_true")
p.add_argument("--save-steps", type=int, default=10)
a = p.parse_args()
rank = int(os.environ.get("RANK", "0"))
world = int(os.environ.get("WORLD_SIZE", "1"))
set_seed(0)

tok = tinyhf.make_tokenizer(with_pad=(a.fault != "nopad"))
model = tinyhf.make_model(tok)
if a.fault == "gencfg":
    # sampling defaults for the qualitative samples we generate at each eval
    model.generation_config.temperature = 0.7
    model.generation_config.top_p = 0.9
    model.generation_config.max_new_tokens = 16
if a.freeze_embeddings:
    for n, prm in model.named_parameters():
        if "wte" in n or "wpe" in n:
            prm.requires_grad_(False)

texts = tinyhf.sentences(256, seed=1)
ds = Dataset.from_dict({"text": texts})
def tok_fn(b):
    return tok(b["text"], truncation=True, max_length=24)
ds = ds.map(tok_fn, batched=True, remove_columns=["text"])
if a.fault == "badshard" and rank == a.fault_rank:
    # this rank's pre-tokenized shard was produced by a newer tokenizer revision with extra merges/ids
    shard_path = os.path.join(os.path.dirname(a.out), f"shard-{rank}.jsonl")
    os.makedirs(os.path.dirname(shard_path), exist_ok=True)
    with open(shard_path, "w") as f:
        for i, t in enumerate(texts):
            ids = tok(t)["input_ids"]
            if i % 7 == 3:
                ids = ids[:3] + [len(tok) + 12] + ids[3:]
            f.write(json.dumps({"input_ids": ids, "attention_mask": [1] * len(ids)}) + "\n")
    ds = Dataset.from_json(shard_path)
if a.fault == "colnames":
    ds = ds.rename_columns({"input_ids": "ids", "attention_mask": "mask"})
eval_ds = ds.select(range(32))

collator = DataCollatorForLanguageModeling(tok, mlm=False)
if a.fault == "noloss":
    collator = DataCollatorWithPadding(tok)

kw = dict(output_dir=a.out, per_device_train_batch_size=8, per_device_eval_batch_size=8, max_steps=a.max_steps,
          learning_rate=5e-4, logging_steps=5, save_steps=a.save_steps, save_strategy="steps", report_to=[],
          eval_strategy="steps", eval_steps=10, use_cpu=True, dataloader_num_workers=0,
          gradient_accumulation_steps=2, warmup_steps=2, seed=0, disable_tqdm=False)
if a.fault == "bestmodel":
    kw.update(load_best_model_at_end=True, eval_strategy="epoch", metric_for_best_model="eval_loss")
if a.fault == "oldarg":
    del kw["eval_strategy"]; kw["evaluation_strategy"] = "steps"
args = TrainingArguments(**kw)

class RankLocalMetricsWriter(TrainerCallback):
    """Writes per-rank eval summaries (only attached on the rank that owns the metrics sink)."""
    def on_evaluate(self, args, state, control, metrics=None, **kw):
        line = f"step={state.global_step} ppl={math.exp(metrics['eval_loss']):.2f} acc={metrics['eval_accuracy']:.3f}"
        print(f"[rank{rank}] metrics sink: {line}", flush=True)

callbacks = []
if a.fault == "rankcallback" and rank == a.fault_rank:
    callbacks.append(RankLocalMetricsWriter())

trainer = Trainer(model=model, args=args, train_dataset=ds, eval_dataset=eval_ds, data_collator=collator,
                  processing_class=tok, callbacks=callbacks)
trainer.train(resume_from_checkpoint=a.resume)
final = trainer.evaluate()
if rank == 0:
    print("final metrics:", final, flush=True)
if torch.distributed.is_initialized():
    torch.distributed.destroy_process_group()
