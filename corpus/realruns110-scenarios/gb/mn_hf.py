"""Multi-node tiny GPT-2 fine-tuning with a node-local tokenizer (transformers, DDP, gloo).

Every node loads the tokenizer from its own $NODE_ROOT/scratch/tok (copied there by the job prolog)
and tokenizes its own text shard with padding=True.
  --grad-ckpt     enable gradient checkpointing (with use_cache left on in the config)
"""
import json, os, sys, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast
import mnlib

WORDS = ("the a model node rank loss step token batch train data shard gpu cluster job "
         "fast slow small large value weight grad update sync ring tree mesh store").split()


def texts_for(rank, n, seed):
    import random
    rnd = random.Random(seed + rank)
    return [" ".join(rnd.choice(WORDS) for _ in range(rnd.randint(4, 14))) for _ in range(n)]


def main():
    p = mnlib.base_parser()
    p.add_argument("--grad-ckpt", action="store_true")
    p.add_argument("--seq", type=int, default=32)
    p.add_argument("--vocab-multiple", type=int, default=0, help="round the embedding size up (like pad_to_multiple_of)")
    args = p.parse_args()
    rank, world, local_rank, log = mnlib.setup(args)
    tok_dir = os.path.join(mnlib.NODE_ROOT, "scratch", "tok")
    tok = PreTrainedTokenizerFast.from_pretrained(tok_dir)
    log.info(f"tokenizer from {tok_dir}: vocab={len(tok)} pad={tok.pad_token!r}")
    vocab = len(tok)
    if args.vocab_multiple:
        vocab = -(-vocab // args.vocab_multiple) * args.vocab_multiple
    cfg = GPT2Config(n_layer=2, n_embd=64, n_head=2, n_positions=64, vocab_size=vocab,
                     bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id)
    torch.manual_seed(0)
    model = GPT2LMHeadModel(cfg)
    if args.grad_ckpt:
        model.gradient_checkpointing_enable()
        model.config.use_cache = True
    model.train()
    model = DDP(model)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    texts = texts_for(rank, 400, 7)
    t0 = time.time()
    for step in range(args.steps):
        i = (step * args.batch_size) % len(texts)
        enc = tok(texts[i:i + args.batch_size], padding=True, truncation=True, max_length=args.seq,
                  return_tensors="pt")
        labels = enc["input_ids"].masked_fill(enc["attention_mask"] == 0, -100)
        out = model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"], labels=labels)
        opt.zero_grad()
        out.loss.backward()
        opt.step()
        if step % 5 == 0 or step == args.steps - 1:
            avg = mnlib.allreduce_mean(out.loss.item(), world)
            if rank == 0:
                log.info(f"step {step} loss {avg:.4f} ppl {torch.exp(torch.tensor(avg)):.1f} ({time.time()-t0:.1f}s)")
        time.sleep(args.sleep)
    dist.barrier()
    if rank == 0:
        log.info("fine-tuning finished")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
