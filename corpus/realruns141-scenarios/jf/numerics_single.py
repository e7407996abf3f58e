"""Single-process numerics scenarios (plain python / mp.spawn / logging).

--fault selects what goes wrong:
  lr-nan          SGD with a learning rate far too high on a regression MLP -> loss inf/nan, loop stops
  anomaly         torch.autograd.set_detect_anomaly(True) with a sqrt-of-relu feature -> NaN in backward
  multinomial     periodic sampling from a tiny char LM whose weights went NaN -> torch.multinomial fails
  fp16-mask       attention mask filled with -1e9 in an fp16 tensor
  gradclip        clip_grad_norm_(error_if_nonfinite=True) on a NaN gradient while the loss is finite
  sparse-adam     nn.Embedding(sparse=True) trained with torch.optim.Adam
  half-scaler     model.half() + torch.amp.GradScaler
  scale-collapse  fp16 autocast + GradScaler where a logit blows past fp16 range every step
  scale-recover   fp16 autocast + GradScaler: a few overflow steps early, then stable (healthy)
  none            healthy run with noisy warnings
"""
import argparse, math, os, sys, time, warnings, logging

import torch
import torch.nn as nn
import torch.nn.functional as F

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--steps", type=int, default=60)
p.add_argument("--lr", type=float, default=1e-2)
p.add_argument("--style", default="print")  # print | logging | tqdm
p.add_argument("--spawn", type=int, default=0)
p.add_argument("--seed", type=int, default=0)
p.add_argument("--min-scale", type=float, default=0.0)
args = p.parse_args()

log = logging.getLogger("train")


def out(msg):
    if args.style == "logging":
        log.info(msg)
    else:
        print(msg, flush=True)


class MLP(nn.Module):
    def __init__(self, d=16, h=64, o=1, sqrt_feat=False):
        super().__init__()
        self.fc1 = nn.Linear(d, h)
        self.fc2 = nn.Linear(h, h)
        self.head = nn.Linear(h, o)
        self.sqrt_feat = sqrt_feat

    def forward(self, x):
        h = F.relu(self.fc1(x))
        h = F.gelu(self.fc2(h))
        self.last_emb = h
        return self.head(h)


def spread_reg(e):
    # pairwise euclidean distances between the batch embeddings (diversity regulariser)
    d = ((e[:, None, :] - e[None, :, :]) ** 2).sum(-1).sqrt()
    return -d.mean()


def make_regression(n=512, d=16, scale=1.0):
    g = torch.Generator().manual_seed(args.seed)
    x = torch.randn(n, d, generator=g) * scale
    w = torch.randn(d, 1, generator=g)
    y = x @ w + 0.1 * torch.randn(n, 1, generator=g)
    return x, y


def batches(x, y, bs=32):
    n = x.shape[0]
    i = 0
    while True:
        j = (i * bs) % n
        yield x[j:j + bs], y[j:j + bs]
        i += 1


def run_regression(model, opt, steps, clip=None, anomaly=False, it_wrap=None):
    x, y = make_regression(scale=2.0 if args.fault == "lr-nan" else 1.0)
    it = batches(x, y)
    rng = range(1, steps + 1)
    if it_wrap:
        rng = it_wrap(rng)
    t0 = time.time()
    for step in rng:
        xb, yb = next(it)
        opt.zero_grad(set_to_none=True)
        loss = F.mse_loss(model(xb), yb)
        if model.sqrt_feat and step > 12:  # regulariser switched on after warm-up
            loss = loss + 0.01 * spread_reg(model.last_emb)
        if not math.isfinite(loss.item()):
            out(f"Loss is {loss.item()}, stopping training")
            sys.exit(1)
        loss.backward()
        gn = None
        if clip is not None:
            gn = torch.nn.utils.clip_grad_norm_(model.parameters(), clip, error_if_nonfinite=True)
        opt.step()
        if step % 5 == 0 or step == 1:
            msg = f"step {step:4d}/{steps} | loss {loss.item():.6f} | lr {opt.param_groups[0]['lr']:.2e}"
            if gn is not None:
                msg += f" | grad_norm {gn.item():.4f}"
            msg += f" | {1000*(time.time()-t0)/step:.1f} ms/step"
            if args.style == "tqdm":
                rng.write(msg)
            else:
                out(msg)
    out("training finished")


