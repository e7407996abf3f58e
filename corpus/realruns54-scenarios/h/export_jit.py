"""torch.export / torch.jit on a small GPT-2-like (transformers, built from config) or a local MLP; --fault selects the failure."""
import argparse, os, sys, warnings
import torch, torch.nn as nn, torch.nn.functional as F
p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
args = p.parse_args()
os.environ.setdefault("HF_HUB_OFFLINE", "1")

class Gate(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(16, 16)
        self.head = nn.Linear(16, 4)
    def forward(self, x, mask=None, **kw):
        h = self.proj(x)
        if h.mean() > 0:            # data-dependent routing
            h = F.relu(h)
        else:
            h = torch.tanh(h)
        return self.head(h)

class Pack(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(16, 16)
    def forward(self, x):
        b = x.shape[0]
        if b != 8:  # author assumed fixed microbatch
            x = x[:8]
        return self.proj(x).reshape(8, -1)

if args.fault == "export_datadep":
    m = Gate().eval()
    print("exporting Gate model ...", flush=True)
    ep = torch.export.export(m, (torch.randn(4, 16),))
    print(ep)
elif args.fault == "export_dim":
    m = Pack().eval()
    batch = torch.export.Dim("batch", min=2, max=64)
    print("exporting Pack with dynamic batch", flush=True)
    ep = torch.export.export(m, (torch.randn(8, 16),), dynamic_shapes={"x": {0: batch}})
    print(ep)
elif args.fault == "jit_script":
    m = Gate()
    print("scripting Gate for deployment", flush=True)
    sm = torch.jit.script(m)
    sm.save("/work/rr54/h/tmp_gate.pt")
elif args.fault in ("jit_trace_gpt2", "jit_trace_ok"):
    from transformers import GPT2Config, GPT2LMHeadModel
    cfg = GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=512, n_positions=64, torchscript=True)
    m = GPT2LMHeadModel(cfg).eval()
    ids = torch.randint(0, 512, (2, 16))
    print("tracing GPT2LMHeadModel with input", tuple(ids.shape), flush=True)
    tm = torch.jit.trace(m, (ids,))
    print("traced ok; evaluating on validation batches", flush=True)
    for i, L in enumerate([16, 16, 24] if args.fault == "jit_trace_gpt2" else [16, 16, 16]):
        v = torch.randint(0, 512, (2, L))
        with torch.no_grad():
            logits = tm(v)[0]
            ref = m(v)[0]
        print(f"val batch {i} len={L} max|traced-eager|={(logits-ref).abs().max().item():.2e}", flush=True)
    print("done")
