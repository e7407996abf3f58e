"""Keras 3 (JAX backend) MLP on a tabular CSV built locally. --fault: none, nan_feature (missing values
in one CSV column read as NaN and never imputed)."""
import argparse
import os

os.environ.setdefault("KERAS_BACKEND", "jax")
import numpy as np
import keras

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--csv", default="scratch/tab.csv")
p.add_argument("--epochs", type=int, default=5)
args = p.parse_args()


def write_csv(path, n=3000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 8))
    y = (X[:, 0] + 0.5 * X[:, 1] - X[:, 2] > 0).astype(int)
    rows = ["f0,f1,f2,f3,f4,f5,f6,income,label"]
    for i in range(n):
        inc = "" if (args.fault == "nan_feature" and i == 2113) else f"{abs(X[i, 7]) * 5e4:.0f}"
        rows.append(",".join(f"{v:.5f}" for v in X[i, :7]) + f",{inc},{y[i]}")
    with open(path, "w") as f:
        f.write("\n".join(rows) + "\n")


def main():
    write_csv(args.csv)
    data = np.genfromtxt(args.csv, delimiter=",", skip_header=1)
    X, y = data[:, :-1].astype("float32"), data[:, -1].astype("int32")
    X[:, 7] = np.log1p(X[:, 7]) / 10.0
    print(f"loaded {X.shape[0]} rows x {X.shape[1]} features from {args.csv}")
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(32, activation="relu"),
                              keras.layers.Dense(32, activation="relu"), keras.layers.Dense(2)])
    model.compile(optimizer=keras.optimizers.Adam(1e-3),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    model.fit(X, y, batch_size=64, epochs=args.epochs, validation_split=0.1, verbose=2,
              callbacks=[keras.callbacks.TerminateOnNaN()])
    print("eval:", model.evaluate(X[-300:], y[-300:], verbose=0))


if __name__ == "__main__":
    main()
