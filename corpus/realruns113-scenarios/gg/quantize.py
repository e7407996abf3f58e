"""Post-training dynamic quantization job (torch.ao) for a small MLP regressor/classifier.

--fault: none | finetune_after | engine
"""
import argparse, io, os, sys, time, warnings

import torch
import torch.nn as nn
from tqdm import tqdm


def size_mb(m):
    buf = io.BytesIO(); torch.save(m.state_dict(), buf); return buf.tell() / 1e6


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--fault", default="none")
    p.add_argument("--engine", default=None)
    p.add_argument("--epochs", type=int, default=2)
    args = p.parse_args()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10))
    x = torch.randn(2048, 64); y = (x[:, :10].argmax(1))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    for ep in range(args.epochs):
        bar = tqdm(range(0, 2048, 64), desc=f"epoch {ep}", file=sys.stdout, mininterval=0, ncols=90)
        for i in bar:
            loss = nn.functional.cross_entropy(model(x[i:i + 64]), y[i:i + 64])
            opt.zero_grad(); loss.backward(); opt.step()
            bar.set_postfix(loss=f"{loss.item():.3f}")
    model.eval()
    with torch.no_grad():
        acc_fp = (model(x).argmax(1) == y).float().mean().item()
    print(f"fp32 model: acc={acc_fp:.4f} size={size_mb(model):.3f} MB", flush=True)

    if args.engine:
        print(f"supported engines: {torch.backends.quantized.supported_engines}", flush=True)
        torch.backends.quantized.engine = args.engine
    qmodel = torch.ao.quantization.quantize_dynamic(model, {nn.Linear}, dtype=torch.qint8)
    with torch.no_grad():
        acc_q = (qmodel(x).argmax(1) == y).float().mean().item()
    print(f"int8 dynamic model: acc={acc_q:.4f} size={size_mb(qmodel):.3f} MB", flush=True)

    if args.fault == "finetune_after":
        # recover the accuracy drop with a short fine-tune of the quantized model
        qmodel.train()
        for i in range(0, 512, 64):
            loss = nn.functional.cross_entropy(qmodel(x[i:i + 64]), y[i:i + 64])
            opt.zero_grad(); loss.backward(); opt.step()
            print(f"qat-finetune step {i // 64} loss {loss.item():.4f}", flush=True)
    os.makedirs("runs/quant", exist_ok=True)
    torch.save(qmodel.state_dict(), "runs/quant/mlp_int8.pt")
    print("saved runs/quant/mlp_int8.pt", flush=True)


if __name__ == "__main__":
    main()
