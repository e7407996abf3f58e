"""Fine-tune a tiny GPT-2 with transformers.Trainer. --fault selects a misconfiguration."""
import argparse, os, sys, logging
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import make_tokenizer, make_model, sentences, WORDS

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--outdir", default="out_trainer")
p.add_argument("--steps", type=int, default=30)
p.add_argument("--save-every", type=int, default=0)
p.add_argument("--bad-rank", type=int, default=1)
p.add_argument("--bad-step", type=int, default=8)
p.add_argument("--workers", type=int, default=0)
p.add_argument("--pylog", action="store_true")
p.add_argument("--corpus-stats", action="store_true")
p.add_argument("--find-unused", action="store_true")
a = p.parse_args()

if a.pylog:
    logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s",
                        datefmt="%m/%d/%Y %H:%M:%S", level=logging.INFO)
log = logging.getLogger("finetune")

import torch
from datasets import Dataset
from transformers import (Trainer, TrainingArguments, DataCollatorForLanguageModeling,
                          TrainerCallback, set_seed)
import transformers
transformers.logging.set_verbosity_info() if a.pylog else None

rank = int(os.environ.get("RANK", "0"))
set_seed(42)
tok = make_tokenizer(pad=(a.fault != "nopad"))
if a.fault == "addtok":
    # new special tokens for the chat format; embeddings are not resized (the bug)
    tok.add_special_tokens({"additional_special_tokens": ["<|user|>", "<|assistant|>"]})
model = make_model(tok) if a.fault != "addtok" else None
if a.fault == "addtok":
    from transformers import GPT2Config, GPT2LMHeadModel
    # model built from the base vocabulary size (as if loaded from the base checkpoint)
    cfg = GPT2Config(vocab_size=len(tok) - 2, n_positions=64, n_layer=2, n_embd=64, n_head=4,
                     pad_token_id=tok.pad_token_id)
    model = GPT2LMHeadModel(cfg)

if a.fault == "badgen":
    # user tweaks sampling params for later eval generation but leaves greedy decoding on
    model.generation_config.temperature = 0.2
    model.generation_config.top_p = 0.9
    model.generation_config.do_sample = False

texts = sentences(256, seed=1)
if a.fault == "addtok":
    # chat-formatted samples use the new tokens: only a handful of rows of the corpus
    for i in (37, 141, 200):
        texts[i] = "<|user|> " + texts[i] + " <|assistant|> yes"
ds = Dataset.from_dict({"text": texts})
if a.corpus_stats:
    # token statistics over the concatenated documents (no truncation: just counting)
    docs = [" ".join(texts[i:i + 16]) for i in range(0, len(texts), 16)]
    n = [len(tok(d)["input_ids"]) for d in docs]
    print(f"corpus: {len(docs)} docs, {sum(n)} tokens, max doc {max(n)} tokens")


def tokenize(batch):
    return tok(batch["text"], truncation=True, max_length=32)


ds = ds.map(tokenize, batched=True, remove_columns=["text"])
collator = DataCollatorForLanguageModeling(tok, mlm=False)

kw = dict(output_dir=a.outdir, per_device_train_batch_size=8, max_steps=a.steps,
          learning_rate=5e-4, logging_steps=5, report_to=[], use_cpu=True,
          dataloader_num_workers=a.workers, save_strategy="no", disable_tqdm=False)
if a.save_every:
    kw.update(save_strategy="steps", save_steps=a.save_every)
if a.fault == "strategy":
    kw.update(eval_strategy="epoch", save_strategy="steps", save_steps=10,
              load_best_model_at_end=True, metric_for_best_model="loss")
if a.fault == "removedarg":
    kw.update(evaluation_strategy="steps", eval_steps=10)
if a.fault == "tensorboard":
    kw.update(report_to=["tensorboard"])
if a.fault == "bnb":
    kw.update(optim="adamw_bnb_8bit")
if a.fault == "gc":
    kw.update(gradient_checkpointing=True, gradient_checkpointing_kwargs={"use_reentrant": True},
              ddp_find_unused_parameters=True)
if a.find_unused:
    kw.update(ddp_find_unused_parameters=True)
if a.fault == "none-gc":
    kw.update(gradient_checkpointing=True)

args = TrainingArguments(**kw)
eval_ds = ds.select(range(32)) if a.fault in ("strategy", "removedarg") else None
trainer = Trainer(model=model, args=args, train_dataset=ds, eval_dataset=eval_ds,
                  data_collator=collator)
if a.pylog:
    log.info("rank %d: %d train rows, world size %d", rank, len(ds), args.world_size)
resume = None
if a.fault == "resume":
    resume = os.path.join(a.outdir, "checkpoint-500")
trainer.train(resume_from_checkpoint=resume)
trainer.save_model(a.outdir)
if a.pylog:
    log.info("done: saved to %s", a.outdir)
