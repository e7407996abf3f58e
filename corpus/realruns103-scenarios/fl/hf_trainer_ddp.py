"""HF Trainer on a tiny GPT-2, launched with torchrun (DDP over gloo) or plain python.
--fault selects a misconfiguration/bug; --rank/--step choose where it bites."""
import argparse, math, os, sys, logging
sys.path.insert(0, os.path.dirname(__file__))
import tinyhf
import torch
from datasets import Dataset
from transformers import (Trainer, TrainingArguments, DataCollatorForLanguageModeling, TrainerCallback)

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--rank", type=int, default=1)
p.add_argument("--step", type=int, default=3)
p.add_argument("--out", default="runs/trainer")
p.add_argument("--max-steps", type=int, default=12)
p.add_argument("--grad-accum", type=int, default=1)
p.add_argument("--eval", action="store_true")
p.add_argument("--fsdp", default="")
p.add_argument("--streaming", action="store_true")
a = p.parse_args()

logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.INFO)
log = logging.getLogger("train_clm")
rank = int(os.environ.get("RANK", 0))

tok = tinyhf.make_tokenizer(pad=(a.fault != "nopad"))
if a.fault == "nopad":
    # base-model style tokenizer: eos only, no pad token configured
    pass
texts = tinyhf.make_texts(96, seed=1)
if a.fault == "vocab":
    # new special tokens for the prompt format, added after the model was built
    tok.add_special_tokens({"additional_special_tokens": ["<ctx>", "<resp>"]})
    texts = [("<ctx> " + t + " <resp> the loss") if i % 5 == 3 else t for i, t in enumerate(texts)]
model = tinyhf.make_model(vocab_size=43 if a.fault == "vocab" else len(tok))
if a.fault == "localvocab":
    # domain terms: every process scans the shard it will read and extends the tokenizer with unseen words
    import random
    shard = [w for i, t in enumerate(texts) if i % int(os.environ.get("WORLD_SIZE", 1)) == rank for w in t.split()]
    rng = random.Random(rank)
    shard += [f"term{rng.randint(0, 40)}" for _ in range(12)]
    new = sorted(set(w for w in shard if w not in tok.get_vocab()))
    tok.add_tokens(new)
    model.resize_token_embeddings(len(tok))
    log.info("added %d domain tokens, vocab is now %d", len(new), len(tok))

ds = Dataset.from_dict({"text": texts})
def tokenize(batch):
    return tok(batch["text"], truncation=True, max_length=32)
ds = ds.map(tokenize, batched=True, remove_columns=["text"])
split = ds.train_test_split(test_size=0.25, seed=0)
if a.streaming:
    # stream the training split like a large on-disk corpus would be
    split["train"] = split["train"].to_iterable_dataset(num_shards=4)
collator = DataCollatorForLanguageModeling(tokenizer=tok, mlm=False)

class PerplexityCallback(TrainerCallback):
    """logs perplexity of the last evaluation next to training loss"""
    def on_step_end(self, args, state, control, **kw):
        if a.fault == "callback" and state.global_step == a.step and rank == a.rank:
            last = state.log_history[-1]
            ppl = math.exp(last["eval_loss"])
            log.info("step %d ppl %.2f", state.global_step, ppl)

kw = dict(output_dir=a.out, per_device_train_batch_size=4, per_device_eval_batch_size=4,
          max_steps=a.max_steps, learning_rate=5e-4, logging_steps=2, save_steps=6,
          gradient_accumulation_steps=a.grad_accum, report_to="none", ddp_timeout=40,
          use_cpu=True, dataloader_num_workers=0, disable_tqdm=False, seed=0)
if a.fault == "hfargs":
    kw.update(load_best_model_at_end=True, eval_strategy="steps", eval_steps=4, save_strategy="epoch",
              metric_for_best_model="eval_loss")
if a.fsdp:
    kw.update(fsdp=a.fsdp, fsdp_config={"version": 1, "use_orig_params": False, "transformer_layer_cls_to_wrap": ["GPT2Block"]})
if a.streaming:
    kw.pop("max_steps")
if a.eval:
    kw.update(eval_strategy="steps", eval_steps=6)
args = TrainingArguments(**kw)
trainer = Trainer(model=model, args=args, train_dataset=split["train"], eval_dataset=split["test"],
                  data_collator=collator, callbacks=[PerplexityCallback()])
log.info("world_size=%d rank=%d train_samples=%d", args.world_size, rank, len(split["train"]))
result = trainer.train()
log.info("train done: %s", result.metrics)
if a.fault == "evalrank0":
    # only the main process reports held-out metrics
    if trainer.is_world_process_zero():
        metrics = trainer.evaluate()
        log.info("eval: %s", metrics)
else:
    metrics = trainer.evaluate()
    log.info("eval: %s", metrics)
trainer.save_model(os.path.join(a.out, "final"))
log.info("saved final model")
