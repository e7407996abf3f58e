"""Tiny GPT-2 trained with the HF Trainer from a config (offline). Healthy run with noisy warnings."""
import os, sys, argparse, torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments, TrainerCallback
p = argparse.ArgumentParser(); p.add_argument("--mode", default="gc"); p.add_argument("--out", default="/work/rr53/e/tmp/hf")
args = p.parse_args()
class DS(torch.utils.data.Dataset):
    def __init__(s, n=256): g = torch.Generator().manual_seed(0); s.x = torch.randint(0, 128, (n, 32), generator=g)
    def __len__(s): return len(s.x)
    def __getitem__(s, i): return {"input_ids": s.x[i], "labels": s.x[i]}
class MetricsFile(TrainerCallback):
    """writes metrics to a side file; failures are logged and ignored"""
    def on_log(self, a, state, control, logs=None, **kw):
        try:
            with open(os.path.join(args.out, "metrics", "train.jsonl"), "a") as f:
                f.write(str(logs) + "\n")
        except OSError as e:
            import traceback; traceback.print_exc()
            print(f"[metrics-callback] could not write metrics at step {state.global_step}: {e}; continuing", flush=True)
cfg = GPT2Config(n_layer=2, n_embd=64, n_head=2, vocab_size=128, n_positions=64)
model = GPT2LMHeadModel(cfg)
ta = TrainingArguments(output_dir=args.out, max_steps=16, per_device_train_batch_size=8, logging_steps=4,
                       report_to="none", use_cpu=True, gradient_checkpointing=(args.mode == "gc"),
                       save_strategy="no", dataloader_num_workers=0, disable_tqdm=False)
tr = Trainer(model=model, args=ta, train_dataset=DS(), eval_dataset=DS(32),
             callbacks=[MetricsFile()] if args.mode == "cb" else [])
tr.train()
print(tr.evaluate())
