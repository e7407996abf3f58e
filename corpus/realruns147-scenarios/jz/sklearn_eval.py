"""PyTorch classifier trained for a few epochs, evaluated each epoch with scikit-learn metrics.

  --fault none       eval passes hard labels
  --fault probs      eval passes sigmoid probabilities straight into f1_score
"""
import argparse
import logging

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from sklearn.metrics import accuracy_score, f1_score, roc_auc_score

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--epochs", type=int, default=3)
a = p.parse_args()
logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)-7s %(message)s")
log = logging.getLogger("clf")

torch.manual_seed(0)
X = torch.randn(800, 20)
y = (X[:, 0] + 0.5 * X[:, 1] > 0).float()
Xtr, ytr, Xva, yva = X[:600], y[:600], X[600:], y[600:]
model = nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 1))
opt = torch.optim.Adam(model.parameters(), lr=1e-2)

for ep in range(1, a.epochs + 1):
    model.train()
    perm = torch.randperm(600)
    for i in range(0, 600, 50):
        idx = perm[i:i + 50]
        loss = F.binary_cross_entropy_with_logits(model(Xtr[idx]).squeeze(1), ytr[idx])
        opt.zero_grad(); loss.backward(); opt.step()
    log.info("epoch %d train loss %.4f", ep, loss.item())
    model.eval()
    with torch.no_grad():
        prob = torch.sigmoid(model(Xva).squeeze(1)).numpy()
    y_true = yva.numpy().astype(int)
    y_pred = prob if a.fault == "probs" else (prob > 0.5).astype(int)
    auc = roc_auc_score(y_true, prob)
    f1 = f1_score(y_true, y_pred)
    acc = accuracy_score(y_true, y_pred)
    log.info("epoch %d val auc %.4f f1 %.4f acc %.4f", ep, auc, f1, acc)
log.info("training complete")
