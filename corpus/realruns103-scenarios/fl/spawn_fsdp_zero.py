"""torch.multiprocessing.spawn launcher: FSDP / ZeroRedundancyOptimizer training of a tiny GPT-2 with
per-rank checkpoints and resume.  --fault selects the misconfiguration."""
import argparse, os, sys, logging, time
from datetime import timedelta
sys.path.insert(0, os.path.dirname(__file__))
import tinyhf
import torch, torch.distributed as dist, torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP

def get_args():
    p = argparse.ArgumentParser()
    p.add_argument("--mode", default="ddp", choices=["ddp", "fsdp", "zero"])
    p.add_argument("--world-size", type=int, default=2)
    p.add_argument("--port", default="42820")
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--freeze-embeddings", action="store_true")
    p.add_argument("--ckpt-dir", default="runs/spawn_ckpt")
    p.add_argument("--resume", action="store_true")
    p.add_argument("--save-args", action="store_true")
    return p.parse_args()

def worker(rank, a):
    logging.basicConfig(format=f"%(asctime)s [rank{rank}] %(levelname)s %(message)s", level=logging.INFO)
    log = logging.getLogger("spawn")
    os.environ["MASTER_ADDR"] = "127.0.0.1"; os.environ["MASTER_PORT"] = a.port
    dist.init_process_group("gloo", rank=rank, world_size=a.world_size, timeout=timedelta(seconds=40))
    tok = tinyhf.make_tokenizer()
    model = tinyhf.make_model(len(tok))
    if a.freeze_embeddings:
        model.transformer.wte.weight.requires_grad_(False)
    if a.mode == "fsdp":
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
        model = FSDP(model, use_orig_params=False, device_id=torch.device("cpu"))
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    elif a.mode == "zero":
        from torch.distributed.optim import ZeroRedundancyOptimizer
        model = DDP(model)
        opt = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.AdamW, lr=1e-3)
    else:
        model = DDP(model)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    log.info("model wrapped (%s), world_size=%d", a.mode, a.world_size)
    start = 0
    os.makedirs(a.ckpt_dir, exist_ok=True)
    if a.resume:
        path = os.path.join(a.ckpt_dir, f"rank{rank}.pt") if a.mode == "zero" else os.path.join(a.ckpt_dir, "last.pt")
        log.info("resuming from %s", path)
        ck = torch.load(path)
        model.module.load_state_dict(ck["model"]) if a.mode != "fsdp" else model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["optim"])
        start = ck["step"]
        log.info("resumed at step %d", start)
    texts = tinyhf.make_texts(80, seed=11 + rank, min_len=12)
    for step in range(start, start + a.steps):
        batch = tok(texts[(step * 4) % 76:(step * 4) % 76 + 4], truncation=True, max_length=12, padding=True,
                    return_tensors="pt")
        loss = model(input_ids=batch["input_ids"], labels=batch["input_ids"]).loss
        loss.backward(); opt.step(); opt.zero_grad()
        if step % 2 == 0:
            log.info("step %d loss %.4f", step, loss.item())
    # checkpoint: ZeRO keeps a shard of optimizer state per rank, so every rank writes its own file
    if a.mode == "zero":
        ck = {"model": model.module.state_dict(), "optim": opt.optim.state_dict(), "step": start + a.steps}
        torch.save(ck, os.path.join(a.ckpt_dir, f"rank{rank}.pt"))
        log.info("saved shard checkpoint rank%d.pt", rank)
    elif rank == 0:
        ck = {"model": model.module.state_dict(), "optim": opt.state_dict(), "step": start + a.steps}
        if a.save_args:
            ck["args"] = a
        torch.save(ck, os.path.join(a.ckpt_dir, "last.pt"))
        log.info("saved checkpoint last.pt")
    dist.barrier()
    dist.destroy_process_group()

if __name__ == "__main__":
    a = get_args()
    mp.spawn(worker, args=(a,), nprocs=a.world_size, join=True)
