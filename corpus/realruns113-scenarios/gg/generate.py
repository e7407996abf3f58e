"""Sample generations from a tiny GPT-2 fine-tuned for a few steps (eval / demo job).

--fault: none | too_long | no_pad | chat | fp16_convert
"""
import argparse, logging, os, sys

import torch
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s", level=logging.INFO,
                    stream=sys.stdout)
log = logging.getLogger("generate")

WORDS = ("the a model data train loss step eval token batch gpu node rank job run log file save load "
         "weight layer head output input sample text prompt answer question is was and of to in").split()


def build_tokenizer(with_pad):
    vocab = {"<unk>": 0, "<|endoftext|>": 1}
    for w in WORDS:
        vocab.setdefault(w, len(vocab))
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    kw = dict(tokenizer_object=tok, unk_token="<unk>", eos_token="<|endoftext|>", bos_token="<|endoftext|>",
              model_max_length=64)
    if with_pad:
        kw["pad_token"] = "<|endoftext|>"
    return PreTrainedTokenizerFast(**kw)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--fault", default="none")
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--max-length", type=int, default=None)
    p.add_argument("--max-new-tokens", type=int, default=None)
    args = p.parse_args()
    torch.manual_seed(0)

    tok = build_tokenizer(with_pad=args.fault != "no_pad")
    cfg = GPT2Config(vocab_size=len(tok), n_layer=2, n_head=2, n_embd=64, n_positions=64,
                     bos_token_id=1, eos_token_id=1)
    model = GPT2LMHeadModel(cfg)
    log.info("model: %.2fM params, n_positions=%d", sum(p.numel() for p in model.parameters()) / 1e6, cfg.n_positions)

    corpus = [" ".join(WORDS[(i * 7 + j) % len(WORDS)] for j in range(20)) for i in range(64)]
    ids = torch.tensor([tok(t)["input_ids"] for t in corpus])
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model.train()
    for step in range(1, args.steps + 1):
        b = ids[torch.randint(0, len(ids), (8,))]
        out = model(input_ids=b, labels=b)
        opt.zero_grad(); out.loss.backward(); opt.step()
        if step % 10 == 0:
            log.info("train step %d loss %.4f", step, out.loss.item())
    model.eval()

    if args.fault == "fp16_convert":
        # "export for serving": cast the weights to fp16, but the conversion also rescales logits
        # by a calibration factor taken from the training config (1e7 for an unscaled head)
        sd = {k: v.half() for k, v in model.state_dict().items()}
        sd["lm_head.weight"] = (sd["lm_head.weight"].float() * 1e7).half()
        torch.save(sd, "runs/gen_fp16.pt")
        log.info("converted checkpoint written: runs/gen_fp16.pt (dtype=float16)")
        model.load_state_dict({k: v.float() for k, v in torch.load("runs/gen_fp16.pt").items()})

    prompts = ["the model is", "save the weight and load", "eval loss was"]
    if args.fault == "too_long":
        prompts.append(" ".join(WORDS[i % len(WORDS)] for i in range(58)))  # a long document as prompt
    if args.fault == "chat":
        messages = [{"role": "system", "content": "answer the question"},
                    {"role": "user", "content": "what is the loss"}]
        chat_ids = tok.apply_chat_template(messages, add_generation_prompt=True, return_tensors="pt")
        prompts = None
    gen_kw = {}
    if args.max_length:
        gen_kw["max_length"] = args.max_length
    if args.max_new_tokens:
        gen_kw["max_new_tokens"] = args.max_new_tokens
    if args.fault in ("none", "fp16_convert"):
        gen_kw.update(do_sample=True, top_k=0, temperature=0.9)
    with torch.no_grad():
        if args.fault == "no_pad":
            for pr in prompts:
                enc = tok(pr, return_tensors="pt")
                out = model.generate(**enc, **gen_kw)
                log.info("prompt=%r -> %r", pr, tok.decode(out[0][enc["input_ids"].shape[1]:]))
            tok.padding_side = "left"
            enc = tok(prompts, return_tensors="pt", padding=True)
            out = model.generate(**enc, **gen_kw)
        else:
            enc = tok(prompts, return_tensors="pt", padding=True)
            out = model.generate(**enc, **gen_kw)
        for pr, o in zip(prompts, out):
            log.info("prompt=%r -> %r", pr[:40], tok.decode(o, skip_special_tokens=True)[-60:])
    log.info("generation finished")


if __name__ == "__main__":
    main()
