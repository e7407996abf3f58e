"""TRL SFT / DPO on a tiny GPT-2 with local datasets."""
import argparse, os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
p = argparse.ArgumentParser()
p.add_argument("--mode", default="sft")
p.add_argument("--data", default="text")   # text | messages
p.add_argument("--steps", type=int, default=8)
p.add_argument("--out", default="out_trl")
args = p.parse_args()
import torch, tinyhf, random
from datasets import Dataset
from trl import SFTTrainer, SFTConfig, DPOTrainer, DPOConfig

tok = tinyhf.make_tokenizer()
model = tinyhf.make_model(tok)
texts = tinyhf.make_texts(64, seed=7)
if args.mode == "sft":
    if args.data == "messages":
        ds = Dataset.from_list([{"messages": [{"role": "user", "content": t[:20]},
                                              {"role": "assistant", "content": t}]} for t in texts])
    else:
        ds = Dataset.from_dict({"text": texts})
    cfg = SFTConfig(output_dir=args.out, per_device_train_batch_size=4, max_steps=args.steps,
                    logging_steps=2, report_to="none", use_cpu=True, save_strategy="no", max_length=32,
                    learning_rate=5e-4)
    tr = SFTTrainer(model=model, args=cfg, train_dataset=ds, processing_class=tok)
else:
    r = random.Random(0)
    ds = Dataset.from_list([{"prompt": t[:15], "chosen": t, "rejected": " ".join(reversed(t.split()))} for t in texts])
    cfg = DPOConfig(output_dir=args.out, per_device_train_batch_size=4, max_steps=args.steps,
                    logging_steps=2, report_to="none", use_cpu=True, save_strategy="no", max_length=32,
                    learning_rate=5e-4, beta=0.1)
    tr = DPOTrainer(model=model, args=cfg, train_dataset=ds, processing_class=tok)
tr.train()
print("done", args.mode)
