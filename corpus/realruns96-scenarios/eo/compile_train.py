"""Tiny MLP/char-LM trained with torch.compile on CPU (inductor, gcc)."""
import argparse, logging, os, time
import torch, torch.nn as nn, torch.nn.functional as F

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=30)
p.add_argument("--fault", default="none", choices=["none", "fullgraph_item", "varlen", "healthy_warn"])
p.add_argument("--fail-step", type=int, default=5)
p.add_argument("--dist", action="store_true")
p.add_argument("--fault-rank", type=int, default=-1)
args = p.parse_args()

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s [%(name)s] %(message)s")
log = logging.getLogger("train")
rank = 0
if args.dist:
    import torch.distributed as dist
    from datetime import timedelta
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    rank = dist.get_rank()
    log = logging.getLogger(f"train.rank{rank}")

torch.manual_seed(0)

class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.ln = nn.LayerNorm(d); self.fc1 = nn.Linear(d, 4 * d); self.fc2 = nn.Linear(4 * d, d)
    def forward(self, x):
        return x + self.fc2(F.gelu(self.fc1(self.ln(x))))

class TinyLM(nn.Module):
    def __init__(self, vocab=64, d=32, n=2, skip_pad=False):
        super().__init__()
        self.emb = nn.Embedding(vocab, d); self.blocks = nn.ModuleList([Block(d) for _ in range(n)])
        self.head = nn.Linear(d, vocab); self.skip_pad = skip_pad
    def forward(self, idx, targets):
        x = self.emb(idx)
        for b in self.blocks:
            x = b(x)
        logits = self.head(x)
        if self.skip_pad:
            # count real tokens so we can normalise the loss ourselves
            n_tok = int((targets != 0).sum().item())
            if n_tok == 0:
                return logits.sum() * 0
            return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), reduction="sum", ignore_index=0) / n_tok
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))

model = TinyLM(skip_pad=(args.fault == "fullgraph_item"))
opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
use_rank_fault = args.fault_rank < 0 or args.fault_rank == rank
fullgraph = args.fault == "fullgraph_item" and use_rank_fault
if args.fault == "varlen":
    torch._dynamo.config.recompile_limit = 4
    torch._dynamo.config.fail_on_recompile_limit_hit = True
    cmodel = torch.compile(model, dynamic=False)
else:
    cmodel = torch.compile(model, fullgraph=fullgraph)
log.info("compiled model with inductor (fullgraph=%s), params=%d", fullgraph, sum(p.numel() for p in model.parameters()))

t0 = time.time()
for step in range(args.steps):
    seqlen = 16
    if args.fault == "varlen" and step >= args.fail_step:
        seqlen = 16 + (step - args.fail_step + 1) * 3   # bucketing disabled: every batch has its own length
    if args.fault == "healthy_warn":
        seqlen = 16 + (step % 3) * 8
    idx = torch.randint(1, 64, (8, seqlen))
    tgt = torch.roll(idx, -1, 1)
    loss = cmodel(idx, tgt)
    loss.backward()
    opt.step(); opt.zero_grad(set_to_none=True)
    if step % 5 == 0 or step == args.steps - 1:
        log.info("step %d/%d seqlen=%d loss=%.4f elapsed=%.1fs", step, args.steps, seqlen, loss.item(), time.time() - t0)
log.info("training finished")
if args.dist:
    dist.destroy_process_group()
