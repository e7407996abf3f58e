"""Tiny GPT-2 language model: short DDP training (torchrun / accelerate), then export + batched inference.
Everything is built locally (word-level tokenizer from an in-script corpus, GPT2Config from scratch).
--mode selects the post-training path."""
import argparse
import logging
import os
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
import torch
import torch.distributed as dist
from datetime import timedelta

p = argparse.ArgumentParser()
p.add_argument("--mode", default="healthy")
p.add_argument("--steps", type=int, default=20)
p.add_argument("--vocab-size", type=int, default=0, help="override config vocab size")
p.add_argument("--outdir", default="/work/rr124/hg/out/hf")
p.add_argument("--fault-rank", type=int, default=0)
args = p.parse_args()

from tokenizers import Tokenizer, models, pre_tokenizers  # noqa: E402
from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast  # noqa: E402
from transformers.utils import logging as hf_logging  # noqa: E402

logging.basicConfig(level=logging.INFO, format="%(asctime)s [%(levelname)s] %(name)s: %(message)s")
log = logging.getLogger("lm_export")
hf_logging.set_verbosity_warning()

words = ("the model reads a short sentence and predicts the next word while the loss goes down "
         "slowly over many steps of training on a tiny corpus of simple english text with numbers").split()
corpus = []
g = torch.Generator().manual_seed(0)
for i in range(400):
    n = int(torch.randint(6, 14, (1,), generator=g))
    idx = torch.randint(0, len(words), (n,), generator=g)
    corpus.append(" ".join(words[j] for j in idx) + f" n{i}")   # numbered tokens grow the vocab
vocab = {"[PAD]": 0, "[UNK]": 1, "[EOS]": 2}
for line in corpus:
    for w in line.split():
        vocab.setdefault(w, len(vocab))
tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
tok.pre_tokenizer = pre_tokenizers.Whitespace()
tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", eos_token="[EOS]")

distributed = "WORLD_SIZE" in os.environ and int(os.environ["WORLD_SIZE"]) > 1
if distributed:
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
rank = dist.get_rank() if distributed else 0
world = dist.get_world_size() if distributed else 1
log.info(f"rank {rank}/{world} tokenizer vocab={len(tokenizer)}")

# vocab size rounded for "efficiency" (bug when it's smaller than the tokenizer's vocab)
vs = args.vocab_size or len(tokenizer)
cfg = GPT2Config(vocab_size=vs, n_layer=2, n_embd=64, n_head=4, n_positions=64,
                 bos_token_id=2, eos_token_id=2, pad_token_id=0)
torch.manual_seed(0)
model = GPT2LMHeadModel(cfg)
if distributed:
    from torch.nn.parallel import DistributedDataParallel as DDP
    train_model = DDP(model)
else:
    train_model = model
opt = torch.optim.AdamW(train_model.parameters(), lr=1e-3)
shard = corpus[rank::world][:200]
enc = tokenizer(shard[:16], return_tensors="pt", padding="max_length", truncation=True, max_length=16)
t0 = time.time()
for step in range(1, args.steps + 1):
    out = train_model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"], labels=enc["input_ids"])
    opt.zero_grad()
    out.loss.backward()
    opt.step()
    if step % 5 == 0:
        log.info(f"step {step} loss {out.loss.item():.4f} ({(time.time()-t0)/step*1000:.0f} ms/step)")
if distributed:
    dist.barrier()

model.eval()
if rank == args.fault_rank:
    os.makedirs(args.outdir, exist_ok=True)
    if args.mode == "safetensors-raw":
        from safetensors.torch import save_file
        path = os.path.join(args.outdir, "model.safetensors")
        log.info(f"exporting raw state_dict to {path} for the serving team")
        save_file(model.state_dict(), path)
    elif args.mode in ("healthy", "batch-infer"):
        model.save_pretrained(args.outdir)
        tokenizer.save_pretrained(args.outdir)
        log.info(f"saved model + tokenizer to {args.outdir}")
        prompts = [corpus[-1][:40], "the model reads", corpus[-3][:30], "numbers n399 n398"]
        batch = tokenizer(prompts, return_tensors="pt", padding=True)
        with torch.no_grad():
            gen = model.generate(batch["input_ids"], max_new_tokens=8, do_sample=False)
        for pr, g_ in zip(prompts, gen):
            log.info(f"prompt={pr!r} -> {tokenizer.decode(g_[-8:], skip_special_tokens=True)!r}")
if distributed:
    dist.barrier()
log.info("done")
if distributed:
    dist.destroy_process_group()
