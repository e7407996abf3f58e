"""trl SFTTrainer + LoRA on a tiny local GPT-2 with conversational data."""
import argparse, os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from datasets import Dataset
from peft import LoraConfig
from trl import SFTTrainer, SFTConfig
from common_tiny import build_tokenizer, build_model, make_chat

p = argparse.ArgumentParser()
p.add_argument("--targets", default="c_attn,c_proj")
p.add_argument("--steps", type=int, default=20)
p.add_argument("--out", default="/work/rr100/fb/work/trl_out")
args = p.parse_args()

tok = build_tokenizer()
tok.chat_template = ("{% for m in messages %}{{ m['role'] }} {{ m['content'] }} {{ eos_token }} {% endfor %}")
model = build_model()
train = Dataset.from_list(make_chat(256, seed=3))
peft_config = LoraConfig(r=8, lora_alpha=16, lora_dropout=0.05, task_type="CAUSAL_LM",
                         target_modules=args.targets.split(","))
cfg = SFTConfig(output_dir=args.out, max_steps=args.steps, per_device_train_batch_size=8, learning_rate=2e-4,
                logging_steps=5, save_strategy="no", report_to="none", use_cpu=True, max_length=48)
trainer = SFTTrainer(model=model, args=cfg, train_dataset=train, processing_class=tok, peft_config=peft_config)
trainer.train()
trainer.save_model()
print("done")
