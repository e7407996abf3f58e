"""Tiny GPT-2 trained with FSDP2 (fully_shard) or FSDP1 on CPU/gloo. Flags select a fault."""
import argparse, logging, os, sys, time, signal, subprocess
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=3)
p.add_argument("--steps", type=int, default=8)
p.add_argument("--impl", default="fsdp2")
p.add_argument("--pg-timeout", type=int, default=30)
p.add_argument("--tqdm-bar", action="store_true")
p.add_argument("--as-mb", type=int, default=0)
p.add_argument("--out-dir", default="out_fsdp")
a = p.parse_args()

rank = int(os.environ.get("RANK", 0)); world = int(os.environ.get("WORLD_SIZE", 1))
logging.basicConfig(level=logging.INFO, format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s")
log = logging.getLogger("train")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
from transformers import GPT2Config, GPT2LMHeadModel

dist.init_process_group("gloo", timeout=timedelta(seconds=a.pg_timeout))
from torch.distributed.device_mesh import init_device_mesh
mesh = init_device_mesh("cpu", (world,), mesh_dim_names=("dp",))
torch.manual_seed(0)
cfg = GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=512, n_positions=64)
if a.fault == "meta-init":
    with torch.device("meta"):
        model = GPT2LMHeadModel(cfg)
else:
    model = GPT2LMHeadModel(cfg)
log.info("model params: %d", sum(p.numel() for p in model.parameters()))

if a.fault == "frozen-mixed":
    # freeze embeddings (common for adapter-style finetune), keep them in the same FSDP unit as trainable layers
    for n, prm in model.named_parameters():
        if "wte" in n or "wpe" in n:
            prm.requires_grad_(False)
if a.fault == "bf16-head":
    model.transformer.ln_f.to(torch.bfloat16)

if a.impl == "fsdp1":
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
    model = FSDP(model, device_id=torch.device("cpu"), use_orig_params=False)
else:
    from torch.distributed.fsdp import fully_shard, MixedPrecisionPolicy
    for blk in model.transformer.h:
        fully_shard(blk, mesh=mesh)
    fully_shard(model, mesh=mesh)
    if a.fault == "meta-init":
        pass  # forgot model.to_empty(device="cpu") + init_weights()
log.info("wrapped with %s over mesh %s", a.impl, mesh)

if a.as_mb and rank == a.fault_rank:
    import resource
    resource.setrlimit(resource.RLIMIT_AS, (a.as_mb << 20, resource.RLIMIT_INFINITY if False else a.as_mb << 20))
    log.info("address-space limit on this host: %d MB", a.as_mb)

opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
g = torch.Generator().manual_seed(rank)
data = torch.randint(0, 512, (64, 32), generator=g)
if a.fault == "bad-tokens" and rank == a.fault_rank:
    # tokenizer of this shard was built with a bigger vocab than the model
    data[a.fault_step * 4 + 1, 5] = 517
it = range(a.steps)
if a.tqdm_bar:
    from tqdm import tqdm
    it = tqdm(it, desc=f"rank{rank}", file=sys.stdout, mininterval=0)
t0 = time.time()
for step in it:
    batch = data[(step * 4) % 64:(step * 4) % 64 + 4]
    if a.fault == "big-batch" and rank == a.fault_rank and step == a.fault_step:
        batch = torch.randint(0, 512, (4096, 64))  # eval-sized batch pushed through the train step
    if a.fault == "kill" and rank == a.fault_rank and step == a.fault_step:
        subprocess.Popen(["kill", "-9", str(os.getpid())])
        time.sleep(2)
    out = model(input_ids=batch, labels=batch, output_hidden_states=(a.fault == 'probe-outside'))
    loss = out.loss
    if a.fault == "l2-outside" and rank == a.fault_rank and step == a.fault_step:
        # extra L2 penalty on the head, computed outside the sharded forward
        # explicit L2 penalty on the last block (weight decay "only for the top block"), computed outside forward
        loss = loss + 1e-4 * sum(w.pow(2).sum() for w in model.transformer.h[-1].parameters())
    if a.fault == "probe-outside" and rank == a.fault_rank and step == a.fault_step:
        # rank-0 diagnostics: project the last hidden state through the top block's MLP input weight
        with torch.no_grad():
            feat = out.hidden_states[-1] @ model.transformer.h[-1].mlp.c_fc.weight
            log.info("probe activation norm %.3f", feat.norm().item())
    loss.backward()
    gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step(); opt.zero_grad()
    if rank == 0 or a.fault != "none":
        log.info("step %d loss %.4f grad_norm %.3f lr %.1e %.2fs/it", step, loss.item(), float(gn.full_tensor() if hasattr(gn, "full_tensor") else gn), 3e-3, (time.time() - t0) / (step + 1))
if a.fault == "save-full" :
    from torch.distributed.checkpoint.state_dict import get_model_state_dict, StateDictOptions
    sd = get_model_state_dict(model, options=StateDictOptions(full_state_dict=True, cpu_offload=True))
    if rank == 0:
        os.makedirs(a.out_dir, exist_ok=True); torch.save(sd, os.path.join(a.out_dir, "model.pt"))
log.info("training finished")
dist.destroy_process_group()
