# Tiny HF causal LMs (GPT2 / Llama GQA) built from configs, trained a few steps on CPU.
import argparse, os, time, logging, warnings
from datetime import timedelta
import torch, torch.distributed as dist
os.environ.setdefault("HF_HUB_OFFLINE", "1")
from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast
from tokenizers import Tokenizer, models, pre_tokenizers, trainers

p = argparse.ArgumentParser()
p.add_argument("--arch", default="gpt2")
p.add_argument("--fault", default="none")
p.add_argument("--steps", type=int, default=6)
p.add_argument("--heads", type=int, default=4)
p.add_argument("--kv-heads", type=int, default=2)
p.add_argument("--dim", type=int, default=64)
p.add_argument("--ddp", action="store_true")
p.add_argument("--tqdm", action="store_true")
p.add_argument("--out", default="/tmp/ct_hf_out")
args = p.parse_args()

TEXT = ["the quick brown fox jumps over the lazy dog", "mixture of experts route tokens to experts",
        "rotary position embeddings rotate queries and keys", "grouped query attention shares key value heads"] * 8

def build_tok():
    t = Tokenizer(models.WordLevel(unk_token="[UNK]")); t.pre_tokenizer = pre_tokenizers.Whitespace()
    t.train_from_iterator(TEXT, trainers.WordLevelTrainer(special_tokens=["[UNK]", "[PAD]", "[BOS]", "[EOS]"]))
    tok = PreTrainedTokenizerFast(tokenizer_object=t, unk_token="[UNK]", pad_token="[PAD]", bos_token="[BOS]", eos_token="[EOS]")
    return tok

def build_model(vocab):
    if args.arch == "gpt2":
        cfg = GPT2Config(vocab_size=vocab, n_layer=2, n_embd=args.dim, n_head=args.heads, n_positions=64, tie_word_embeddings=True)
        return GPT2LMHeadModel(cfg)
    cfg = LlamaConfig(vocab_size=vocab, hidden_size=args.dim, intermediate_size=2 * args.dim, num_hidden_layers=2,
                      num_attention_heads=args.heads, num_key_value_heads=args.kv_heads, max_position_embeddings=64,
                      tie_word_embeddings=True, rope_scaling=({"rope_type": "linear", "factor": 0.5} if args.fault == "rope_scaling" else None))
    return LlamaForCausalLM(cfg)

def main():
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    log = logging.getLogger("train")
    rank = 0
    if args.ddp:
        dist.init_process_group("gloo", timeout=timedelta(seconds=30)); rank = dist.get_rank()
    torch.manual_seed(0)
    tok = build_tok()
    model = build_model(len(tok))
    log.info("built %s: %d params, vocab %d", args.arch, sum(p.numel() for p in model.parameters()), len(tok))
    if args.fault in ("resize_missing", "resize_load"):
        n = tok.add_special_tokens({"additional_special_tokens": ["<|user|>", "<|assistant|>", "<|tool|>"]})
        log.info("added %d chat special tokens", n)
        if args.fault == "resize_load":
            os.makedirs(args.out, exist_ok=True)
            torch.save(model.state_dict(), f"{args.out}/base.pt")
            model.resize_token_embeddings(len(tok))
            log.info("resized embeddings to %d; reloading base weights from %s/base.pt", len(tok), args.out)
            model.load_state_dict(torch.load(f"{args.out}/base.pt"))
    if args.ddp:
        model = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    texts = [("<|user|> " if args.fault == "resize_missing" else "") + s for s in TEXT]
    it = range(args.steps)
    if args.tqdm:
        from tqdm import tqdm
        it = tqdm(it, desc="train", mininterval=0)
    for step in it:
        batch = tok(texts[step * 4:(step + 1) * 4], return_tensors="pt", padding=True)
        out = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], labels=batch["input_ids"])
        out.loss.backward(); opt.step(); opt.zero_grad()
        msg = f"step {step} loss {out.loss.item():.4f}"
        if args.tqdm: it.set_postfix(loss=f"{out.loss.item():.3f}")
        else: log.info(msg)
    core = model.module if args.ddp else model
    if rank == 0:
        os.makedirs(args.out, exist_ok=True)
        if args.fault == "safetensors_tied":
            from safetensors.torch import save_file
            log.info("saving %s/model.safetensors", args.out)
            save_file(core.state_dict(), f"{args.out}/model.safetensors")
        else:
            core.save_pretrained(args.out)
            log.info("saved to %s", args.out)
    if args.ddp:
        dist.barrier(); dist.destroy_process_group()

if __name__ == "__main__":
    main()
