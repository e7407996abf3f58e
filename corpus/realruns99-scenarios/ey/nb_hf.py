"""Family: Hugging Face Trainer fine-tuning in a notebook (tiny GPT-2 from config, local tokenizer).
Usage: python nb_hf.py --fault {none,strategy,pad} --out NB.ipynb"""
import argparse, sys, os
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from nbutil import write_nb
p = argparse.ArgumentParser(); p.add_argument("--fault", default="none"); p.add_argument("--out", required=True)
a = p.parse_args(); F = a.fault

setup = """
import os, torch, transformers
from tokenizers import Tokenizer, models, pre_tokenizers, trainers
from transformers import (GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast,
                          Trainer, TrainingArguments, DataCollatorForLanguageModeling)
from datasets import Dataset
print("transformers", transformers.__version__, "torch", torch.__version__)
"""
tok = """
corpus = [f"the model number {i} learns to predict token {i*7 % 13} after a long day of training" for i in range(400)]
raw = Tokenizer(models.WordLevel(unk_token="[UNK]"))
raw.pre_tokenizer = pre_tokenizers.Whitespace()
raw.train_from_iterator(corpus, trainers.WordLevelTrainer(special_tokens=["[UNK]", "[EOS]"EXTRA_SPECIAL]))
tokenizer = PreTrainedTokenizerFast(tokenizer_object=raw, unk_token="[UNK]", eos_token="[EOS]"EXTRA_PAD)
print("vocab", tokenizer.vocab_size, "pad:", tokenizer.pad_token)
""".replace("EXTRA_SPECIAL", "" if F == "pad" else ', "[PAD]"').replace("EXTRA_PAD", "" if F == "pad" else ', pad_token="[PAD]"')
ds = """
ds = Dataset.from_dict({"text": corpus}).train_test_split(test_size=0.1, seed=0)
def tok_fn(batch):
    return tokenizer(batch["text"], truncation=True, max_length=24, padding="max_length")
ds = ds.map(tok_fn, batched=True, remove_columns=["text"])
ds
"""
model = """
config = GPT2Config(vocab_size=len(tokenizer), n_layer=2, n_head=2, n_embd=64, n_positions=32,
                    bos_token_id=tokenizer.eos_token_id, eos_token_id=tokenizer.eos_token_id)
model = GPT2LMHeadModel(config)
print(f"{model.num_parameters():,} parameters")
"""
args_kw = """output_dir="hf_out", per_device_train_batch_size=16, per_device_eval_batch_size=16,
    num_train_epochs=2, learning_rate=5e-4, logging_steps=10, report_to="none","""
if F == "strategy":
    args_kw += """
    eval_strategy="epoch", save_strategy="steps", save_steps=500,
    load_best_model_at_end=True, metric_for_best_model="eval_loss","""
else:
    args_kw += """
    eval_strategy="epoch", save_strategy="no", use_cpu=True, dataloader_num_workers=0,"""
train = f"""
args = TrainingArguments(
    {args_kw}
)
collator = DataCollatorForLanguageModeling(tokenizer, mlm=False)
trainer = Trainer(model=model, args=args, train_dataset=ds["train"], eval_dataset=ds["test"],
                  data_collator=collator)
result = trainer.train()
print(result)
"""
ev = """
metrics = trainer.evaluate()
print({k: round(v, 4) for k, v in metrics.items()})
"""
write_nb(["md:# Tiny GPT-2 LM fine-tune", setup, tok, ds, model, train, ev], a.out)
