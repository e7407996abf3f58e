"""A small Lightning-style training framework (callbacks, config objects, metric classes,
checkpoint IO, exception-wrapping hooks) with selectable real faults.

usage: litloop.py --fault NAME --rank R --step S [--launcher env|spawn|single] ...
"""
import argparse
import json
import logging
import os
import sys
import time
import warnings
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

log = logging.getLogger("litloop")


# ----------------------------------------------------------------------------- config
class ConfigNode(dict):
    """Hydra/OmegaConf-like attribute config with ${a.b} interpolation."""

    def __getattr__(self, k):
        try:
            v = self[k]
        except KeyError as e:
            raise AttributeError(f"ConfigNode has no key '{k}'") from e
        if isinstance(v, dict) and not isinstance(v, ConfigNode):
            v = ConfigNode(v)
            self[k] = v
        return v

    @classmethod
    def load(cls, path):
        with open(path) as f:
            return cls(json.load(f))


def compose_config(args):
    cfg = ConfigNode(
        model=dict(vocab=64, dim=32, hidden=64, aux_head=True),
        data=dict(n=256, seq=8, batch_size=8, num_workers=args.workers, root=args.data_root),
        trainer=dict(max_steps=args.max_steps, lr=1e-2, log_every=2, ckpt_dir=args.ckpt_dir,
                     ckpt_every=args.ckpt_every, grad_accum=1),
    )
    if args.config:
        try:
            override = ConfigNode.load(args.config)
        except Exception as e:
            raise RuntimeError(f"[config] failed to compose config from {args.config}") from e
        for k, v in override.items():
            cfg[k].update(v)
    return cfg


# ----------------------------------------------------------------------------- data
class TokenFiles(Dataset):
    def __init__(self, cfg, fault, rank):
        self.cfg, self.fault, self.rank = cfg, fault, rank
        self.root = cfg.root
        self.files = []
        if self.root:
            self.files = sorted(os.path.join(self.root, f) for f in os.listdir(self.root) if f.endswith(".json"))
        self._open = []

    def __len__(self):
        return len(self.files) if self.root else self.cfg.n

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        if self.root:
            fh = open(self.files[i])  # note: leaked when fault==fdleak
            if self.fault == "fdleak":
                self._open.append(fh)
                rec = json.loads(fh.read()); fh.seek(0)
            else:
                with fh:
                    rec = json.load(fh)
            ids = torch.tensor(rec["ids"])
        else:
            seq = self.cfg.seq
            if self.fault == "ragged" and i % 7 == 3:
                seq = seq + 3
            ids = torch.randint(0, 64, (seq,), generator=g)
        return {"input_ids": ids, "labels": ids.roll(-1)}


class PadCollator:
    def __init__(self, pad_id=0, fault=None, rank=0):
        self.pad_id, self.fault, self.rank = pad_id, fault, rank

    def __call__(self, feats):
        batch = {}
        for k in feats[0]:
            batch[k] = torch.stack([f[k] for f in feats])
        if self.fault == "collator_key":
            batch["attention_mask"] = batch["input_ids"].ne(self.pad_id)
            batch["position_ids"] = feats[0]["position_ids"]
        return batch


