"""Custom accelerate training loop on a tiny GPT2 (with an optional auxiliary head), launched by torchrun,
accelerate launch or torch.multiprocessing.spawn (--spawn N). --fault selects the problem, --frank its rank."""
import argparse
import os
import sys
from datetime import timedelta

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hfcommon as C  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--frank", type=int, default=1)
p.add_argument("--nsteps", type=int, default=30)
p.add_argument("--spawn", type=int, default=0)
p.add_argument("--port", type=int, default=47720)
p.add_argument("--outdir", default="out_acc")
p.add_argument("--safe", action="store_true")
a = p.parse_args()

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402


class LMWithAux(nn.Module):
    """GPT2 LM plus a sequence-classification head used only when aux labels are present."""

    def __init__(self, lm, n_cls=4):
        super().__init__()
        self.lm = lm
        self.aux_head = nn.Linear(lm.config.n_embd, n_cls)

    def forward(self, input_ids, attention_mask, labels, aux_labels=None):
        out = self.lm(input_ids=input_ids, attention_mask=attention_mask, labels=labels, output_hidden_states=True)
        loss = out.loss
        if aux_labels is not None:
            h = out.hidden_states[-1][:, 0]
            loss = loss + nn.functional.cross_entropy(self.aux_head(h), aux_labels)
        return loss


def main(local_rank=None, nprocs=None):
    if local_rank is not None:
        os.environ.update(RANK=str(local_rank), LOCAL_RANK=str(local_rank), WORLD_SIZE=str(nprocs),
                          LOCAL_WORLD_SIZE=str(nprocs), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(a.port))
    from accelerate import Accelerator, InitProcessGroupKwargs
    from accelerate.utils import set_seed
    from torch.utils.data import DataLoader
    acc = Accelerator(cpu=True, kwargs_handlers=[InitProcessGroupKwargs(backend="gloo", timeout=timedelta(seconds=60))])
    rank = acc.process_index
    acc.print(f"distributed_type={acc.distributed_type} num_processes={acc.num_processes}")
    set_seed(0)
    tok = C.make_tokenizer()
    lm = C.tiny_gpt2(len(tok), bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id)
    f = a.fault
    if f == "ragged":
        # tokenized without padding, torch format, plain DataLoader with the default collate_fn
        ds = C.lm_dataset(tok, n=256, pad=False)
        ds.set_format("torch", columns=["input_ids", "attention_mask", "labels"])
        model = lm
        dl = DataLoader(ds, batch_size=8, shuffle=True)
    else:
        ds = C.lm_dataset(tok, n=256)
        ds = ds.add_column("aux_labels", [i % 4 for i in range(len(ds))])
        cols = ["input_ids", "attention_mask", "labels"] + (["aux_labels"] if f != "aux-off" else [])
        ds.set_format("torch", columns=cols)
        model = LMWithAux(lm)
        dl = DataLoader(ds, batch_size=8, shuffle=True)
    opt = torch.optim.AdamW(model.parameters(), lr=5e-4)
    model, opt, dl = acc.prepare(model, opt, dl)
    step = 0
    while step < a.nsteps:
        for batch in dl:
            if f == "ragged":
                loss = model(**batch).loss
            else:
                loss = model(**batch)
            acc.backward(loss)
            gn = acc.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            opt.zero_grad()
            step += 1
            if step % 5 == 0:
                l = acc.reduce(loss.detach(), "mean").item()
                acc.print(f"step {step:4d} | loss {l:.4f} | grad_norm {float(gn):.3f}")
            if step >= a.nsteps:
                break
    acc.wait_for_everyone()
    os.makedirs(a.outdir, exist_ok=True)
    acc.save_state(a.outdir, safe_serialization=a.safe)
    acc.print(f"saved state to {a.outdir}")
    acc.end_training()


if __name__ == "__main__":
    if a.spawn:
        import torch.multiprocessing as mp
        mp.spawn(main, args=(a.spawn,), nprocs=a.spawn, join=True)
    else:
        main()
