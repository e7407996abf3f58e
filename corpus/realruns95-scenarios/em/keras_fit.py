"""Keras 3 model.fit scenarios (run with KERAS_BACKEND=torch or jax). --fault selects the problem."""
import argparse, os, sys, logging
import numpy as np

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--epochs", type=int, default=4)
p.add_argument("--features", type=int, default=16)
p.add_argument("--hidden", type=int, default=32)
p.add_argument("--lr", type=float, default=1e-3)
p.add_argument("--n", type=int, default=512)
p.add_argument("--out", default="/work/rr95/em/work/keras_out")
p.add_argument("--weights", default=None)
p.add_argument("--verbose", default="auto")
p.add_argument("--logging", action="store_true")
args = p.parse_args()
if args.logging:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
log = logging.getLogger("keras_fit")

import keras
from keras import layers

log.info("keras %s backend=%s", keras.__version__, keras.backend.backend())
keras.utils.set_random_seed(0)
N_CLS = 5
os.makedirs(args.out, exist_ok=True)


def load_data(n, d):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, d)).astype("float32")
    y = np.argmax(x[:, :N_CLS], axis=1).astype("int64")
    return x, y


def build(in_dim, hidden):
    inp = keras.Input(shape=(in_dim,), name="features")
    h = layers.Dense(hidden, activation="relu", name="dense_in")(inp)
    h = layers.Dropout(0.1)(h)
    h = layers.Dense(hidden, activation="relu", name="dense_mid")(h)
    out = layers.Dense(N_CLS, activation="softmax", name="head")(h)
    return keras.Model(inp, out, name="mlp")


def main():
    # the model is built for the configured feature width; the data loader reads args.features columns
    model_dim = 16
    x, y = load_data(args.n, args.features)
    xv, yv = x[: args.n // 8], y[: args.n // 8]
    if args.fault == "noisy":
        # standardise features; column 3 is constant in this export
        x[:, 3] = 1.0
        mu, sd = x.mean(0), x.std(0)
        x = np.nan_to_num((x - mu) / sd)
        model = keras.Sequential([layers.Dense(args.hidden, activation="relu", input_shape=(model_dim,)),
                                  layers.Dense(args.hidden, activation="relu"),
                                  layers.Dense(N_CLS, activation="softmax")])
    else:
        model = build(model_dim, args.hidden)
    model.summary()
    loss = "sparse_categorical_crossentropy"
    metrics = ["accuracy"]
    if args.fault == "loss-target":
        loss = "categorical_crossentropy"  # labels are still integer class ids
    if args.fault == "nan":
        # "log-likelihood" written by hand: log of a probability that can be exactly 0
        def nll(y_true, y_pred):
            idx = keras.ops.cast(keras.ops.reshape(y_true, (-1,)), "int32")
            p = keras.ops.take_along_axis(y_pred, keras.ops.expand_dims(idx, -1), axis=-1)
            return -keras.ops.mean(keras.ops.log(p))
        loss = nll
    opt = keras.optimizers.Adam(learning_rate=args.lr)
    model.compile(optimizer=opt, loss=loss, metrics=metrics)
    cbs = [keras.callbacks.TerminateOnNaN(), keras.callbacks.CSVLogger(os.path.join(args.out, "history.csv"))]
    if args.fault == "ckpt-ext":
        cbs.append(keras.callbacks.ModelCheckpoint(os.path.join(args.out, "best_model.h5"), monitor="val_loss", save_best_only=True))
    else:
        cbs.append(keras.callbacks.ModelCheckpoint(os.path.join(args.out, "best.weights.h5"), monitor="val_loss",
                                                   save_best_only=True, save_weights_only=True, verbose=1))
    if args.fault == "noisy":
        cbs.append(keras.callbacks.EarlyStopping(monitor="val_accuracy", patience=1, restore_best_weights=True))
        cbs.append(keras.callbacks.ReduceLROnPlateau(monitor="val_loss", patience=1, factor=0.5, verbose=1))
    if args.weights:
        log.info("restoring weights from %s", args.weights)
        model.load_weights(args.weights)
    if args.fault == "oom":
        # augmentation: precompute 64 noisy copies of the train set (float64)
        x = np.repeat(x, 64, axis=0) + np.random.default_rng(1).normal(size=(x.shape[0] * 64, 4096))[:, : x.shape[1]]
    hist = model.fit(x, y, validation_data=(xv, yv), epochs=args.epochs, batch_size=32, callbacks=cbs,
                     verbose=args.verbose if args.verbose == "auto" else int(args.verbose))
    log.info("final: %s", {k: round(float(v[-1]), 4) for k, v in hist.history.items()})
    model.save_weights(os.path.join(args.out, f"final-h{args.hidden}.weights.h5"))
    print("saved", os.path.join(args.out, f"final-h{args.hidden}.weights.h5"))


if __name__ == "__main__":
    main()
