"""Recursive tree model / recursive sample parsing: RecursionError vs SIGSEGV under ulimit -s."""
import os, sys, time, argparse, resource, json
import torch, torch.nn as nn, torch.distributed as dist
from torch.utils.data import Dataset, DataLoader
from common import base_args, init_dist

def make_tree(depth, fan_last=2):
    # left-deep tree like an AST of a long chained expression a+b+c+...
    node = {"tok": 1, "kids": []}
    for d in range(depth):
        node = {"tok": (d % 50) + 2, "kids": [node, {"tok": 3, "kids": []}]}
    return node

def tree_to_tokens(node):  # recursive flattening used in __getitem__
    out = [node["tok"]]
    for k in node["kids"]:
        out.extend(tree_to_tokens(k))
    return out

class TreeDS(Dataset):
    def __init__(self, n, deep_idx, deep_depth, parse_in_worker):
        self.n, self.deep_idx, self.deep_depth, self.piw = n, deep_idx, deep_depth, parse_in_worker
    def __len__(self): return self.n
    def __getitem__(self, i):
        depth = self.deep_depth if i == self.deep_idx else 6 + i % 5
        t = make_tree(depth)
        if self.piw:
            toks = tree_to_tokens(t)[:64]
            toks += [0] * (64 - len(toks))
            return torch.tensor(toks), torch.tensor(i % 4)
        return t, torch.tensor(i % 4)

class TreeEncoder(nn.Module):
    def __init__(self, vocab=64, d=32):
        super().__init__()
        self.emb = nn.Embedding(vocab, d); self.comb = nn.Linear(2 * d, d); self.head = nn.Linear(d, 4)
    def encode(self, node):
        h = self.emb(torch.tensor([node["tok"]]))
        if node["kids"]:
            kids = [self.encode(k) for k in node["kids"]]
            acc = kids[0]
            for k in kids[1:]:
                acc = torch.tanh(self.comb(torch.cat([acc, k], -1)))
            h = h + acc
        return h
    def forward(self, tree):
        return self.head(self.encode(tree))

def keep_tree(sample):
    return sample  # trees stay python dicts

class BagModel(nn.Module):
    def __init__(self, vocab=64, d=32):
        super().__init__(); self.emb = nn.EmbeddingBag(vocab, d); self.head = nn.Linear(d, 4)
    def forward(self, x): return self.head(self.emb(x))

def main():
    p = base_args(); p.add_argument("--deep-depth", type=int, default=20000); p.add_argument("--recursion-limit", type=int, default=0)
    p.add_argument("--parse-in-worker", action="store_true"); p.add_argument("--progress", action="store_true"); p.add_argument("--dump-samples", default="")
    args = p.parse_args()
    if args.recursion_limit:
        sys.setrecursionlimit(args.recursion_limit)   # "deep parse trees need a higher limit"
    rank, world = init_dist()
    soft, hard = resource.getrlimit(resource.RLIMIT_STACK)
    print(f"[rank{rank}] stack limit {soft//1024 if soft>0 else soft} KiB, recursion limit {sys.getrecursionlimit()}", flush=True)
    deep_idx = args.fault_step if (args.fault != "none" and (args.fault_rank < 0 or args.fault_rank == rank)) else -1
    ds = TreeDS(64, deep_idx, args.deep_depth, args.parse_in_worker)
    torch.manual_seed(0)
    if args.parse_in_worker:
        model = BagModel()
        dl = DataLoader(ds, batch_size=1, num_workers=args.workers)
    else:
        model = TreeEncoder()
        dl = DataLoader(ds, batch_size=None, num_workers=args.workers, collate_fn=keep_tree)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    it = dl
    if args.progress:
        from tqdm import tqdm
        it = tqdm(dl, total=min(len(ds), args.steps), desc="train", dynamic_ncols=False, ncols=90)
    dumpf = open(f"{args.dump_samples}.rank{rank}.jsonl", "w") if args.dump_samples else None
    for step, (x, y) in enumerate(it):
        if dumpf is not None:   # provenance log of every training sample
            dumpf.write(json.dumps({"step": step, "tree": x}) + "\n")
        logits = model(x)
        loss = nn.functional.cross_entropy(logits, y.view(-1))
        opt.zero_grad(); loss.backward()
        if world > 1:
            for prm in model.parameters():
                if prm.grad is not None:
                    dist.all_reduce(prm.grad); prm.grad /= world
        opt.step()
        if not args.progress: print(f"[rank{rank}] step {step} loss {loss.item():.4f}", flush=True)
        if step + 1 >= args.steps: break
    if world > 1: dist.barrier(); dist.destroy_process_group()
    print(f"[rank{rank}] finished", flush=True)

if __name__ == "__main__":
    main()
