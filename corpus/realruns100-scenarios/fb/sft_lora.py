"""SFT on chat-formatted data with optional LoRA (PEFT), HF Trainer, tiny local GPT-2."""
import argparse, os, sys, logging
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch
from datasets import Dataset
from transformers import Trainer, TrainingArguments, DataCollatorForLanguageModeling, set_seed
from common_tiny import build_tokenizer, build_model, make_chat

p = argparse.ArgumentParser()
p.add_argument("--lora", action="store_true")
p.add_argument("--template", choices=["builtin", "custom"], default="builtin")
p.add_argument("--out", default="/work/rr100/fb/work/sft_out")
p.add_argument("--steps", type=int, default=20)
args = p.parse_args()
logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.INFO)
log = logging.getLogger("sft")
set_seed(0)

tok = build_tokenizer()
model = build_model()
if args.template == "custom":
    tok.chat_template = ("{% for m in messages %}{{ m['role'] }} {{ m['content'] }} {{ eos_token }} {% endfor %}")
if args.lora:
    from peft import LoraConfig, get_peft_model, TaskType
    cfg = LoraConfig(task_type=TaskType.CAUSAL_LM, r=8, lora_alpha=16, lora_dropout=0.05,
                     target_modules=["c_attn", "c_proj"])
    model = get_peft_model(model, cfg)
    model.print_trainable_parameters()

rows = make_chat(300, seed=11)
ds = Dataset.from_list(rows)
log.info(f"loaded {len(ds)} conversations")

def fmt(ex):
    text = tok.apply_chat_template(ex["messages"], tokenize=False)
    return tok(text, truncation=True, max_length=48)

ds = ds.map(fmt, remove_columns=["messages"], desc="Applying chat template")
ta = TrainingArguments(output_dir=args.out, per_device_train_batch_size=8, max_steps=args.steps,
                       learning_rate=2e-4, logging_steps=5, save_strategy="no", report_to="none",
                       use_cpu=True, lr_scheduler_type="cosine", warmup_steps=2)
trainer = Trainer(model=model, args=ta, train_dataset=ds,
                  data_collator=DataCollatorForLanguageModeling(tok, mlm=False), processing_class=tok)
trainer.train()
trainer.save_model()
log.info("finished SFT")
