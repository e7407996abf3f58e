"""Notebook family: Hugging Face Trainer fine-tuning of a tiny GPT-2 built from a config, with a
tokenizer built locally (no downloads).
python nb_hf.py --fault {healthy,no_pad,old_args,pad_added} --out X.ipynb"""
import argparse, sys
sys.path.insert(0, "/work/rr77/ca/tools")
from nbmk import write_nb
ap = argparse.ArgumentParser()
ap.add_argument("--fault", required=True); ap.add_argument("--out", required=True)
a = ap.parse_args()
F = a.fault
cells = ["""
import os
os.environ["HF_HUB_OFFLINE"] = "1"
import torch, transformers, datasets
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast, GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments, DataCollatorForLanguageModeling
print(torch.__version__, transformers.__version__, datasets.__version__)
""", """
import random
random.seed(0)
words = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau".split()
corpus = [" ".join(random.choice(words) for _ in range(random.randint(5, 30))) for _ in range(400)]
vocab = {"[UNK]": 0, "<|endoftext|>": 1}
for w in words: vocab[w] = len(vocab)
tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
tok.pre_tokenizer = pre_tokenizers.Whitespace()
tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", eos_token="<|endoftext|>", bos_token="<|endoftext|>")
%s
print(len(tokenizer), "tokens; pad:", tokenizer.pad_token)
""" % ("tokenizer.pad_token = tokenizer.eos_token" if F in ("healthy", "old_args") else ""),
"""
ds = datasets.Dataset.from_dict({"text": corpus}).train_test_split(test_size=0.1, seed=0)
def tok_fn(b):
    return tokenizer(b["text"], truncation=True, max_length=32)
ds = ds.map(tok_fn, batched=True, remove_columns=["text"])
print(ds)
""", """
config = GPT2Config(vocab_size=len(tokenizer), n_positions=64, n_embd=64, n_layer=2, n_head=2,
                    bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id)
model = GPT2LMHeadModel(config)
print(f"{model.num_parameters()/1e3:.1f}k parameters")
"""]
if F == "pad_added":
    cells.append("""
# batches need padding: give the tokenizer a dedicated pad token
tokenizer.add_special_tokens({"pad_token": "[PAD]"})
print("pad id", tokenizer.pad_token_id, "len", len(tokenizer))
""")
args = """output_dir="out_%s", per_device_train_batch_size=8, per_device_eval_batch_size=8,
    num_train_epochs=2, learning_rate=5e-4, logging_steps=10, report_to="none",
    use_cpu=True, dataloader_num_workers=0, save_strategy="no", disable_tqdm=False""" % F
if F == "old_args":
    args += """,
    evaluation_strategy="epoch", warmup_steps=10"""
else:
    args += """,
    eval_strategy="epoch", warmup_steps=10"""
cells.append("""
collator = DataCollatorForLanguageModeling(tokenizer, mlm=False)
training_args = TrainingArguments(
    %s)
trainer = Trainer(model=model, args=training_args, train_dataset=ds["train"], eval_dataset=ds["test"], data_collator=collator)
""" % args)
cells.append("""
result = trainer.train()
print(result)
""")
cells.append("""
print(trainer.evaluate())
""")
write_nb(cells, a.out)
