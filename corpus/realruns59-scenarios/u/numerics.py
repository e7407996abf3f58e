"""Numerics faults in a tiny DDP language-model training loop (CPU, gloo).
--fault selects the bug, --fault-rank / --fault-step where it bites."""
import argparse, os, sys, math, time, logging, warnings
from datetime import timedelta
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=6)
p.add_argument("--steps", type=int, default=12)
p.add_argument("--lr", type=float, default=3e-3)
p.add_argument("--vocab", type=int, default=100)
p.add_argument("--logfmt", default="print", choices=["print", "logging", "tqdm"])
p.add_argument("--spawn", type=int, default=0, help="use torch.multiprocessing.spawn with N procs")
p.add_argument("--port", type=int, default=29960)
p.add_argument("--single", action="store_true")
args = p.parse_args()

class TinyLM(nn.Module):
    def __init__(self, vocab, d=32, max_len=None, with_proto=False):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.zeros(max_len if max_len else 64, d))
        self.l1 = nn.Linear(d, d)
        self.head = nn.Linear(d, vocab)
        if with_proto:
            self.proto = nn.Parameter(torch.randn(8, d))
    def forward(self, ids, fault=None):
        h = self.emb(ids) + self.pos[: ids.shape[1]]
        if fault == "raw_features":
            h = h * 1e5  # features from the un-normalised shard
        if fault == "half_fill":
            # causal attention mask, the usual -1e9 trick
            att = h @ h.transpose(1, 2) / math.sqrt(h.shape[-1])
            mask = torch.triu(torch.ones(ids.shape[1], ids.shape[1], dtype=torch.bool), 1)
            att = att.masked_fill(mask, -1e9)
            h = att.softmax(-1) @ h
        if fault == "autocast_dtype":
            with torch.autocast("cpu", dtype=torch.bfloat16):
                h = self.l1(h)
            h = torch.relu(h) @ self.l1.weight  # tied projection, done outside autocast
        else:
            h = torch.relu(self.l1(h))
        return self.head(h), h

