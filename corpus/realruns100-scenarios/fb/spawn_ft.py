"""Hand-written DDP fine-tune launched with torch.multiprocessing.spawn (gloo, CPU)."""
import argparse, os, sys, time, logging
from datetime import timedelta
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch, torch.distributed as dist, torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler
from transformers import DataCollatorForLanguageModeling

def get_args():
    p = argparse.ArgumentParser()
    p.add_argument("--fault", default="none")
    p.add_argument("--world", type=int, default=2)
    p.add_argument("--port", default="42320")
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--init-from", default=None)
    p.add_argument("--save", default="/work/rr100/fb/work/spawn_out")
    return p.parse_args()

def worker(rank, args):
    from common_tiny import build_tokenizer, build_model, make_texts, base_vocab_size
    logging.basicConfig(format=f"%(asctime)s [rank{rank}] %(levelname)s %(message)s", level=logging.INFO)
    log = logging.getLogger("ft")
    os.environ["MASTER_ADDR"] = "127.0.0.1"; os.environ["MASTER_PORT"] = args.port
    dist.init_process_group("gloo", rank=rank, world_size=args.world, timeout=timedelta(seconds=40))
    torch.manual_seed(0)
    tok = build_tokenizer()
    model = build_model()
    if args.init_from:
        log.info(f"loading initial weights from {args.init_from}")
        sd = torch.load(args.init_from, map_location="cpu")
        model.load_state_dict(sd)
    model = DDP(model)
    texts = make_texts(512, seed=5)
    enc = [tok(t, truncation=True, max_length=32) for t in texts]
    coll = DataCollatorForLanguageModeling(tok, mlm=False)
    sampler = DistributedSampler(enc, num_replicas=args.world, rank=rank, shuffle=True)
    dl = DataLoader(enc, batch_size=8, sampler=sampler, collate_fn=coll)
    opt = torch.optim.AdamW(model.parameters(), lr=5e-4)
    step = 0
    t0 = time.time()
    while step < args.steps:
        for batch in dl:
            loss = model(**batch).loss
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step(); opt.zero_grad()
            step += 1
            if step % 5 == 0:
                l = loss.detach().clone(); dist.all_reduce(l); l /= args.world
                if rank == 0:
                    log.info(f"step {step}/{args.steps} loss {l.item():.4f} ({(time.time()-t0)/step:.2f}s/it)")
            if step >= args.steps:
                break
    if rank == 0:
        os.makedirs(args.save, exist_ok=True)
        if args.fault == "save_safetensors":
            from safetensors.torch import save_file
            save_file(model.module.state_dict(), os.path.join(args.save, "model.safetensors"))
        else:
            torch.save(model.module.state_dict(), os.path.join(args.save, "pytorch_model.bin"))
        log.info(f"saved to {args.save}")
    dist.barrier()
    dist.destroy_process_group()

if __name__ == "__main__":
    args = get_args()
    mp.spawn(worker, args=(args,), nprocs=args.world, join=True)
