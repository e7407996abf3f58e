"""LoRA fine-tuning of a tiny GPT-2 with PEFT + Trainer."""
import argparse, os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
p = argparse.ArgumentParser()
p.add_argument("--targets", default="c_attn")
p.add_argument("--steps", type=int, default=10)
p.add_argument("--out", default="out_lora")
p.add_argument("--gc", action="store_true")
args = p.parse_args()
import torch, tinyhf
from datasets import Dataset
from peft import LoraConfig, get_peft_model, TaskType
from transformers import Trainer, TrainingArguments, DataCollatorForLanguageModeling

rank = int(os.environ.get("RANK", 0))
tok = tinyhf.make_tokenizer()
model = tinyhf.make_model(tok)
cfg = LoraConfig(task_type=TaskType.CAUSAL_LM, r=4, lora_alpha=8, lora_dropout=0.05,
                 target_modules=args.targets.split(","))
model = get_peft_model(model, cfg)
if rank == 0:
    model.print_trainable_parameters()
ds = Dataset.from_dict({"text": tinyhf.make_texts(80, seed=5)}).map(
    lambda b: tok(b["text"], truncation=True, max_length=32), batched=True, remove_columns=["text"])
targs = TrainingArguments(output_dir=args.out, per_device_train_batch_size=4, max_steps=args.steps,
                          learning_rate=1e-3, logging_steps=2, report_to="none", use_cpu=True,
                          save_strategy="no", gradient_checkpointing=args.gc, fp16=False)
tr = Trainer(model=model, args=targs, train_dataset=ds,
             data_collator=DataCollatorForLanguageModeling(tok, mlm=False))
tr.train()
if rank == 0:
    model.save_pretrained(os.path.join(args.out, "adapter"))
    print("saved adapter to", os.path.join(args.out, "adapter"))