def run(rank, world):
    if args.logfmt == "logging":
        logging.basicConfig(level=logging.INFO, format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s")
    log = logging.getLogger("train")
    say = (lambda m: log.info(m)) if args.logfmt == "logging" else (lambda m: print(f"[rank{rank}] {m}", flush=True))
    if world > 1:
        dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=30))
    torch.manual_seed(0)
    vocab = args.vocab
    max_len = None
    if args.fault == "maxlen":
        # model_max_length taken from a tokenizer with no max length configured
        from transformers import PreTrainedTokenizerFast
        from tokenizers import Tokenizer, models, pre_tokenizers
        tk = Tokenizer(models.WordLevel({f"w{i}": i for i in range(vocab)} | {"[UNK]": vocab}, unk_token="[UNK]"))
        tk.pre_tokenizer = pre_tokenizers.Whitespace()
        tok = PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="[UNK]")
        say(f"tokenizer vocab={len(tok)} model_max_length={tok.model_max_length}")
        max_len = tok.model_max_length
    model = TinyLM(vocab, max_len=max_len, with_proto=args.fault == "half_cdist")
    if args.fault in ("half_cdist", "gradscaler", "half_fill"):
        model = model.half()
    if args.fault == "bf16_specnorm":
        model = model.to(torch.bfloat16)  # pure-bf16 training to halve memory
    if world > 1:
        model = nn.parallel.DistributedDataParallel(model)
    core = model.module if world > 1 else model
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr) if args.fault != "gradscaler" else torch.optim.SGD(model.parameters(), lr=args.lr)
    scaler = torch.amp.GradScaler("cpu") if args.fault in ("gradscaler", "scale_underflow") else None
    min_loss_scale = 1e-4
    if args.fault == "anomaly":
        torch.autograd.set_detect_anomaly(True)
    g = torch.Generator().manual_seed(1234 + rank)
    it = range(args.steps)
    if args.logfmt == "tqdm":
        from tqdm import tqdm
        it = tqdm(it, desc=f"rank{rank}", position=rank, mininterval=0, file=sys.stderr)
    skipped = 0
    for step in it:
        ids = torch.randint(0, vocab, (8, 16), generator=g)
        bite = step >= args.fault_step and (rank == args.fault_rank or world == 1)
        if args.fault == "embed_oob" and bite:
            # added <pad>/<eos> special tokens to the tokenizer but never resized the embedding
            ids[:, -2:] = vocab  # eos id == len(tokenizer) - 1 == vocab
        if args.fault == "int_overflow" and bite:
            # feature-hashing of (doc_id, token) pairs computed in int32
            doc = torch.full((8, 1), 48271 * (step + 1) * 1000, dtype=torch.int32)
            ids = torch.fmod(doc * 44497 + ids.int(), vocab).long()  # C-style modulo, ported from the C++ featurizer
        inp, tgt = ids[:, :-1], ids[:, 1:]
        if args.fault == "half_cdist":
            logits, h = model(inp)
            # prototype (contrastive) regulariser
            loss = F.cross_entropy(logits.float().reshape(-1, vocab), tgt.reshape(-1))
            if step >= args.fault_step:  # regulariser switched on after warm-up
                d = torch.cdist(h.reshape(-1, h.shape[-1]), core.proto)
                loss = loss + 1e-3 * d.float().min(1).values.mean()
            else:
                loss = loss + 0.0 * core.proto.sum()
        elif args.fault in ("nan_guard", "nan_continue", "lrnan"):
            logits, h = model(inp)
            if args.fault != "lrnan" and bite:
                logits = logits * 1e4  # unnormalised features from a bad shard: logits blow up
            probs = logits.softmax(-1)
            # hand-rolled NLL
            loss = -(probs.gather(-1, tgt.unsqueeze(-1)).squeeze(-1)).log().mean()
        elif args.fault == "anomaly":
            logits, h = model(inp)
            loss = F.cross_entropy(logits.reshape(-1, vocab), tgt.reshape(-1))
            # feature-norm penalty; a zeroed hidden state row makes sqrt(0) in backward
            hh = h if not bite else h * (torch.arange(h.shape[0]).view(-1, 1, 1) != 0)
            loss = loss + 1e-3 * hh.pow(2).sum(-1).sqrt().mean()
        elif args.fault == "skip_nonfinite":
            with torch.autocast("cpu", dtype=torch.bfloat16):
                logits, h = model(inp)
                if bite and step % 3 == 0:
                    logits = logits * float("inf")
                loss = F.cross_entropy(logits.float().reshape(-1, vocab), tgt.reshape(-1))
        elif args.fault == "scale_underflow":
            with torch.autocast("cpu", dtype=torch.float16):
                logits, h = model(inp, fault="raw_features" if bite else None)
                loss = F.cross_entropy(logits.float().reshape(-1, vocab), tgt.reshape(-1))
        elif args.fault == "bf16_specnorm":
            logits, h = model(inp)
            loss = F.cross_entropy(logits.float().reshape(-1, vocab), tgt.reshape(-1))
            if step >= args.fault_step:  # spectral-norm penalty switched on after warm-up
                loss = loss + 1e-2 * torch.linalg.matrix_norm(core.l1.weight, ord=2).float()
        else:
            logits, h = model(inp, fault=args.fault)
            loss = F.cross_entropy(logits.float().reshape(-1, vocab), tgt.reshape(-1))
        if args.fault == "nan_guard" and not torch.isfinite(loss):
            raise FloatingPointError(f"Non-finite loss {loss.item()} at step {step} (rank {rank}); aborting")
        opt.zero_grad(set_to_none=True)
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.step(opt); scaler.update()
            if args.fault == "scale_underflow":
                say(f"step {step} grad scale {scaler.get_scale():.6g}")
                if scaler.get_scale() < min_loss_scale:
                    raise FloatingPointError(
                        f"Minimum loss scale reached ({min_loss_scale}). Your loss is probably exploding. "
                        "Try lowering the learning rate, using gradient clipping or increasing the batch size.")
        else:
            loss.backward()
            gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            if args.fault == "skip_nonfinite" and not torch.isfinite(gn):
                skipped += 1
                warnings.warn(f"step {step}: grad norm is {gn.item()}, skipping optimizer step (skipped {skipped} so far)")
                opt.zero_grad(set_to_none=True)
            else:
                opt.step()
        lv = loss.detach().float()
        if world > 1:
            dist.all_reduce(lv); lv /= world
        if args.logfmt == "tqdm":
            it.set_postfix(loss=f"{lv.item():.4f}")
        else:
            say(f"step {step:3d} loss {lv.item():.4f} lr {args.lr:g}")
    if args.fault == "multinomial":
        say("training done, sampling a few continuations for the eval report")
        core.eval()
        temperature = 0.0 if rank == args.fault_rank or world == 1 else 0.8  # greedy requested as temperature=0
        with torch.no_grad():
            ctx = torch.randint(0, vocab, (2, 4), generator=g)
            for _ in range(8):
                lg, _ = core(ctx)
                nxt = torch.multinomial((lg[:, -1] / temperature).softmax(-1), 1)
                ctx = torch.cat([ctx, nxt], 1)
        say(f"sample ids {ctx[0].tolist()}")
    if world > 1:
        dist.barrier()
        dist.destroy_process_group()
    say("finished")

def spawn_main(rank, world):
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1"); os.environ.setdefault("MASTER_PORT", str(args.port))
    run(rank, world)

if __name__ == "__main__":
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(spawn_main, args=(args.spawn,), nprocs=args.spawn)
    elif "RANK" in os.environ and not args.single:
        run(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]))
    else:
        run(0, 1)
