"""Tiny causal-LM fine-tune with the HF stack, configured like the GPU recipe it was copied from.

Everything is local: a 2-layer GPT-2 built from a config, a character-level vocabulary, a synthetic corpus.
"""
import argparse, os, sys, json, time, logging
os.environ.setdefault("HF_HUB_OFFLINE", "1")
p = argparse.ArgumentParser()
p.add_argument("--attn", default="eager")
p.add_argument("--quant", default="none", choices=["none", "8bit", "4bit"])
p.add_argument("--require", default=None, help="e.g. transformers>=5.30.0")
p.add_argument("--min-version", default=None)
p.add_argument("--deepspeed", default=None)
p.add_argument("--optim", default="adamw_torch")
p.add_argument("--bf16", action="store_true")
p.add_argument("--fp16", action="store_true")
p.add_argument("--use-cpu", action="store_true")
p.add_argument("--fused", default="none", choices=["none", "apex", "xformers", "deepspeed_ops", "flash_attn_ops"])
p.add_argument("--steps", type=int, default=20)
p.add_argument("--out", default="/work/rr75/bv/work/hf_out")
args = p.parse_args()

import torch
import transformers
from transformers import (GPT2Config, GPT2LMHeadModel, AutoModelForCausalLM, Trainer, TrainingArguments,
                          BitsAndBytesConfig)
from transformers.utils import logging as hf_logging
hf_logging.set_verbosity_info() if os.environ.get("VERBOSE") else hf_logging.set_verbosity_warning()

if args.require:
    from transformers.utils.versions import require_version
    require_version(args.require, "To fix: pip install -r requirements.txt")
if args.min_version:
    from transformers.utils import check_min_version
    check_min_version(args.min_version)

rank = int(os.environ.get("RANK", 0))
print(f"[rank {rank}] transformers {transformers.__version__}, torch {torch.__version__}, "
      f"cuda={torch.cuda.is_available()}", flush=True)

# ----- optional fast kernels, as the GPU recipe imports them -----
if args.fused == "apex":
    from apex.optimizers import FusedAdam  # noqa
elif args.fused == "xformers":
    import xformers.ops as xops  # noqa
elif args.fused == "deepspeed_ops":
    from deepspeed.ops.adam import DeepSpeedCPUAdam  # noqa
elif args.fused == "flash_attn_ops":
    from flash_attn import flash_attn_func  # noqa

vocab = sorted(set("abcdefghijklmnopqrstuvwxyz .,"))
stoi = {c: i + 1 for i, c in enumerate(vocab)}
text = ("the quick brown fox jumps over the lazy dog. " * 40)
ids = [stoi[c] for c in text]
block = 32
examples = [ids[i:i + block] for i in range(0, len(ids) - block, block)]


class DS(torch.utils.data.Dataset):
    def __len__(self):
        return len(examples)

    def __getitem__(self, i):
        x = torch.tensor(examples[i])
        return {"input_ids": x, "labels": x.clone()}


base = "/work/rr75/bv/work/tiny-gpt2"
if rank == 0 and not os.path.exists(os.path.join(base, "config.json")):
    cfg = GPT2Config(n_layer=2, n_embd=64, n_head=2, vocab_size=len(vocab) + 1, n_positions=64,
                     bos_token_id=0, eos_token_id=0)
    GPT2LMHeadModel(cfg).save_pretrained(base)
while not os.path.exists(os.path.join(base, "config.json")):
    time.sleep(0.2)
time.sleep(0.5)

kw = {"attn_implementation": args.attn}
if args.quant == "8bit":
    kw["quantization_config"] = BitsAndBytesConfig(load_in_8bit=True)
elif args.quant == "4bit":
    kw["quantization_config"] = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_compute_dtype=torch.bfloat16)
model = AutoModelForCausalLM.from_pretrained(base, **kw)

targs = TrainingArguments(
    output_dir=args.out, per_device_train_batch_size=4, max_steps=args.steps, logging_steps=5,
    learning_rate=5e-4, save_strategy="no", report_to=[], optim=args.optim, bf16=args.bf16, fp16=args.fp16,
    use_cpu=args.use_cpu, deepspeed=args.deepspeed, dataloader_pin_memory=True, disable_tqdm=False,
)
trainer = Trainer(model=model, args=targs, train_dataset=DS())
res = trainer.train()
print(f"[rank {rank}] train_loss={res.training_loss:.4f}", flush=True)
