"""Small single-process training script with selectable real bugs.
--fault: none | embed | backward2 | inplace | target | cuda | recursion | warnerr | numpy
"""
import argparse, logging, sys, time, warnings, pickle
import torch, torch.nn as nn
from tqdm import tqdm

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--step", type=int, default=5)
p.add_argument("--steps", type=int, default=12)
p.add_argument("--device", default="cpu")
p.add_argument("--vocab", type=int, default=100)
p.add_argument("--tqdm", action="store_true")
args = p.parse_args()

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
log = logging.getLogger("train")
torch.manual_seed(0)

class TinyLM(nn.Module):
    def __init__(self, vocab, d=32):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.rnn = nn.GRU(d, d, batch_first=True)
        self.head = nn.Linear(d, vocab)
    def forward(self, x, h=None):
        o, h = self.rnn(self.emb(x), h)
        return self.head(o), h

# tokenizer vocabulary built from a corpus; the model may be sized from a stale config value
corpus_vocab = 120 if args.fault == "embed" else args.vocab
model = TinyLM(args.vocab).to(args.device)
opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
sched = torch.optim.lr_scheduler.StepLR(opt, 5, 0.5)
if args.fault == "none":
    # common noisy-but-harmless patterns
    sched.step()   # called before optimizer.step(): UserWarning
    warnings.warn("TypedStorage is deprecated. It will be removed in the future and UntypedStorage will be the only storage class.", UserWarning)
log.info("model params=%d device=%s", sum(p.numel() for p in model.parameters()), args.device)

h = None
it = range(args.steps)
if args.tqdm:
    it = tqdm(it, desc="train", file=sys.stdout, mininterval=0)
for step in it:
    x = torch.randint(0, corpus_vocab if step >= args.step else args.vocab, (8, 16))
    if args.fault == "warnerr" and step == args.step:
        # copy-constructing a tensor from a tensor warns; under -W error it raises
        x = torch.tensor(x)
    inp, tgt = x[:, :-1], x[:, 1:]
    logits, h_new = model(inp, h if args.fault == "backward2" else None)
    if args.fault == "backward2":
        h = h_new  # hidden state carried across steps without .detach()
    if args.fault == "target" and step == args.step:
        loss = nn.functional.cross_entropy(logits.reshape(-1, logits.size(-1)), tgt.reshape(-1, 1))
    else:
        loss = nn.functional.cross_entropy(logits.reshape(-1, logits.size(-1)), tgt.reshape(-1))
    if args.fault == "inplace" and step == args.step:
        probs = torch.sigmoid(logits)
        probs.mul_(0.5)
        loss = loss + probs.mean()
    opt.zero_grad()
    loss.backward()
    opt.step(); sched.step()
    if args.fault == "numpy" and step == args.step:
        import numpy as np
        np.save("/tmp/eh_logits.npy", logits.numpy())
    msg = f"step {step} loss {loss.item():.4f} lr {sched.get_last_lr()[0]:.2e}"
    if args.tqdm:
        it.set_postfix(loss=f"{loss.item():.3f}")
    else:
        log.info(msg)
    time.sleep(0.05)

if args.fault == "recursion":
    # save the parse tree cache used by the data pipeline: a linked chain of nodes
    class Node:
        def __init__(self, val, nxt=None):
            self.val, self.nxt = val, nxt
    head = None
    for i in range(50000):
        head = Node(i, head)
    log.info("saving token chain cache with %d nodes", 50000)
    torch.save({"model": model.state_dict(), "chain": head}, "/tmp/eh_ckpt_chain.pt")

torch.save(model.state_dict(), "/tmp/eh_tiny.pt")
log.info("training finished")
