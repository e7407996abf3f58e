"""Write tokenised JSON shards: make_shards.py OUT NSHARDS [--vocab-for r=V] [--long-doc r=N] [--skip r]"""
import argparse, json, os, random
p = argparse.ArgumentParser()
p.add_argument("out"); p.add_argument("n", type=int)
p.add_argument("--vocab", type=int, default=512)
p.add_argument("--vocab-for", default="")
p.add_argument("--long-doc", default="")
p.add_argument("--skip", type=int, default=-1)
a = p.parse_args()
os.makedirs(a.out, exist_ok=True)
vf = dict(map(int, x.split("=")) for x in a.vocab_for.split(",") if x)
ld = dict(map(int, x.split("=")) for x in a.long_doc.split(",") if x)
for r in range(a.n):
    if r == a.skip:
        continue
    rnd = random.Random(r)
    V = vf.get(r, a.vocab)
    docs = [[rnd.randrange(V) for _ in range(rnd.randrange(40, 90))] for _ in range(64)]
    if r in ld:
        docs[13] = [rnd.randrange(V) for _ in range(ld[r])]
    json.dump({"docs": docs, "tokenizer_vocab": V}, open(os.path.join(a.out, f"shard-{r:05d}.json"), "w"))
print("wrote shards to", a.out)
