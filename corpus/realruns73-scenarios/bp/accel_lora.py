"""accelerate custom loop + hand-written LoRA adapter on a tiny GPT-2 (built from config).
--fault selects the bug / misconfiguration, --fault-rank the rank it hits, --fault-step the step."""
import argparse, os, sys, json, math, time, logging, dataclasses
from datetime import timedelta
sys.path.insert(0, os.path.dirname(__file__))
import tinyhf
import torch, torch.nn as nn
import torch.distributed as dist
from accelerate import Accelerator, InitProcessGroupKwargs
from accelerate.utils import set_seed

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=6)
p.add_argument("--steps", type=int, default=24)
p.add_argument("--lora-r", type=int, default=8)
p.add_argument("--targets", default="c_attn,c_proj")
p.add_argument("--ckpt-dir", default="/work/rr73/bp/runs/lora")
p.add_argument("--resume", default=None)
p.add_argument("--save-every", type=int, default=0)
p.add_argument("--pg-timeout", type=int, default=40)
a = p.parse_args()

logging.basicConfig(format="%(asctime)s %(levelname)s [%(name)s] %(message)s", level=logging.INFO)
log = logging.getLogger("lora_train")

@dataclasses.dataclass
class LoraConfig:
    r: int = 8
    alpha: int = 16
    dropout: float = 0.05
    target_modules: tuple = ("c_attn", "c_proj")

class LoRALinear(nn.Module):
    """Wraps a GPT-2 Conv1D (weight is [in, out]) with a low-rank update."""
    def __init__(self, base, r, alpha, dropout):
        super().__init__()
        self.base = base
        fin, fout = base.weight.shape
        self.lora_A = nn.Parameter(torch.randn(fin, r) * 0.01)
        self.lora_B = nn.Parameter(torch.zeros(r, fout))
        self.scale = alpha / r
        self.drop = nn.Dropout(dropout)
    def forward(self, x):
        return self.base(x) + (self.drop(x) @ self.lora_A @ self.lora_B) * self.scale

def inject_lora(model, cfg):
    for prm in model.parameters():
        prm.requires_grad_(False)
    hits = []
    for name, mod in list(model.named_modules()):
        for child_name, child in list(mod.named_children()):
            full = f"{name}.{child_name}" if name else child_name
            if child_name in cfg.target_modules and hasattr(child, "weight"):
                setattr(mod, child_name, LoRALinear(child, cfg.r, cfg.alpha, cfg.dropout))
                hits.append(full)
    return hits

accel = Accelerator(cpu=True, kwargs_handlers=[InitProcessGroupKwargs(backend="gloo", timeout=timedelta(seconds=a.pg_timeout))])
rank, world = accel.process_index, accel.num_processes
set_seed(0)
tok = tinyhf.make_tokenizer()
model = tinyhf.make_model(tok)

r = a.lora_r
if a.fault == "rankr" and rank == a.fault_rank:
    # this node's launcher script still exported the old adapter size
    r = int(os.environ.get("LORA_R_OVERRIDE", "16"))
cfg = LoraConfig(r=r, target_modules=tuple(a.targets.split(",")))
hits = inject_lora(model, cfg)
if a.fault == "unused":
    model.value_head = nn.Linear(model.config.n_embd, 1)   # auxiliary value head for an optional aux loss
ntrain = sum(p.numel() for p in model.parameters() if p.requires_grad)
nall = sum(p.numel() for p in model.parameters())
log.info("rank %d: LoRA r=%d injected into %d modules; trainable params: %d || all params: %d || trainable%%: %.4f",
         rank, cfg.r, len(hits), ntrain, nall, 100.0 * ntrain / nall)

opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=2e-3)

texts = tinyhf.sentences(512, seed=2 + rank)
def batches(bs=8):
    i = 0
    while True:
        chunk = texts[i % len(texts): i % len(texts) + bs]; i += bs
        enc = tok(chunk, padding="max_length", truncation=True, max_length=20, return_tensors="pt")
        labels = enc["input_ids"].clone(); labels[enc["attention_mask"] == 0] = -100
        yield enc["input_ids"], enc["attention_mask"], labels

