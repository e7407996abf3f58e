"""Tiny GPT-2 language-model fine-tune with the HF Trainer under torchrun (gloo, CPU).

--fault selects an induced problem; --fault-rank / --fault-step select where/when.
"""
import argparse, json, os, random, sqlite3, sys, time, warnings
from datetime import timedelta

import torch
import torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=6)
p.add_argument("--steps", type=int, default=16)
p.add_argument("--out", default="/tmp/rr60y_out")
p.add_argument("--resume", default=None)
p.add_argument("--n-layer", type=int, default=2)
p.add_argument("--n-embd", type=int, default=64)
p.add_argument("--save-steps", type=int, default=8)
p.add_argument("--eval-steps", type=int, default=0)
p.add_argument("--workers", type=int, default=0)
p.add_argument("--pg-timeout", type=int, default=20)
p.add_argument("--lr", type=float, default=5e-4)
p.add_argument("--disable-tqdm", action="store_true")
p.add_argument("--step-sleep", type=float, default=0.0)
p.add_argument("--log-ts", action="store_true")
args = p.parse_args()
if args.log_ts:
    import logging
    logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - rank" + os.environ.get("RANK", "0")
                        + " - %(message)s", level=logging.INFO)

os.environ.setdefault("HF_HUB_OFFLINE", "1")
rank = int(os.environ.get("RANK", "0"))
world = int(os.environ.get("WORLD_SIZE", "1"))
if world > 1 and not dist.is_initialized():
    dist.init_process_group("gloo", timeout=timedelta(seconds=args.pg_timeout))

from transformers import (GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments,
                          TrainerCallback, default_data_collator, DataCollatorWithPadding,
                          PreTrainedTokenizerFast)
from datasets import Dataset

VOCAB = 256
SEQ = 32
random.seed(0)


def make_rows(n, seq=SEQ):
    rows = []
    for i in range(n):
        ids = [random.randrange(VOCAB) for _ in range(seq)]
        rows.append({"input_ids": ids, "attention_mask": [1] * seq, "labels": list(ids)})
    return rows


rows = make_rows(256)

# --- data faults: broken records that land in one rank's shard -------------------
# The DistributedSampler of the Trainer deals sample i to rank i % world (no shuffle
# in this script), so a record at index k*world + r is seen by rank r.
def idx_for(r, step, bs=4):
    return (step * world + r) * bs

if args.fault == "token_oob":
    # vocabulary built from a different tokenizer: a few ids >= vocab size
    i = idx_for(args.fault_rank, args.fault_step)
    rows[i]["input_ids"][5] = VOCAB + 1000
    rows[i]["labels"][5] = VOCAB + 1000
if args.fault == "ragged":
    # one record was not truncated to SEQ (preprocessing skipped truncation)
    i = idx_for(args.fault_rank, args.fault_step)
    rows[i]["input_ids"] = rows[i]["input_ids"] + [3] * 9
    rows[i]["attention_mask"] = rows[i]["attention_mask"] + [1] * 9
    rows[i]["labels"] = rows[i]["labels"] + [3] * 9

ds = Dataset.from_list(rows)
if args.fault == "corrupt_json":
    # records are stored as JSON lines; one line was cut short by an interrupted export
    recs = [json.dumps(r) for r in rows]
    i = idx_for(args.fault_rank, args.fault_step)
    recs[i] = recs[i][:57]
    ds = Dataset.from_dict({"record": recs})

    def decode(batch):
        out = {"input_ids": [], "attention_mask": [], "labels": []}
        for line in batch["record"]:
            r = json.loads(line)
            for k in out:
                out[k].append(r[k])
        return out
    ds.set_transform(decode)
eval_ds = Dataset.from_list(make_rows(64))

data_collator = default_data_collator
tokenizer = None
if args.fault == "nopad":
    from tokenizers import Tokenizer, models, pre_tokenizers
    vocab = {f"w{i}": i for i in range(VOCAB - 1)}
    vocab["[UNK]"] = VOCAB - 1
    tk = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tk.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="[UNK]")
    texts = [" ".join(f"w{random.randrange(VOCAB-1)}" for _ in range(random.randint(8, SEQ)))
             for _ in range(256)]
    ds = Dataset.from_dict({"text": texts}).map(lambda b: tokenizer(b["text"]), batched=True,
                                                 remove_columns=["text"])
    ds = ds.map(lambda b: {"labels": b["input_ids"]})
    data_collator = DataCollatorWithPadding(tokenizer)

cfg = GPT2Config(vocab_size=VOCAB, n_positions=64, n_layer=args.n_layer, n_embd=args.n_embd,
                 n_head=4, bos_token_id=0, eos_token_id=0)
model = GPT2LMHeadModel(cfg)
if args.fault == "unused_head":
    # auxiliary value head added for an RLHF experiment but never used in the loss
    model.value_head = torch.nn.Linear(args.n_embd, 1)
