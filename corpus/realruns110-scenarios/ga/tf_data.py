"""tf.data input pipelines feeding tf.keras training. --make-data writes the shards; corruption is done outside."""
import argparse, glob, io, os, sys, logging
import numpy as np
p = argparse.ArgumentParser()
p.add_argument("--make-data", action="store_true")
p.add_argument("--kind", default="tfrecord", choices=["tfrecord", "jpeg", "csv", "text"])
p.add_argument("--data", default="data")
p.add_argument("--pattern", default=None)
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--shards", type=int, default=4)
p.add_argument("--tqdm", action="store_true")
args = p.parse_args()
logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s [input] %(message)s")
log = logging.getLogger()
import tensorflow as tf
import keras
rng = np.random.default_rng(3)
D, C = 16, 4
IMG = 24

def make():
    os.makedirs(args.data, exist_ok=True)
    if args.kind == "tfrecord":
        for s in range(args.shards):
            fn = os.path.join(args.data, f"train-{s:05d}-of-{args.shards:05d}.tfrecord")
            with tf.io.TFRecordWriter(fn) as w:
                for i in range(200):
                    f = rng.normal(size=D).astype("float32")
                    ex = tf.train.Example(features=tf.train.Features(feature={
                        "x": tf.train.Feature(float_list=tf.train.FloatList(value=f)),
                        "y": tf.train.Feature(int64_list=tf.train.Int64List(value=[int(np.argmax(f[:C]))]))}))
                    w.write(ex.SerializeToString())
            log.info("wrote %s (%d bytes)", fn, os.path.getsize(fn))
    elif args.kind == "jpeg":
        for c in range(C):
            os.makedirs(os.path.join(args.data, f"class{c}"), exist_ok=True)
            for i in range(40):
                img = (rng.random((IMG, IMG, 3)) * 60 + c * 50).astype("uint8")
                enc = tf.io.encode_jpeg(img).numpy()
                open(os.path.join(args.data, f"class{c}", f"img_{i:04d}.jpg"), "wb").write(enc)
        log.info("wrote %d jpegs under %s", 40 * C, args.data)
    elif args.kind == "csv":
        with open(os.path.join(args.data, "train.csv"), "w") as f:
            f.write(",".join([f"f{i}" for i in range(D)] + ["label"]) + "\n")
            for i in range(800):
                v = rng.normal(size=D)
                f.write(",".join(f"{a:.5f}" for a in v) + f",{int(np.argmax(v[:C]))}\n")
        log.info("wrote %s", os.path.join(args.data, "train.csv"))
    elif args.kind == "text":
        with open(os.path.join(args.data, "tokens.txt"), "w") as f:
            for i in range(600):
                n = 12 if i < 450 else int(rng.integers(5, 20))   # later records appended by a new exporter, unpadded
                f.write(" ".join(str(int(t)) for t in rng.integers(1, 200, size=n)) + "\n")
        log.info("wrote %s", os.path.join(args.data, "tokens.txt"))

if args.make_data:
    make(); sys.exit(0)

def build_ds():
    if args.kind == "tfrecord":
        pattern = args.pattern or os.path.join(args.data, "train-*.tfrecord")
        files = tf.data.Dataset.list_files(pattern, shuffle=False)
        ds = files.interleave(tf.data.TFRecordDataset, cycle_length=2)
        spec = {"x": tf.io.FixedLenFeature([D], tf.float32), "y": tf.io.FixedLenFeature([], tf.int64)}
        ds = ds.map(lambda r: (lambda e: (e["x"], e["y"]))(tf.io.parse_single_example(r, spec)))
        return ds.batch(32).prefetch(2), (D,)
    if args.kind == "jpeg":
        ds = keras.utils.image_dataset_from_directory(args.data, image_size=(IMG, IMG), batch_size=16,
                                                      shuffle=False, label_mode="int")
        return ds.map(lambda a, b: (a / 255.0, b)), (IMG, IMG, 3)
    if args.kind == "csv":
        ds = tf.data.experimental.make_csv_dataset(os.path.join(args.data, "train.csv"), batch_size=32,
                                                   label_name="label", num_epochs=1, shuffle=False,
                                                   column_defaults=[tf.float32] * D + [tf.int32])
        ds = ds.map(lambda feats, lab: (tf.stack([feats[f"f{i}"] for i in range(D)], axis=1), lab))
        return ds, (D,)
    if args.kind == "text":
        ds = tf.data.TextLineDataset(os.path.join(args.data, "tokens.txt"))
        ds = ds.map(lambda l: tf.strings.to_number(tf.strings.split(l), tf.int32))
        ds = ds.map(lambda t: (t, tf.reduce_sum(t) % C))
        return ds.batch(32), None

ds, shape = build_ds()
if args.kind == "text":
    model = keras.Sequential([keras.layers.Embedding(200, 16), keras.layers.GlobalAveragePooling1D(), keras.layers.Dense(C)])
elif args.kind == "jpeg":
    model = keras.Sequential([keras.Input(shape=shape), keras.layers.Conv2D(8, 3, activation="relu"),
                              keras.layers.GlobalAveragePooling2D(), keras.layers.Dense(C)])
else:
    model = keras.Sequential([keras.Input(shape=shape), keras.layers.Dense(32, activation="relu"), keras.layers.Dense(C)])
opt = keras.optimizers.Adam(1e-3)
lossf = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

@tf.function
def step(xb, yb):
    with tf.GradientTape() as tape:
        l = lossf(yb, model(xb, training=True))
    g = tape.gradient(l, model.trainable_variables)
    opt.apply_gradients(zip(g, model.trainable_variables))
    return l

log.info("starting training, %d epochs", args.epochs)
for ep in range(args.epochs):
    it = ds
    if args.tqdm:
        from tqdm import tqdm
        it = tqdm(ds, desc=f"epoch {ep}", unit="batch")
    tot, n = 0.0, 0
    for xb, yb in it:
        l = float(step(xb, yb)); tot += l; n += 1
        if args.tqdm:
            it.set_postfix(loss=f"{l:.4f}")
    log.info("epoch %d: %d batches, mean loss %.4f", ep, n, tot / max(n, 1))
log.info("training complete")