# ----------------------------------------------------------------------------- model
class TinyLM(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.emb = nn.Embedding(cfg.vocab, cfg.dim)
        self.mlp = nn.Sequential(nn.Linear(cfg.dim, cfg.hidden), nn.GELU(), nn.Linear(cfg.hidden, cfg.dim))
        self.head = nn.Linear(cfg.dim, cfg.vocab)
        self.aux = nn.Linear(cfg.dim, 1) if cfg.aux_head else None

    def forward(self, input_ids, use_aux=True):
        h = self.emb(input_ids)
        h = h + self.mlp(h)
        logits = self.head(h)
        aux = self.aux(h).mean() if (self.aux is not None and use_aux) else None
        return logits, aux


# ----------------------------------------------------------------------------- metrics
class Metric:
    def __init__(self):
        self.reset()

    def reset(self):
        self._state = []

    def update(self, *a):
        raise NotImplementedError

    def sync(self):
        if not (dist.is_available() and dist.is_initialized()):
            return self._state
        local = torch.cat(self._state) if self._state else torch.zeros(0)
        out = [torch.zeros_like(local) for _ in range(dist.get_world_size())]
        dist.all_gather(out, local)
        return out

    def compute(self):
        raise NotImplementedError


class TokenAccuracy(Metric):
    def update(self, logits, labels):
        pred = logits.argmax(-1)
        self._state.append((pred == labels).float().flatten())

    def compute(self):
        return torch.cat(self.sync()).mean().item()


class Perplexity(Metric):
    def update(self, logits, labels):
        nll = F.cross_entropy(logits.reshape(-1, logits.size(-1)), labels.reshape(-1), reduction="none")
        self._state.append(nll)

    def compute(self):
        return torch.cat(self.sync()).mean().exp().item()


# ----------------------------------------------------------------------------- callbacks
class Callback:
    def on_train_start(self, trainer): pass
    def on_batch_start(self, trainer, batch): pass
    def on_after_backward(self, trainer): pass
    def on_batch_end(self, trainer, out): pass
    def on_validation_end(self, trainer, metrics): pass
    def on_train_end(self, trainer): pass


class CallbackError(RuntimeError):
    pass


class LRMonitor(Callback):
    def on_batch_end(self, trainer, out):
        if trainer.global_step % trainer.cfg.trainer.log_every == 0:
            lr = trainer.opt.param_groups[0]["lr"]
            trainer.print(f"step {trainer.global_step:4d} | loss {out['loss']:.4f} | lr {lr:.2e}")


class FreezeBackbone(Callback):
    def __init__(self, at_step, patterns):
        self.at_step, self.patterns = at_step, patterns

    def on_batch_start(self, trainer, batch):
        if trainer.global_step == self.at_step:
            n = 0
            for name, p in trainer.raw_model.named_parameters():
                if any(pat in name for pat in self.patterns):
                    p.requires_grad_(False); n += 1
            trainer.print(f"[FreezeBackbone] froze {n} tensors matching {self.patterns}")


class GradNormLogger(Callback):
    def on_after_backward(self, trainer):
        tot = torch.nn.utils.clip_grad_norm_(trainer.raw_model.parameters(), 1.0)
        trainer.last_grad_norm = float(tot)


class ModelCheckpoint(Callback):
    def __init__(self, dirpath, every):
        self.dirpath, self.every = dirpath, every

    def on_batch_end(self, trainer, out):
        if self.dirpath and self.every and trainer.global_step % self.every == 0 and trainer.is_global_zero:
            name = f"step{trainer.global_step}.ckpt"
            if trainer.fault == "longname":
                # run name derived from every hyperparameter (like a sweep tool's auto-naming)
                tag = ",".join(f"{k}.{kk}={vv}" for k, v in trainer.cfg.items() for kk, vv in v.items())
                name = f"{tag}-step{trainer.global_step}.ckpt".replace("/", "_")
            path = os.path.join(self.dirpath, name)
            trainer.checkpoint_io.save(trainer.state_dict(), path)
            trainer.print(f"[ModelCheckpoint] saved {path}")


class ValidationLoop(Callback):
    def __init__(self, every, fault):
        self.every, self.fault = every, fault
        self.metrics = {"acc": TokenAccuracy(), "ppl": Perplexity()}

    def on_batch_end(self, trainer, out):
        if trainer.global_step % self.every:
            return
        for m in self.metrics.values():
            m.reset()
        with torch.no_grad():
            for i, b in enumerate(trainer.val_loader):
                logits, _ = trainer.model(b["input_ids"])
                labels = b["labels"]
                if self.fault == "metric_shape" and trainer.rank == trainer.fault_rank and trainer.global_step >= trainer.fault_step:
                    labels = labels[:, :-1]  # off-by-one shift bug in "causal" label alignment
                for m in self.metrics.values():
                    m.update(logits, labels)
                if i == 1 or (self.fault == "metric_uneven" and trainer.rank == trainer.fault_rank and i == 0):
                    break
        res = {k: m.compute() for k, m in self.metrics.items()}
        trainer.print(f"[val] step {trainer.global_step} " + " ".join(f"{k}={v:.4f}" for k, v in res.items()))


# ----------------------------------------------------------------------------- checkpoint IO
class TorchCheckpointIO:
    def save(self, state, path):
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            torch.save(state, path)
        except OSError as e:
            raise RuntimeError(f"TorchCheckpointIO: could not save checkpoint to '{path}'") from e

    def load(self, path):
        try:
            return torch.load(path, map_location="cpu")
        except Exception as e:
            raise RuntimeError(f"TorchCheckpointIO: failed to load checkpoint '{path}'") from e


# ----------------------------------------------------------------------------- trainer
class Trainer:
    def __init__(self, cfg, args, rank, world):
        self.cfg, self.args, self.rank, self.world = cfg, args, rank, world
        self.fault, self.fault_rank, self.fault_step = args.fault, args.rank, args.step
        self.is_global_zero = rank == 0
        self.global_step = 0
        self.checkpoint_io = TorchCheckpointIO()
        self.callbacks = [LRMonitor(), GradNormLogger(), ModelCheckpoint(cfg.trainer.ckpt_dir, cfg.trainer.ckpt_every),
                          ValidationLoop(args.val_every, args.fault)]
        if args.fault == "freeze_all":
            self.callbacks.append(FreezeBackbone(args.step, ["emb", "mlp", "head", "aux"]))

    def print(self, msg):
        if self.is_global_zero or self.args.all_ranks_print:
            log.info(msg) if self.args.use_logging else print(f"[rank{self.rank}] {msg}", flush=True)

    def _call(self, hook, *a):
        for cb in self.callbacks:
            try:
                getattr(cb, hook)(self, *a)
            except Exception as e:
                raise CallbackError(f"Callback {type(cb).__name__}.{hook} failed at global_step={self.global_step}") from e

    def state_dict(self):
        return {"model": self.raw_model.state_dict(), "optimizer": self.opt.state_dict(), "step": self.global_step,
                "cfg": json.loads(json.dumps(self.cfg)) if self.args.plain_cfg else dict(self.cfg)}

    def setup(self):
        cfg = self.cfg
        torch.manual_seed(0)
        mcfg = ConfigNode(cfg.model)
        if self.fault == "ddp_shape" and self.rank == self.fault_rank:
            mcfg["hidden"] = 96  # rank-local override leaked from an env var
        self.raw_model = TinyLM(mcfg)
        if self.args.resume:
            state = self.checkpoint_io.load(self.args.resume)
            res = self.raw_model.load_state_dict(state["model"], strict=not self.args.non_strict)
            if self.args.non_strict:
                self.print(f"partial load: missing={res.missing_keys} unexpected={res.unexpected_keys}")
            self.print(f"resumed from {self.args.resume} at step {state['step']}")
        if self.world > 1:
            self.model = nn.parallel.DistributedDataParallel(self.raw_model, find_unused_parameters=self.args.find_unused)
        else:
            self.model = self.raw_model
        self.opt = torch.optim.AdamW(self.raw_model.parameters(), lr=cfg.trainer.lr)
        if self.args.resume and self.args.load_optim:
            try:
                self.opt.load_state_dict(state["optimizer"])
            except Exception as e:
                raise RuntimeError("Trainer: restoring optimizer state from checkpoint failed") from e
        dcfg = ConfigNode(cfg.data)
        ds = TokenFiles(dcfg, self.fault, self.rank)
        sampler = torch.utils.data.distributed.DistributedSampler(ds, self.world, self.rank) if self.world > 1 else None
        self.train_loader = DataLoader(ds, batch_size=dcfg.batch_size, sampler=sampler, shuffle=sampler is None,
                                       num_workers=dcfg.num_workers, collate_fn=PadCollator(fault=self.fault, rank=self.rank)
                                       if self.fault == "collator_key" else None, drop_last=True)
        self.val_loader = DataLoader(TokenFiles(ConfigNode(dict(dcfg, root=None, n=32)), None, self.rank), batch_size=8)

    def training_step(self, batch):
        ids, labels = batch["input_ids"], batch["labels"]
        if self.fault == "vocab" and self.rank == self.fault_rank and self.global_step >= self.fault_step:
            ids = ids + 8  # tokenizer with added special tokens, embedding never resized
        use_aux = not (self.fault == "unused" and self.rank == self.fault_rank and self.global_step >= self.fault_step)
        logits, aux = self.model(ids, use_aux=use_aux)
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), labels.reshape(-1))
        if aux is not None:
            loss = loss + 0.01 * aux
        if self.fault == "nan" and self.rank == self.fault_rank and self.global_step >= self.fault_step:
            loss = loss + 0.1 * torch.sqrt(aux - 1e3) if aux is not None else loss  # sqrt of a negative value (sign bug in margin term)
        return loss

    def fit(self):
        self.setup()
        self._call("on_train_start")
        it = iter(self.train_loader)
        bar = None
        if self.args.tqdm and self.is_global_zero:
            from tqdm import tqdm
            bar = tqdm(total=self.cfg.trainer.max_steps, desc="train", file=sys.stderr, mininterval=0, ascii=True)
        while self.global_step < self.cfg.trainer.max_steps:
            try:
                batch = next(it)
            except StopIteration:
                it = iter(self.train_loader); batch = next(it)
            self._call("on_batch_start", batch)
            loss = self.training_step(batch)
            loss.backward()
            self._call("on_after_backward")
            self.opt.step(); self.opt.zero_grad(set_to_none=True)
            if self.fault == "segv" and self.rank == self.fault_rank and self.global_step == self.fault_step:
                import ctypes
                ctypes.string_at(0x10)  # bad pointer from a broken native extension
            if self.fault == "oom" and self.rank == self.fault_rank and self.global_step == self.fault_step:
                # activation cache for "hidden-state logging" sized from a wrong config (seq*vocab*batch...)
                self._cache = torch.empty(self.cfg.data.batch_size * 4096, 4096, 1024)
            self.global_step += 1
            if bar is not None:
                bar.update(1); bar.set_postfix(loss=f"{loss.item():.3f}")
            self._call("on_batch_end", {"loss": loss.item()})
            if self.args.sleep:
                time.sleep(self.args.sleep)
        if bar is not None:
            bar.close()
        self._call("on_train_end")
        self.print("training finished")


