"""Tiny FSDP (FULL_SHARD, gloo, CPU) trainer with switchable bugs.
--fault: none | mixed_dtype | frozen_mixed | shape | state_dict | unused_one_rank | skip_step
"""
import argparse, os, sys, time, warnings, logging
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP, ShardingStrategy, StateDictType, FullStateDictConfig
from torch.distributed.fsdp.wrap import ModuleWrapPolicy

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--bad-rank", type=int, default=1)
p.add_argument("--at-step", type=int, default=3)
p.add_argument("--steps", type=int, default=12)
p.add_argument("--pg-timeout", type=int, default=30)
p.add_argument("--use-orig", action="store_true")
p.add_argument("--out-dir", default="")
p.add_argument("--sd-offload", type=int, default=1)
args = p.parse_args()

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stdout)
dist.init_process_group("gloo", timeout=timedelta(seconds=args.pg_timeout))
rank, world = dist.get_rank(), dist.get_world_size()
log = logging.getLogger(f"fsdp.rank{rank}")


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.ln = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, 4 * d)
        self.fc2 = nn.Linear(4 * d, d)

    def forward(self, x):
        return x + self.fc2(torch.nn.functional.gelu(self.fc1(self.ln(x))))


class LM(nn.Module):
    def __init__(self, vocab=128, d=64, n=2):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.blocks = nn.ModuleList([Block(d) for _ in range(n)])
        self.head = nn.Linear(d, vocab)

    def forward(self, ids):
        h = self.tok(ids)
        for b in self.blocks:
            h = b(h)
        return self.head(h)


torch.manual_seed(0)
d = 64
if args.fault == "shape" and rank == args.bad_rank:
    d = 96
    log.info("using model.d_model=96 from local override file")
model = LM(d=d)
if args.fault == "mixed_dtype":
    model.blocks[1].ln.half()     # keep LayerNorm in fp16 'to save memory'
    log.info("cast blocks.1.ln to float16")
if args.fault == "frozen_mixed":
    for prm in model.tok.parameters():
        prm.requires_grad_(False)
    model.head.bias.requires_grad_(False)
    log.info("froze embeddings and head.bias")
log.info(f"params: {sum(p.numel() for p in model.parameters())}")
fsdp = FSDP(model, sharding_strategy=ShardingStrategy.FULL_SHARD, device_id=torch.device("cpu"),
            auto_wrap_policy=ModuleWrapPolicy({Block}), use_orig_params=args.use_orig)
opt = torch.optim.AdamW([q for q in fsdp.parameters() if q.requires_grad], lr=3e-4)
g = torch.Generator().manual_seed(100 + rank)
for step in range(args.steps):
    ids = torch.randint(0, 128, (8, 16), generator=g)
    if args.fault == "skip_step" and rank == args.bad_rank and step == args.at_step:
        log.warning(f"step {step}: empty batch after filtering, skipping")
        continue
    logits = fsdp(ids[:, :-1])
    loss = nn.functional.cross_entropy(logits.reshape(-1, 128), ids[:, 1:].reshape(-1))
    opt.zero_grad()
    loss.backward()
    fsdp.clip_grad_norm_(1.0)
    opt.step()
    if step % 3 == 0:
        log.info(f"step {step} loss {loss.item():.4f}")
if args.out_dir:
    if args.fault == "state_dict":
        # copied from single-GPU script: plain state_dict, then load it back for eval
        sd = fsdp.state_dict()
        if rank == 0:
            os.makedirs(args.out_dir, exist_ok=True)
            torch.save(sd, os.path.join(args.out_dir, "model.pt"))
        eval_model = LM(d=d)
        eval_model.load_state_dict(sd)
    else:
        cfg = FullStateDictConfig(offload_to_cpu=bool(args.sd_offload), rank0_only=True)
        with FSDP.state_dict_type(fsdp, StateDictType.FULL_STATE_DICT, cfg):
            sd = fsdp.state_dict()
        if rank == 0:
            os.makedirs(args.out_dir, exist_ok=True)
            torch.save(sd, os.path.join(args.out_dir, "model.pt"))
            log.info(f"saved {len(sd)} tensors to {args.out_dir}/model.pt")
dist.barrier()
log.info("done")
dist.destroy_process_group()
