"""LoRA (PEFT) and SFT (TRL) fine-tuning of a tiny GPT-2 built from a config; --fault selects the bug."""
import argparse, os, sys, logging
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tinyhf
import torch
from datasets import Dataset

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--mode", default="lora", choices=["lora", "sft"])
p.add_argument("--out", default="out/peft")
p.add_argument("--steps", type=int, default=16)
p.add_argument("--logging-ts", action="store_true")
a = p.parse_args()
if a.logging_ts:
    logging.basicConfig(format="[%(asctime)s] %(levelname)s %(name)s: %(message)s", level=logging.INFO)
log = logging.getLogger("finetune")
world = int(os.environ.get("WORLD_SIZE", 1))

tok = tinyhf.make_tokenizer()
model = tinyhf.make_model(len(tok))
base = dict(output_dir=a.out, max_steps=a.steps, per_device_train_batch_size=4, learning_rate=1e-3,
            logging_steps=2, save_steps=8, report_to="none", use_cpu=True, ddp_timeout=30,
            ddp_backend="gloo" if world > 1 else None)

if a.mode == "lora":
    from peft import LoraConfig, get_peft_model
    from transformers import Trainer, TrainingArguments, DataCollatorForLanguageModeling
    targets = ["q_proj", "v_proj"] if a.fault == "lora-targets" else ["c_attn"]   # llama recipe vs GPT-2 names
    lcfg = LoraConfig(r=8, lora_alpha=16, lora_dropout=0.05, target_modules=targets, task_type="CAUSAL_LM")
    model = get_peft_model(model, lcfg)
    model.print_trainable_parameters()
    if a.fault == "gc-no-input-grads":
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": True})
        model.config.use_cache = False
    ds = Dataset.from_dict({"text": tinyhf.corpus(256, seed=5)}).map(
        lambda b: tok(b["text"], truncation=True, max_length=48), batched=True, remove_columns=["text"])
    trainer = Trainer(model=model, args=TrainingArguments(**base), train_dataset=ds, processing_class=tok,
                      data_collator=DataCollatorForLanguageModeling(tok, mlm=False))
    if a.fault == "gc-no-input-grads":
        # reproduce the custom loop of the original repo: gradient checkpointing on, frozen base
        model.train()
        opt = torch.optim.AdamW([p_ for p_ in model.parameters() if p_.requires_grad], lr=1e-3)
        dl = trainer.get_train_dataloader()
        for step, batch in enumerate(dl):
            out = model(**batch)
            out.loss.backward()
            opt.step(); opt.zero_grad()
            log.info("step %d loss %.4f", step, out.loss.item())
            if step + 1 >= a.steps:
                break
    else:
        trainer.train()
        model.save_pretrained(os.path.join(a.out, "adapter"))
else:
    from trl import SFTConfig, SFTTrainer
    rows = []
    for i, t in enumerate(tinyhf.corpus(128, seed=7)):
        rows.append({"messages": [{"role": "user", "content": " ".join(t.split()[:4])},
                                  {"role": "assistant", "content": t}]})
    ds = Dataset.from_list(rows)
    kw = dict(base)
    if a.fault == "sft-max-seq-length":
        kw["max_seq_length"] = 48          # TRL < 0.20 name
    else:
        kw["max_length"] = 48
    cfg = SFTConfig(**kw)
    if a.fault != "sft-chat-template":
        tok.chat_template = ("{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}{{ eos_token }}\n{% endfor %}"
                             "{% if add_generation_prompt %}assistant:{% endif %}")
    trainer = SFTTrainer(model=model, args=cfg, train_dataset=ds, processing_class=tok)
    trainer.train()
    trainer.save_model(os.path.join(a.out, "final"))
log.info("finished")
print("done")
