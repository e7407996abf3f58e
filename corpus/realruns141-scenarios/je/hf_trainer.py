"""HF Trainer on a tiny GPT-2 (CPU, gloo under torchrun). --fault selects a misconfiguration."""
import os, sys, argparse, logging, signal, time, warnings
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tinyhf
import torch
from datasets import Dataset
from transformers import (Trainer, TrainingArguments, DataCollatorForLanguageModeling, TrainerCallback,
                          set_seed)

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--bad-rank", type=int, default=1)
p.add_argument("--at-step", type=int, default=6)
p.add_argument("--out", default="runs/trainer")
p.add_argument("--steps", type=int, default=16)
p.add_argument("--resume-from", default=None)
p.add_argument("--embd", type=int, default=64)
p.add_argument("--pidfile", default=None)
p.add_argument("--freeze-emb", action="store_true")
p.add_argument("--data-files", default=None)
a = p.parse_args()

logging.basicConfig(format="%(asctime)s %(levelname)s [%(name)s] %(message)s", level=logging.INFO)
log = logging.getLogger("train")
rank = int(os.environ.get("RANK", 0)); world = int(os.environ.get("WORLD_SIZE", 1))
set_seed(42)

tok = tinyhf.make_tokenizer(pad=(a.fault != "nopad"))
kw = {}
if a.fault == "nan":
    kw["initializer_range"] = 3e19   # typo'd init scale: 3e-19 intended?
model = tinyhf.make_model(tok, n_embd=a.embd, **kw)
if a.freeze_emb:
    for n, prm in model.named_parameters():
        if "wte" in n or "wpe" in n or "ln_f" in n:
            prm.requires_grad_(False)
log.info("rank %d/%d model params=%d", rank, world, sum(x.numel() for x in model.parameters()))

if a.data_files:
    from datasets import load_dataset
    ext = a.data_files.rsplit(".", 1)[-1].replace("jsonl", "json")
    log.info("loading %s dataset from %s", ext, a.data_files)
    raw = load_dataset(ext, data_files=a.data_files, split="train")
    log.info("loaded %d rows, columns %s", len(raw), raw.column_names)
else:
    raw = Dataset.from_dict({"text": tinyhf.sentences(256, seed=1, hi=(90 if a.fault == "longseq" else 12))})
if a.fault == "emptyfilter":
    # keep only "long enough" samples -- threshold in characters mixed up with tokens
    raw = raw.filter(lambda ex: len(ex["text"].split()) >= 64)
col = "sentence" if a.fault == "colname" else "text"
maxlen = None if a.fault == "longseq" else 32
def tok_fn(batch):
    return tok(batch[col], truncation=maxlen is not None, max_length=maxlen)
ds = raw.map(tok_fn, batched=True, remove_columns=["text"])
split = ds.train_test_split(test_size=0.125, seed=0)
log.info("dataset ready: train=%d eval=%d columns=%s", len(split["train"]), len(split["test"]), split["train"].column_names)

class Hooks(TrainerCallback):
    def on_step_end(self, args, state, control, **kw):
        if a.pidfile and rank == a.bad_rank and state.global_step == a.at_step:
            with open(a.pidfile, "w") as f: f.write(str(os.getpid()))
        if a.fault == "rank0eval" and rank == 0 and state.global_step == a.at_step:
            # "quick sanity eval" added only on the main process
            log.info("running sanity eval on main process at step %d", state.global_step)
            m = trainer.evaluate()
            log.info("sanity eval %s", m)
        if a.pidfile:
            time.sleep(0.4)

targs = dict(output_dir=a.out, per_device_train_batch_size=8, per_device_eval_batch_size=8,
             max_steps=a.steps, learning_rate=5e-4, logging_steps=2, report_to="none", save_steps=8,
             ddp_backend="gloo" if world > 1 else None, use_cpu=True, dataloader_num_workers=0,
             weight_decay=0.01, disable_tqdm=False, ddp_timeout=45)
if a.fault == "nan":
    targs["logging_nan_inf_filter"] = False
if a.fault == "strategy":
    targs.update(eval_strategy="steps", eval_steps=4, save_strategy="epoch", load_best_model_at_end=True,
                 metric_for_best_model="eval_loss")
else:
    targs.update(eval_strategy="steps", eval_steps=8)
args = TrainingArguments(**targs)
collator = DataCollatorForLanguageModeling(tok, mlm=False)
trainer = Trainer(model=model, args=args, train_dataset=split["train"], eval_dataset=split["test"],
                  data_collator=collator, callbacks=[Hooks()])
res = trainer.train(resume_from_checkpoint=a.resume_from)
log.info("train done: %s", res.metrics)
trainer.save_model(os.path.join(a.out, "final"))
log.info("saved final model to %s", os.path.join(a.out, "final"))
