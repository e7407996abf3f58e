"""Fine-tune a tiny GPT-2 built from a config (offline) with a plain loop or accelerate."""
import argparse, os, sys, time, datetime, logging
import torch, torch.nn.functional as F
import torch.distributed as dist
from transformers import GPT2Config, GPT2LMHeadModel, GPT2ForSequenceClassification

p = argparse.ArgumentParser()
p.add_argument("--prepare", action="store_true")
p.add_argument("--base", default="/work/rr69/bb/hfmodels/tiny-gpt2")
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=-1)
p.add_argument("--steps", type=int, default=20)
p.add_argument("--save-every", type=int, default=10)
p.add_argument("--out", default="/work/rr69/bb/hfout")
p.add_argument("--accelerate", action="store_true")
args = p.parse_args()

def cfg(vocab=1000):
    return GPT2Config(vocab_size=vocab, n_positions=64, n_embd=64, n_layer=2, n_head=4, pad_token_id=0)

if args.prepare:
    torch.manual_seed(0)
    m = GPT2LMHeadModel(cfg()); m.save_pretrained(args.base)
    os.makedirs(args.base + "-broken", exist_ok=True)
    import shutil; shutil.copy(args.base + "/config.json", args.base + "-broken/config.json")
    raw = open(args.base + "/model.safetensors", "rb").read()
    print("prepared", os.listdir(args.base), len(raw)); sys.exit(0)

logging.basicConfig(level=logging.INFO, format="%(asctime)s - %(levelname)s - %(name)s - %(message)s")
log = logging.getLogger("finetune")

if args.accelerate:
    from accelerate import Accelerator
    acc = Accelerator()
    rank, world = acc.process_index, acc.num_processes
else:
    rank, world = int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))
    if world > 1:
        dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=40))
mine = args.fault_rank < 0 or args.fault_rank == rank
fault = args.fault if mine else "none"

base = args.base
if fault == "broken_safetensors": base = args.base + "-broken"
if fault == "classifier_head":
    model = GPT2ForSequenceClassification.from_pretrained(base, num_labels=3)
elif fault == "bigger_vocab":
    model = GPT2LMHeadModel.from_pretrained(base, config=cfg(1024))
else:
    model = GPT2LMHeadModel.from_pretrained(base)
log.info(f"rank {rank}: loaded {type(model).__name__} from {base} ({sum(p_.numel() for p_ in model.parameters())} params)")
opt = torch.optim.AdamW(model.parameters(), lr=5e-4)
if args.accelerate:
    model, opt = acc.prepare(model, opt)
elif world > 1:
    model = torch.nn.parallel.DistributedDataParallel(model)
g = torch.Generator().manual_seed(rank)
for step in range(1, args.steps + 1):
    x = torch.randint(1, 1000, (4, 32), generator=g)
    if fault == "classifier_head":
        out = model(input_ids=x, labels=torch.randint(0, 3, (4,), generator=g))
    else:
        out = model(input_ids=x, labels=x)
    opt.zero_grad()
    (acc.backward(out.loss) if args.accelerate else out.loss.backward())
    opt.step()
    if rank == 0 and step % 2 == 0:
        log.info(f"step {step}/{args.steps} loss={out.loss.item():.4f} lr=5e-4")
    if step % args.save_every == 0:
        if rank == 0:
            core = model.module if hasattr(model, "module") else model
            os.makedirs(f"{args.out}/step{step}", exist_ok=True)
            if fault == "raw_safetensors":
                from safetensors.torch import save_file
                save_file(core.state_dict(), f"{args.out}/step{step}/model.safetensors")
            else:
                core.save_pretrained(f"{args.out}/step{step}")
            log.info(f"saved checkpoint to {args.out}/step{step}")
        if world > 1:
            (acc.wait_for_everyone() if args.accelerate else dist.barrier())
    time.sleep(0.05)
if world > 1 and not args.accelerate:
    dist.destroy_process_group()
log.info("training complete")
