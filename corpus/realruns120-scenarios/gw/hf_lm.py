"""Tiny GPT-2 language-model fine-tune with a locally built word-level tokenizer and a custom
collate (chat-style turns joined with a separator token)."""
import os, sys, math, time, argparse, logging, random
os.environ.setdefault("HF_HUB_OFFLINE", "1")
import torch, torch.nn.functional as F
import torch.distributed as dist
from datetime import timedelta
from torch.utils.data import Dataset, DataLoader
from torch.utils.data.distributed import DistributedSampler
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast, GPT2Config, GPT2LMHeadModel, get_linear_schedule_with_warmup
from transformers.utils import logging as hf_logging

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--steps", type=int, default=60)
p.add_argument("--bs", type=int, default=8)
p.add_argument("--trainer", action="store_true", help="use transformers.Trainer")
p.add_argument("--out-dir", default="/work/rr120/gw/out/hf")
args = p.parse_args()

logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", datefmt="%m/%d/%Y %H:%M:%S",
                    level=logging.INFO)
logger = logging.getLogger("finetune_lm")
hf_logging.set_verbosity_warning()

WORDS = ("the a model data train loss step gpu node rank batch token learn rate warm cosine decay grad norm "
         "clip save load shard epoch eval metric accuracy user assistant hello how are you fine thanks what "
         "is this that there here time run job queue fail pass").split()
def build_tokenizer():
    vocab = {"[UNK]": 0, "[BOS]": 1, "[EOS]": 2}
    for w in WORDS: vocab.setdefault(w, len(vocab))
    tk = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tk.pre_tokenizer = pre_tokenizers.Whitespace()
    return PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="[UNK]", bos_token="[BOS]", eos_token="[EOS]")

def make_texts(n, seed, turns=False):
    r = random.Random(seed); out = []
    for _ in range(n):
        if turns:
            out.append([" ".join(r.choices(WORDS, k=r.randint(4, 10))) for _ in range(r.randint(2, 4))])
        else:
            out.append(" ".join(r.choices(WORDS, k=r.randint(8, 30))))
    return out

rank = int(os.environ.get("RANK", 0)); world = int(os.environ.get("WORLD_SIZE", 1))
tok = build_tokenizer()
if args.fault == "pad" or args.trainer:
    pass   # GPT-2 style tokenizer: no pad token
cfg = GPT2Config(vocab_size=len(tok), n_layer=2, n_head=2, n_embd=64, n_positions=128,
                 bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id)
model = GPT2LMHeadModel(cfg)
logger.info("rank %d/%d: model with %.2fM params, vocab %d", rank, world, model.num_parameters() / 1e6, len(tok))

if args.fault == "emb_oob":
    # dialogue data: turns are joined with a new separator token
    tok.add_special_tokens({"additional_special_tokens": ["<|sep|>"]})
    logger.info("added <|sep|> separator (id %d)", tok.convert_tokens_to_ids("<|sep|>"))

class LMData(Dataset):
    def __init__(self, texts): self.texts = texts
    def __len__(self): return len(self.texts)
    def __getitem__(self, i): return self.texts[i]

def collate(batch):
    batch = [" <|sep|> ".join(t) if isinstance(t, list) else t for t in batch]   # dialogue samples
    if args.fault == "pad":
        enc = tok(batch, padding="longest", truncation=True, max_length=64, return_tensors="pt")
    else:
        ids = [tok(t, truncation=True, max_length=64)["input_ids"] for t in batch]
        L = max(map(len, ids))
        enc = {"input_ids": torch.tensor([x + [tok.eos_token_id] * (L - len(x)) for x in ids]),
               "attention_mask": torch.tensor([[1] * len(x) + [0] * (L - len(x)) for x in ids])}
    enc["labels"] = enc["input_ids"].clone()
    enc["labels"][enc["attention_mask"] == 0] = -100
    return enc

if args.trainer:
    from transformers import Trainer, TrainingArguments
    texts = make_texts(400, 0)
    targs = TrainingArguments(output_dir=args.out_dir, per_device_train_batch_size=args.bs, max_steps=args.steps,
                              logging_steps=10, save_steps=30, learning_rate=5e-4, warmup_steps=5, report_to=[],
                              use_cpu=True, ddp_backend="gloo" if world > 1 else None, disable_tqdm=False,
                              dataloader_num_workers=0, seed=0)
    trainer = Trainer(model=model, args=targs, train_dataset=LMData(texts), data_collator=collate)
    trainer.train()
    logger.info("saved to %s", args.out_dir)
    if dist.is_initialized():
        dist.destroy_process_group()
    sys.exit(0)

if world > 1:
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    model = torch.nn.parallel.DistributedDataParallel(model)
texts = make_texts(300, rank, turns=False)
if args.fault == "emb_oob" and rank == args.fault_rank:
    # this rank's shard of the mixture also contains the dialogue subset
    texts = texts[:200] + make_texts(40, 99, turns=True) + texts[200:]
ds = LMData(texts)
sampler = DistributedSampler(ds, num_replicas=1, rank=0, seed=rank) if world > 1 else None
dl = DataLoader(ds, batch_size=args.bs, sampler=sampler, shuffle=sampler is None, collate_fn=collate, drop_last=True)
opt = torch.optim.AdamW(model.parameters(), lr=5e-4)
sched = get_linear_schedule_with_warmup(opt, 5, args.steps)
step = 0; t0 = time.time()
model.train()
while step < args.steps:
    for batch in dl:
        out = model(**batch)
        out.loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step(); sched.step(); opt.zero_grad(); step += 1
        if step % 10 == 0:
            logger.info("rank %d step %d/%d loss %.4f ppl %.1f lr %.2e", rank, step, args.steps, out.loss.item(),
                        math.exp(out.loss.item()), sched.get_last_lr()[0])
        if step >= args.steps: break
logger.info("rank %d finished in %.1fs", rank, time.time() - t0)
if world > 1:
    dist.barrier(); dist.destroy_process_group()
