"""Single-process torch.compile training of a tiny LM on CPU.
--fault selects a scenario:
  none            plain healthy training
  debug-prints    healthy, forward logs activation stats (graph breaks)
  task-heads      multi-task heads keyed by task name (recompiles per task)
  clip-acts       data-dependent activation clipping in forward (used with --fullgraph)
  long-seq        one data file has longer sequences than the flattened head expects (at --fault-step)
  double-backward auxiliary loss backpropagated separately through the shared graph
  resume-eval     save compiled model's state_dict, reload it into a fresh model for eval
"""
import argparse, logging, os, sys, time, math
import torch, torch.nn as nn, torch.nn.functional as F

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-step", type=int, default=3)
p.add_argument("--steps", type=int, default=12)
p.add_argument("--backend", default="inductor")
p.add_argument("--fullgraph", action="store_true")
p.add_argument("--dynamic", default=None, choices=[None, "true", "false"])
p.add_argument("--tqdm", action="store_true")
p.add_argument("--log", action="store_true", help="python logging with timestamps")
p.add_argument("--ckpt-dir", default="/work/rr80/cj/ckpt")
p.add_argument("--seed", type=int, default=0)
a = p.parse_args()

if a.log:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    log = logging.getLogger("train").info
else:
    log = print

torch.manual_seed(a.seed)
VOCAB, D, SEQ, BS = 128, 32, 16, 8
TASKS = [f"task_{c}" for c in "abcdefghijkl"]

class TinyLM(nn.Module):
    def __init__(self, debug=False, clip=False):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, D)
        self.blocks = nn.ModuleList([nn.Sequential(nn.LayerNorm(D), nn.Linear(D, 4 * D), nn.GELU(), nn.Linear(4 * D, D)) for _ in range(2)])
        self.flat_head = nn.Linear(D * SEQ, 4)           # sequence classification head over flattened tokens
        self.task_heads = nn.ModuleDict({t: nn.Linear(D, 4) for t in TASKS})
        self.debug, self.clip = debug, clip

    def forward(self, x, task=None):
        h = self.emb(x)
        for i, blk in enumerate(self.blocks):
            h = h + blk(h)
            if self.debug:
                print(f"    [dbg] block {i} act mean={h.mean().item():+.4f} std={h.std().item():.4f}")
            if self.clip:
                m = h.abs().max()
                if m > 3.0:                         # renormalise exploding activations
                    h = h * (3.0 / m)
        if task is not None:
            return self.task_heads[task](h.mean(1))
        return self.flat_head(h.flatten(1))

def batches(step):
    g = torch.Generator().manual_seed(1000 + step)
    seq = SEQ
    if a.fault == "long-seq" and step >= a.fault_step:
        seq = 20     # shard "wiki_extra.bin" was tokenised with max_len=20
    x = torch.randint(0, VOCAB, (BS, seq), generator=g)
    y = torch.randint(0, 4, (BS,), generator=g)
    return x, y

model = TinyLM(debug=a.fault == "debug-prints", clip=a.fault == "clip-acts")
opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
kw = dict(backend=a.backend, fullgraph=a.fullgraph)
if a.dynamic is not None:
    kw["dynamic"] = a.dynamic == "true"
log(f"torch {torch.__version__} | compiling TinyLM with {kw} | params={sum(p.numel() for p in model.parameters())}")
cmodel = torch.compile(model, **kw)

it = range(a.steps)
if a.tqdm:
    from tqdm import tqdm
    it = tqdm(it, desc="train", dynamic_ncols=False, ncols=100)
t0 = time.time()
for step in it:
    x, y = batches(step)
    task = TASKS[step % len(TASKS)] if a.fault == "task-heads" else None
    logits = cmodel(x, task)
    loss = F.cross_entropy(logits, y)
    if a.fault == "double-backward":
        # auxiliary logit-norm regulariser, backpropagated on its own "to save memory"
        aux = 1e-3 * logits.pow(2).mean()
        loss.backward()
        aux.backward()
    else:
        loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step(); opt.zero_grad(set_to_none=True)
    msg = f"step {step:3d} loss {loss.item():.4f} elapsed {time.time()-t0:.1f}s"
    if a.tqdm:
        it.set_postfix(loss=f"{loss.item():.3f}")
        if step % 4 == 0:
            it.write(msg)
    else:
        log(msg)

if a.fault == "resume-eval":
    os.makedirs(a.ckpt_dir, exist_ok=True)
    path = os.path.join(a.ckpt_dir, "tinylm_final.pt")
    torch.save({"model": cmodel.state_dict(), "step": a.steps}, path)
    log(f"saved checkpoint to {path}")
    log("running held-out evaluation with a fresh (eager) model")
    eval_model = TinyLM()
    ck = torch.load(path, map_location="cpu")
    eval_model.load_state_dict(ck["model"])
    eval_model.eval()
    with torch.no_grad():
        x, y = batches(999)
        log(f"eval loss {F.cross_entropy(eval_model(x), y).item():.4f}")
log("training finished")
