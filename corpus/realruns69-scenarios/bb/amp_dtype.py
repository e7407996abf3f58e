"""Mixed-precision / dtype / device training loop for a tiny transformer-ish classifier (gloo, CPU)."""
import argparse, os, sys, time, math, logging, datetime, warnings
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=-1)
p.add_argument("--fault-step", type=int, default=0)
p.add_argument("--steps", type=int, default=30)
p.add_argument("--precision", default="fp32", choices=["fp32", "bf16-autocast", "fp16-autocast", "bf16-pure", "fp16-pure"])
p.add_argument("--amp-device", default="cpu")
p.add_argument("--init-scale", type=float, default=2.0**16)
p.add_argument("--spawn", type=int, default=0)
p.add_argument("--port", type=int, default=31570)
p.add_argument("--log-ts", action="store_true")
p.add_argument("--tqdm", action="store_true")
args = p.parse_args()

class SelfAttn(nn.Module):
    def __init__(self, d, heads=4, mask_value=None):
        super().__init__()
        self.mask_value = mask_value; self.h = heads; self.qkv = nn.Linear(d, 3 * d); self.o = nn.Linear(d, d)
    def forward(self, x, pad_mask):
        B, T, D = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.h, D // self.h).permute(2, 0, 3, 1, 4)
        att = q @ k.transpose(-1, -2) / math.sqrt(D // self.h)
        att = att.masked_fill(pad_mask[:, None, None, :], self.mask_value if self.mask_value is not None else torch.finfo(att.dtype).min)
        return self.o((att.softmax(-1) @ v).transpose(1, 2).reshape(B, T, D))

class Classifier(nn.Module):
    def __init__(self, vocab=300, d=64, ncls=5, fault="none"):
        super().__init__()
        self.fault = fault
        self.emb = nn.Embedding(vocab, d)
        self.attn = SelfAttn(d, mask_value=-1e9 if fault == "mask_overflow" else None); self.ln = nn.LayerNorm(d)
        self.ff = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))
        self.cls = nn.Linear(d, ncls)
        self.register_buffer("pos", self.sinusoid(64, d), persistent=False)
        self.whiten = fault == "whiten"
    @staticmethod
    def sinusoid(T, d):
        pos = torch.arange(T)[:, None]; i = torch.arange(0, d, 2)
        pe = torch.zeros(T, d); pe[:, 0::2] = torch.sin(pos / 10000 ** (i / d)); pe[:, 1::2] = torch.cos(pos / 10000 ** (i / d))
        return pe
    def forward(self, x, pad_mask):
        T = x.shape[1]
        if self.fault == "pos_rebuild" and T != self.pos.shape[0]:
            # longer/shorter batch: rebuild positional table on the fly
            pos = self.sinusoid(T, self.emb.embedding_dim)
        else:
            pos = self.pos[:T]
        h = self.emb(x) + pos
        h = h + self.attn(self.ln(h), pad_mask)
        h = h + self.ff(self.ln(h))
        feat = h.mean(1)
        out = self.cls(feat)
        if self.whiten:
            cov = feat.T @ feat / feat.shape[0] + 1e-3 * torch.eye(feat.shape[1], dtype=feat.dtype)
            L = torch.linalg.cholesky(cov)
            return out, L
        return out, None

