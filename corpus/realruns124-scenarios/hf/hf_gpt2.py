"""Tiny GPT-2 language-model fine-tune, all local (tokenizer built from a word list, model from a config).

--mode loop    : hand-written DDP loop with python logging (per-rank shards)
--mode trainer : transformers.Trainer
Flags pick the fault, rank and step.
"""
import argparse
import json
import logging
import os
import sys
import time
import warnings
from datetime import timedelta

os.environ.setdefault("HF_HUB_OFFLINE", "1")
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

p = argparse.ArgumentParser()
p.add_argument("--mode", default="loop", choices=["loop", "trainer"])
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=10)
p.add_argument("--steps", type=int, default=24)
p.add_argument("--outdir", default="/tmp/rr124hf_hf")
p.add_argument("--run-name", default="gpt2-tiny")
p.add_argument("--fmt", default="std", choices=["std", "json"])
args = p.parse_args()

WORDS = ("the a of to and in is was for on that with as by at from it be this are an or which has had not "
         "model train data loss step rank gradient batch token layer weight learning rate epoch cluster node "
         "disk file shard cache log metric value sample text story day night river city road house").split()


def build_tokenizer(extra_words=()):
    vocab = {"<unk>": 0, "<|endoftext|>": 1}
    for w in list(WORDS) + list(extra_words):
        vocab.setdefault(w, len(vocab))
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    t = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", eos_token="<|endoftext|>",
                                bos_token="<|endoftext|>")
    if args.fault != "nopad":
        t.pad_token = t.eos_token
    return t


def corpus(rank, n=400, words=WORDS):
    import random
    r = random.Random(rank)
    return [" ".join(r.choice(words) for _ in range(r.randint(6, 20))) for _ in range(n)]


class RankFilter(logging.Filter):
    def __init__(self, rank):
        super().__init__()
        self.rank = rank

    def filter(self, record):
        record.rank = self.rank
        return True


def setup_logging(rank, world):
    h = logging.StreamHandler(sys.stderr)
    h.addFilter(RankFilter(rank))
    if args.fmt == "json":
        class F(logging.Formatter):
            def format(self, rec):
                return json.dumps({"time": self.formatTime(rec), "lvl": rec.levelname, "rank": rec.rank,
                                   "world": world, "src": rec.name, "message": rec.getMessage()})
        h.setFormatter(F())
    else:
        h.setFormatter(logging.Formatter(
            "%(asctime)s | %(levelname)-7s | rank %(rank)s/" + str(world) + " | %(name)s:%(lineno)d - %(message)s"))
    logging.basicConfig(level=logging.DEBUG, handlers=[h], force=True)
    logging.captureWarnings(True)
    for noisy in ("urllib3", "filelock", "fsspec"):
        logging.getLogger(noisy).setLevel(logging.INFO)


def make_config(vocab_size):
    return GPT2Config(n_layer=2, n_embd=64, n_head=2, n_positions=64, vocab_size=vocab_size,
                      bos_token_id=1, eos_token_id=1)


