"""Sentiment classification with a tiny whitespace tokenizer built locally.
--fault {none,oov,nopad,worker,lambda,metric}"""
import argparse, logging, os, random, sys, warnings
from collections import Counter
from datetime import timedelta
import torch
import torch.nn as nn
from torch.utils.data import Dataset, DataLoader

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--rank-fault", type=int, default=1)
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--workers", type=int, default=0)
p.add_argument("--bs", type=int, default=16)
p.add_argument("--arch", default="bag")
args = p.parse_args()

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
log = logging.getLogger("textcls")

POS = "good great excellent lovely fun wonderful enjoyable superb".split()
NEG = "bad awful boring terrible dull poor weak horrible".split()
FILL = "the movie plot was acting and film story really very quite a".split()


def make_corpus(n, seed):
    rnd = random.Random(seed)
    rows = []
    for i in range(n):
        lab = rnd.choice(["pos", "neg"])
        words = [rnd.choice(FILL) for _ in range(rnd.randint(4, 12))]
        for _ in range(rnd.randint(1, 3)):
            words.insert(rnd.randrange(len(words)), rnd.choice(POS if lab == "pos" else NEG))
        rows.append((" ".join(words), lab))
    return rows


class Tokenizer:
    def __init__(self, texts, min_freq=2):
        c = Counter(w for t in texts for w in t.split())
        self.itos = ["<pad>"] + sorted(w for w, f in c.items() if f >= min_freq)
        self.stoi = {w: i for i, w in enumerate(self.itos)}
        # unknown words get the next free id
        self.unk = len(self.itos)
    def __len__(self): return len(self.itos)
    def encode(self, text):
        return [self.stoi.get(w, self.unk) for w in text.split()]


LABELS = {"pos": 1, "neg": 0}


class TextDS(Dataset):
    def __init__(self, rows, tok): self.rows, self.tok = rows, tok
    def __len__(self): return len(self.rows)
    def __getitem__(self, i):
        text, lab = self.rows[i]
        ids = torch.tensor(self.tok.encode(text))
        return ids, LABELS[lab]


def pad_collate(batch):
    ids, labs = zip(*batch)
    return nn.utils.rnn.pad_sequence(ids, batch_first=True), torch.tensor(labs)


class BagModel(nn.Module):
    def __init__(self, vocab, dim=32):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim, padding_idx=0)
        self.enc = None
        if args.arch == "transformer":
            layer = nn.TransformerEncoderLayer(dim, 4, 64, dropout=0.1, batch_first=True, norm_first=True)
            self.enc = nn.TransformerEncoder(layer, 2)
        self.fc = nn.Linear(dim, 2)
    def forward(self, ids):
        mask = (ids != 0).unsqueeze(-1).float()
        e = self.emb(ids)
        if self.enc is not None:
            e = self.enc(e, src_key_padding_mask=(ids == 0))
        h = (e * mask).sum(1) / mask.sum(1).clamp(min=1)
        return self.fc(h)


def main():
    dist_on = "WORLD_SIZE" in os.environ
    rank, world = 0, 1
    if dist_on:
        import torch.distributed as dist
        dist.init_process_group("gloo", timeout=timedelta(seconds=30))
        rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    train_rows = make_corpus(400, 0)
    val_rows = make_corpus(80, 1)
    if args.fault == "metric":
        val_rows.append(("the film was great and the story lovely", "pos"))
    if args.fault == "oov":
        val_rows.append(("the movie was mesmerising and the acting superb", "pos"))
    if args.fault == "worker":
        # a third annotator used 'neutral' on a few rows
        for j in (37, 151, 290):
            train_rows[j] = (train_rows[j][0], "neutral")
    tok = Tokenizer([t for t, _ in train_rows])
    log.info("rank %d: vocab size %d, %d train / %d val rows", rank, len(tok), len(train_rows), len(val_rows))
    tr, va = TextDS(train_rows, tok), TextDS(val_rows, tok)
    if dist_on:
        from torch.utils.data.distributed import DistributedSampler
        tr_sampler = DistributedSampler(tr, shuffle=True)
    else:
        tr_sampler = None
    kw = dict(num_workers=args.workers)
    collate = pad_collate
    if args.fault == "nopad":
        collate = None   # default_collate
    if args.fault == "lambda":
        collate = lambda b: pad_collate(b)
        kw["multiprocessing_context"] = "spawn"
    dl = DataLoader(tr, batch_size=args.bs, shuffle=tr_sampler is None, sampler=tr_sampler,
                    collate_fn=collate, **kw)
    vdl = DataLoader(va, batch_size=args.bs, collate_fn=pad_collate)
    model = BagModel(len(tok))
    if dist_on:
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    crit = nn.CrossEntropyLoss()
    for ep in range(args.epochs):
        if tr_sampler is not None:
            tr_sampler.set_epoch(ep)
        model.train()
        for step, (ids, y) in enumerate(dl):
            opt.zero_grad()
            loss = crit(model(ids), y)
            loss.backward()
            opt.step()
            if step % 5 == 0:
                log.info("rank %d epoch %d step %d loss %.4f", rank, ep, step, loss.item())
        model.eval()
        preds, gold = [], []
        with torch.no_grad():
            for ids, y in vdl:
                preds.append(model(ids).argmax(1)); gold.append(y)
        preds, gold = torch.cat(preds), torch.cat(gold)
        acc = (preds == gold).float().mean().item()
        if dist_on:
            import torch.distributed as dist
            # confusion counts per predicted class, summed over ranks
            if args.fault == "metric":
                # each rank scores its own stride of the val set, then sum the hit vectors
                hits = (preds == gold)[rank::world].float()
                dist.all_reduce(hits)
                acc = hits.mean().item() / world
            counts = torch.bincount(preds[rank::world], minlength=2)
            dist.all_reduce(counts)
            log.info("rank %d epoch %d val acc %.3f pred-class counts %s", rank, ep, acc, counts.tolist())
        else:
            log.info("epoch %d val acc %.3f", ep, acc)
    if dist_on:
        import torch.distributed as dist
        dist.destroy_process_group()
    log.info("rank %d finished", rank)


if __name__ == "__main__":
    main()
