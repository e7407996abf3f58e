"""Custom accelerate training loop (tiny GPT-2 LM) with eval/generation, checkpoints, failures late in the run."""
import argparse, os, sys, time, math, logging, signal
from datetime import timedelta
import torch
from torch.utils.data import DataLoader, Dataset
from accelerate import Accelerator, InitProcessGroupKwargs
from accelerate.logging import get_logger
from accelerate.utils import set_seed
from transformers import GPT2Config, GPT2LMHeadModel, get_linear_schedule_with_warmup
from tqdm.auto import tqdm

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--steps", type=int, default=200)
p.add_argument("--eval-every", type=int, default=50)
p.add_argument("--save-every", type=int, default=100)
p.add_argument("--out", default="/work/rr92/ec/runs/acc")
p.add_argument("--workers", type=int, default=0)
p.add_argument("--vocab", type=int, default=512)
p.add_argument("--n-eval", type=int, default=64)
p.add_argument("--mixed-precision", default="no")
args = p.parse_args()

logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", datefmt="%m/%d/%Y %H:%M:%S", level=logging.INFO)
logger = get_logger(__name__)
acc = Accelerator(mixed_precision=args.mixed_precision, cpu=True,
                  kwargs_handlers=[InitProcessGroupKwargs(backend="gloo", timeout=timedelta(seconds=40))])
logger.info(acc.state, main_process_only=False)
set_seed(1234, device_specific=True)
V, T = args.vocab, 32

class Toks(Dataset):
    def __init__(self, n, seed):
        g = torch.Generator().manual_seed(seed)
        base = torch.randint(4, V, (n, T // 2), generator=g)
        base[torch.rand(base.shape, generator=g) < 0.2] = 3     # '.' sentence separator
        self.x = torch.cat([base, base], 1)   # copy task: second half repeats the first
    def __len__(self): return len(self.x)
    def __getitem__(self, i): return {"input_ids": self.x[i], "labels": self.x[i]}

model = GPT2LMHeadModel(GPT2Config(vocab_size=V, n_positions=128, n_layer=2, n_head=2, n_embd=64, bos_token_id=1, eos_token_id=2, pad_token_id=0))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
train_dl = DataLoader(Toks(4096, 0), batch_size=8, shuffle=True, num_workers=args.workers)
eval_dl = DataLoader(Toks(args.n_eval, 1), batch_size=8)
if args.fault == "eval_docs":
    # held-out documents are scored one document per row (not packed like training), so pad them per batch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast, DataCollatorWithPadding
    vocab = {"<|endoftext|>": 2, "[UNK]": 1, ".": 3, **{f"w{i}": i for i in range(4, V)}}
    tk = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tk.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="[UNK]", eos_token="<|endoftext|>", bos_token="<|endoftext|>")
    g = torch.Generator().manual_seed(5)
    docs = [" ".join(f"w{int(t)}" for t in torch.randint(4, V, (int(torch.randint(8, T, (1,), generator=g)),), generator=g))
            for _ in range(args.n_eval)]
    enc = [dict(tok(d, truncation=True, max_length=T)) for d in docs]
    for e in enc: e["labels"] = list(e["input_ids"])
    eval_dl = DataLoader(enc, batch_size=8, collate_fn=DataCollatorWithPadding(tok, return_tensors="pt"))
sched = get_linear_schedule_with_warmup(opt, 20 * acc.num_processes, args.steps * acc.num_processes)
model, opt, train_dl, eval_dl, sched = acc.prepare(model, opt, train_dl, eval_dl, sched)

def evaluate(step):
    model.eval()
    losses, gens, all_logits = [], [], []
    for b in tqdm(eval_dl, desc=f"eval@{step}", disable=not acc.is_local_main_process):
        with torch.no_grad():
            out = model(**b)
        losses.append(acc.gather_for_metrics(out.loss.repeat(b["input_ids"].shape[0])))
        if args.fault == "keep_logits":
            all_logits.append(out.logits.float())
        if args.fault == "gen_gather":
            prompt = b["input_ids"][:, : T // 2]
            for row in prompt:
                g = acc.unwrap_model(model).generate(row[None], max_new_tokens=T // 2, do_sample=True, top_k=20,
                                                     eos_token_id=3, pad_token_id=0)
                if os.environ.get("RR_DBG"): print(acc.process_index, g.shape, flush=True)
                gens.append(acc.gather(g))       # sample stops at the first '.', so lengths differ per rank
    if args.fault == "keep_logits":
        logits = torch.cat(all_logits)                     # [N, T, V] for calibration / ECE
        probs = logits.softmax(-1)
        ece_bins = torch.zeros(15)
        logger.info(f"calibration tensor {tuple(probs.shape)}", main_process_only=False)
    l = torch.cat(losses).mean().item()
    model.train()
    return l

model.train()
bar = tqdm(range(args.steps), disable=not acc.is_local_main_process)
step = 0
t0 = time.time()
for epoch in range(100):
    for b in train_dl:
        out = model(**b)
        acc.backward(out.loss)
        gn = acc.clip_grad_norm_(model.parameters(), 1.0)
        opt.step(); sched.step(); opt.zero_grad()
        step += 1; bar.update(1)
        if step % 10 == 0:
            logger.info(f"step {step} loss {out.loss.item():.4f} grad_norm {gn.item():.3f} lr {sched.get_last_lr()[0]:.2e} "
                        f"tok/s {step * 8 * T * acc.num_processes / (time.time() - t0):.0f}")
        if step % args.eval_every == 0:
            el = evaluate(step)
            logger.info(f"eval step {step}: eval_loss {el:.4f} ppl {math.exp(min(el, 20)):.2f}")
        if step % args.save_every == 0:
            d = os.path.join(args.out, f"step_{step}")
            acc.save_state(d)
            logger.info(f"saved state to {d}")
        if step >= args.steps:
            break
    if step >= args.steps:
        break
acc.wait_for_everyone()
logger.info("training complete")
acc.end_training()