def healthy_noise(args, rank):
    if not args.noise:
        return
    import numpy as np
    _mask = torch.from_numpy(np.frombuffer(b"\x00" * 64, dtype=np.float32))  # read-only buffer -> real UserWarning
    _sched_probe = torch.optim.SGD([nn.Parameter(torch.zeros(1))], lr=0.1)
    torch.optim.lr_scheduler.StepLR(_sched_probe, 1).step()  # scheduler stepped before optimizer -> real UserWarning
    try:
        import wandb  # noqa: F401
    except ImportError:
        if rank == 0:
            log.warning("optional experiment tracker unavailable, falling back to CSV logger", exc_info=True) if args.use_logging \
                else (print("optional experiment tracker unavailable, falling back to CSV logger", flush=True),
                      __import__("traceback").print_exc())


def run(rank, world, args):
    if args.use_logging:
        logging.basicConfig(level=logging.INFO, format=f"%(asctime)s %(levelname)s [rank{rank}] %(name)s: %(message)s",
                            force=True)
    if world > 1:
        if args.launcher == "spawn":
            os.environ.setdefault("MASTER_ADDR", "127.0.0.1"); os.environ.setdefault("MASTER_PORT", str(args.port))
        dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=args.pg_timeout))
    if args.noise:
        healthy_noise(args, rank)
    cfg = compose_config(args)
    if args.detect_anomaly:
        torch.autograd.set_detect_anomaly(True)
    trainer = Trainer(cfg, args, rank, world)
    try:
        trainer.fit()
    finally:
        if world > 1 and dist.is_initialized():
            dist.destroy_process_group()


