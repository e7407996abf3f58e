"""PEFT LoRA on a tiny GPT-2: train an adapter with the HF Trainer (DDP under torchrun), save it,
or reload a saved adapter onto a base model for evaluation.  --fault selects the misconfiguration."""
import argparse, os, sys, logging
sys.path.insert(0, os.path.dirname(__file__))
import tinyhf
import torch
from datasets import Dataset
from transformers import Trainer, TrainingArguments, DataCollatorForLanguageModeling
from peft import LoraConfig, get_peft_model, PeftModel

p = argparse.ArgumentParser()
p.add_argument("--phase", default="train", choices=["train", "eval"])
p.add_argument("--fault", default="none")
p.add_argument("--adapter", default="runs/lora_adapter")
p.add_argument("--base-embd", type=int, default=64)
p.add_argument("--targets", default="c_attn,c_proj")
p.add_argument("--max-steps", type=int, default=10)
a = p.parse_args()
logging.basicConfig(format="%(asctime)s %(levelname)s [%(name)s] %(message)s", level=logging.INFO)
log = logging.getLogger("lora")
rank = int(os.environ.get("RANK", 0))

tok = tinyhf.make_tokenizer()
base = tinyhf.make_model(len(tok), n_embd=a.base_embd)
log.info("base model: %s params", sum(p.numel() for p in base.parameters()))

if a.phase == "train":
    cfg = LoraConfig(r=8, lora_alpha=16, lora_dropout=0.05, target_modules=a.targets.split(","),
                     task_type="CAUSAL_LM")
    model = get_peft_model(base, cfg)
    if rank == 0:
        model.print_trainable_parameters()
    ds = Dataset.from_dict({"text": tinyhf.make_texts(64, seed=3)})
    ds = ds.map(lambda b: tok(b["text"], truncation=True, max_length=32), batched=True, remove_columns=["text"])
    args = TrainingArguments(output_dir="runs/lora_trainer", per_device_train_batch_size=4, max_steps=a.max_steps,
                             logging_steps=2, learning_rate=1e-3, report_to="none", use_cpu=True, save_strategy="no",
                             ddp_timeout=40, ddp_find_unused_parameters=False, seed=0)
    tr = Trainer(model=model, args=args, train_dataset=ds,
                 data_collator=DataCollatorForLanguageModeling(tok, mlm=False))
    tr.train()
    if tr.is_world_process_zero():
        model.save_pretrained(a.adapter)
        log.info("adapter saved to %s", a.adapter)
else:
    log.info("loading adapter %s onto base (n_embd=%d)", a.adapter, a.base_embd)
    model = PeftModel.from_pretrained(base, a.adapter)
    model.eval()
    batch = tok(tinyhf.make_texts(8, seed=9), padding=True, return_tensors="pt")
    with torch.no_grad():
        out = model(**batch, labels=batch["input_ids"])
    log.info("eval loss %.4f", out.loss.item())
