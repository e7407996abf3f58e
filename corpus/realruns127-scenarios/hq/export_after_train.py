"""Train a tiny classifier for a few steps, then export it for serving.

--export selects the export path (and the bug that goes with it):
  export-gate      torch.export.export of a model with an "early exit" gate on a tensor value
  export-serve     torch.export.export with the example batch size, then serve a batch of another size
  onnx             torch.onnx.export (new exporter, default since 2.9)
  onnx-legacy      torch.onnx.export(..., dynamo=False)
  script           torch.jit.script of the model (the model's forward takes **kwargs)
  trace            torch.jit.trace of the model (python-side branches get frozen -> TracerWarnings)
  export-finetune  export, then keep fine-tuning the exported module
  load-script      torch.jit.load of a previously written TorchScript archive (--artifact)
  load-export      torch.export.load of a previously written .pt2 (--artifact)
"""
import argparse, os, sys, time, logging
import torch
import torch.nn as nn
import torch.nn.functional as F

p = argparse.ArgumentParser()
p.add_argument("--export", default="export-gate")
p.add_argument("--steps", type=int, default=30)
p.add_argument("--out-dir", default="/work/rr127/hq/artifacts")
p.add_argument("--artifact", default="")
p.add_argument("--serve-batch", type=int, default=3)
args = p.parse_args()

logging.basicConfig(level=logging.INFO, format="%(asctime)s | %(levelname)-7s | %(name)s | %(message)s")
log = logging.getLogger("export_job")


class GatedClassifier(nn.Module):
    def __init__(self, d=16, h=64, n=4, early_exit=False):
        super().__init__()
        self.early_exit = early_exit
        self.l1 = nn.Linear(d, h)
        self.l2 = nn.Linear(h, h)
        self.exit_head = nn.Linear(h, n)
        self.head = nn.Linear(h, n)

    def forward(self, x):
        h = F.relu(self.l1(x))
        if self.early_exit:
            # skip the second layer when the first one is already confident
            e = self.exit_head(h)
            if e.softmax(-1).max() > 0.9:
                return e
        if x.size(0) > 1:
            h = h - h.mean(0, keepdim=True)
        return self.head(F.relu(self.l2(h)))


class KwModel(GatedClassifier):
    def forward(self, x, **extra):
        temperature = extra.get("temperature", 1.0)
        return super().forward(x) / temperature


def train(model):
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    g = torch.Generator().manual_seed(0)
    for step in range(args.steps):
        x = torch.randn(8, 16, generator=g)
        y = (x[:, 0] > 0).long() + 2 * (x[:, 1] > 0).long()
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0 or step == args.steps - 1:
            log.info("step %d loss %.4f", step, loss.item())
    return model


def main():
    os.makedirs(args.out_dir, exist_ok=True)
    ex = torch.randn(8, 16)
    log.info("torch %s, export mode %s", torch.__version__, args.export)
    if args.export in ("load-script", "load-export"):
        log.info("loading serving artifact %s (%d bytes)", args.artifact, os.path.getsize(args.artifact))
        if args.export == "load-script":
            m = torch.jit.load(args.artifact)
        else:
            m = torch.export.load(args.artifact).module()
        log.info("smoke test output %s", tuple(m(ex).shape))
        return
    model = KwModel(early_exit=True) if args.export == "script" else GatedClassifier(early_exit=args.export == "export-gate")
    train(model).eval()
    if args.export == "export-finetune":
        # export once, then continue fine-tuning the exported module on new data
        ep = torch.export.export(model, (ex,))
        log.info("exported graph with %d nodes", len(ep.graph.nodes))
        gm = ep.module()
        gm.train()
        train(gm)
    if args.export in ("export-gate", "export-serve"):
        log.info("exporting with torch.export.export, example input %s", tuple(ex.shape))
        ep = torch.export.export(model, (ex,))
        path = os.path.join(args.out_dir, "classifier.pt2")
        torch.export.save(ep, path)
        log.info("saved %s", path)
        served = ep.module()
        for bs in (8, args.serve_batch):
            xb = torch.randn(bs, 16)
            log.info("serving batch of %d -> %s", bs, tuple(served(xb).shape))
    elif args.export.startswith("onnx"):
        path = os.path.join(args.out_dir, "classifier.onnx")
        kw = {"dynamo": False} if args.export == "onnx-legacy" else {}
        torch.onnx.export(model, (ex,), path, input_names=["x"], output_names=["logits"],
                          dynamic_axes={"x": {0: "batch"}}, **kw)
        log.info("saved %s", path)
    elif args.export == "script":
        sm = torch.jit.script(model)
        path = os.path.join(args.out_dir, "classifier_script.pt")
        sm.save(path)
        log.info("saved %s", path)
    elif args.export == "trace":
        tm = torch.jit.trace(model, (ex,))
        path = os.path.join(args.out_dir, "classifier_traced.pt")
        tm.save(path)
        log.info("saved %s", path)
        for bs in (8, 1):
            out = tm(torch.randn(bs, 16))
            log.info("traced module batch %d -> %s", bs, tuple(out.shape))
    log.info("export job done")


if __name__ == "__main__":
    main()
