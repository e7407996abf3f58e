"""LoRA / SFT fine-tuning of a tiny local GPT-2 with PEFT and TRL (offline).
--fault:
  none            healthy LoRA run with Trainer, merge_and_unload and save (prints PEFT warnings)
  llama_targets   LoRA config copied from a Llama recipe: target_modules q_proj/v_proj
  gc_reentrant    custom loop, gradient checkpointing (use_reentrant=True) on a frozen base + LoRA
  sft_chat        TRL SFTTrainer on a conversational "messages" dataset, base tokenizer
  sft_none        TRL SFTTrainer on plain text (healthy)
"""
import argparse, os, sys, time

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--output-dir", default="/work/rr97/er/runs/lora")
p.add_argument("--max-steps", type=int, default=30)
args = p.parse_args()

import torch
from datasets import Dataset
from transformers import Trainer, TrainingArguments, DataCollatorForLanguageModeling, set_seed
from peft import LoraConfig, get_peft_model, TaskType
sys.path.insert(0, os.path.dirname(__file__))
import common

set_seed(7)
tok = common.build_tokenizer()
model = common.tiny_gpt2(len(tok))
texts = common.make_texts(300, seed=5)

if args.fault in ("sft_chat", "sft_none"):
    from trl import SFTTrainer, SFTConfig
    if args.fault == "sft_chat":
        ds = Dataset.from_dict({"messages": [
            [{"role": "user", "content": "review: " + t}, {"role": "assistant", "content": "positive" if common.sentiment(t) else "negative"}]
            for t in texts]})
    else:
        ds = Dataset.from_dict({"text": texts})
    cfg = SFTConfig(output_dir=args.output_dir, max_steps=args.max_steps, per_device_train_batch_size=8,
                    logging_steps=5, report_to="none", use_cpu=True, max_length=48,
                    learning_rate=5e-4, save_strategy="no")
    lcfg = LoraConfig(r=8, lora_alpha=16, lora_dropout=0.05, target_modules=["c_attn", "c_proj"],
                      task_type="CAUSAL_LM")
    trainer = SFTTrainer(model=model, args=cfg, train_dataset=ds, processing_class=tok, peft_config=lcfg)
    trainer.train()
    trainer.save_model(args.output_dir)
    print("adapter saved to", args.output_dir)
    sys.exit(0)

targets = ["q_proj", "v_proj"] if args.fault == "llama_targets" else ["c_attn"]
lcfg = LoraConfig(r=8, lora_alpha=16, lora_dropout=0.05, target_modules=targets,
                  task_type=TaskType.CAUSAL_LM)
if args.fault == "gc_reentrant":
    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": True})
model = get_peft_model(model, lcfg)
model.print_trainable_parameters()

ds = Dataset.from_dict({"text": texts}).map(lambda b: tok(b["text"], truncation=True, max_length=48),
                                            batched=True, remove_columns=["text"])
collator = DataCollatorForLanguageModeling(tok, mlm=False)

if args.fault == "gc_reentrant":
    model.train()
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=5e-4)
    dl = torch.utils.data.DataLoader(ds, batch_size=8, shuffle=True, collate_fn=collator)
    for step, batch in enumerate(dl):
        out = model(**batch)
        print(f"step {step} loss {out.loss.item():.4f}", flush=True)
        out.loss.backward()
        opt.step(); opt.zero_grad()
        if step + 1 >= args.max_steps:
            break
    sys.exit(0)

targs = TrainingArguments(output_dir=args.output_dir, max_steps=args.max_steps, per_device_train_batch_size=8,
                          logging_steps=5, report_to="none", use_cpu=True, learning_rate=5e-4,
                          save_strategy="steps", save_steps=15)
trainer = Trainer(model=model, args=targs, train_dataset=ds, data_collator=collator)
trainer.train()
model.save_pretrained(os.path.join(args.output_dir, "adapter"))
merged = model.merge_and_unload()
merged.save_pretrained(os.path.join(args.output_dir, "merged"))
tok.save_pretrained(os.path.join(args.output_dir, "merged"))
print("merged model written to", os.path.join(args.output_dir, "merged"))
