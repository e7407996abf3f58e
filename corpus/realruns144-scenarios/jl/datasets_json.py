"""Load a local JSON-lines corpus with `datasets`, tokenize, train a tiny GPT-2 with the Trainer.
--fault broken-line: the export job wrote one truncated record into a shard."""
import argparse, os, sys, json
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from jlcommon import make_tokenizer, make_gpt2, sentences

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--data-dir", default="data/jsonl")
p.add_argument("--steps", type=int, default=12)
a = p.parse_args()

rank = int(os.environ.get("RANK", 0))
if rank == 0:
    os.makedirs(a.data_dir, exist_ok=True)
    for shard in range(3):
        with open(os.path.join(a.data_dir, f"train-{shard:05d}.jsonl"), "w") as f:
            for i, s in enumerate(sentences(200, seed=10 + shard)):
                line = json.dumps({"id": shard * 1000 + i, "text": s})
                if a.fault == "broken-line" and shard == 2 and i == 117:
                    line = line[: len(line) // 2]     # record cut off mid-write by the exporter
                f.write(line + "\n")
import datasets, torch
from transformers import Trainer, TrainingArguments, DataCollatorForLanguageModeling
ds = datasets.load_dataset("json", data_files=sorted(os.path.join(a.data_dir, f) for f in os.listdir(a.data_dir)),
                           split="train", cache_dir=os.path.join(a.data_dir, ".cache"))
print(ds, flush=True)
tok = make_tokenizer()
ds = ds.map(lambda b: tok(b["text"], truncation=True, max_length=32), batched=True, remove_columns=["id", "text"])
model = make_gpt2(vocab_size=len(tok))
args = TrainingArguments(output_dir="out/jsonl", per_device_train_batch_size=8, max_steps=a.steps,
                         logging_steps=4, report_to="none", use_cpu=True, save_strategy="no")
Trainer(model=model, args=args, train_dataset=ds, data_collator=DataCollatorForLanguageModeling(tok, mlm=False),
        processing_class=tok).train()
