"""accelerate training loop scenarios: tiny tied-embedding LM on CPU."""
import argparse, os, sys, time, warnings
import torch
import torch.nn as nn
from torch.utils.data import Dataset, DataLoader
from accelerate import Accelerator
from accelerate.utils import set_seed
from tqdm.auto import tqdm

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--steps", type=int, default=40)
p.add_argument("--bs", type=int, default=8)
p.add_argument("--split", action="store_true")
p.add_argument("--outdir", default="runs/acc_out")
p.add_argument("--sleep", type=float, default=0.0)
p.add_argument("--save-every", type=int, default=0)
args = p.parse_args()

V, D, T = 64, 32, 16


class Toks(Dataset):
    def __init__(self, n=512):
        g = torch.Generator().manual_seed(0)
        self.x = torch.randint(0, V, (n, T + 1), generator=g)
    def __len__(self):
        return len(self.x)
    def __getitem__(self, i):
        return self.x[i, :-1], self.x[i, 1:]


class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(V, D)
        self.block = nn.TransformerEncoderLayer(D, 2, 64, batch_first=True, dropout=0.0)
        self.lm_head = nn.Linear(D, V, bias=False)
        self.lm_head.weight = self.wte.weight  # weight tying
    def forward(self, x):
        mask = nn.Transformer.generate_square_subsequent_mask(x.size(1))
        return self.lm_head(self.block(self.wte(x), src_mask=mask, is_causal=True))


def main():
    acc = Accelerator(split_batches=args.split, log_with=None, project_dir=args.outdir)
    set_seed(0)
    acc.print(f"distributed_type={acc.distributed_type} num_processes={acc.num_processes} mixed_precision={acc.mixed_precision}")
    model = TinyLM()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=3e-3, total_steps=args.steps * 4)
    dl = DataLoader(Toks(), batch_size=args.bs, shuffle=True)
    model, opt, dl, sched = acc.prepare(model, opt, dl, sched)
    bar = tqdm(total=args.steps, disable=not acc.is_local_main_process, desc="train")
    step = 0
    while step < args.steps:
        for x, y in dl:
            logits = model(x)
            loss = nn.functional.cross_entropy(logits.reshape(-1, V), y.reshape(-1))
            acc.backward(loss)
            opt.step(); sched.step(); opt.zero_grad()
            step += 1
            if args.sleep:
                time.sleep(args.sleep)
            bar.update(1)
            bar.set_postfix(loss=f"{loss.item():.3f}")
            if args.fault == "sample" and step == 20 and acc.is_main_process:
                # quick qualitative check: nearest tokens to token 0 in embedding space
                with torch.no_grad():
                    E = model.wte.weight
                    sims = (E @ E[0]).topk(5).indices.tolist()
                acc.print(f"step {step}: nearest to tok0 {sims}")
            if args.save_every and step % args.save_every == 0:
                acc.save_state(os.path.join(args.outdir, f"checkpoint-{step}"))
                acc.print(f"saved state at step {step}")
            if step >= args.steps:
                break
    bar.close()
    acc.wait_for_everyone()
    acc.print(f"finished {step} steps, last loss {loss.item():.4f}")
    acc.end_training()


if __name__ == "__main__":
    main()
