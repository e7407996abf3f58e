"""Plain DDP fine-tuning of a tiny GPT-2 via torch.multiprocessing.spawn (healthy, noisy)."""
import os, sys, logging, warnings
from datetime import timedelta
import torch, torch.distributed as dist, torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP
from transformers import GPT2Config, GPT2LMHeadModel

def worker(rank, world, steps, port):
    os.environ["MASTER_ADDR"] = "127.0.0.1"; os.environ["MASTER_PORT"] = str(port)
    logging.basicConfig(format=f"%(asctime)s [rank{rank}] %(levelname)s %(message)s", level=logging.INFO)
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=60))
    torch.manual_seed(0)
    cfg = GPT2Config(vocab_size=64, n_layer=2, n_embd=64, n_head=2, n_positions=32)
    model = GPT2LMHeadModel(cfg)
    model.gradient_checkpointing_enable()
    model.config.use_cache = True
    ddp = DDP(model, find_unused_parameters=True)
    opt = torch.optim.AdamW(ddp.parameters(), lr=3e-4)
    g = torch.Generator().manual_seed(rank)
    for step in range(1, steps + 1):
        x = torch.randint(0, 64, (4, 16), generator=g)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=False):
            out = ddp(input_ids=x, labels=x, use_cache=True)
        out.loss.backward()
        torch.nn.utils.clip_grad_norm_(ddp.parameters(), 1.0)
        opt.step(); opt.zero_grad()
        if step % 5 == 0:
            t = out.loss.detach().clone(); dist.all_reduce(t); t /= world
            logging.info("step %d/%d loss %.4f", step, steps, t.item())
    dist.barrier()
    if rank == 0:
        torch.save(ddp.module.state_dict(), "/tmp/rr62ah/spawn_final.pt")
        logging.info("saved /tmp/rr62ah/spawn_final.pt")
    dist.destroy_process_group()

if __name__ == "__main__":
    os.makedirs("/tmp/rr62ah", exist_ok=True)
    mp.spawn(worker, args=(2, int(sys.argv[1]) if len(sys.argv) > 1 else 20, 30560), nprocs=2, join=True)
