import argparse, os, sys, logging, warnings
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
import torch
from datetime import timedelta
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import (GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast, Trainer,
                          TrainingArguments, DataCollatorForLanguageModeling, TrainerCallback)
import datasets

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--bad-rank", type=int, default=1)
p.add_argument("--steps", type=int, default=12)
p.add_argument("--outdir", default="out")
p.add_argument("--resume", default=None)
p.add_argument("--pylogging", action="store_true")
a = p.parse_args()

rank = int(os.environ.get("RANK", "0"))
world = int(os.environ.get("WORLD_SIZE", "1"))
if a.pylogging:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s [rank%(rank)s] %(name)s: %(message)s".replace("%(rank)s", str(rank)))
log = logging.getLogger("train")

WORDS = "the a cat dog sat on mat ran fast slow red blue big small model data train loss step good bad".split()
def build_tokenizer(pad=True, extra=0):
    vocab = {"[UNK]": 0, "[BOS]": 1, "[EOS]": 2}
    if pad:
        vocab["[PAD]"] = len(vocab)
    for w in WORDS:
        vocab[w] = len(vocab)
    t = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    t.pre_tokenizer = pre_tokenizers.Whitespace()
    kw = dict(tokenizer_object=t, unk_token="[UNK]", bos_token="[BOS]", eos_token="[EOS]")
    if pad:
        kw["pad_token"] = "[PAD]"
    tok = PreTrainedTokenizerFast(**kw)
    if extra:
        tok.add_tokens([f"newtok{i}" for i in range(extra)])
    return tok

import random
def texts(n, seed=0):
    r = random.Random(seed)
    return [" ".join(r.choice(WORDS) for _ in range(r.randint(5, 14))) for _ in range(n)]

tok = build_tokenizer(pad=(a.fault != "nopad"), extra=(40 if (a.fault == "newtokens" and rank == a.bad_rank) else 0))
cfg = GPT2Config(vocab_size=len(build_tokenizer()) if a.fault == "newtokens" else len(tok), n_layer=2, n_embd=64, n_head=4, n_positions=64,
                 bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
                 pad_token_id=tok.pad_token_id)
if a.fault == "bigvocab":
    cfg.vocab_size = 3_000_000  # "room for future tokens"
if a.fault == "modelmismatch" and rank == a.bad_rank:
    cfg.n_layer = 3
torch.manual_seed(0)
model = GPT2LMHeadModel(cfg)

col = "text"
raw = datasets.Dataset.from_dict({"content" if a.fault == "badcolumn" else "text": texts(96, seed=rank)})
if a.fault == "newtokens" and rank == a.bad_rank:
    raw = datasets.Dataset.from_dict({"text": [s + " newtok7 newtok31" for s in texts(96, seed=rank)]})

def tok_fn(ex):
    return tok(ex[col], truncation=True, max_length=32, padding="max_length")
ds = raw.map(tok_fn, batched=True, remove_columns=raw.column_names)
if a.fault == "labelshape":
    ds = ds.map(lambda ex: {"labels": ex["input_ids"][:-4]})
    collator = None
else:
    collator = DataCollatorForLanguageModeling(tok, mlm=False)

kw = dict(output_dir=a.outdir, per_device_train_batch_size=8, max_steps=a.steps, logging_steps=2,
          save_steps=6, report_to=[], use_cpu=True, learning_rate=5e-4, disable_tqdm=False, seed=0,
          dataloader_num_workers=0, save_strategy="steps")
if a.fault == "strategy":
    kw.update(load_best_model_at_end=True, eval_strategy="no")
if a.fault == "oldargs":
    kw.update(evaluation_strategy="steps", eval_steps=4)
if a.fault == "bestmetric":
    kw.update(load_best_model_at_end=True, eval_strategy="steps", eval_steps=5, save_steps=6)
args = TrainingArguments(**kw)

if a.fault == "none" and rank == 0:
    warnings.warn("Detected kernel version 4.4.0, which is below the recommended minimum of 5.5.0; this can cause the process to hang.", UserWarning)
trainer = Trainer(model=model, args=args, train_dataset=ds, eval_dataset=ds.select(range(16)), data_collator=collator)
if a.pylogging:
    log.info("starting training: world=%d steps=%d fault=%s", world, a.steps, a.fault)
trainer.train(resume_from_checkpoint=a.resume)
trainer.save_model(os.path.join(a.outdir, "final"))
print(f"[rank{rank}] done", flush=True)
