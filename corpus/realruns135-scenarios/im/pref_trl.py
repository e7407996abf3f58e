"""Preference tuning of a tiny local GPT2 with TRL: DPOTrainer (+LoRA) or RewardTrainer.
--fault selects a misconfiguration; --fault-rank the rank whose data/config is affected."""
import argparse, os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tinyhf

ap = argparse.ArgumentParser()
ap.add_argument("--trainer", default="dpo", choices=["dpo", "reward"])
ap.add_argument("--fault", default="none")
ap.add_argument("--fault-rank", type=int, default=-1)
ap.add_argument("--out", default="out/pref")
ap.add_argument("--steps", type=int, default=10)
ap.add_argument("--max-length", type=int, default=64)
ap.add_argument("--lora", action="store_true")
ap.add_argument("--extra", default="")
args = ap.parse_args()
rank = int(os.environ.get("RANK", "0"))
hit = args.fault_rank < 0 or args.fault_rank == rank

import torch
from peft import LoraConfig

tok = tinyhf.build_tokenizer()
ds = tinyhf.preferences(96)
if args.fault == "renamed-columns" and hit:
    # this rank's shard was exported by an older preprocessing script
    ds = ds.rename_columns({"chosen": "response_chosen", "rejected": "response_rejected"})

extra = {}
for kv in filter(None, args.extra.split(",")):
    k, v = kv.split("=", 1)
    for cast in (int, float):
        try:
            v = cast(v); break
        except ValueError:
            pass
    extra[k] = {"True": True, "False": False}.get(v, v) if isinstance(v, str) else v

common = dict(output_dir=args.out, max_steps=args.steps, per_device_train_batch_size=4,
              gradient_accumulation_steps=2, learning_rate=1e-3, logging_steps=2, save_steps=5,
              report_to="none", use_cpu=True, seed=0, max_length=args.max_length, **extra)
peft_config = LoraConfig(r=8, lora_alpha=16, target_modules=["c_attn"], task_type="CAUSAL_LM") if args.lora else None

if args.trainer == "dpo":
    from trl import DPOConfig, DPOTrainer
    model = tinyhf.gpt2(tok)
    ref = model if args.fault == "ref-is-policy" else None
    cfg = DPOConfig(beta=0.1, **common)
    trainer = DPOTrainer(model=model, ref_model=ref, args=cfg, train_dataset=ds, processing_class=tok,
                         peft_config=peft_config)
else:
    from trl import RewardConfig, RewardTrainer
    from transformers import GPT2Config, GPT2ForSequenceClassification
    if args.fault == "rm-no-pad-id" and hit:
        # reward model config copied from a base-LM config that never had a pad token
        pad_id = None
    else:
        pad_id = tok.pad_token_id
    cfg_m = GPT2Config(vocab_size=len(tok), n_positions=128, n_layer=2, n_embd=64, n_head=2, num_labels=1,
                       pad_token_id=pad_id, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id)
    model = GPT2ForSequenceClassification(cfg_m)
    ds = ds.map(lambda r: {"chosen": r["prompt"] + r["chosen"], "rejected": r["prompt"] + r["rejected"]},
                remove_columns=["prompt"])
    cfg = RewardConfig(**common)
    if peft_config is not None:
        peft_config.task_type = "SEQ_CLS"
    trainer = RewardTrainer(model=model, args=cfg, train_dataset=ds, processing_class=tok, peft_config=peft_config)

trainer.train()
trainer.save_model(args.out + "/final")
if rank == 0:
    print("done:", args.trainer, "model saved to", args.out + "/final")
