"""Tiny HF Trainer runs (GPT-2 sized toy) that fail late: eval, checkpoint save, callbacks, hub, resume."""
import argparse, os, sys, json, logging, random
import numpy as np
import torch
import torch.nn as nn
from datasets import Dataset
from transformers import (GPT2Config, GPT2ForSequenceClassification, Trainer, TrainingArguments,
                          TrainerCallback, EarlyStoppingCallback, default_data_collator, PreTrainedModel)
import transformers

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--out", default="/work/rr92/ec/runs/hf_out")
p.add_argument("--steps", type=int, default=120)
p.add_argument("--save-steps", type=int, default=40)
p.add_argument("--eval-steps", type=int, default=40)
p.add_argument("--n-train", type=int, default=512)
p.add_argument("--n-eval", type=int, default=96)
p.add_argument("--num-labels", type=int, default=2)
p.add_argument("--resume", default=None)
p.add_argument("--freeze-embeddings", action="store_true")
p.add_argument("--log-info", action="store_true")
p.add_argument("--tqdm", action="store_true")
p.add_argument("--save-total-limit", type=int, default=None)
p.add_argument("--metrics-log", default=None)
args = p.parse_args()

rank = int(os.environ.get("RANK", "0"))
world = int(os.environ.get("WORLD_SIZE", "1"))
if args.log_info:
    logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", datefmt="%m/%d/%Y %H:%M:%S", level=logging.INFO)
    transformers.utils.logging.set_verbosity_info()
torch.manual_seed(0); random.seed(0); np.random.seed(0)

VOCAB, SEQ = 512, 24
def make_split(n, seed, variable=False, bad_labels=False):
    rng = random.Random(seed)
    ids, labels, masks = [], [], []
    for i in range(n):
        L = rng.randint(8, SEQ) if variable else SEQ
        toks = [rng.randrange(4, VOCAB) for _ in range(L)]
        lab = int(sum(toks) % 2)
        if bad_labels and i >= n - 16 and i % 3 == 0:
            lab = lab + 2          # stale label mapping from the old 4-class export
        ids.append(toks); masks.append([1] * L); labels.append(lab)
    return Dataset.from_dict({"input_ids": ids, "attention_mask": masks, "labels": labels,
                              "text_id": [f"doc-{seed}-{i}" for i in range(n)]})

train_ds = make_split(args.n_train, 1)
eval_ds = make_split(args.n_eval, 2, variable=(args.fault == "eval_unpadded"),
                     bad_labels=(args.fault == "eval_bad_labels"))

cfg = GPT2Config(vocab_size=VOCAB, n_positions=64, n_layer=2, n_head=2, n_embd=64, num_labels=args.num_labels,
                 pad_token_id=0, output_hidden_states=(args.fault == "metrics_bug"))

class TiedLM(nn.Module):
    """Home-grown classifier with a tied input/output embedding (weight tying saves params)."""
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, 64)
        self.enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(64, 2, 128, batch_first=True), 2)
        self.lm_head = nn.Linear(64, VOCAB, bias=False)
        self.lm_head.weight = self.embed.weight
        self.cls = nn.Linear(64, 2)
    def forward(self, input_ids, attention_mask=None, labels=None):
        h = self.enc(self.embed(input_ids))
        logits = self.cls(h.mean(1))
        aux = self.lm_head(h[:, :-1]).log_softmax(-1).gather(-1, input_ids[:, 1:, None]).mean()
        loss = None
        if labels is not None:
            loss = nn.functional.cross_entropy(logits, labels) - 0.01 * aux
        return {"loss": loss, "logits": logits}

model = TiedLM() if args.fault == "tied_safetensors" else GPT2ForSequenceClassification(cfg)
if args.freeze_embeddings:
    for n_, p_ in model.named_parameters():
        if "wte" in n_ or "wpe" in n_:
            p_.requires_grad_(False)