def char_lm():
    text = ("the quick brown fox jumps over the lazy dog. " * 40)
    chars = sorted(set(text))
    stoi = {c: i for i, c in enumerate(chars)}
    data = torch.tensor([stoi[c] for c in text])
    V = len(chars)

    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(V, 32)
            self.rnn = nn.GRU(32, 64, batch_first=True)
            self.out = nn.Linear(64, V)

        def forward(self, idx):
            h, _ = self.rnn(self.emb(idx))
            return self.out(h)

    return LM(), data, chars, V


def run_multinomial():
    torch.manual_seed(args.seed)
    model, data, chars, V = char_lm()
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    T = 32
    for step in range(1, args.steps + 1):
        ix = torch.randint(0, len(data) - T - 1, (16,))
        xb = torch.stack([data[i:i + T] for i in ix])
        yb = torch.stack([data[i + 1:i + T + 1] for i in ix])
        logits = model(xb)
        loss = F.cross_entropy(logits.reshape(-1, V), yb.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        out(f"iter {step}: loss {loss.item():.4f}")
        if step % 10 == 0:
            # sampling temperature annealed linearly over training
            temperature = 1.0 * (1 - step / args.steps)
            out(f"eval sample @ iter {step} (temperature={temperature:.2f})")
            model.eval()
            with torch.no_grad():
                idx = torch.zeros(1, 1, dtype=torch.long)
                for _ in range(40):
                    probs = F.softmax(model(idx)[:, -1, :] / temperature, dim=-1)
                    nxt = torch.multinomial(probs, num_samples=1)
                    idx = torch.cat([idx, nxt], dim=1)
            out("sample: " + repr("".join(chars[i] for i in idx[0].tolist())))
            model.train()


def run_fp16_mask():
    torch.manual_seed(args.seed)
    d, T, V = 32, 16, 50
    emb = nn.Embedding(V, d)
    attn = nn.MultiheadAttention(d, 4, batch_first=True)
    head = nn.Linear(d, V)
    params = list(emb.parameters()) + list(attn.parameters()) + list(head.parameters())
    opt = torch.optim.AdamW(params, lr=1e-3)
    for step in range(1, args.steps + 1):
        idx = torch.randint(1, V, (8, T))
        pad = torch.rand(8, T) < 0.1
        with torch.autocast("cpu", dtype=torch.float16):
            x = emb(idx)
            q = x @ attn.in_proj_weight[:d].T.to(x.dtype)
            k = x @ attn.in_proj_weight[d:2 * d].T.to(x.dtype)
            v = x @ attn.in_proj_weight[2 * d:].T.to(x.dtype)
            scores = (q @ k.transpose(1, 2)) / math.sqrt(d)
            causal = torch.triu(torch.ones(T, T, dtype=torch.bool), 1)
            scores = scores.masked_fill(causal, -1e4)
            if step >= 3:
                # padding mask added after the data pipeline started emitting pad tokens
                scores = scores.masked_fill(pad[:, None, :], -1e9)
            a = F.softmax(scores.float(), dim=-1).to(v.dtype) @ v
            logits = head(a)
        loss = F.cross_entropy(logits.float().reshape(-1, V), idx.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        out(f"step {step} loss={loss.item():.4f} dtype={scores.dtype}")


def run_sparse_adam():
    torch.manual_seed(args.seed)
    V, d = 5000, 32
    emb = nn.Embedding(V, d, sparse=True)
    head = nn.Linear(d, 2)
    opt = torch.optim.Adam(list(emb.parameters()) + list(head.parameters()), lr=1e-3)
    for step in range(1, args.steps + 1):
        idx = torch.randint(0, V, (64, 12))
        y = (idx.sum(1) % 2)
        logits = head(emb(idx).mean(1))
        loss = F.cross_entropy(logits, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        out(f"step {step} loss {loss.item():.4f}")


def run_scaler(fault):
    torch.manual_seed(args.seed)
    model = MLP(o=10)
    if fault == "half-scaler":
        model = model.half()
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0 ** 16, growth_interval=20)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(1024, 16, generator=g)
    y = torch.randint(0, 10, (1024,), generator=g)
    if fault == "scale-collapse":
        # un-normalised feature column (raw byte counts) feeding an fp16 matmul
        pass
    if fault == "scale-recover":
        # a handful of outlier rows in the first epoch only
        x[:40, 3] = 7.0e4
    bs = 32
    skipped = 0
    nan_iters = 0
    for step in range(1, args.steps + 1):
        j = ((step - 1) * bs) % 1024
        xb, yb = x[j:j + bs], y[j:j + bs]
        if fault == "half-scaler":
            xb = xb.half()
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.float16, enabled=(fault != "half-scaler")):
            logits = model(xb)
            loss = F.cross_entropy(logits.float(), yb)
            if fault == "scale-collapse" and step > 6:
                loss = loss + 0.01 * spread_reg(model.last_emb)
        scale_before = scaler.get_scale()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        if scaler.get_scale() < scale_before:
            skipped += 1
        nan_iters += int(not math.isfinite(loss.item()))
        out(f" iteration {step:5d}/{args.steps:5d} | lm loss: {loss.item():.6E} | loss scale: {scaler.get_scale():.1f} | "
            f"number of skipped iterations: {skipped:3d} | number of nan iterations: {nan_iters:3d} |")
        if scaler.get_scale() < args.min_scale:
            out("Current loss scale already at minimum - cannot decrease scale anymore. Exiting run.")
            sys.exit(1)
    out("[after training is done] final loss scale %.3g" % scaler.get_scale())


def main(local_rank=0):
    if args.style == "logging":
        logging.basicConfig(level=logging.INFO, format="%(asctime)s - %(levelname)s - %(name)s - %(message)s")
    torch.manual_seed(args.seed)
    torch.set_num_threads(1)
    f = args.fault
    out(f"torch {torch.__version__} | fault={f} | threads={torch.get_num_threads()}")
    if f in ("lr-nan", "none"):
        model = MLP()
        opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
        if f == "none":
            warnings.warn("The given NumPy array is not writable, and PyTorch does not support non-writable tensors.")
        wrap = None
        if args.style == "tqdm":
            from tqdm import tqdm
            wrap = lambda r: tqdm(r, desc="train", mininterval=0, ncols=100)
        run_regression(model, opt, args.steps, it_wrap=wrap)
    elif f == "anomaly":
        torch.autograd.set_detect_anomaly(True)
        model = MLP(sqrt_feat=True)
        opt = torch.optim.Adam(model.parameters(), lr=args.lr)
        wrap = None
        if args.style == "tqdm":
            from tqdm import tqdm
            wrap = lambda r: tqdm(r, desc="epoch 0", mininterval=0, ncols=100)
        run_regression(model, opt, args.steps, it_wrap=wrap)
    elif f == "gradclip":
        model = MLP(sqrt_feat=True)
        opt = torch.optim.Adam(model.parameters(), lr=args.lr)
        run_regression(model, opt, args.steps, clip=1.0)
    elif f == "multinomial":
        run_multinomial()
    elif f == "fp16-mask":
        run_fp16_mask()
    elif f == "sparse-adam":
        run_sparse_adam()
    elif f in ("half-scaler", "scale-collapse", "scale-recover"):
        run_scaler(f)
    else:
        raise SystemExit("unknown fault " + f)


if __name__ == "__main__":
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(main, nprocs=1)
    else:
        main()