def main(rank, world):
    if args.log_ts:
        logging.basicConfig(level=logging.INFO, format=f"%(asctime)s %(levelname)s [rank{rank}] %(message)s", stream=sys.stdout)
    else:
        logging.basicConfig(level=logging.INFO, format=f"[r{rank}] %(message)s", stream=sys.stdout)
    log = logging.getLogger("amp")
    if world > 1:
        dist.init_process_group("gloo", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=30))
    mine = args.fault_rank < 0 or args.fault_rank == rank
    fault = args.fault if mine else "none"
    precision = args.precision
    if fault in ("fp16_pure_rank", "mask_overflow"):
        precision = "fp16-pure"
    torch.manual_seed(0)
    init_device = "meta" if fault == "meta_weights" else "cpu"
    with torch.device(init_device):
        model = Classifier(fault="whiten" if fault.startswith("whiten") else fault)
        class_w = torch.tensor([1.0, 2.0, 1.0, 1.5, 1.0])
    if init_device == "meta":
        model = model.to_empty(device="cpu")
        model.load_state_dict(torch.load("/work/rr69/bb/ckpts/cls_init.pt"), strict=False)
        model.pos = Classifier.sinusoid(64, 64)
    log.info(f"precision={precision} params={sum(p_.numel() for p_ in model.parameters())}")
    if precision == "bf16-pure": model = model.to(torch.bfloat16)
    if precision == "fp16-pure": model = model.half()
    net = nn.parallel.DistributedDataParallel(model) if world > 1 else model
    opt = torch.optim.AdamW(net.parameters(), lr=1e-3)
    use_scaler = precision.startswith("fp16") or fault in ("unscale_twice",)
    scaler = torch.amp.GradScaler(args.amp_device, init_scale=args.init_scale, enabled=use_scaler)
    amp_dtype = torch.bfloat16 if precision.startswith("bf16") else torch.float16
    autocast_on = precision.endswith("autocast")
    g = torch.Generator().manual_seed(rank)
    it = range(args.steps)
    if args.tqdm and rank == 0:
        from tqdm import tqdm
        it = tqdm(it, desc=f"epoch 0", ncols=90, mininterval=0)
    last_scale = scaler.get_scale() if use_scaler else None
    for step in it:
        T = 64 if not (fault == "pos_rebuild" and step >= args.fault_step) else 80
        x = torch.randint(1, 300, (16, T), generator=g)
        lens = torch.randint(T // 2, T + 1, (16,), generator=g)
        pad = torch.arange(T)[None] >= lens[:, None]
        y = torch.randint(0, 5, (16,), generator=g)
        with torch.autocast(device_type=args.amp_device, dtype=amp_dtype, enabled=autocast_on):
            logits, L = net(x, pad)
            loss = F.cross_entropy(logits.float(), y, weight=class_w)
            if L is not None:
                loss = loss + 1e-3 * L.diagonal().log().sum().float()
        if fault == "autocast_logit_adjust" and step >= args.fault_step:
            # logit adjustment with class prior, computed outside the autocast region
            prior = torch.log(torch.tensor([0.3, 0.1, 0.3, 0.2, 0.1]))
            proj = torch.eye(5)
            adj = torch.addmm(prior, logits, proj)
            loss = F.cross_entropy(adj, y)
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        if use_scaler:
            scaler.unscale_(opt)
            gn = torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
            if fault == "unscale_twice" and step >= args.fault_step:
                scaler.unscale_(opt)   # second clip helper for the classifier head
                torch.nn.utils.clip_grad_norm_(model.cls.parameters(), 0.5)
        scaler.step(opt); scaler.update()
        if use_scaler and rank == 0:
            s = scaler.get_scale()
            if s < last_scale:
                log.warning(f"step {step}: gradient overflow, skipping optimizer step; loss scale {last_scale:.0f} -> {s:.0f}")
            last_scale = s
        if step % 5 == 0 and rank == 0:
            msg = f"step {step} loss {loss.item():.4f}" + (f" scale {scaler.get_scale():.0f}" if use_scaler else "")
            (it.write(msg) if args.tqdm else log.info(msg))
        time.sleep(0.03)
    if world > 1:
        dist.barrier(); dist.destroy_process_group()
    log.info("training finished")

def spawn_entry(rank, world):
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1"); os.environ.setdefault("MASTER_PORT", str(args.port))
    main(rank, world)

if __name__ == "__main__":
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(spawn_entry, args=(args.spawn,), nprocs=args.spawn)
    elif "RANK" in os.environ:
        main(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]))
    else:
        main(0, 1)
