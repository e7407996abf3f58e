"""Plain DDP fine-tune written for torchrun (env:// rendezvous)."""
import os, sys
from datetime import timedelta
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from common_tiny import build_tokenizer, build_model, make_texts

def main():
    dist.init_process_group(backend="gloo", timeout=timedelta(seconds=30))
    rank, world = dist.get_rank(), dist.get_world_size()
    print(f"[rank {rank}/{world}] initialised", flush=True)
    tok = build_tokenizer(); model = DDP(build_model())
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    texts = make_texts(64, seed=rank)
    for step in range(0, 64, 8):
        b = tok(texts[step:step+8], padding=True, return_tensors="pt")
        out = model(**b, labels=b["input_ids"].masked_fill(b["attention_mask"] == 0, -100))
        out.loss.backward(); opt.step(); opt.zero_grad()
        if rank == 0: print(f"step {step//8} loss {out.loss.item():.4f}", flush=True)
    dist.destroy_process_group()

if __name__ == "__main__":
    main()
