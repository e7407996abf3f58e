"""Train a small CNN and write a model diagram + metrics report at the end of each run."""
import argparse, os, logging
import numpy as np
p = argparse.ArgumentParser()
p.add_argument("--epochs", type=int, default=3)
p.add_argument("--report-dir", default="report")
args = p.parse_args()
logging.basicConfig(level=logging.INFO, format="[%(asctime)s] %(name)s %(levelname)s: %(message)s")
log = logging.getLogger("cnn")
import tensorflow as tf
import keras
rng = np.random.default_rng(2)
x = rng.random((400, 28, 28, 1)).astype("float32"); y = rng.integers(0, 10, 400)
model = keras.Sequential([keras.Input((28, 28, 1)), keras.layers.Conv2D(8, 3, activation="relu"),
                          keras.layers.MaxPooling2D(), keras.layers.Flatten(), keras.layers.Dropout(0.2),
                          keras.layers.Dense(10)], name="mnist_cnn")
model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
os.makedirs(args.report_dir, exist_ok=True)
cbs = [keras.callbacks.CSVLogger(os.path.join(args.report_dir, "history.csv")),
       keras.callbacks.EarlyStopping(monitor="val_loss", patience=5)]
model.fit(x, y, epochs=args.epochs, batch_size=32, validation_split=0.2, verbose=2, callbacks=cbs)
log.info("writing model diagram")
keras.utils.plot_model(model, to_file=os.path.join(args.report_dir, "model.png"), show_shapes=True)
log.info("report written to %s", args.report_dir)
