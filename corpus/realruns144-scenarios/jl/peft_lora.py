"""LoRA fine-tuning of a tiny GPT-2 with PEFT + HF Trainer. --fault selects the mistake."""
import argparse, os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from jlcommon import make_tokenizer, make_gpt2, sentences

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--targets", default="c_attn")
p.add_argument("--steps", type=int, default=16)
p.add_argument("--out", default="out/lora")
p.add_argument("--base-embd", type=int, default=64)
p.add_argument("--base-layers", type=int, default=2)
a = p.parse_args()

import torch, datasets
from transformers import Trainer, TrainingArguments, DataCollatorForLanguageModeling
from peft import LoraConfig, get_peft_model

tok = make_tokenizer()
print(f"building base model n_embd={a.base_embd} n_layer={a.base_layers}", flush=True)
base = make_gpt2(vocab_size=len(tok), n_embd=a.base_embd, n_layer=a.base_layers,
                 n_head=max(2, a.base_embd // 64))
print(f"base params: {sum(p.numel() for p in base.parameters())/1e6:.1f}M", flush=True)
targets = [t for t in a.targets.split(",") if t]
cfg = LoraConfig(r=8, lora_alpha=16, lora_dropout=0.05, target_modules=targets, task_type="CAUSAL_LM")
model = get_peft_model(base, cfg)
model.print_trainable_parameters()

ds = datasets.Dataset.from_dict({"text": sentences(128, seed=2)})
ds = ds.map(lambda b: tok(b["text"], truncation=True, max_length=32), batched=True, remove_columns=["text"])
args = TrainingArguments(output_dir=a.out, per_device_train_batch_size=8, max_steps=a.steps, learning_rate=1e-3,
                         logging_steps=4, save_steps=8, report_to="none", use_cpu=True, ddp_timeout=60)
trainer = Trainer(model=model, args=args, train_dataset=ds,
                  data_collator=DataCollatorForLanguageModeling(tok, mlm=False), processing_class=tok)
trainer.train()
model.save_pretrained(os.path.join(a.out, "adapter"))
print("adapter saved to", os.path.join(a.out, "adapter"), flush=True)
