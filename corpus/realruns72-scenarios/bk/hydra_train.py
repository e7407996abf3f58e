"""Tiny LM trainer in the style of a Hydra-based research repo (torchrun + gloo)."""
import glob, json, logging, math, os, sys, time
from datetime import timedelta

import hydra
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from omegaconf import DictConfig, OmegaConf
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset

log = logging.getLogger("train")


class JsonlShard(Dataset):
    """One jsonl file per rank; lines parsed lazily (like many LM repos)."""
    def __init__(self, path, seq_len):
        with open(path) as f:
            self.lines = f.readlines()
        self.seq_len = seq_len
        self.n_truncated = 0

    def __len__(self):
        return len(self.lines)

    def __getitem__(self, i):
        rec = json.loads(self.lines[i])
        if len(rec["ids"]) > self.seq_len + 1:
            self.n_truncated += 1
        ids = torch.tensor(rec["ids"][: self.seq_len + 1], dtype=torch.long)
        return ids[:-1], ids[1:]


class ChunkDataset(Dataset):
    """Pre-tokenised chunk files, each kept open for random access."""
    def __init__(self, folder, seq_len):
        self.files = [open(p, "rb") for p in sorted(glob.glob(os.path.join(folder, "*.bin")))]
        self.seq_len = seq_len

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        f = self.files[i]; f.seek(0)
        ids = torch.frombuffer(bytearray(f.read()), dtype=torch.uint8).long()[: self.seq_len + 1]
        return ids[:-1], ids[1:]


class TinyLM(nn.Module):
    def __init__(self, vocab, n_embd, n_layer, aux_head=False):
        super().__init__()
        self.emb = nn.Embedding(vocab, n_embd)
        self.blocks = nn.ModuleList([nn.Sequential(nn.LayerNorm(n_embd), nn.Linear(n_embd, 4 * n_embd), nn.GELU(), nn.Linear(4 * n_embd, n_embd)) for _ in range(n_layer)])
        self.head = nn.Linear(n_embd, vocab, bias=False)
        self.aux = nn.Linear(n_embd, 2) if aux_head else None

    def forward(self, x):
        h = self.emb(x)
        for b in self.blocks:
            h = h + b(h)
        return self.head(h)


def build_data(cfg, rank):
    root = os.path.join(cfg.data.root, f"rank{rank}")
    if cfg.data.format == "chunks":
        ds = ChunkDataset(root, cfg.model.seq_len)
    else:
        ds = JsonlShard(os.path.join(root, "train.jsonl"), cfg.model.seq_len)
    return ds, DataLoader(ds, batch_size=cfg.data.batch_size, shuffle=True, num_workers=cfg.data.num_workers, drop_last=True)


def vocab_from_data(ds):
    m = 0
    for line in ds.lines:
        m = max(m, max(json.loads(line)["ids"]))
    return m + 1


class MetricWriter:
    def __init__(self, cfg, rank):
        self.rank = rank
        self.tb = None
        if rank == 0:
            if cfg.logger.backend == "wandb":
                import wandb
                wandb.init(project=cfg.exp_name, mode="offline", config=OmegaConf.to_container(cfg))
                self.tb = wandb
            else:
                from torch.utils.tensorboard import SummaryWriter
                self.tb = SummaryWriter(cfg.logger.dir)
        self.fh = open(cfg.logger.metrics_file, "a")

    def write(self, step, metrics):
        self.fh.write(json.dumps({"step": step, **metrics}) + "\n"); self.fh.flush()
        if self.tb is not None and hasattr(self.tb, "add_scalar"):
            for k, v in metrics.items():
                self.tb.add_scalar(k, v, step)


def save_ckpt(cfg, step, model, opt, rank):
    d = os.path.join(cfg.out_dir, "ckpt", f"step_{step:06d}")
    os.makedirs(d, exist_ok=True)
    torch.save({"step": step, "rng": torch.get_rng_state()}, os.path.join(d, f"rank{rank}.pt"))
    if rank == 0:
        state = {"model": model.module.state_dict(), "optim": opt.state_dict(), "step": step}
        if cfg.train.save_cfg_in_ckpt:
            state["cfg"] = cfg
        torch.save(state, os.path.join(d, "model.pt"))
        log.info("saved checkpoint to %s", d)


def load_ckpt(cfg, model, opt, rank):
    d = cfg.train.resume
    log.info("resuming from %s", d)
    per_rank = torch.load(os.path.join(d, f"rank{rank}.pt"))
    torch.set_rng_state(per_rank["rng"])
    state = torch.load(os.path.join(d, "model.pt"), map_location="cpu")
    model.module.load_state_dict(state["model"])
    opt.load_state_dict(state["optim"])
    return state["step"]


