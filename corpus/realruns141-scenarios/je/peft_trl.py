"""PEFT LoRA and TRL (SFT / DPO / GRPO) on a tiny local GPT-2."""
import os, sys, argparse, logging
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tinyhf
import torch
from datasets import Dataset

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--mode", default="lora")
p.add_argument("--out", default="runs/peft")
p.add_argument("--steps", type=int, default=12)
a = p.parse_args()
logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s", level=logging.INFO)
log = logging.getLogger("peft_trl")
rank = int(os.environ.get("RANK", 0)); world = int(os.environ.get("WORLD_SIZE", 1))

CHAT = ("{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
        "{% if add_generation_prompt %}assistant: {% endif %}")
tok = tinyhf.make_tokenizer(chat_template=None if a.fault == "nochat" else CHAT)
model = tinyhf.make_model(tok)
common = dict(output_dir=a.out, per_device_train_batch_size=4, max_steps=a.steps, logging_steps=2,
              report_to="none", use_cpu=True, save_strategy="no", learning_rate=5e-4, ddp_timeout=45)
if world > 1:
    common["ddp_backend"] = "gloo"

if a.mode == "lora":
    from peft import LoraConfig, get_peft_model
    from transformers import Trainer, TrainingArguments, DataCollatorForLanguageModeling
    targets = ["q_proj", "v_proj"] if a.fault == "targets" else ["c_attn", "c_proj"]
    cfg = LoraConfig(r=4, lora_alpha=8, target_modules=targets, lora_dropout=0.05, task_type="CAUSAL_LM")
    model = get_peft_model(model, cfg)
    model.print_trainable_parameters()
    ds = Dataset.from_dict({"text": tinyhf.sentences(128, seed=5)}).map(
        lambda b: tok(b["text"], truncation=True, max_length=32), batched=True, remove_columns=["text"])
    tr = Trainer(model=model, args=TrainingArguments(**common), train_dataset=ds,
                 data_collator=DataCollatorForLanguageModeling(tok, mlm=False))
    tr.train()
    if a.fault == "tiedsave":
        from safetensors.torch import save_file
        merged = model.merge_and_unload()
        os.makedirs(a.out, exist_ok=True)
        save_file(merged.state_dict(), os.path.join(a.out, "merged.safetensors"))
    else:
        model.save_pretrained(os.path.join(a.out, "adapter"))
    log.info("saved")
elif a.mode == "sft":
    from trl import SFTTrainer, SFTConfig
    sents = tinyhf.sentences(64, seed=7)
    msgs = [[{"role": "user", "content": s}, {"role": "assistant", "content": s[::-1].split()[0] if s else "yes"}]
            for s in sents]
    ds = Dataset.from_dict({"messages": msgs})
    tr = SFTTrainer(model=model, args=SFTConfig(max_length=48, **common), train_dataset=ds, processing_class=tok)
    tr.train(); log.info("sft done")
elif a.mode == "dpo":
    from trl import DPOTrainer, DPOConfig
    s = tinyhf.sentences(64, seed=9)
    cols = {"prompt": s, "chosen": [" good yes" for _ in s], "rejected": [" bad no" for _ in s]}
    if a.fault == "dpocols":
        cols = {"prompt": s, "response_good": cols["chosen"], "response_bad": cols["rejected"]}
    ds = Dataset.from_dict(cols)
    tr = DPOTrainer(model=model, args=DPOConfig(max_length=48, **common), train_dataset=ds, processing_class=tok)
    tr.train(); log.info("dpo done")
elif a.mode == "grpo":
    from trl import GRPOTrainer, GRPOConfig
    tok.padding_side = "left"
    s = tinyhf.sentences(32, seed=11)
    ds = Dataset.from_dict({"prompt": s})
    def reward_len(completions, **kw):
        r = [float(len(c.split())) / 10.0 for c in completions]
        if a.fault == "reward":
            # dedupe identical completions before scoring (bug: returns fewer rewards)
            r = list(dict.fromkeys(r))
        return r
    gcfg = GRPOConfig(num_generations=4, max_completion_length=8, generation_batch_size=8,
                      **{**common, "per_device_train_batch_size": 8})
    tr = GRPOTrainer(model=model, reward_funcs=reward_len, args=gcfg, train_dataset=ds, processing_class=tok)
    tr.train(); log.info("grpo done")
