import argparse, os
p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--backend", default="jax")
a = p.parse_args()
os.environ["KERAS_BACKEND"] = a.backend
import numpy as np, keras
rng = np.random.default_rng(0)
X = rng.normal(size=(512, 20)).astype("float32"); y = (X[:, :3].sum(1) > 0).astype("int32")
inp = keras.Input((20,))
h = keras.layers.Dense(32, activation="relu")(inp)
h = keras.layers.Dense(32, activation="relu")(h)
out = keras.layers.Dense(2)(h)
model = keras.Model(inp, out)
if a.fault == "softmax-logits":
    # healthy: logits + from_logits=False would be a bug; here a user warning only (softmax output with from_logits=True)
    out2 = keras.layers.Softmax()(out); model = keras.Model(inp, out2)
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
else:
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
model.compile(optimizer=keras.optimizers.Adam(1e-2), loss=loss, metrics=["accuracy"])
cbs = [keras.callbacks.EarlyStopping(monitor=("val_los" if a.fault == "monitor-typo" else "val_loss"), patience=2)]
model.fit(X, y, validation_split=0.2, epochs=6, batch_size=64, callbacks=cbs, verbose=2)
print("eval", model.evaluate(X, y, verbose=0))