def evaluate(cfg, model, loader, rank, step):
    model.eval(); tot = 0.0; n = 0
    with torch.no_grad():
        for i, (x, y) in enumerate(loader):
            if i >= cfg.eval.batches:
                break
            tot += F.cross_entropy(model(x).flatten(0, 1), y.flatten()).item(); n += 1
    model.train()
    res = {"eval_loss": tot / max(n, 1)}
    if rank == cfg.eval.sample_rank:
        ids = torch.zeros(1, 1, dtype=torch.long)
        with torch.no_grad():
            for _ in range(cfg.eval.sample_tokens):
                nxt = torch.multinomial(F.softmax(model.module(ids[:, -cfg.model.seq_len:])[:, -1], -1), 1)
                ids = torch.cat([ids, nxt], 1)
        log.info("[rank%d] sample: %s", rank, ids[0, :16].tolist())
    if rank == 0:
        os.makedirs(cfg.eval.report_dir, exist_ok=True)
        res["eval_ppl"] = math.exp(res["eval_loss"])
        with open(os.path.join(cfg.eval.report_dir, f"step{step}.json"), "w") as f:
            json.dump(res, f)
    if cfg.eval.sync == "monitored":
        dist.monitored_barrier(timeout=timedelta(seconds=10))
    else:
        dist.barrier()
    return res


@hydra.main(config_path="conf", config_name="config", version_base=None)
def main(cfg: DictConfig):
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(cfg.seed)
    if rank == 0:
        log.info("config:\n%s", OmegaConf.to_yaml(cfg, resolve=False))
        log.info("world_size=%d out_dir=%s", world, cfg.out_dir)
    os.makedirs(cfg.out_dir, exist_ok=True)
    ds, loader = build_data(cfg, rank)
    vocab = vocab_from_data(ds) if cfg.model.vocab_from_data else cfg.model.vocab_size
    log.info("[rank%d] %d training samples, vocab=%d", rank, len(ds), vocab)
    model = DDP(TinyLM(vocab, cfg.model.n_embd, cfg.model.n_layer, cfg.model.aux_head))
    if cfg.optim.no_decay_groups:
        decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
        no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
        groups = [{"params": decay, "weight_decay": cfg.optim.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    else:
        groups = [{"params": list(model.parameters()), "weight_decay": cfg.optim.weight_decay}]
    opt = torch.optim.AdamW(groups, lr=cfg.optim.lr)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / cfg.optim.warmup_steps))
    writer = MetricWriter(cfg, rank)
    scaler = torch.cuda.amp.GradScaler(enabled=cfg.train.amp)
    step = 0
    if cfg.train.resume:
        step = load_ckpt(cfg, model, opt, rank)
    if rank == 0 and cfg.data.format == "jsonl" and cfg.eval.batches > 2:
        log.info("eval tokenizer: %s", cfg.data.tokenizer_path)
    t0 = time.time()
    while step < cfg.train.max_steps:
        for x, y in loader:
            logits = model(x)
            loss = F.cross_entropy(logits.flatten(0, 1), y.flatten())
            if not math.isfinite(loss.item()):
                log.error("Loss is %s, stopping training", loss.item())
                sys.exit(1)
            opt.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step(); sched.step(); step += 1
            if step % cfg.train.log_every == 0:
                m = {"loss": loss.item(), "grad_norm": gn.item()}
                if getattr(ds, "n_truncated", 0):
                    m["n_truncated"] = float(ds.n_truncated)
                vals = torch.tensor(list(m.values()))
                dist.all_reduce(vals)
                m = dict(zip(m.keys(), (vals / world).tolist()))
                if rank == 0:
                    log.info("step %d | loss %.4f | grad_norm %.3f | lr %.2e | %.1fs", step, m["loss"], m["grad_norm"], sched.get_last_lr()[0], time.time() - t0)
                writer.write(step, m)
            if step % cfg.eval.every == 0:
                r = evaluate(cfg, model, loader, rank, step)
                if rank == 0:
                    log.info("eval step %d | loss %.4f | ppl %.2f", step, r["eval_loss"], r["eval_ppl"])
            if step % cfg.train.ckpt_every == 0:
                save_ckpt(cfg, step, model, opt, rank)
            if step >= cfg.train.max_steps:
                break
    log.info("[rank%d] done in %.1fs", rank, time.time() - t0)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
