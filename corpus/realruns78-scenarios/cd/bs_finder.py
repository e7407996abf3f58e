"""Single-process LM-style training with an automatic batch-size finder that catches
out-of-memory and retries smaller. Run under `ulimit -v` to emulate a memory-limited host.

--curriculum doubles the sequence length at --grow-step (sequence-length warm-up).
"""
import argparse, logging, sys, time
import torch
import torch.nn as nn

p = argparse.ArgumentParser()
p.add_argument("--start-bs", type=int, default=4096)
p.add_argument("--seq", type=int, default=128)
p.add_argument("--steps", type=int, default=10)
p.add_argument("--curriculum", action="store_true")
p.add_argument("--grow-step", type=int, default=6)
p.add_argument("--grow-factor", type=int, default=4)
args = p.parse_args()

logging.basicConfig(level=logging.INFO, stream=sys.stdout, format="[%(asctime)s][%(name)s][%(levelname)s] - %(message)s")
log = logging.getLogger("bs_finder")
tlog = logging.getLogger("train")
torch.manual_seed(0)
V, D = 512, 128


class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(V, D)
        self.ff = nn.Sequential(nn.Linear(D, 4 * D), nn.GELU(), nn.Linear(4 * D, D))
        self.head = nn.Linear(D, V)

    def forward(self, ids):
        h = self.emb(ids)
        h = h + self.ff(h)
        return self.head(h)


model = TinyLM()
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
lossf = nn.CrossEntropyLoss()
log.info("model params: %.2fM", sum(p.numel() for p in model.parameters()) / 1e6)


def train_step(bs, seq):
    ids = torch.randint(0, V, (bs, seq + 1))
    logits = model(ids[:, :-1])
    loss = lossf(logits.reshape(-1, V), ids[:, 1:].reshape(-1))
    opt.zero_grad(set_to_none=True)
    loss.backward()
    return loss


def find_batch_size(bs, seq):
    while bs >= 1:
        try:
            log.info("trying batch_size=%d seq_len=%d", bs, seq)
            train_step(bs, seq)
            opt.zero_grad(set_to_none=True)
            log.info("batch_size=%d fits", bs)
            return bs
        except RuntimeError as e:
            if "can't allocate memory" not in str(e):
                raise
            log.warning("OOM at batch_size=%d: %s", bs, str(e).splitlines()[0])
            log.exception("allocation failure details")
            bs //= 2
    raise RuntimeError("no batch size fits")


bs = find_batch_size(args.start_bs, args.seq)
seq = args.seq
tlog.info("starting training with batch_size=%d seq_len=%d", bs, seq)
for step in range(args.steps):
    if args.curriculum and step == args.grow_step:
        seq *= args.grow_factor
        tlog.info("sequence-length warm-up: seq_len -> %d", seq)
    t0 = time.time()
    loss = train_step(bs, seq)
    opt.step()
    tlog.info("step %d/%d loss=%.4f tokens/s=%.0f", step + 1, args.steps, loss.item(), bs * seq / (time.time() - t0))
tlog.info("finished")
