import argparse, os, sys, random, time
os.environ.setdefault("HF_HUB_OFFLINE", "1")
import torch
from datetime import timedelta
from transformers import GPT2Config, GPT2LMHeadModel
from accelerate import Accelerator
from accelerate.utils import InitProcessGroupKwargs
from tqdm import tqdm

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--bad-rank", type=int, default=1)
p.add_argument("--steps", type=int, default=20)
p.add_argument("--spawn", type=int, default=0)
p.add_argument("--port", type=int, default=48550)
a = p.parse_args()

def main(local_rank=None):
    if local_rank is not None:
        os.environ.update(RANK=str(local_rank), LOCAL_RANK=str(local_rank), WORLD_SIZE=str(a.spawn),
                          MASTER_ADDR="127.0.0.1", MASTER_PORT=str(a.port), ACCELERATE_USE_CPU="1")
    acc = Accelerator(mixed_precision=os.environ.get("MP", "no"), kwargs_handlers=[InitProcessGroupKwargs(timeout=timedelta(seconds=30))])
    rank = acc.process_index
    acc.print(f"distributed_type={acc.distributed_type} num_processes={acc.num_processes}")
    torch.manual_seed(0)
    cfg = GPT2Config(vocab_size=64, n_layer=2, n_embd=64, n_head=4, n_positions=32)
    model = GPT2LMHeadModel(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    g = torch.Generator().manual_seed(rank)
    seqlen = 48 if (a.fault == "longseq" and rank == a.bad_rank) else 16  # rank-local data pipeline with its own max_len
    data = torch.randint(0, 64, (160, seqlen), generator=g)
    dl = torch.utils.data.DataLoader(data, batch_size=8, shuffle=True)
    model, opt, dl = acc.prepare(model, opt, dl)
    it = iter(dl)
    for step in tqdm(range(a.steps), disable=not acc.is_main_process, desc="train"):
        try:
            x = next(it)
        except StopIteration:
            it = iter(dl); x = next(it)
        out = model(input_ids=x, labels=x)
        acc.backward(out.loss)
        opt.step(); opt.zero_grad()
        if step % 5 == 0:
            loss = acc.gather(out.loss.detach()).mean()
            acc.print(f"step {step} loss {loss.item():.4f}")
    acc.wait_for_everyone()
    acc.print("training complete")
    acc.end_training()

if __name__ == "__main__":
    if a.spawn:
        import torch.multiprocessing as mp
        mp.spawn(main, nprocs=a.spawn)
    else:
        main()
