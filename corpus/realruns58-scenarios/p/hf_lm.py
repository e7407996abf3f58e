"""Tiny Hugging Face models (GPT-2 / BERT / T5) fine-tuned on a local toy corpus, with selectable faults.
All models are built from configs; the tokenizer is a local WordLevel tokenizer (offline)."""
import argparse, os, sys, logging, warnings
from datetime import timedelta
os.environ.setdefault("HF_HUB_OFFLINE", "1")
import torch, torch.nn as nn
import torch.distributed as dist
from tokenizers import Tokenizer, models, pre_tokenizers
import transformers
from transformers import (PreTrainedTokenizerFast, GPT2Config, GPT2LMHeadModel, BertConfig, BertModel,
                          BertForSequenceClassification, T5Config, T5ForConditionalGeneration)

p = argparse.ArgumentParser()
p.add_argument("--model", default="gpt2")
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=-1)
p.add_argument("--fault-step", type=int, default=3)
p.add_argument("--steps", type=int, default=8)
p.add_argument("--bs", type=int, default=4)
p.add_argument("--log", "--pylog", dest="log", action="store_true")
p.add_argument("--tqdm", action="store_true")
p.add_argument("--workdir", default="/work/rr58/p/tmp/hf")
args = p.parse_args()

WORDS = ("the a cat dog sat on mat ran fast slow model train loss data token batch rank step gpu cpu "
         "good bad movie film great awful plot actor scene long short very not is was and but").split()
CORPUS = [" ".join(WORDS[(i * 7 + j * 3) % len(WORDS)] for j in range(3 + (i % 9))) for i in range(200)]


def build_tokenizer(with_pad=True):
    vocab = {"[UNK]": 0, "[BOS]": 1, "[EOS]": 2}
    if with_pad:
        vocab["[PAD]"] = 3
    for w in WORDS:
        vocab.setdefault(w, len(vocab))
    tk = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tk.pre_tokenizer = pre_tokenizers.Whitespace()
    kw = dict(tokenizer_object=tk, unk_token="[UNK]", bos_token="[BOS]", eos_token="[EOS]", model_max_length=32)
    if with_pad:
        kw["pad_token"] = "[PAD]"
    return PreTrainedTokenizerFast(**kw)


def main():
    ddp = "RANK" in os.environ
    rank = int(os.environ.get("RANK", 0)); world = int(os.environ.get("WORLD_SIZE", 1))
    if args.log:
        logging.basicConfig(level=logging.INFO, format=f"%(asctime)s %(levelname)s rank{rank} %(name)s - %(message)s")
        transformers.logging.set_verbosity_info() if args.fault == "verbose" else None
    log = logging.getLogger("finetune")
    say = (lambda m: log.info(m)) if args.log else (lambda m: print(f"[rank {rank}] {m}", flush=True))
    if ddp:
        dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    torch.manual_seed(rank)
    faulty = args.fault_rank < 0 or args.fault_rank == rank

    tok = build_tokenizer(with_pad=not (args.fault == "nopad"))
    if args.fault == "nopad" and tok.pad_token is None and args.model == "gpt2":
        pass  # GPT-2 style tokenizers ship without a pad token
    say(f"tokenizer vocab size {len(tok)}")

    if args.model == "gpt2":
        cfg = GPT2Config(vocab_size=len(tok), n_positions=32, n_layer=2, n_head=2, n_embd=64,
                         bos_token_id=1, eos_token_id=2)
        model = GPT2LMHeadModel(cfg)
    elif args.model == "bert":
        cfg = BertConfig(vocab_size=len(tok), hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                         intermediate_size=128, max_position_embeddings=64, pad_token_id=3)
        d = os.path.join(args.workdir, "bert-tiny-pretrained")
        if rank == 0 and not os.path.isdir(d):
            os.makedirs(args.workdir, exist_ok=True)
            BertModel(cfg).save_pretrained(d)
        if ddp:
            dist.barrier()
        model = BertForSequenceClassification.from_pretrained(d, num_labels=3)
    elif args.model == "t5":
        cfg = T5Config(vocab_size=len(tok), d_model=64, d_kv=16, d_ff=128, num_layers=2, num_heads=2,
                       pad_token_id=3, decoder_start_token_id=3, eos_token_id=2)
        model = T5ForConditionalGeneration(cfg)
    say(f"model {args.model}: {sum(p.numel() for p in model.parameters())/1e3:.1f}K params")

    if args.fault == "new_tokens":
        # domain tokens added for the fine-tuning set (model.resize_token_embeddings never called)
        tok.add_tokens(["<user>", "<assistant>", "<sep>"])
        say(f"added 3 domain tokens, tokenizer vocab now {len(tok)}")

    if args.fault in ("gradckpt_ddp", "healthy_gc"):
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": True})
        model.config.use_cache = True if args.fault == "healthy_gc" else model.config.use_cache
    if ddp:
        from torch.nn.parallel import DistributedDataParallel as DDP
        model = DDP(model, find_unused_parameters=(args.fault in ("gradckpt_ddp",)))
    opt = torch.optim.AdamW(model.parameters(), lr=5e-4)

    shard = CORPUS[rank::world]
    bar = None
    if args.tqdm and rank == 0:
        from tqdm import tqdm
        bar = tqdm(total=args.steps, desc=f"finetune {args.model}", file=sys.stderr, mininterval=0)
    for step in range(args.steps):
        texts = shard[step * args.bs:(step + 1) * args.bs]
        if args.fault == "new_tokens" and faulty and step >= args.fault_step:
            texts = [f"<user> {t} <sep> <assistant>" for t in texts]
        if args.fault == "truncation" and step >= args.fault_step:
            texts = [" ".join([t] * 6) for t in texts]  # long documents from the second file
        trunc = args.fault != "truncation"
        if args.fault == "nopad":
            enc = tok(texts, padding=True, truncation=True, return_tensors="pt")
        else:
            enc = tok(texts, padding=True, truncation=trunc, max_length=32 if trunc else None, return_tensors="pt")
        if args.model == "gpt2":
            labels = enc["input_ids"].clone()
            labels[enc["attention_mask"] == 0] = -100
            outp = model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"], labels=labels)
        elif args.model == "bert":
            y = torch.tensor([len(t.split()) % 3 for t in texts])
            if args.fault == "float_labels" and faulty:
                y = y.float()  # labels column came from pandas as float64 -> float
            outp = model(**enc, labels=y)
        elif args.model == "t5":
            tgt = tok([" ".join(t.split()[::-1]) for t in texts], padding=True, return_tensors="pt")
            if args.fault == "t5_labels_key":
                # collator renamed the key: passes decoder targets as 'label_ids' which the loop drops
                outp = model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"])
            else:
                lab = tgt["input_ids"].clone(); lab[tgt["attention_mask"] == 0] = -100
                outp = model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"], labels=lab)
        loss = outp.loss
        opt.zero_grad(); loss.backward(); opt.step()
        if args.fault == "ddp_generate" and rank == 0 and step == args.fault_step:
            prompt = tok(["the cat"], return_tensors="pt")
            g = model.generate(**prompt, max_new_tokens=5)
            say("sample: " + tok.decode(g[0]))
        if bar:
            bar.update(1); bar.set_postfix(loss=f"{loss.item():.3f}")
        else:
            say(f"step {step} loss {loss.item():.4f}")
    if bar:
        bar.close()
    say("done")
    if ddp:
        dist.barrier(); dist.destroy_process_group()


if __name__ == "__main__":
    main()
