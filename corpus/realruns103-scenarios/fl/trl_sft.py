"""TRL SFT / DPO on a tiny GPT-2 with a locally built tokenizer (no hub access)."""
import argparse, os, sys
sys.path.insert(0, os.path.dirname(__file__))
import tinyhf
from datasets import Dataset

p = argparse.ArgumentParser()
p.add_argument("--algo", default="sft", choices=["sft", "dpo"])
p.add_argument("--format", default="text", choices=["text", "chat"])
p.add_argument("--max-steps", type=int, default=8)
p.add_argument("--out", default="runs/trl")
a = p.parse_args()

from trl import SFTTrainer, SFTConfig, DPOTrainer, DPOConfig
tok = tinyhf.make_tokenizer()
model = tinyhf.make_model(len(tok))
texts = tinyhf.make_texts(64, seed=21)
if a.algo == "sft":
    if a.format == "chat":
        ds = Dataset.from_dict({"messages": [[{"role": "user", "content": t[:len(t)//2]},
                                              {"role": "assistant", "content": t[len(t)//2:]}] for t in texts]})
    else:
        ds = Dataset.from_dict({"text": texts})
    cfg = SFTConfig(output_dir=a.out, max_steps=a.max_steps, per_device_train_batch_size=4, logging_steps=2,
                    report_to="none", use_cpu=True, max_length=32, save_strategy="no", ddp_timeout=40)
    tr = SFTTrainer(model=model, args=cfg, train_dataset=ds, processing_class=tok)
else:
    ds = Dataset.from_dict({"prompt": [t[:20] for t in texts], "chosen": [t[20:] for t in texts],
                            "rejected": [t[::-1][:15] for t in texts]})
    cfg = DPOConfig(output_dir=a.out, max_steps=a.max_steps, per_device_train_batch_size=4, logging_steps=2,
                    report_to="none", use_cpu=True, max_length=32, save_strategy="no", ddp_timeout=40, beta=0.1)
    tr = DPOTrainer(model=model, args=cfg, train_dataset=ds, processing_class=tok)
tr.train()
print("done")
