"""Custom accelerate training loop: LoRA (PEFT) on a tiny local Llama, prompt/completion SFT with label masking,
gradient accumulation, eval, adapter saving. Launch with accelerate launch, torchrun, or --spawn N (mp.spawn)."""
import argparse, math, os, sys, time
from datetime import timedelta
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tinyhf

ap = argparse.ArgumentParser()
ap.add_argument("--fault", default="none")
ap.add_argument("--fault-rank", type=int, default=1)
ap.add_argument("--fault-step", type=int, default=4)
ap.add_argument("--steps", type=int, default=16)
ap.add_argument("--bs", type=int, default=4)
ap.add_argument("--eval-bs", type=int, default=8)
ap.add_argument("--max-length", type=int, default=48)
ap.add_argument("--eval-max-length", type=int, default=48)
ap.add_argument("--grad-accum", type=int, default=2)
ap.add_argument("--out", default="out/acc")
ap.add_argument("--spawn", type=int, default=0)
ap.add_argument("--master-port", default="46519")
ap.add_argument("--quant", default="none", choices=["none", "4bit"])
ap.add_argument("--padding-side", default="right")
ap.add_argument("--sample-gen", action="store_true")
ap.add_argument("--collator", default="own", choices=["own", "hf"])
ap.add_argument("--pg-timeout", type=int, default=60)
ap.add_argument("--step-sleep", type=float, default=0.0)
args = ap.parse_args()


def build_examples(tok, n, rng_seed, rank, world):
    """Tokenise prompt+completion; labels masked (-100) over the prompt, then truncated to max_length."""
    ds = tinyhf.prompt_completion(n, seed=rng_seed)
    rows = [ds[i] for i in range(len(ds))][rank::world]
    if args.fault == "long-prompts" and rank == args.fault_rank:
        # this shard holds a few records whose prompt is a pasted document; with group-by-length
        # batching they end up together in one batch
        long_p = "question: " + " ".join(["please read the text and answer"] * 30)
        at = (args.fault_step - 1) * args.bs * args.grad_accum
        for j in range(args.bs):
            rows.insert(at + j, {"prompt": long_p, "completion": " answer: yes"})
    out = []
    for r in rows:
        p = tok(r["prompt"])["input_ids"]
        c = tok(r["completion"] + tok.eos_token)["input_ids"]
        ids = (p + c)[: args.max_length]
        labels = ([-100] * len(p) + c)[: args.max_length]
        out.append((ids, labels))
    return out


def collate(batch, pad_id, padding_side):
    import torch
    L = max(len(i) for i, _ in batch)
    ids, lab, att = [], [], []
    for i, l in batch:
        pad = L - len(i)
        if padding_side == "left":
            ids.append([pad_id] * pad + i); lab.append([-100] * pad + l); att.append([0] * pad + [1] * len(i))
        else:
            ids.append(i + [pad_id] * pad); lab.append(l + [-100] * pad); att.append([1] * len(i) + [0] * pad)
    return {"input_ids": torch.tensor(ids), "labels": torch.tensor(lab), "attention_mask": torch.tensor(att)}


