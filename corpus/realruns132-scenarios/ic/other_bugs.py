"""Faults outside the usual classes. --bug: onecycle | bn_single | pack_unsorted"""
import os, sys
sys.path.insert(0, os.path.dirname(__file__))
import numpy as np
import torch, torch.nn as nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_sequence
from torch.utils.data import TensorDataset, DataLoader
from tqdm import tqdm
from common import base_parser, get_logger, setup_dist

def main(args):
    rank, world = setup_dist(None, None, args.port)
    log = get_logger(rank, args.use_logging)
    torch.manual_seed(0)
    n = 8 * args.steps + (1 if args.bug == 'bn_single' else 0)   # dataset size not a multiple of batch size
    X = torch.randn(n, 20); Y = torch.randint(0, 3, (n,))
    dl = DataLoader(TensorDataset(X, Y), batch_size=8, shuffle=True)
    model = nn.Sequential(nn.Linear(20, 64), nn.BatchNorm1d(64), nn.ReLU(), nn.Linear(64, 3))
    rnn = nn.LSTM(20, 16, batch_first=True)
    opt = torch.optim.Adam(list(model.parameters()) + list(rnn.parameters()), lr=1e-3)
    total = len(dl) * args.epochs
    if args.bug == 'onecycle':
        total = args.steps * args.epochs   # computed from the config, not len(dl)
        dl = DataLoader(TensorDataset(torch.randn(8 * args.steps + 20, 20), torch.randint(0, 3, (8 * args.steps + 20,))), batch_size=8, shuffle=True)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=1e-2, total_steps=total)
    lossf = nn.CrossEntropyLoss()
    step = 0
    for ep in range(args.epochs):
        it = tqdm(dl, desc=f'epoch {ep}', ncols=90, mininterval=0) if args.progress else dl
        for x, y in it:
            out = model(x)
            loss = lossf(out, y)
            if args.bug == 'pack_unsorted' and step >= args.bug_step:
                seqs = [torch.randn(int(l), 20) for l in torch.randint(3, 12, (x.size(0),))]
                lengths = torch.tensor([s.size(0) for s in seqs])
                packed = pack_padded_sequence(pad_sequence(seqs, batch_first=True), lengths, batch_first=True)
                _, (hN, _) = rnn(packed)
                loss = loss + 0.01 * hN.pow(2).mean()
            opt.zero_grad(); loss.backward(); opt.step(); sched.step()
            step += 1
            if step % 5 == 0:
                msg = f'step {step} loss {loss.item():.4f} lr {sched.get_last_lr()[0]:.5f}'
                it.write(msg) if args.progress else log(msg)
    log('finished')

if __name__ == '__main__':
    main(base_parser().parse_args())
