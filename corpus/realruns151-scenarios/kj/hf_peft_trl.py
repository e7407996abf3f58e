import argparse, os, sys, logging, random
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
import torch
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast
import datasets

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--steps", type=int, default=8)
p.add_argument("--outdir", default="out")
a = p.parse_args()
rank = int(os.environ.get("RANK", "0"))

WORDS = "the a cat dog sat on mat ran fast slow red blue big small model data train loss step good bad user assistant".split()
def build_tokenizer():
    vocab = {"[UNK]": 0, "[BOS]": 1, "[EOS]": 2, "[PAD]": 3}
    for w in WORDS:
        vocab[w] = len(vocab)
    t = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    t.pre_tokenizer = pre_tokenizers.Whitespace()
    return PreTrainedTokenizerFast(tokenizer_object=t, unk_token="[UNK]", bos_token="[BOS]", eos_token="[EOS]", pad_token="[PAD]")
def sent(r, lo=4, hi=10):
    return " ".join(r.choice(WORDS[:-2]) for _ in range(r.randint(lo, hi)))

tok = build_tokenizer()
cfg = GPT2Config(vocab_size=len(tok), n_layer=2, n_embd=64, n_head=4, n_positions=128,
                 bos_token_id=1, eos_token_id=2, pad_token_id=3)
torch.manual_seed(0)
model = GPT2LMHeadModel(cfg)
r = random.Random(rank)

if a.fault in ("none", "lora_targets"):
    from peft import LoraConfig, get_peft_model
    from trl import SFTConfig, SFTTrainer
    targets = ["q_proj", "v_proj"] if a.fault == "lora_targets" else ["c_attn"]
    lcfg = LoraConfig(r=4, lora_alpha=8, target_modules=targets, lora_dropout=0.0, task_type="CAUSAL_LM",
                      fan_in_fan_out=(a.fault == "lora_targets"))
    model = get_peft_model(model, lcfg)
    model.print_trainable_parameters()
    ds = datasets.Dataset.from_dict({"text": [sent(r) for _ in range(64)]})
    args = SFTConfig(output_dir=a.outdir, max_steps=a.steps, per_device_train_batch_size=8, logging_steps=2,
                     report_to=[], use_cpu=True, max_length=32, save_steps=100, learning_rate=1e-3)
    tr = SFTTrainer(model=model, args=args, train_dataset=ds, processing_class=tok)
    tr.train()
    tr.save_model(os.path.join(a.outdir, "final"))
elif a.fault == "chat_template":
    from trl import SFTConfig, SFTTrainer
    msgs = [[{"role": "user", "content": sent(r)}, {"role": "assistant", "content": sent(r)}] for _ in range(64)]
    ds = datasets.Dataset.from_dict({"messages": msgs})
    args = SFTConfig(output_dir=a.outdir, max_steps=a.steps, per_device_train_batch_size=8, logging_steps=2,
                     report_to=[], use_cpu=True, max_length=32, save_steps=100)
    tr = SFTTrainer(model=model, args=args, train_dataset=ds, processing_class=tok)
    tr.train()
elif a.fault == "dpo_columns":
    from trl import DPOConfig, DPOTrainer
    # preference data exported with the wrong column names (accepted/declined)
    ds = datasets.Dataset.from_dict({"prompt": [sent(r) for _ in range(32)], "accepted": [sent(r) for _ in range(32)],
                                     "declined": [sent(r) for _ in range(32)]})
    args = DPOConfig(output_dir=a.outdir, max_steps=a.steps, per_device_train_batch_size=4, logging_steps=2,
                     report_to=[], use_cpu=True, max_length=32)
    tr = DPOTrainer(model=model, args=args, train_dataset=ds, processing_class=tok)
    tr.train()
elif a.fault == "tied_safetensors":
    from safetensors.torch import save_file
    from transformers import Trainer, TrainingArguments, DataCollatorForLanguageModeling
    ds = datasets.Dataset.from_dict({"text": [sent(r) for _ in range(64)]}).map(
        lambda ex: tok(ex["text"], truncation=True, max_length=24), batched=True, remove_columns=["text"])
    args = TrainingArguments(output_dir=a.outdir, max_steps=a.steps, per_device_train_batch_size=8, logging_steps=2,
                             report_to=[], use_cpu=True, save_strategy="no")
    tr = Trainer(model=model, args=args, train_dataset=ds, data_collator=DataCollatorForLanguageModeling(tok, mlm=False))
    tr.train()
    os.makedirs(a.outdir, exist_ok=True)
    # custom export for the serving team
    save_file(model.state_dict(), os.path.join(a.outdir, "export.safetensors"))
    print("exported", flush=True)
elif a.fault == "genconfig":
    from transformers import Trainer, TrainingArguments, DataCollatorForLanguageModeling
    ds = datasets.Dataset.from_dict({"text": [sent(r) for _ in range(64)]}).map(
        lambda ex: tok(ex["text"], truncation=True, max_length=24), batched=True, remove_columns=["text"])
    model.generation_config.do_sample = False
    model.generation_config.temperature = 0.0
    model.generation_config.top_p = 0.5
    args = TrainingArguments(output_dir=a.outdir, max_steps=a.steps, per_device_train_batch_size=8, logging_steps=2,
                             report_to=[], use_cpu=True, save_steps=4)
    tr = Trainer(model=model, args=args, train_dataset=ds, data_collator=DataCollatorForLanguageModeling(tok, mlm=False))
    tr.train()
print(f"[rank{rank}] finished", flush=True)
