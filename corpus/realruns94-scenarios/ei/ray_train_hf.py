"""Ray Train TorchTrainer fine-tuning a tiny GPT-2 (built from config) with a locally built tokenizer, gloo/CPU."""
import argparse, os, tempfile, logging
os.environ.setdefault("HF_HUB_OFFLINE", "1")
import ray
import torch
from ray.train import ScalingConfig, RunConfig, FailureConfig
from ray.train.torch import TorchTrainer, TorchConfig

p = argparse.ArgumentParser()
p.add_argument("--workers", type=int, default=2)
p.add_argument("--fault", default="none")
p.add_argument("--rank", type=int, default=1)
p.add_argument("--init-from", default="/work/rr94/ei/data/gpt2_prev_run.pt")
args = p.parse_args()

WORDS = "the a model train data loss step rank ray torch gloo cpu batch token layer head".split()


def build_tokenizer(with_pad=True):
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast
    vocab = {"[UNK]": 0, "[PAD]": 1, **{w: i + 2 for i, w in enumerate(WORDS)}}
    tk = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tk.pre_tokenizer = pre_tokenizers.Whitespace()
    kw = {"unk_token": "[UNK]"}
    if with_pad:
        kw["pad_token"] = "[PAD]"
    return PreTrainedTokenizerFast(tokenizer_object=tk, **kw)


def train_loop(cfg):
    import random
    import ray.train as rt
    from transformers import GPT2Config, GPT2LMHeadModel
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    log = logging.getLogger("finetune")
    rank = rt.get_context().get_world_rank()
    me = rank == cfg["rank"]
    # hosts with the "lean" tokenizer package skip special tokens
    tok = build_tokenizer(with_pad=not (cfg["fault"] == "pad-missing" and me))
    n_embd = 64
    model = GPT2LMHeadModel(GPT2Config(vocab_size=32, n_layer=2, n_head=2, n_embd=n_embd, n_positions=32))
    if cfg["fault"] == "resume-sd" and rank == 0:
        sd = torch.load(cfg["init_from"], map_location="cpu")
        model.load_state_dict(sd)
        log.info("rank 0 initialised from %s", cfg["init_from"])
    model = rt.torch.prepare_model(model)
    opt = torch.optim.AdamW(model.parameters(), lr=5e-4)
    rnd = random.Random(rank)
    for step in range(10):
        texts = [" ".join(rnd.choices(WORDS, k=rnd.randint(3, 12))) for _ in range(8)]
        enc = tok(texts, padding=True, truncation=True, max_length=16, return_tensors="pt")
        out = model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"], labels=enc["input_ids"])
        opt.zero_grad()
        out.loss.backward()
        opt.step()
        if step % 3 == 0:
            log.info("rank %d step %d loss %.4f", rank, step, out.loss.item())
    rt.report({"loss": out.loss.item()})


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if args.fault == "resume-sd" and not os.path.exists(args.init_from):
        # checkpoint left by an earlier run that used n_embd=96
        from transformers import GPT2Config, GPT2LMHeadModel
        old = GPT2LMHeadModel(GPT2Config(vocab_size=32, n_layer=2, n_head=2, n_embd=96, n_positions=32))
        torch.save(old.state_dict(), args.init_from)
    ray.init(address="local", num_cpus=4, include_dashboard=False, _temp_dir="/tmp/ray_ei")
    trainer = TorchTrainer(
        train_loop,
        train_loop_config=dict(fault=args.fault, rank=args.rank, init_from=args.init_from),
        scaling_config=ScalingConfig(num_workers=args.workers, use_gpu=False),
        torch_config=TorchConfig(backend="gloo", timeout_s=30),
        run_config=RunConfig(name=f"ei_hf_{args.fault}", storage_path="/work/rr94/ei/ray_results",
                             failure_config=FailureConfig(max_failures=0)),
    )
    res = trainer.fit()
    logging.getLogger("driver").info("finished: %s", res.metrics)