model, opt = accel.prepare(model, opt)

start = 0
if a.resume:
    path = os.path.join(a.resume, "adapter.pt")
    ck = torch.load(path, map_location="cpu", weights_only=(a.fault != "trustckpt" and a.fault != "resume_r"))
    unwrapped = accel.unwrap_model(model)
    sd = unwrapped.state_dict()
    sd.update(ck["adapter"])
    unwrapped.load_state_dict(sd, strict=True)
    opt.load_state_dict(ck["opt"])
    start = ck["step"]
    log.info("resumed from %s at step %d (lora cfg %s)", a.resume, start, ck["cfg"])

if a.fault == "anomaly":
    torch.autograd.set_detect_anomaly(True)

it = batches()
model.train()
for step in range(start + 1, a.steps + 1):
    ids, mask, labels = next(it)
    if a.fault == "anomaly" and rank == a.fault_rank and step == a.fault_step:
        # rank's shard holds a packed-sequence boundary batch: the collator masks every label position
        labels = torch.full_like(labels, -100)
    out = model(input_ids=ids, attention_mask=mask)
    logits = out.logits[:, :-1].float()
    tgt = labels[:, 1:]
    ntok = (tgt != -100).sum()
    loss = nn.functional.cross_entropy(logits.reshape(-1, logits.size(-1)), tgt.reshape(-1), ignore_index=-100, reduction="sum") / ntok
    accel.backward(loss)
    opt.step(); opt.zero_grad()
    if step % 4 == 0:
        lv = accel.reduce(loss.detach(), reduction="mean")
        if accel.is_main_process:
            log.info("step %d/%d loss %.4f ppl %.2f", step, a.steps, lv.item(), math.exp(min(lv.item(), 20)))
    if a.fault == "stuck" and step == a.fault_step and rank == a.fault_rank:
        # wait until the main process has exported the tokenizer for the eval workers
        marker = os.path.join(a.ckpt_dir, f"tokenizer-ready.rank{rank}")
        log.info("rank %d waiting for %s", rank, marker)
        while not os.path.exists(marker):
            time.sleep(1)
    if a.fault == "stuck" and step == a.fault_step and accel.is_main_process:
        os.makedirs(a.ckpt_dir, exist_ok=True)
        tok.save_pretrained(os.path.join(a.ckpt_dir, "tok"))
        open(os.path.join(a.ckpt_dir, "tokenizer-ready"), "w").close()
    if a.fault == "collmismatch" and step == a.fault_step:
        # vocabulary coverage for logging: ids seen on this rank, summed over ranks
        hist = torch.unique(ids.flatten()).float()
        dist.all_reduce(hist)
        if accel.is_main_process:
            log.info("token histogram: %s", hist.tolist()[:8])
    if a.save_every and step % a.save_every == 0 and accel.is_main_process:
        os.makedirs(os.path.join(a.ckpt_dir, f"step{step}"), exist_ok=True)
        adapter = {k: v.cpu() for k, v in accel.unwrap_model(model).state_dict().items() if "lora_" in k}
        torch.save({"adapter": adapter, "step": step, "cfg": cfg, "opt": opt.state_dict()},
                   os.path.join(a.ckpt_dir, f"step{step}", "adapter.pt"))
        log.info("saved adapter checkpoint %s/step%d", a.ckpt_dir, step)
    if a.fault == "safetensors" and step == a.fault_step and accel.is_main_process:
        from safetensors.torch import save_file
        full = accel.unwrap_model(model)
        merged = {k: v for k, v in full.state_dict().items()}
        os.makedirs(a.ckpt_dir, exist_ok=True)
        save_file(merged, os.path.join(a.ckpt_dir, "model.safetensors"))
accel.wait_for_everyone()
if accel.is_main_process:
    log.info("training done")
accel.end_training()
