"""Train a tiny tagger for a few steps, then export it for serving (TorchScript / ONNX).

--mode: script | trace | onnx ; --out-dir where the exported artefact goes
"""
import argparse, os, sys, time
from typing import Optional

import torch
import torch.nn as nn


class Tagger(nn.Module):
    def __init__(self, vocab=300, dim=48, tags=7):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.rnn = nn.GRU(dim, dim, batch_first=True)
        self.proj = nn.Linear(dim, tags)
        self.extra_features = None

    def forward(self, x, lengths=None, **kwargs):
        h, _ = self.rnn(self.emb(x))
        if lengths is not None and lengths.max() < x.shape[1]:
            h = h[:, : int(lengths.max())]
        out = self.proj(h)
        if kwargs.get("return_hidden", False):
            return out, h
        return out


class TaggerV2(Tagger):
    """Serving variant without **kwargs (what the export should have used)."""

    def forward(self, x, lengths: Optional[torch.Tensor] = None):
        h, _ = self.rnn(self.emb(x))
        if lengths is not None and lengths.max() < x.shape[1]:
            h = h[:, : int(lengths.max())]
        return self.proj(h)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--mode", default="trace")
    p.add_argument("--out-dir", default="runs/export")
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--v2", action="store_true")
    args = p.parse_args()
    torch.manual_seed(0)
    model = TaggerV2() if args.v2 else Tagger()
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    x = torch.randint(0, 300, (256, 16)); y = x % 7
    t0 = time.time()
    for step in range(1, args.steps + 1):
        i = torch.randint(0, 256, (32,))
        loss = nn.functional.cross_entropy(model(x[i]).reshape(-1, 7), y[i].reshape(-1))
        opt.zero_grad(); loss.backward(); opt.step()
        if step % 10 == 0:
            print(f"step {step:3d} | loss {loss.item():.4f} | {1000 * (time.time() - t0) / step:.1f} ms/step", flush=True)
    model.eval()
    os.makedirs(args.out_dir, exist_ok=True) if not os.path.isdir(args.out_dir) else None
    example = (x[:4], torch.tensor([16, 12, 9, 16]))
    if args.mode == "script":
        print("exporting with torch.jit.script ...", flush=True)
        sm = torch.jit.script(model)
        path = os.path.join(args.out_dir, "tagger_scripted.pt")
        sm.save(path)
    elif args.mode == "trace":
        print("exporting with torch.jit.trace ...", flush=True)
        sm = torch.jit.trace(model, example)
        path = os.path.join(args.out_dir, "tagger_traced.pt")
        sm.save(path)
        loaded = torch.jit.load(path)
        diff = (loaded(*example) - model(*example)).abs().max().item()
        print(f"reloaded traced module, max abs diff vs eager = {diff:.2e}", flush=True)
    elif args.mode == "onnx":
        print("exporting with torch.onnx.export ...", flush=True)
        path = os.path.join(args.out_dir, "tagger.onnx")
        torch.onnx.export(model, example, path, input_names=["input_ids", "lengths"], output_names=["logits"],
                          dynamic_axes={"input_ids": {0: "batch", 1: "seq"}})
    print(f"export written to {path} ({os.path.getsize(path)} bytes)", flush=True)


if __name__ == "__main__":
    main()
