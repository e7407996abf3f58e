"""Train a tiny model for a few steps, then export / quantize it for serving.
--fault: none | onnx | jit_script | torch_export | safetensors_tied | quant_load | trace_healthy"""
import argparse, logging, os, sys, time
import torch, torch.nn as nn
os.environ.setdefault("HF_HUB_OFFLINE", "1")
ap = argparse.ArgumentParser(); ap.add_argument("--fault", default="none"); ap.add_argument("--out", default="/tmp/rr72bm_export")
ap.add_argument("--model", default="mlp")
a = ap.parse_args()
logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
log = logging.getLogger("export")
os.makedirs(a.out, exist_ok=True)

class Scorer(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.EmbeddingBag(50, 32, mode="mean"); self.fc1 = nn.Linear(32, 64); self.fc2 = nn.Linear(64, 3)
    def forward(self, ids, threshold: float = 0.5):
        h = torch.relu(self.fc1(self.emb(ids)))
        logits = self.fc2(h)
        conf = logits.softmax(-1).max(-1).values
        if a.fault in ("torch_export", "jit_script") and not self.training:
            keep = conf > threshold
            if keep.sum() == 0:          # skip low-confidence batches
                return logits[:0]
            return logits[keep]
        return logits

if a.model == "gpt2":
    sys.path.insert(0, os.path.dirname(__file__))
    from tinyhf import make_gpt2
    model = make_gpt2(vocab_size=50)
else:
    model = Scorer()
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
g = torch.Generator().manual_seed(0)
for step in range(5):
    ids = torch.randint(0, 50, (16, 12), generator=g)
    if a.model == "gpt2":
        loss = model(input_ids=ids, labels=ids).loss
    else:
        loss = nn.functional.cross_entropy(model(ids), ids[:, 0] % 3)
    opt.zero_grad(); loss.backward(); opt.step()
    log.info("step %d loss %.4f", step, loss.item())
model.eval()
ex = torch.randint(0, 50, (4, 12), generator=g)
if a.fault == "onnx":
    path = os.path.join(a.out, "scorer.onnx")
    log.info("exporting ONNX to %s", path)
    torch.onnx.export(model, (ex,), path, input_names=["ids"], output_names=["logits"], dynamic_axes={"ids": {0: "batch"}})
elif a.fault == "jit_script":
    log.info("scripting model with torch.jit.script")
    sm = torch.jit.script(model); sm.save(os.path.join(a.out, "scorer.pt"))
elif a.fault == "torch_export":
    log.info("torch.export.export with dynamic batch")
    ds = {"ids": {0: torch.export.Dim("batch", min=1, max=64)}}
    if os.environ.get("EXPORT_SPEC_BOTH"): ds["threshold"] = None
    ep = torch.export.export(model, (ex,), dynamic_shapes=ds)
    torch.export.save(ep, os.path.join(a.out, "scorer.pt2"))
elif a.fault == "safetensors_tied":
    from safetensors.torch import save_file
    path = os.path.join(a.out, "model.safetensors")
    log.info("saving weights to %s", path)
    save_file(model.state_dict(), path)
elif a.fault == "quant_load":
    torch.save(model.state_dict(), os.path.join(a.out, "fp32.pt"))
    q = torch.ao.quantization.quantize_dynamic(Scorer(), {nn.Linear}, dtype=torch.qint8)
    log.info("loading trained fp32 weights into the dynamically-quantized serving model")
    q.load_state_dict(torch.load(os.path.join(a.out, "fp32.pt")))
elif a.fault in ("none", "trace_healthy"):
    q = torch.ao.quantization.quantize_dynamic(model, {nn.Linear}, dtype=torch.qint8)
    with torch.no_grad():
        ref = model(ex); out = q(ex)
    log.info("quantized max abs diff %.5f", (ref - out).abs().max().item())
    tr = torch.jit.trace(q if a.fault == "none" else model, (ex,))
    tr.save(os.path.join(a.out, "scorer_q.pt"))
    size = os.path.getsize(os.path.join(a.out, "scorer_q.pt"))
    log.info("saved traced model (%d bytes)", size)
log.info("export finished")
