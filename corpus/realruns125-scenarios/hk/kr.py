"""Keras 3 training jobs; backend chosen via KERAS_BACKEND (jax / torch)."""
import argparse, os, sys
p = argparse.ArgumentParser()
p.add_argument("--job", required=True)
p.add_argument("--epochs", type=int, default=5)
p.add_argument("--ckpt-monitor", default="val_acc")
p.add_argument("--es-monitor", default="val_auc")
args = p.parse_args()
import numpy as np
import keras
from keras import layers
print(f"keras {keras.__version__} backend={keras.backend.backend()}", flush=True)
rng = np.random.default_rng(0)

if args.job == "shape":
    # sequence classifier; data loader yields (batch, 20, 8) windows but model was written for 16 features
    X = rng.normal(size=(512, 20, 8)).astype("float32")
    y = rng.integers(0, 4, size=(512,))
    model = keras.Sequential([keras.Input(shape=(20, 16)), layers.Conv1D(32, 3, activation="relu"),
                              layers.GlobalAveragePooling1D(), layers.Dense(4, activation="softmax")])
    model.compile("adam", "sparse_categorical_crossentropy", metrics=["accuracy"])
    model.summary()
    model.fit(X, y, epochs=args.epochs, batch_size=32, validation_split=0.1)

elif args.job == "nan":
    # regression on raw (unnormalised) revenue targets with a large learning rate
    X = rng.normal(size=(2048, 12)).astype("float32")
    y = (np.exp(X[:, 0] * 4) * 1e4).astype("float32")
    model = keras.Sequential([keras.Input(shape=(12,)), layers.Dense(64, activation="relu"),
                              layers.Dense(64, activation="relu"), layers.Dense(1)])
    model.compile(keras.optimizers.SGD(learning_rate=float(os.environ.get("LR", "0.05")), momentum=0.9), "mse", metrics=["mae"])
    cbs = [keras.callbacks.TerminateOnNaN(),
           keras.callbacks.CSVLogger("/work/rr125/hk/work/keras_nan_history.csv")]
    h = model.fit(X, y, epochs=args.epochs, batch_size=64, validation_split=0.1, callbacks=cbs, verbose=2)
    print("training ended after", len(h.history["loss"]), "epochs; last loss", h.history["loss"][-1], flush=True)
    model.save("/work/rr125/hk/work/revenue_model.keras")
    print("saved /work/rr125/hk/work/revenue_model.keras", flush=True)

elif args.job == "healthy":
    X = rng.normal(size=(2000, 10)).astype("float32")
    y = (X[:, 0] + X[:, 1] > 0).astype("float32")
    # layer definition copied from a Keras 2 notebook
    model = keras.Sequential([layers.Dense(32, activation="relu", input_shape=(10,)),
                              layers.Dropout(0.2), layers.Dense(1, activation="sigmoid")])
    model.compile(keras.optimizers.Adam(1e-3), "binary_crossentropy", metrics=["accuracy", "auc"])
    cbs = [keras.callbacks.EarlyStopping(monitor=args.es_monitor, patience=2, restore_best_weights=True),
           keras.callbacks.ReduceLROnPlateau(monitor="val_loss", patience=1, factor=0.5, verbose=1),
           keras.callbacks.ModelCheckpoint("/work/rr125/hk/work/ckpt_best.weights.h5", monitor=args.ckpt_monitor,
                                           save_best_only=True, save_weights_only=True)]
    model.fit(X, y, epochs=args.epochs, batch_size=64, validation_split=0.2, callbacks=cbs, verbose=2)
    print("eval:", model.evaluate(X[:200], y[:200], verbose=0), flush=True)
else:
    sys.exit("unknown job")