def parse():
    p = argparse.ArgumentParser()
    p.add_argument("--fault", default="none")
    p.add_argument("--rank", type=int, default=1)
    p.add_argument("--step", type=int, default=5)
    p.add_argument("--launcher", default="env", choices=["env", "spawn", "single"])
    p.add_argument("--nproc", type=int, default=2)
    p.add_argument("--port", type=int, default=37010)
    p.add_argument("--max-steps", type=int, default=12)
    p.add_argument("--val-every", type=int, default=4)
    p.add_argument("--ckpt-dir", default="")
    p.add_argument("--ckpt-every", type=int, default=0)
    p.add_argument("--data-root", default="")
    p.add_argument("--config", default="")
    p.add_argument("--resume", default="")
    p.add_argument("--load-optim", action="store_true")
    p.add_argument("--find-unused", action="store_true")
    p.add_argument("--use-logging", action="store_true")
    p.add_argument("--tqdm", action="store_true")
    p.add_argument("--noise", action="store_true")
    p.add_argument("--all-ranks-print", action="store_true")
    p.add_argument("--sleep", type=float, default=0.0)
    p.add_argument("--pg-timeout", type=int, default=30)
    p.add_argument("--plain-cfg", action="store_true")
    p.add_argument("--non-strict", action="store_true")
    p.add_argument("--detect-anomaly", action="store_true")
    p.add_argument("--workers", type=int, default=0)
    return p.parse_args()


if __name__ == "__main__":
    args = parse()
    if args.launcher == "spawn":
        import torch.multiprocessing as mp
        mp.spawn(run, args=(args.nproc, args), nprocs=args.nproc, join=True)
    elif args.launcher == "single" or "RANK" not in os.environ:
        run(0, 1, args)
    else:
        run(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), args)