if args.fault == "bad_genconfig":
    # sampling temperature configured although do_sample stays False
    model.generation_config.temperature = 0.7
    model.generation_config.top_p = 0.9


class StepProbe(TrainerCallback):
    """Project callbacks: metrics to a run DB, per-rank throughput logging, eval hooks."""

    def __init__(self):
        self.t0 = time.time()

    def on_step_end(self, a, state, control, **kw):
        if args.step_sleep:
            time.sleep(args.step_sleep)
        if args.fault in ("fifo_hang", "monitored_hang") and rank == args.fault_rank and state.global_step == args.fault_step:
            # rank-local "pause file" mechanism: block on a named pipe nobody writes
            path = f"/tmp/rr60y_pause_rank{rank}"
            if not os.path.exists(path):
                os.mkfifo(path)
            with open(path) as f:
                f.read()
        if args.fault == "monitored_hang" and state.global_step % 4 == 0:
            dist.monitored_barrier(timeout=timedelta(seconds=10))
        if args.fault == "fd_leak" and rank == args.fault_rank:
            # per-step shard-index handles opened and never closed
            self._h = getattr(self, "_h", [])
            for j in range(40):
                self._h.append(open(__file__))
        if args.fault == "sqlite" and state.global_step % 2 == 0:
            con = sqlite3.connect(os.path.join(args.out, "runs.db"), timeout=0.05)
            con.execute("create table if not exists m(rank int, step int, t real)")
            con.execute("begin exclusive")
            con.execute("insert into m values(?,?,?)", (rank, state.global_step, time.time()))
            if rank == 0:
                time.sleep(0.5)
            con.commit()
            con.close()

    def on_log(self, a, state, control, logs=None, **kw):
        if args.fault == "cb_keyerror" and state.is_world_process_zero and state.global_step >= args.fault_step:
            # project code expects the grad-norm key name of an old transformers version
            print(f"[rank{rank}] step {state.global_step} gnorm={logs['grad_norm_clipped']:.3f}")

    def on_evaluate(self, a, state, control, metrics=None, **kw):
        if args.fault == "eval_oom" and rank == args.fault_rank:
            # keep full logits of every eval sample for an offline analysis (bug: float64, x1000)
            buf = torch.empty(len(eval_ds) * 10000, SEQ, VOCAB, dtype=torch.float64)
            buf.zero_()


class RankZeroEval(TrainerCallback):
    def __init__(self):
        self.trainer = None

    def on_step_end(self, a, state, control, **kw):
        if args.fault == "eval_rank0" and state.global_step == args.fault_step and rank == 0:
            print(f"[rank0] running extra evaluation at step {state.global_step}", flush=True)
            m = self.trainer.evaluate()
            print(m, flush=True)


extra = {}
if args.fault == "old_arg":
    extra["evaluation_strategy"] = "steps"
if args.fault == "best_mismatch":
    extra.update(load_best_model_at_end=True, eval_strategy="epoch", save_strategy="steps")
elif args.eval_steps:
    extra.update(eval_strategy="steps", eval_steps=args.eval_steps)

targs = TrainingArguments(
    output_dir=args.out,
    per_device_train_batch_size=4,
    per_device_eval_batch_size=8,
    max_steps=args.steps,
    learning_rate=args.lr,
    logging_steps=2,
    save_steps=args.save_steps,
    save_strategy=extra.pop("save_strategy", "steps"),
    report_to=[],
    dataloader_num_workers=args.workers,
    disable_tqdm=args.disable_tqdm,
    seed=42,
    remove_unused_columns=args.fault != "corrupt_json",
    use_cpu=True,
    ddp_backend="gloo" if world > 1 else None,
    ddp_timeout=args.pg_timeout,
    ddp_find_unused_parameters=False if args.fault == "unused_head" else None,
    **extra,
)

rz = RankZeroEval()
trainer = Trainer(model=model, args=targs, train_dataset=ds, eval_dataset=eval_ds,
                  data_collator=data_collator, callbacks=[StepProbe(), rz])
rz.trainer = trainer
# deterministic sharding so that record index -> rank is known
# (accelerate then deals batch b to process b % world)
trainer._get_train_sampler = lambda *a, **k: torch.utils.data.SequentialSampler(trainer.train_dataset)

if args.fault == "noisy":
    warnings.warn("torch.utils._pytree._register_pytree_node is deprecated. Please use "
                  "torch.utils._pytree.register_pytree_node instead.", FutureWarning)
if args.log_ts:
    import transformers
    transformers.utils.logging.set_verbosity_info()
    transformers.utils.logging.disable_default_handler()
    transformers.utils.logging.enable_propagation()
result = trainer.train(resume_from_checkpoint=args.resume)
print(f"[rank{rank}] train result: {result.metrics}", flush=True)
if args.eval_steps or args.fault in ("eval_oom",):
    print(trainer.evaluate())
trainer.save_model(os.path.join(args.out, "final"))
if world > 1:
    dist.barrier()
    dist.destroy_process_group()
print(f"[rank{rank}] done", flush=True)
