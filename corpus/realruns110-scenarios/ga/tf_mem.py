"""Tiny next-token LM in tf.keras; memory is governed by batch * seq_len * vocab of the logits tensor."""
import argparse, logging
import numpy as np
p = argparse.ArgumentParser()
p.add_argument("--vocab", type=int, default=2000)
p.add_argument("--seq", type=int, default=64)
p.add_argument("--batch", type=int, default=16)
p.add_argument("--eval-batch", type=int, default=16)
p.add_argument("--steps", type=int, default=30)
args = p.parse_args()
logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s lm: %(message)s")
log = logging.getLogger()
import tensorflow as tf
import keras
rng = np.random.default_rng(0)
model = keras.Sequential([keras.Input(shape=(args.seq,), dtype="int32"),
                          keras.layers.Embedding(args.vocab, 64),
                          keras.layers.Dense(64, activation="gelu"),
                          keras.layers.Dense(args.vocab)])
model.summary(print_fn=log.info)
opt = keras.optimizers.Adam(3e-4)
lossf = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
@tf.function
def train_step(x, y):
    with tf.GradientTape() as tape:
        l = lossf(y, model(x, training=True))
    g = tape.gradient(l, model.trainable_variables)
    opt.apply_gradients(zip(g, model.trainable_variables))
    return l
@tf.function
def eval_step(x, y):
    logits = model(x, training=False)
    return lossf(y, logits), tf.reduce_mean(tf.cast(tf.argmax(logits, -1, output_type=tf.int32) == y, tf.float32))
def batch(n):
    t = rng.integers(0, args.vocab, size=(n, args.seq + 1)).astype("int32")
    return t[:, :-1], t[:, 1:]
for s in range(1, args.steps + 1):
    l = train_step(*batch(args.batch))
    if s % 5 == 0:
        log.info("step %d/%d loss %.4f", s, args.steps, float(l))
    if s % 10 == 0:
        el, acc = eval_step(*batch(args.eval_batch))
        log.info("eval @%d loss %.4f acc %.4f", s, float(el), float(acc))
log.info("finished")
