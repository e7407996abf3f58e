"""Tiny sequence classifier / LM trainer. --bug selects a user bug; it triggers on --bug-rank at --bug-step."""
import os, sys, math, time, warnings
sys.path.insert(0, os.path.dirname(__file__))
import numpy as np
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from tqdm import tqdm
from common import base_parser, get_logger, setup_dist

VOCAB, HID, SEQ, NCLS = 100, 32, 16, 10

class Net(nn.Module):
    def __init__(self, hid=HID, aux=False):
        super().__init__()
        self.vocab_size = VOCAB
        self.emb = nn.Embedding(VOCAB, hid)
        self.rnn = nn.GRU(hid, hid, batch_first=True)
        self.proj = nn.Linear(hid, hid)
        self.head = nn.Linear(SEQ * hid, NCLS)   # flattens the sequence: assumes SEQ tokens
        self.aux_head = nn.Linear(hid, 2) if aux else None
        self.scale = None
    def forward(self, ids, feats=None, h0=None, bug=None):
        x = self.emb(ids)
        if feats is not None:
            x = x + self.proj(feats)
        if self.scale is not None:
            x = x * self.scale
        out, h = self.rnn(x, h0)
        if bug == 'inplace':
            g = torch.sigmoid(out)
            g.mul_(0.5)            # "cheap" gating in place
            out = g
        if bug == 'view':
            out = out.transpose(1, 2).view(out.size(0), -1)
        else:
            out = out.reshape(out.size(0), -1)
        logits = self.head(out)
        if self.aux_head is not None and bug == 'unused':
            return logits, h
        return logits, h

def make_batch(rng, bsz, seq=SEQ, vocab=VOCAB, dtype=np.float32):
    ids = torch.from_numpy(rng.integers(0, vocab, size=(bsz, seq)))
    feats = torch.from_numpy(rng.standard_normal((bsz, seq, HID)).astype(dtype))
    labels = torch.from_numpy(rng.integers(0, NCLS, size=(bsz,)))
    return ids, feats, labels

def validate(model, rng, bug, rank, log):
    model.eval()
    if bug == 'tensor_nograd':
        torch.set_grad_enabled(False)   # "faster eval" -- never switched back on
        ids, feats, labels = make_batch(rng, 8)
        logits, _ = model(ids, feats)
        acc = (logits.argmax(-1) == labels).float().mean().item()
    else:
        with torch.no_grad():
            ids, feats, labels = make_batch(rng, 8)
            logits, _ = model(ids, feats)
            acc = (logits.argmax(-1) == labels).float().mean().item()
    model.train()
    return acc

def main(rank=None, world=None, args=None):
    rank, world = setup_dist(rank, world, args.port)
    log = get_logger(rank, args.use_logging)
    torch.manual_seed(0)
    rng = np.random.default_rng(1234 + rank)
    bug = args.bug
    on_me = (rank == args.bug_rank)
    hid = HID
    if bug == 'model_mismatch' and on_me:
        hid = int(os.environ.get('HIDDEN_SIZE', '48'))   # rank read a stale config
    model = Net(hid=hid, aux=(bug in ('unused', 'unused_ok')))
    if bug == 'inference' :
        with torch.inference_mode():
            model.scale = torch.full((1, 1, hid), 1.0 / math.sqrt(hid))
    if world > 1:
        model = DDP(model, find_unused_parameters=(bug in ('unused_ok', 'fu_noaux')))
        log(f'[rank {rank}] DDP ready, world_size={world}')
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=args.steps)
    if bug == 'nonscalar':
        loss_fn = nn.CrossEntropyLoss(reduction='none')   # per-sample weighting later
    else:
        loss_fn = nn.CrossEntropyLoss()
    if bug == 'none' and rank == 0:
        sched.step()  # stepped once at start "to warm up"
    h = None
    for epoch in range(args.epochs):
        it = range(args.steps)
        if args.progress and rank == 0:
            it = tqdm(it, desc=f'epoch {epoch}', ncols=90, file=sys.stderr, mininterval=0)
        run_loss = 0.0
        for step in it:
            trig = on_me and step >= args.bug_step
            seq = SEQ
            dtype = np.float32
            vocab = VOCAB
            if bug == 'shape' and trig:
                seq = 24            # last length bucket of the dataset is longer
            if bug == 'dtype' and trig:
                dtype = np.float64  # shard 2 written by another preprocessing script
            if bug == 'embed' and trig:
                vocab = 128         # tokenizer got extra special tokens, model was not resized
            ids, feats, labels = make_batch(rng, 8, seq, vocab, dtype)
            if bug == 'loss_target' and trig:
                labels = labels.unsqueeze(1)   # labels column read as [[y]]
            h0 = h if bug == 'backward_twice' else None
            logits, h = model(ids, feats, h0=h0, bug=bug if trig or bug in ('backward_twice',) else None)
            if bug == 'unused' :
                pass
            loss = loss_fn(logits, labels)
            if bug == 'leaf_inplace' and trig:
                m = model.module if world > 1 else model
                m.head.weight.clamp_(-0.5, 0.5)   # weight clipping
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
            run_loss += loss.item() if loss.dim() == 0 else 0
            if step % 4 == 3:
                if bug == 'numpy' and trig:
                    probs = logits.softmax(-1).numpy()
                    auc = float((probs.max(-1) > 0.5).mean())
                if bug == 'attr' and trig:
                    vs = model.vocab_size
                lr = sched.get_last_lr()[0]
                msg = f'epoch {epoch} step {step+1}/{args.steps} loss {run_loss/4:.4f} lr {lr:.2e} grad_clip 1.0'
                if args.progress and rank == 0:
                    it.write(msg)
                else:
                    log(f'[rank {rank}] ' + msg if world > 1 else msg)
                run_loss = 0.0
            if step == args.steps // 2 - 1:
                acc = validate(model, rng, bug if trig else None, rank, log)
                log(f'[rank {rank}] val_acc {acc:.3f}' if world > 1 else f'val_acc {acc:.3f}')
    log(f'[rank {rank}] training finished' if world > 1 else 'training finished')
    if world > 1:
        dist.destroy_process_group()

if __name__ == '__main__':
    args = base_parser().parse_args()
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(main, args=(args.spawn, args), nprocs=args.spawn, join=True)
    else:
        main(args=args)
