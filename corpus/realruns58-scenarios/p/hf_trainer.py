"""Tiny BERT sequence classification with the HF Trainer (offline, local toy data)."""
import argparse, os, sys
os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, os.path.dirname(__file__))
import torch
from datasets import Dataset
from transformers import (BertConfig, BertForSequenceClassification, Trainer, TrainingArguments,
                          DataCollatorWithPadding, PreTrainedTokenizerFast)
from tokenizers import Tokenizer, models, pre_tokenizers

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--out", default="/work/rr58/p/tmp/trainer_out")
a = p.parse_args()

WORDS = "the a cat dog good bad movie film great awful plot actor scene long short very not is was and but".split()
vocab = {"[UNK]": 0, "[PAD]": 1, "[CLS]": 2, "[SEP]": 3}
for w in WORDS: vocab.setdefault(w, len(vocab))
tk = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]")); tk.pre_tokenizer = pre_tokenizers.Whitespace()
tok = PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]", sep_token="[SEP]", model_max_length=32)
texts = [" ".join(WORDS[(i * 5 + j) % len(WORDS)] for j in range(3 + i % 7)) for i in range(160)]
ds = Dataset.from_dict({"text": texts, "label": [int("good" in t or "great" in t) for t in texts]})
ds = ds.map(lambda b: tok(b["text"], truncation=True), batched=True).train_test_split(test_size=0.2, seed=0)

cfg = BertConfig(vocab_size=len(tok), hidden_size=64, num_hidden_layers=2, num_attention_heads=2, intermediate_size=128,
                 max_position_embeddings=64, pad_token_id=1, num_labels=2)
model = BertForSequenceClassification(cfg)

kw = dict(output_dir=a.out, per_device_train_batch_size=8, per_device_eval_batch_size=16, num_train_epochs=2,
          learning_rate=5e-4, logging_steps=2, report_to=[], use_cpu=True, save_strategy="no", eval_strategy="epoch",
          dataloader_num_workers=0, seed=0)
if a.fault == "best_model":
    # asked for best-model selection; eval per epoch but checkpoints every 5 steps
    kw.update(load_best_model_at_end=True, metric_for_best_model="eval_loss", save_strategy="steps", save_steps=5)
args = TrainingArguments(**kw)
trainer = Trainer(model=model, args=args, train_dataset=ds["train"], eval_dataset=ds["test"],
                  data_collator=DataCollatorWithPadding(tok))
trainer.train()
print(trainer.evaluate())
