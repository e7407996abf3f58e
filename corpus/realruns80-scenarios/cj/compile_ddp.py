"""DDP + torch.compile training of a tiny token classifier on CPU (gloo).
Launch with torchrun (env://) or with --spawn N (torch.multiprocessing.spawn).
--fault:
  none          healthy run (optionally with a partial last batch -> recompiles)
  pad-filter    batches containing padding drop pad tokens with a boolean mask (rank --fault-rank gets them at --fault-step)
  bucketed      rank --fault-rank uses length-bucketed batches (new sequence length every step)
  new-token     rank --fault-rank sees token id == vocab size (special token added after model was built)
  aux-unused    auxiliary head only used when the batch carries aux labels (rank --fault-rank has none from --fault-step)
  np-feats      rank --fault-rank reads side features from a .npy (float64) from --fault-step
  mark-dynamic  sequence dimension marked dynamic, but the model flattens it into a fixed Linear
"""
import argparse, os, sys, time, logging, datetime
import numpy as np
import torch, torch.nn as nn, torch.nn.functional as F
import torch._dynamo
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=3)
p.add_argument("--steps", type=int, default=10)
p.add_argument("--backend", default="inductor")
p.add_argument("--fullgraph", action="store_true")
p.add_argument("--dynamic", default=None, choices=[None, "true", "false"])
p.add_argument("--pg-timeout", type=int, default=60)
p.add_argument("--spawn", type=int, default=0)
p.add_argument("--port", type=int, default=36460)
p.add_argument("--log", action="store_true")
p.add_argument("--suppress-errors", action="store_true")
p.add_argument("--partial-last", action="store_true")
p.add_argument("--find-unused", action="store_true")
p.add_argument("--side-feats", action="store_true", help="model has the side-feature projection")
p.add_argument("--seq-head", action="store_true", help="model has the flattened sequence head")
p.add_argument("--aux-head", action="store_true", help="model has the auxiliary head")
p.add_argument("--compile-inner", action="store_true", help="torch.compile the module before wrapping it in DDP")
a = p.parse_args()

VOCAB, D, SEQ, BS, NCLS = 96, 32, 16, 8, 5
PAD = 0

class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, D, padding_idx=PAD)
        self.mix = nn.Sequential(nn.Linear(D, 2 * D), nn.GELU(), nn.Linear(2 * D, D))
        self.cls = nn.Linear(D, NCLS)
        self.side = nn.Linear(4, D) if a.side_feats else None
        self.seq_head = nn.Linear(D * SEQ, NCLS) if a.seq_head else None
        self.aux = nn.Linear(D, 2) if a.aux_head else None

    def forward(self, x, feats=None, drop_pad=False, use_aux=False):
        h = self.emb(x)
        h = h + self.mix(h)
        if feats is not None:
            h = h + self.side(feats).unsqueeze(1)
        if drop_pad:
            tok = h[x != PAD]                      # [n_real_tokens, D]
            pooled = tok.mean(0, keepdim=True).expand(x.shape[0], -1)
        else:
            pooled = h.mean(1)
        out = self.cls(pooled)
        if self.seq_head is not None:
            out = out + self.seq_head(h.flatten(1))
        if use_aux:
            return out, self.aux(pooled)
        return out, None

def make_batch(rank, step):
    g = torch.Generator().manual_seed(rank * 10007 + step)
    seq, bs = SEQ, BS
    if a.fault == "bucketed" and rank == a.fault_rank:
        seq = 8 + 2 * step                        # length bucket grows every step
    if a.partial_last and step == a.steps - 1:
        bs = 5                                     # last, partial batch of the epoch
    x = torch.randint(1, VOCAB, (bs, seq), generator=g)
    has_pad = False
    if a.fault == "pad-filter" and rank == a.fault_rank and step >= a.fault_step:
        x[:, -4:] = PAD; has_pad = True
    if a.fault == "new-token" and rank == a.fault_rank and step >= a.fault_step:
        x[0, 3] = VOCAB                            # id of "<|sep|>" appended to the tokenizer
    y = torch.randint(0, NCLS, (bs,), generator=g)
    feats = None
    if a.fault == "np-feats":
        if rank == a.fault_rank and step >= a.fault_step:
            feats = torch.from_numpy(np.random.default_rng(step).normal(size=(bs, 4)))   # float64 from .npy cache
        else:
            feats = torch.randn(bs, 4, generator=g)
    aux_y = None
    if a.fault == "aux-unused" and not (rank == a.fault_rank and step >= a.fault_step):
        aux_y = torch.randint(0, 2, (bs,), generator=g)
    return x, y, feats, has_pad, aux_y

def main(local_rank=None):
    if a.spawn:
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1"); os.environ.setdefault("MASTER_PORT", str(a.port))
        rank, world = local_rank, a.spawn
        os.environ["RANK"] = str(rank); os.environ["WORLD_SIZE"] = str(world)
    else:
        rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    if a.log:
        logging.basicConfig(level=logging.INFO, format=f"%(asctime)s [rank{rank}] %(levelname)s %(message)s")
        say = logging.getLogger("ddp").info
    else:
        say = lambda m: print(f"[rank{rank}] {m}", flush=True)
    if a.suppress_errors:
        pass
        torch._dynamo.config.suppress_errors = True
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=a.pg_timeout))
    torch.manual_seed(0)
    model = Tagger()
    kw = dict(backend=a.backend, fullgraph=a.fullgraph)
    if a.dynamic is not None:
        kw["dynamic"] = a.dynamic == "true"
    if a.compile_inner:      # compile the bare module, then wrap it in DDP
        ddp = DDP(torch.compile(model, **kw), find_unused_parameters=a.find_unused)
        cmodel = ddp
    else:
        ddp = DDP(model, find_unused_parameters=a.find_unused)
        cmodel = torch.compile(ddp, **kw)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
    say(f"world={world} torch={torch.__version__} compile={kw} params={sum(p.numel() for p in model.parameters())}")
    t0 = time.time()
    for step in range(a.steps):
        x, y, feats, has_pad, aux_y = make_batch(rank, step)
        if a.fault == "mark-dynamic":
            torch._dynamo.mark_dynamic(x, 1)       # variable-length text
        out, aux = cmodel(x, feats, has_pad, aux_y is not None)
        loss = F.cross_entropy(out, y)
        if aux is not None:
            loss = loss + 0.3 * F.cross_entropy(aux, aux_y)
        loss.backward()
        opt.step(); opt.zero_grad()
        lt = loss.detach().clone(); dist.all_reduce(lt); lt /= world
        say(f"step {step} loss {loss.item():.4f} avg_loss {lt.item():.4f} t={time.time()-t0:.1f}s")
    dist.barrier()
    say("done")
    dist.destroy_process_group()

if __name__ == "__main__":
    if a.spawn:
        import torch.multiprocessing as mp
        mp.spawn(main, nprocs=a.spawn, join=True)
    else:
        main()