def main():
    import torch
    from accelerate import Accelerator
    from accelerate.logging import get_logger
    from accelerate.utils import InitProcessGroupKwargs
    import logging
    from tqdm.auto import tqdm
    from peft import LoraConfig, get_peft_model

    acc = Accelerator(gradient_accumulation_steps=args.grad_accum, cpu=True,
                      kwargs_handlers=[InitProcessGroupKwargs(backend="gloo", timeout=timedelta(seconds=args.pg_timeout))])
    logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.INFO)
    log = get_logger("acc_lora")
    log.info(f"distributed_type={acc.distributed_type} num_processes={acc.num_processes}", main_process_only=True)
    rank, world = acc.process_index, acc.num_processes

    tok = tinyhf.build_tokenizer(with_pad=(args.fault != "no-pad-token"))
    tok.padding_side = args.padding_side
    if args.quant == "4bit":
        # QLoRA recipe: load the saved base model in 4-bit
        from transformers import AutoModelForCausalLM, BitsAndBytesConfig
        base_dir = os.path.join(tinyhf.ASSETS, "tiny-llama")
        if acc.is_main_process and not os.path.exists(base_dir):
            tinyhf.llama(tok).save_pretrained(base_dir)
        acc.wait_for_everyone()
        bnb = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4",
                                 bnb_4bit_compute_dtype=torch.bfloat16)
        model = AutoModelForCausalLM.from_pretrained(base_dir, quantization_config=bnb)
    else:
        model = tinyhf.llama(tok)
    model = get_peft_model(model, LoraConfig(r=8, lora_alpha=16, target_modules=["q_proj", "k_proj", "v_proj", "o_proj"],
                                             lora_dropout=0.0, task_type="CAUSAL_LM"))
    if acc.is_main_process:
        model.print_trainable_parameters()

    train = build_examples(tok, 400, 5, rank, world)
    evals = build_examples(tok, 32, 6, rank, world)
    from torch.utils.data import DataLoader
    if args.collator == "hf":
        from transformers import DataCollatorForSeq2Seq
        hf_col = DataCollatorForSeq2Seq(tok, label_pad_token_id=-100, return_tensors="pt")
        col = lambda b: hf_col([{"input_ids": i, "labels": l} for i, l in b])
    else:
        col = lambda b: collate(b, tok.pad_token_id, args.padding_side)
    dl = DataLoader(train, batch_size=args.bs, shuffle=False, collate_fn=col)
    edl = DataLoader(evals, batch_size=args.eval_bs, shuffle=False, collate_fn=col)
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=3e-3)
    # the dataloaders are already sharded per rank above, so only model/optimizer go through prepare
    model, opt = acc.prepare(model, opt)

    step, micro = 0, 0
    bar = tqdm(total=args.steps, desc=f"train", disable=not acc.is_local_main_process)
    model.train()
    while step < args.steps:
        for batch in dl:
            with acc.accumulate(model):
                out = model(**batch)
                loss = out.loss
                acc.backward(loss)
                opt.step(); opt.zero_grad()
            running = running + loss.detach() / args.grad_accum if micro % args.grad_accum else loss.detach() / args.grad_accum
            micro += 1
            if acc.sync_gradients:
                step += 1
                bar.update(1)
                if args.step_sleep:
                    time.sleep(args.step_sleep)
                log.info(f"rank={rank} step={step} loss={running.item():.4f}", main_process_only=False)
                do_eval = step % 8 == 0 and (acc.is_main_process or args.fault != "eval-main-only")
                if do_eval:
                    model.eval()
                    tot, n = 0.0, 0
                    with torch.no_grad():
                        for eb in edl:
                            tot += model(**eb).loss.item(); n += 1
                    el = acc.gather(torch.tensor([tot / max(n, 1)])).mean().item()
                    log.info(f"step={step} eval_loss={el:.4f} eval_ppl={math.exp(min(el, 50)):.2f}")
                    if args.sample_gen and acc.is_main_process:
                        enc = tok(["question: what is", "question: the cat sat on the big mat"], return_tensors="pt", padding=True)
                        with torch.no_grad():
                            gen = acc.unwrap_model(model).generate(**enc, max_new_tokens=8, do_sample=False)
                        for g in tok.batch_decode(gen, skip_special_tokens=True):
                            log.info(f"sample: {g!r}")
                    model.train()
                if step >= args.steps:
                    break
    bar.close()
    acc.wait_for_everyone()
    if acc.is_main_process:
        acc.unwrap_model(model).save_pretrained(args.out)
        log.info(f"adapter saved to {args.out}")
    acc.end_training()


def _spawned(local_rank, world):
    os.environ.update(RANK=str(local_rank), LOCAL_RANK=str(local_rank), WORLD_SIZE=str(world),
                      LOCAL_WORLD_SIZE=str(world), MASTER_ADDR="127.0.0.1", MASTER_PORT=args.master_port)
    main()


if __name__ == "__main__":
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(_spawned, args=(args.spawn,), nprocs=args.spawn, join=True)
    else:
        main()
