"""Word-embedding model with percentile-based adaptive gradient clipping (clip at the 99.9th |grad| percentile)."""
import argparse, time, logging
import torch, torch.nn as nn, torch.nn.functional as F

p = argparse.ArgumentParser()
p.add_argument("--vocab", type=int, default=70000)
p.add_argument("--dim", type=int, default=256)
p.add_argument("--steps", type=int, default=10)
p.add_argument("--clip-after", type=int, default=4)
p.add_argument("--pct", type=float, default=0.999)
args = p.parse_args()
logging.basicConfig(level=logging.INFO, format="%(asctime)s | %(levelname)-7s | %(message)s")
log = logging.getLogger()

class BagModel(nn.Module):
    def __init__(s):
        super().__init__()
        s.emb = nn.EmbeddingBag(args.vocab, args.dim, mode="mean"); s.cls = nn.Linear(args.dim, 8)
    def forward(s, tok): return s.cls(s.emb(tok))

torch.manual_seed(0)
model = BagModel()
n = sum(p.numel() for p in model.parameters())
log.info("model parameters: %d (%.1fM)", n, n / 1e6)
opt = torch.optim.SGD(model.parameters(), lr=0.5)
for step in range(args.steps):
    tok = torch.randint(0, args.vocab, (64, 20)); y = tok[:, 0] % 8
    loss = F.cross_entropy(model(tok), y)
    opt.zero_grad(); loss.backward()
    if step >= args.clip_after:
        flat = torch.cat([p.grad.abs().flatten() for p in model.parameters()])
        thr = torch.quantile(flat, args.pct)
        torch.nn.utils.clip_grad_value_(model.parameters(), thr.item())
        log.info("step %d adaptive clip threshold %.3e", step, thr.item())
    opt.step()
    log.info("step %d loss %.4f", step, loss.item())
log.info("finished")
