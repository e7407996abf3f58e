"""LoRA fine-tuning (PEFT) of a tiny GPT-2 with transformers.Trainer on CPU; --fault picks the misconfiguration."""
import argparse, os, sys
sys.path.insert(0, os.path.dirname(__file__))
from tinyhf import make_tokenizer, make_model, sentences
from datasets import Dataset
from transformers import Trainer, TrainingArguments, DataCollatorForLanguageModeling
from peft import LoraConfig, get_peft_model, TaskType

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--steps", type=int, default=10)
p.add_argument("--out", default="/tmp/rr96eq_lora")
a = p.parse_args()
RANK = int(os.environ.get("RANK", "0"))

tok = make_tokenizer()
model = make_model()
targets = {"none": ["c_attn", "c_proj"],              # GPT-2 uses Conv1D
           "llama_names": ["q_proj", "k_proj", "v_proj", "o_proj"],  # copied from a Llama recipe
           "layernorm": ["ln_1", "ln_2"],               # someone wanted to adapt the norms
           }[a.fault]
cfg = LoraConfig(task_type=TaskType.CAUSAL_LM, r=8, lora_alpha=16, lora_dropout=0.05, target_modules=targets)
model = get_peft_model(model, cfg)
if RANK == 0:
    model.print_trainable_parameters()

ds = Dataset.from_dict({"text": sentences(96)}).map(lambda b: tok(b["text"], truncation=True, max_length=32),
                                                   batched=True, remove_columns=["text"])
kw = dict(output_dir=a.out, per_device_train_batch_size=4, learning_rate=1e-3, max_steps=a.steps, logging_steps=2,
          save_strategy="steps", save_steps=a.steps, report_to=[], use_cpu=True, ddp_timeout=30, seed=0)
if "WORLD_SIZE" in os.environ:
    kw["ddp_backend"] = "gloo"
trainer = Trainer(model=model, args=TrainingArguments(**kw), train_dataset=ds,
                  data_collator=DataCollatorForLanguageModeling(tok, mlm=False))
res = trainer.train()
print(f"[rank{RANK}] done: {res.metrics}", flush=True)
trainer.save_model(a.out + "/final")
print(f"[rank{RANK}] adapter saved to {a.out}/final", flush=True)
