"""Tiny GPT-style LM pretraining loop that prints Megatron-LM style iteration lines.

Launch under torchrun (env://) or plain python (single process).
  --fp16               autocast(float16) + dynamic GradScaler (init scale --init-scale)
  --clip-grad X        gradient clipping (0 disables)
  --fault none|rmsnorm_pad|high_lr|straggler|sft_mask
     rmsnorm_pad : from --fault-step, rank --fault-rank's shard reaches short documents that are
                   padded; final RMSNorm is written h / (sqrt(mean(h^2)) + eps) after masking pads
     high_lr     : (just run with a large --lr and no clipping/warmup)
     straggler   : from --fault-step, rank --fault-rank reads its batches from the uncached jsonl
     sft_mask    : from --fault-step the SFT stage starts; loss mask = positions >= prompt_len
  --detect-anomaly     torch.autograd.set_detect_anomaly(True)
"""
import argparse, json, math, os, sys, time, warnings
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

p = argparse.ArgumentParser()
p.add_argument("--train-iters", type=int, default=400)
p.add_argument("--log-interval", type=int, default=10)
p.add_argument("--micro-batch-size", type=int, default=8)
p.add_argument("--seq-length", type=int, default=32)
p.add_argument("--lr", type=float, default=3e-3)
p.add_argument("--min-lr", type=float, default=3e-4)
p.add_argument("--warmup", type=int, default=40)
p.add_argument("--clip-grad", type=float, default=1.0)
p.add_argument("--fp16", action="store_true")
p.add_argument("--init-scale", type=float, default=65536.0)
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=150)
p.add_argument("--detect-anomaly", action="store_true")
p.add_argument("--phase2-step", type=int, default=0)
p.add_argument("--phase2-lr", type=float, default=0.0)
p.add_argument("--timers", action="store_true")
p.add_argument("--prompt-len", type=int, default=24)
p.add_argument("--workdir", default="/work/rr78/cc/tmp")
args = p.parse_args()

VOCAB, D, PAD = 512, 64, 0