def compute_metrics(eval_pred):
    logits, labels = eval_pred.predictions, eval_pred.label_ids
    preds = logits.argmax(-1)
    acc = float((preds == labels).mean())
    tp = float(((preds == 1) & (labels == 1)).sum()); fp = float(((preds == 1) & (labels == 0)).sum())
    fn = float(((preds == 0) & (labels == 1)).sum())
    f1 = 2 * tp / max(1.0, 2 * tp + fp + fn)
    return {"accuracy": acc, "f1": f1}

class JsonlMetricsCallback(TrainerCallback):
    """Appends every log dict to a per-rank jsonl file for the dashboard sync job."""
    def __init__(self, path):
        self.path = path
    def on_evaluate(self, a, state, control, metrics=None, **kw):
        path = self.path.format(rank=rank)
        with open(path, "a") as f:
            f.write(json.dumps({"step": state.global_step, **(metrics or {})}) + "\n")

class ThroughputCallback(TrainerCallback):
    def on_evaluate(self, a, state, control, metrics=None, **kw):
        if state.is_world_process_zero:
            print(f"[rank{rank}] eval @ step {state.global_step}: " + ", ".join(f"{k}={v:.4f}" if isinstance(v, float) else f"{k}={v}" for k, v in metrics.items()), flush=True)

class ExportOnSaveCallback(TrainerCallback):
    """After each checkpoint, publish the weights to the serving export dir atomically (write tmp, then rename)."""
    def __init__(self, export_dir):
        self.export_dir = export_dir
    def on_save(self, a, state, control, **kw):
        if not state.is_world_process_zero:
            return
        import tempfile, shutil
        ckpt = os.path.join(a.output_dir, f"checkpoint-{state.global_step}", "model.safetensors")
        fd, tmp = tempfile.mkstemp(suffix=".safetensors")
        os.close(fd)
        shutil.copyfile(ckpt, tmp)
        os.rename(tmp, os.path.join(self.export_dir, "model.safetensors"))
        print(f"[export] step {state.global_step} -> {self.export_dir}", flush=True)

callbacks = [ThroughputCallback()]
if os.environ.get("EXPORT_DIR"):
    callbacks.append(ExportOnSaveCallback(os.environ["EXPORT_DIR"]))
if args.metrics_log:
    callbacks.append(JsonlMetricsCallback(args.metrics_log))

extra = {}
if args.fault == "early_stop_metric":
    extra = dict(load_best_model_at_end=True, metric_for_best_model="eval_f1", greater_is_better=True)
    callbacks.append(EarlyStoppingCallback(early_stopping_patience=3))

targs = TrainingArguments(
    output_dir=args.out, max_steps=args.steps, per_device_train_batch_size=4,
    per_device_eval_batch_size=(8 if args.fault == "eval_unpadded" else 16),
    learning_rate=3e-4, warmup_steps=10, weight_decay=0.01,
    logging_steps=2, eval_strategy="steps", eval_steps=args.eval_steps,
    save_strategy="steps", save_steps=args.save_steps, save_total_limit=args.save_total_limit,
    use_cpu=True, ddp_backend="gloo" if world > 1 else None, ddp_timeout=60, report_to="none",
    disable_tqdm=not args.tqdm, dataloader_num_workers=0, seed=42, remove_unused_columns=True,
    eval_accumulation_steps=(2 if args.fault == "eval_oom" else None),
    **extra)

trainer = Trainer(model=model, args=targs, train_dataset=train_ds, eval_dataset=eval_ds,
                  data_collator=default_data_collator,
                  compute_metrics=None if args.fault == "early_stop_metric" else compute_metrics,
                  callbacks=callbacks)

if args.fault == "eval_oom" and rank == args.fault_rank:
    import resource
    # this rank shares its cgroup with the tokenizer service: cap address space like the container does
    soft = int(os.environ.get("RR_AS_LIMIT_MB", "2600")) * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (soft, soft))

result = trainer.train(resume_from_checkpoint=args.resume)
print(result, flush=True)
metrics = trainer.evaluate()
if trainer.is_world_process_zero():
    print("final eval:", metrics, flush=True)
trainer.save_model(os.path.join(args.out, "final"))
if args.fault == "push_offline":
    trainer.push_to_hub(commit_message="end of training", model_name="toy-gpt2-cls")
if trainer.is_world_process_zero():
    print("done.", flush=True)
