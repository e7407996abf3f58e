"""Tiny T5 'reverse the sentence' task with Seq2SeqTrainer. --spawn N starts N gloo ranks with
torch.multiprocessing.spawn; --fault plain-collator uses DataCollatorWithPadding (labels are not padded)."""
import argparse, os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--spawn", type=int, default=0)
p.add_argument("--port", default="47130")
p.add_argument("--steps", type=int, default=16)
p.add_argument("--out", default="out/t5")
a = p.parse_args()

def main(local_rank=0, world=1):
    if world > 1:
        os.environ.update(RANK=str(local_rank), LOCAL_RANK=str(local_rank), WORLD_SIZE=str(world),
                          LOCAL_WORLD_SIZE=str(world), MASTER_ADDR="127.0.0.1", MASTER_PORT=a.port)
    from jlcommon import make_tokenizer, sentences
    import torch, datasets
    from transformers import (T5Config, T5ForConditionalGeneration, Seq2SeqTrainer, Seq2SeqTrainingArguments,
                              DataCollatorForSeq2Seq, DataCollatorWithPadding)
    tok = make_tokenizer()
    torch.manual_seed(0)
    cfg = T5Config(vocab_size=len(tok), d_model=64, d_kv=16, d_ff=128, num_layers=2, num_decoder_layers=2,
                   num_heads=4, pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id,
                   decoder_start_token_id=tok.pad_token_id)
    model = T5ForConditionalGeneration(cfg)
    src = sentences(160, seed=20)
    ds = datasets.Dataset.from_dict({"src": src, "tgt": [" ".join(s.split()[::-1]) for s in src]})
    def prep(b):
        enc = tok(b["src"], truncation=True, max_length=24)
        enc["labels"] = tok(b["tgt"], truncation=True, max_length=24)["input_ids"]
        return enc
    ds = ds.map(prep, batched=True, remove_columns=["src", "tgt"])
    train, ev = ds.select(range(128)), ds.select(range(128, 160))
    coll = DataCollatorWithPadding(tok) if a.fault == "plain-collator" else DataCollatorForSeq2Seq(tok, model=model)
    args = Seq2SeqTrainingArguments(output_dir=a.out, per_device_train_batch_size=8, per_device_eval_batch_size=8,
                                    max_steps=a.steps, learning_rate=2e-3, logging_steps=4, eval_strategy="steps",
                                    eval_steps=8, predict_with_generate=True, generation_max_length=16,
                                    save_strategy="no", report_to="none", use_cpu=True, ddp_timeout=60)
    tr = Seq2SeqTrainer(model=model, args=args, train_dataset=train, eval_dataset=ev, data_collator=coll,
                        processing_class=tok)
    tr.train()
    print(f"[rank{local_rank}] final eval:", tr.evaluate(), flush=True)

if __name__ == "__main__":
    if a.spawn > 1:
        import torch.multiprocessing as mp
        mp.spawn(main, args=(a.spawn,), nprocs=a.spawn, join=True)
    else:
        main()
