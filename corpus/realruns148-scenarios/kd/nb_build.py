"""Build a training notebook; --fault selects the bug in the training cell."""
import argparse, nbformat
from nbformat.v4 import new_notebook, new_code_cell, new_markdown_cell
p = argparse.ArgumentParser(); p.add_argument("--fault", default="none"); p.add_argument("--out", required=True)
p.add_argument("--steps", type=int, default=30)
a = p.parse_args()
cells = [new_markdown_cell("# Tiny classifier experiment"),
 new_code_cell("""import torch, torch.nn as nn, torch.nn.functional as F, warnings, time
from tqdm.auto import tqdm
torch.manual_seed(0)
print(torch.__version__)"""),
 new_code_cell("""X = torch.randn(256, 16)
y = (X[:, :4].sum(1) > 0).long()
ds = torch.utils.data.TensorDataset(X, y)
dl = torch.utils.data.DataLoader(ds, batch_size=32, shuffle=True)
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 2))
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
model""")]
if a.fault == "none":
    train = """history = []
sched = torch.optim.lr_scheduler.StepLR(opt, 5)
sched.step()  # (warning: called before opt.step)
for ep in tqdm(range(%d), desc="epochs"):
    for xb, yb in dl:
        loss = F.cross_entropy(model(xb), yb)
        opt.zero_grad(); loss.backward(); opt.step()
    history.append(loss.item())
    if ep %% 5 == 0:
        print(f"epoch {ep} loss {loss.item():.4f}")
warnings.warn("nan values found in validation metrics; metric will be ignored", RuntimeWarning)
print("final loss", history[-1])""" % a.steps
elif a.fault == "inplace":
    train = """for ep in range(%d):
    for xb, yb in dl:
        h = model[0](xb)
        a = torch.sigmoid(h)
        a += 0.1 * xb.mean()          # bias shift
        logits = model[2](a)
        loss = F.cross_entropy(logits, yb)
        opt.zero_grad(); loss.backward(); opt.step()
    print(f"epoch {ep} loss {loss.item():.4f}")""" % a.steps
elif a.fault == "numpy":
    train = """import numpy as np
accs = []
for ep in range(%d):
    for xb, yb in dl:
        logits = model(xb)
        loss = F.cross_entropy(logits, yb)
        opt.zero_grad(); loss.backward(); opt.step()
        probs = np.asarray(logits.softmax(-1))
        accs.append((probs.argmax(1) == yb.numpy()).mean())
    print(f"epoch {ep} loss {loss.item():.4f} acc {np.mean(accs):.3f}")""" % a.steps
elif a.fault == "slow":
    train = """for ep in tqdm(range(%d), desc="epochs"):
    for xb, yb in dl:
        loss = F.cross_entropy(model(xb), yb)
        opt.zero_grad(); loss.backward(); opt.step()
        time.sleep(0.05)   # throttle to share the box
    print(f"epoch {ep} loss {loss.item():.4f}")""" % a.steps
elif a.fault == "leaf":
    train = """w = model[0].weight
for ep in range(%d):
    for xb, yb in dl:
        loss = F.cross_entropy(model(xb), yb)
        opt.zero_grad(); loss.backward()
        w -= 1e-2 * w.grad            # manual SGD on first layer
        opt.step()
    print(f"epoch {ep} loss {loss.item():.4f}")""" % a.steps
cells.append(new_code_cell(train))
cells.append(new_code_cell("torch.save(model.state_dict(), '/tmp/kd_nb_model.pt')\nprint('saved')"))
nb = new_notebook(cells=cells, metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}})
nbformat.write(nb, a.out)
