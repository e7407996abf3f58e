"""Build the small local data sets used by the fg scenarios (no downloads)."""
import os, io, json, tarfile, random, csv
import numpy as np
from PIL import Image

R = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data")
R = os.path.abspath(R)
rng = np.random.default_rng(0)

def img(path, size=(32, 32), fmt="JPEG"):
    a = rng.integers(0, 255, size=(size[1], size[0], 3), dtype=np.uint8)
    Image.fromarray(a).save(path, fmt)

# image folders (class subdirs)
for name in ["imgs_ok", "imgs_trunc", "imgs_text", "imgs_ragged"]:
    for c in ["cat", "dog"]:
        os.makedirs(os.path.join(R, name, c), exist_ok=True)
        for i in range(24):
            sz = (32, 32)
            if name == "imgs_ragged" and c == "dog" and i == 7:
                sz = (48, 40)
            img(os.path.join(R, name, c, f"{c}_{i:04d}.jpg"), sz)
# truncated JPEG: a partial download (first 40% of the bytes)
p = os.path.join(R, "imgs_trunc", "dog", "dog_0013.jpg")
b = open(p, "rb").read(); open(p, "wb").write(b[: len(b) * 2 // 5])
# non-image file saved with .jpg extension (an HTML error page from a scraper)
p = os.path.join(R, "imgs_text", "cat", "cat_0017.jpg")
open(p, "w").write("<html><head><title>403 Forbidden</title></head><body><h1>Forbidden</h1></body></html>\n")
# empty folder due to wrong extension (.png expected)
os.makedirs(os.path.join(R, "imgs_png", "cat"), exist_ok=True)
for i in range(5):
    img(os.path.join(R, "imgs_png", "cat", f"c{i}.jpeg"))

# tar shards (webdataset-style: key.npy + key.cls)
def shard(path, start, n):
    with tarfile.open(path, "w") as tf:
        for k in range(start, start + n):
            x = rng.standard_normal(16).astype(np.float32)
            bio = io.BytesIO(); np.save(bio, x); data = bio.getvalue()
            ti = tarfile.TarInfo(f"{k:06d}.npy"); ti.size = len(data); tf.addfile(ti, io.BytesIO(data))
            lab = str(k % 4).encode()
            ti = tarfile.TarInfo(f"{k:06d}.cls"); ti.size = len(lab); tf.addfile(ti, io.BytesIO(lab))
os.makedirs(os.path.join(R, "shards"), exist_ok=True)
for s in range(4):
    shard(os.path.join(R, "shards", f"train-{s:05d}.tar"), s * 64, 64)
# uneven: shard sizes differ
os.makedirs(os.path.join(R, "shards_uneven"), exist_ok=True)
for s, n in enumerate([64, 64, 64, 40]):
    shard(os.path.join(R, "shards_uneven", f"train-{s:05d}.tar"), s * 64, n)
# truncated copy of shard 3
os.makedirs(os.path.join(R, "shards_trunc"), exist_ok=True)
for s in range(4):
    src = os.path.join(R, "shards", f"train-{s:05d}.tar")
    b = open(src, "rb").read()
    if s == 3:
        b = b[: 23 * 1024 + 512 + 100]  # cut inside a member payload
    open(os.path.join(R, "shards_trunc", f"train-{s:05d}.tar"), "wb").write(b)

# tabular
os.makedirs(os.path.join(R, "tab"), exist_ok=True)
rows = [(i, round(float(rng.standard_normal()), 4), round(float(rng.standard_normal()), 4), int(i % 3)) for i in range(300)]
with open(os.path.join(R, "tab", "train.csv"), "w", newline="") as f:
    w = csv.writer(f); w.writerow(["id", "f1", "f2", "label"]); w.writerows(rows)
# csv with a bad row (unquoted comma in a field)
lines = open(os.path.join(R, "tab", "train.csv")).read().splitlines()
lines[212] = "211,0.1312,-0.77,2,\"note: relabelled, check\""
open(os.path.join(R, "tab", "train_bad.csv"), "w").write("\n".join(lines) + "\n")
# jsonl
texts = ["the quick brown fox jumps over the lazy dog", "a stitch in time saves nine",
         "all that glitters is not gold", "the early bird catches the worm",
         "actions speak louder than words", "better late than never"]
with open(os.path.join(R, "tab", "train.jsonl"), "w") as f:
    for i in range(256):
        f.write(json.dumps({"id": i, "text": texts[i % len(texts)] + f" {i}", "label": i % 2}) + "\n")
ls = open(os.path.join(R, "tab", "train.jsonl")).read().splitlines()
ls[147] = ls[147][: len(ls[147]) // 2]  # half-written line
open(os.path.join(R, "tab", "train_bad.jsonl"), "w").write("\n".join(ls) + "\n")
ls = open(os.path.join(R, "tab", "train.jsonl")).read().splitlines()
d = json.loads(ls[90]); d.pop("label"); d["lable"] = 1; ls[90] = json.dumps(d)
open(os.path.join(R, "tab", "train_misskey.jsonl"), "w").write("\n".join(ls) + "\n")
# parquet: two files, second lacks a column
import pyarrow as pa, pyarrow.parquet as pq
n = 200
t1 = pa.table({"id": list(range(n)), "text": [texts[i % 6] for i in range(n)], "label": [i % 2 for i in range(n)]})
t2 = pa.table({"id": list(range(n, 2 * n)), "text": [texts[i % 6] for i in range(n)]})
os.makedirs(os.path.join(R, "pq"), exist_ok=True)
pq.write_table(t1, os.path.join(R, "pq", "part-000.parquet"))
pq.write_table(t2, os.path.join(R, "pq", "part-001.parquet"))

# tiny tokenizer built locally (word level BPE)
from tokenizers import Tokenizer, models, pre_tokenizers, trainers
tok = Tokenizer(models.BPE(unk_token="<unk>"))
tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
tr = trainers.BpeTrainer(vocab_size=300, special_tokens=["<unk>", "<|endoftext|>"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
tok.train_from_iterator(texts * 50 + [str(i) for i in range(1000)], tr)
from transformers import PreTrainedTokenizerFast
ft = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<|endoftext|>", eos_token="<|endoftext|>", unk_token="<unk>", model_max_length=128)
ft.save_pretrained(os.path.join(R, "tok"))
print("data in", R)