def run_loop():
    rank, world = int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))
    setup_logging(rank, world)
    log = logging.getLogger("lm.train")
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    log.info("init done backend=gloo world=%d", world)
    base_tok = build_tokenizer()
    tok = base_tok
    texts = corpus(rank)
    if args.fault == "newtokens" and rank == args.fault_rank:
        # this node's shard was re-tokenized with the domain-extended tokenizer (added words)
        extra = ["gpu%d" % i for i in range(40)]
        tok = build_tokenizer(extra)
        texts = texts[:args.fault_step * 8] + corpus(rank + 100, words=WORDS + extra)
        log.debug("tokenizer for shard: vocab=%d", len(tok))
    torch.manual_seed(0)
    model = GPT2LMHeadModel(make_config(len(base_tok)))
    log.info("model params=%d vocab=%d", sum(p.numel() for p in model.parameters()), model.config.vocab_size)
    resume = os.path.join(args.outdir, "resume.pt")
    if args.fault == "weightsonly":
        if rank == 0:
            if not os.path.exists(resume):
                os.makedirs(args.outdir, exist_ok=True)
                torch.save({"model": model.state_dict(), "args": args, "step": 0}, resume, _use_new_zipfile_serialization=True)
            log.info("resuming from %s", resume)
            ck = torch.load(resume, map_location="cpu")
            model.load_state_dict(ck["model"])
    node_ck = os.path.join(args.outdir, f"node{rank}", "last.pt")
    if args.fault == "resume-sd":
        if not os.path.exists(node_ck):
            # node-local copies staged by the job prologue; node 3 still holds last week's 3-layer run
            os.makedirs(os.path.dirname(node_ck), exist_ok=True)
            src = model if rank != args.fault_rank else GPT2LMHeadModel(
                GPT2Config(n_layer=3, n_embd=64, n_head=2, n_positions=64, vocab_size=len(base_tok) + 16))
            torch.save({"model": src.state_dict(), "step": 500}, node_ck)
        log.info("resuming model from %s", node_ck)
        model.load_state_dict(torch.load(node_ck, map_location="cpu")["model"])
    ddp = DDP(model)
    if args.fault == "resume-opt":
        decay = [p for n, p in model.named_parameters() if p.ndim >= 2]
        no_decay = [p for n, p in model.named_parameters() if p.ndim < 2]
        opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}], lr=1e-3)
        ck = os.path.join(args.outdir, "opt_last.pt")
        if args.fault_step > 0 and not os.path.exists(ck) and rank == 0:
            os.makedirs(args.outdir, exist_ok=True)
            # state written by the previous version of this script (single param group)
            old = torch.optim.AdamW(model.parameters(), lr=1e-3)
            model(input_ids=torch.ones(1, 4, dtype=torch.long), labels=torch.ones(1, 4, dtype=torch.long)).loss.backward()
            old.step(); model.zero_grad()
            torch.save({"optimizer": old.state_dict(), "step": 300}, ck)
        dist.barrier()
        log.info("resuming optimizer from %s", ck)
        opt.load_state_dict(torch.load(ck, map_location="cpu")["optimizer"])
    else:
        opt = torch.optim.AdamW(ddp.parameters(), lr=1e-3)
    t0 = time.time()
    for step in range(1, args.steps + 1):
        batch_txt = texts[(step * 8) % len(texts):(step * 8) % len(texts) + 8]
        enc = tok(batch_txt, return_tensors="pt", padding=True, truncation=True, max_length=32)
        labels = enc["input_ids"].masked_fill(enc["attention_mask"] == 0, -100)
        log.debug("step=%d batch input_ids=%s max_id=%d", step, tuple(enc["input_ids"].shape), int(enc["input_ids"].max()))
        out = ddp(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"], labels=labels)
        opt.zero_grad()
        out.loss.backward()
        opt.step()
        lt = out.loss.detach().clone()
        dist.all_reduce(lt)
        log.info("step %d loss %.4f global_loss %.4f ppl %.1f tok/s %.0f", step, out.loss.item(), lt.item() / world,
                 torch.exp(lt / world).item(), step * enc["input_ids"].numel() / (time.time() - t0))
        if step % args.fault_step == 0:
            if rank == 0:
                if args.fault == "safetensors":
                    from safetensors.torch import save_file
                    os.makedirs(args.outdir, exist_ok=True)
                    fn = os.path.join(args.outdir, f"step{step}.safetensors")
                    save_file(model.state_dict(), fn, metadata={"step": str(step)})
                    log.info("saved %s", fn)
                else:
                    d = os.path.join(args.outdir, f"{args.run_name}-step{step}")
                    os.makedirs(d, exist_ok=True)
                    model.save_pretrained(d)
                    tok.save_pretrained(d)
                    log.info("saved %s", d)
            dist.barrier()
        time.sleep(0.05)
    log.info("finished %d steps in %.1fs", args.steps, time.time() - t0)
    dist.destroy_process_group()


def run_trainer():
    from datasets import Dataset
    from transformers import DataCollatorForLanguageModeling, Trainer, TrainingArguments
    rank = int(os.environ.get("RANK", 0))
    world = int(os.environ.get("WORLD_SIZE", 1))
    setup_logging(rank, world)
    import transformers
    transformers.logging.set_verbosity_info()
    log = logging.getLogger("lm.trainer")
    tok = build_tokenizer()
    ds = Dataset.from_dict({"text": corpus(0, n=256)})
    if args.fault == "nopad":
        # collator pads; the tokenizer here comes from the raw GPT-2 style export (no pad token)
        ds = ds.map(lambda b: tok(b["text"], truncation=True, max_length=32), batched=True, remove_columns=["text"])
    else:
        ds = ds.map(lambda b: tok(b["text"], truncation=True, max_length=32), batched=True, remove_columns=["text"])
    split = ds.train_test_split(test_size=0.1, seed=0)
    torch.manual_seed(0)
    model = GPT2LMHeadModel(make_config(len(tok)))
    kw = dict(output_dir=args.outdir, per_device_train_batch_size=8, per_device_eval_batch_size=8, max_steps=args.steps,
              logging_steps=2, learning_rate=5e-4, report_to=[], use_cpu=True, ddp_backend="gloo",
              dataloader_num_workers=0, save_steps=10, eval_steps=10, eval_strategy="steps", disable_tqdm=False,
              ddp_timeout=60)
    if args.fault == "bestmodel":
        kw.update(load_best_model_at_end=True, metric_for_best_model="eval_loss", save_strategy="epoch")
    if args.fault == "none":
        kw.update(warmup_steps=4, lr_scheduler_type="cosine", fp16=False)
    targs = TrainingArguments(**kw)
    coll = DataCollatorForLanguageModeling(tok, mlm=False)
    trainer = Trainer(model=model, args=targs, train_dataset=split["train"], eval_dataset=split["test"],
                      data_collator=coll)
    log.info("starting trainer.train() world=%d", world)
    trainer.train()
    log.info("done")


if __name__ == "__main__":
    if args.mode == "loop":
        run_loop()
    else:
        run_trainer()