class RMSNorm(nn.Module):
    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.w = nn.Parameter(torch.ones(d)); self.eps = eps

    def forward(self, h):
        return self.w * h / (h.pow(2).mean(-1, keepdim=True).sqrt() + self.eps)


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, D)
        self.pos = nn.Embedding(args.seq_length, D)
        layer = nn.TransformerEncoderLayer(D, 4, 4 * D, dropout=0.0, batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.norm = RMSNorm(D)
        self.head = nn.Linear(D, VOCAB, bias=False)

    def forward(self, ids, pad_mask):
        T = ids.shape[1]
        h = self.emb(ids) + self.pos(torch.arange(T))
        causal = torch.triu(torch.full((T, T), float("-inf")), 1)
        h = self.blocks(h, mask=causal, is_causal=True)
        h = h * pad_mask[..., None]  # zero out padded positions
        return self.head(self.norm(h))


def make_batch(g, bs, short=False):
    # synthetic "documents": arithmetic token progressions with random stride (learnable)
    start = torch.randint(1, VOCAB, (bs, 1), generator=g)
    stride = torch.randint(1, 7, (bs, 1), generator=g)
    ids = (start + stride * torch.arange(args.seq_length + 1)) % (VOCAB - 1) + 1
    mask = torch.ones(bs, args.seq_length + 1)
    if short:
        lens = torch.randint(6, args.seq_length // 2, (bs,), generator=g)
        for i, L in enumerate(lens):
            ids[i, L:] = PAD; mask[i, L:] = 0
    return ids, mask


def main():
    world = int(os.environ.get("WORLD_SIZE", "1")); rank = int(os.environ.get("RANK", "0"))
    if world > 1:
        dist.init_process_group("gloo", timeout=timedelta(seconds=45))
    torch.set_num_threads(1)
    torch.manual_seed(1234)
    if args.detect_anomaly:
        torch.autograd.set_detect_anomaly(True)
    if rank == 0:
        print("using world size: {}, data-parallel size: {}, tensor-model-parallel size: 1, pipeline-model-parallel size: 1".format(world, world))
        print("------------------------ arguments ------------------------")
        for k, v in sorted(vars(args).items()):
            print("  {} {} {}".format(k, "." * (32 - len(k)), v))
        print("-------------------- end of arguments ---------------------")
        print("> building GPT model ...")
    model = GPT()
    if rank == 0:
        n = sum(p_.numel() for p_ in model.parameters())
        print(f" > number of parameters on (tensor, pipeline) model parallel rank (0, 0): {n}", flush=True)
    if world > 1:
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.95), weight_decay=0.1)
    scaler = torch.amp.GradScaler("cpu", init_scale=args.init_scale, growth_interval=100, enabled=args.fp16)
    g = torch.Generator().manual_seed(100 + rank)
    jsonl = None
    if args.fault == "straggler" and rank == args.fault_rank:
        os.makedirs(args.workdir, exist_ok=True)
        jsonl = os.path.join(args.workdir, f"shard{rank}_{os.getpid()}.jsonl")
        with open(jsonl, "w") as f:
            for i in range(6000):
                ids, _ = make_batch(g, 1)
                f.write(json.dumps({"id": i, "text": " ".join(f"tok{t}" for t in ids[0].tolist()), "meta": {"src": "cc", "score": 0.5}}) + "\n")
    skipped = nan_iters = 0
    tot_loss = 0.0; n_loss = 0; t0 = time.time(); gn_last = 0.0
    fb_t = data_t = 0.0
    if rank == 0:
        print("> training ...", flush=True)
    for it in range(1, args.train_iters + 1):
        td = time.time()
        bad = it >= args.fault_step
        if args.fault == "straggler" and bad and rank == args.fault_rank:
            # uncached path: re-read and re-tokenise the jsonl shard for each batch
            rows = []
            with open(jsonl) as f:
                for j, line in enumerate(f):
                    rec = json.loads(line)
                    if j % 750 == it % 750:
                        rows.append([int(t[3:]) for t in rec["text"].split()])
            ids = torch.tensor(rows[: args.micro_batch_size] * (args.micro_batch_size // max(1, len(rows[: args.micro_batch_size]))))[: args.micro_batch_size]
            mask = torch.ones_like(ids, dtype=torch.float)
        else:
            ids, mask = make_batch(g, args.micro_batch_size,
                                   short=(args.fault == "rmsnorm_pad" and bad and rank == args.fault_rank))
        data_t += time.time() - td
        tf = time.time()
        x, y, pm = ids[:, :-1], ids[:, 1:], mask[:, :-1]
        lossmask = mask[:, 1:].clone()
        if args.fault == "sft_mask" and bad:
            # SFT stage: only train on the response tokens after the prompt
            lossmask[:, : min(args.prompt_len, args.seq_length)] = 0
        # lr schedule: linear warmup + cosine
        if it <= args.warmup:
            lr = args.lr * it / max(1, args.warmup)
        else:
            r = (it - args.warmup) / max(1, args.train_iters - args.warmup)
            lr = args.min_lr + 0.5 * (args.lr - args.min_lr) * (1 + math.cos(math.pi * r))
        if args.phase2_step and it >= args.phase2_step:
            if it == args.phase2_step and rank == 0:
                print(f"> iteration {it}: switching to phase-2 data mix, constant learning rate {args.phase2_lr:.1E}", flush=True)
            lr = args.phase2_lr
        for gp in opt.param_groups:
            gp["lr"] = lr
        with torch.autocast("cpu", dtype=torch.float16, enabled=args.fp16):
            logits = model(x, pm)
            tok_loss = F.cross_entropy(logits.float().reshape(-1, VOCAB), y.reshape(-1), reduction="none")
            loss = (tok_loss * lossmask.reshape(-1)).sum() / lossmask.sum().clamp(min=1.0)
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        if args.clip_grad > 0:
            gn = torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip_grad)
        else:
            gn = torch.sqrt(sum((p_.grad.float() ** 2).sum() for p_ in model.parameters() if p_.grad is not None))
        scale_before = scaler.get_scale() if args.fp16 else 1.0
        scaler.step(opt)
        scaler.update()
        if args.fp16 and scaler.get_scale() < scale_before:
            skipped += 1
        lv = loss.item()
        if math.isnan(lv) or math.isinf(lv):
            nan_iters += 1
        else:
            tot_loss += lv; n_loss += 1
        gn_last = gn.item()
        fb_t += time.time() - tf
        if it % args.log_interval == 0:
            if world > 1:
                t = torch.tensor([tot_loss, float(n_loss)])
                dist.all_reduce(t)
                avg = t[0].item() / max(1.0, t[1].item())
            else:
                avg = tot_loss / max(1, n_loss)
            el = (time.time() - t0) * 1000 / args.log_interval
            times = None
            if args.timers and world > 1:
                times = [None] * world
                dist.all_gather_object(times, (fb_t * 1000 / args.log_interval, data_t * 1000 / args.log_interval))
            if rank == 0:
                line = (f" iteration {it:8d}/{args.train_iters:8d} | consumed samples: {it * args.micro_batch_size * world:12d} |"
                        f" elapsed time per iteration (ms): {el:.1f} | learning rate: {lr:.6E} | global batch size: {args.micro_batch_size * world:5d} |"
                        f" lm loss: {avg:.6E} |")
                if args.fp16:
                    line += f" loss scale: {scaler.get_scale():.1f} |"
                line += f" grad norm: {gn_last:.3f} | number of skipped iterations: {skipped:3d} | number of nan iterations: {nan_iters:3d} |"
                print(line, flush=True)
                if times:
                    fbs = [t_[0] for t_ in times]; ds = [t_[1] for t_ in times]
                    print("(min, max) time across ranks (ms):", flush=True)
                    print(f"    forward-backward ...............................: ({min(fbs):.2f}, {max(fbs):.2f})", flush=True)
                    print(f"    batch-generator ................................: ({min(ds):.2f}, {max(ds):.2f})", flush=True)
            tot_loss = 0.0; n_loss = 0; skipped = 0; nan_iters = 0; t0 = time.time(); fb_t = data_t = 0.0
    if rank == 0:
        print(f"[after training is done] datetime: {time.strftime('%Y-%m-%d %H:%M:%S')}", flush=True)
    if world > 1:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
