import json, os, subprocess, shutil, glob
os.chdir("/work/rr121/gz")
TR = "/work/rrvenv/bin/torchrun"
PY = "/work/rrvenv/bin/python"
SFX = "torch 2.13.0+cpu, gloo"
cases = []

def add(cid, raw, slice_cmd, cmd, script, labels, rank, fw, evidence, diff):
    out = f"{cid}.log"
    if raw is not None:
        full = f"raw/{raw}.full.log"
        res = subprocess.run(f"{slice_cmd} {full}", shell=True, capture_output=True, check=True)
        open(out, "wb").write(res.stdout)
        slice_desc = f"{slice_cmd} raw/{raw}.full.log"
    cases.append({"id": cid, "file": out, "source": f"realrun: {cmd}  [scenarios/{script}, {SFX}]",
                  "labels": labels, "initiating_rank": rank, "frameworks": fw,
                  "evidence": evidence + (f" Slice kept: `{slice_desc}` (contiguous lines of the real merged console log)." if raw else ""),
                  "difficulty": diff})

add("r121gz-shape-prefixed", "shape", "sed -n 5,61p",
    f"timeout 180 {TR} --nproc-per-node 2 --master-port 45601 --tee 3 scenarios/ddp_mlp.py --fault shape --fault-rank 1 --fault-step 7 --steps 30 2>&1 | awk '{{ printf \"%s gz-node07 %s\\n\", strftime(\"%Y-%m-%dT%H:%M:%SZ\", systime(), 1), $0; fflush() }}'",
    "ddp_mlp.py", ["shape-mismatch"], 1, ["pytorch"],
    "Induced: at step 7 only rank 1 goes through a curriculum code path that appends an extra position-feature column to the batch, so fc1 (in_features 24) gets 25 features. Lines carry a stacked prefix (timestamp + host + [defaultN]:[rankN]:). Log shows `[rank1]: RuntimeError: mat1 and mat2 shapes cannot be multiplied (16x25 and 24x64)`; rank 0 then dies of collateral `Connection closed by peer` and is SIGTERMed by the agent.",
    "medium")
add("r121gz-dtype-rank0-tb", "dtype", "sed -n 5,47p",
    f"timeout 180 {PY} -m torch.distributed.run --nproc-per-node 2 --master-port 45602 scenarios/ddp_mlp.py --fault dtype --fault-rank 0 --fault-step 9 --use-logging",
    "ddp_mlp.py", ["dtype-mismatch"], 0, ["pytorch"],
    "Induced: on rank 0 at step 9 the batch is re-weighted in numpy (float64) and converted back with torch.from_numpy, so a Double tensor reaches a Float Linear layer. Paste keeps the logging lines and only rank 0's traceback, ending at `[rank0]: RuntimeError: mat1 and mat2 must have the same dtype, but got Double and Float` (rank 1's collateral gloo error and the launcher report are cut off).",
    "easy")
add("r121gz-ddp-model-mismatch-tail", "modelmm", "tail -n 60",
    f"timeout 180 {TR} --nproc-per-node 2 --master-port 45603 scenarios/ddp_mlp.py --fault model_mismatch --fault-rank 1",
    "ddp_mlp.py", ["ddp-model-mismatch"], 1, ["pytorch"],
    "Induced: rank 1 builds the model from a stale config with hidden=96 instead of 64, then wraps it in DDP. The paste starts in the middle of rank 1's traceback and shows `[rank1]: RuntimeError: [1]: params[1] in this process with sizes [96, 24] appears not to match sizes of the same param in process 0.`, followed by rank 0's collateral `Connection closed by peer` and the torchrun ChildFailedError report (root cause rank 1).",
    "medium")
add("r121gz-collective-fingerprint", "coll", "tail -n 45",
    f"TORCH_DISTRIBUTED_DEBUG=DETAIL timeout 180 {TR} --nproc-per-node 2 --master-port 45605 scenarios/ddp_mlp.py --manual-allreduce --fault collective --fault-rank 1 --fault-step 12 --pg-timeout 15",
    "ddp_mlp.py", ["collective-mismatch"], 1, ["pytorch"],
    "Induced: manual gradient all-reduce (no DDP wrapper) with rank-local metric logging: from step 12 rank 1 appends its grad-norm to the metrics tensor, so it all-reduces a [3] tensor while rank 0 all-reduces [2]. With TORCH_DISTRIBUTED_DEBUG=DETAIL the paste (tail, starting mid rank-1 traceback) shows `[rank1]: RuntimeError: Detected mismatch between collectives on ranks. Rank 1 is running collective: CollectiveFingerPrint(SequenceNumber=102, OpType=ALLREDUCE, TensorShape=[3], ...`.",
    "medium")
add("r121gz-ddp-unused-info", "unused", "sed -n 1,57p",
    f"TORCH_DISTRIBUTED_DEBUG=INFO timeout 180 {TR} --nproc-per-node 2 --master-port 45606 scenarios/ddp_mlp.py --fault unused --fault-rank -1 --fault-step 8",
    "ddp_mlp.py", ["ddp-unused-parameters"], None, ["pytorch"],
    "Induced: the model has an auxiliary head that stops being used in the loss from step 8 on (all ranks), with DDP find_unused_parameters=False. Both ranks fail on the next forward: `RuntimeError: Expected to have finished reduction in the prior iteration before starting a new one.` and `Parameters which did not receive grad for rank 1: aux.bias, aux.weight`. Paste is the console up to the end of both worker tracebacks (launcher report cut).",
    "easy")
# .d case
src = glob.glob("work/logs_fifo/*/attempt_0")[0]
dst = "r121gz-gloo-recv-timeout.d"
if os.path.exists(dst): shutil.rmtree(dst)
shutil.copytree(os.path.dirname(src), dst)
cases.append({"id": "r121gz-gloo-recv-timeout", "file": dst + "/",
    "source": f"realrun: timeout 180 {TR} --nproc-per-node 2 --master-port 45607 --log-dir work/logs_fifo --redirects 3 --tee 3 scenarios/ddp_mlp.py --manual-allreduce --fault fifo --fault-rank 1 --fault-step 6 --use-logging --pg-timeout 30  [scenarios/ddp_mlp.py, {SFX}]",
    "labels": ["gloo-collective-timeout"], "initiating_rank": 1, "frameworks": ["pytorch"],
    "evidence": "Induced: at step 6 rank 1 blocks reading an eval shard from a named pipe (work/eval.fifo) that nobody writes, so it never joins the gradient all-reduce; rank 0 waits 30 s (process-group timeout). The per-rank log folder as torchrun wrote it (--log-dir/--redirects 3): attempt_0/1/stdout.log ends with `step 6: waiting for eval shard from stream`, attempt_0/0/stderr.log shows `[rank0]: RuntimeError: [.../gloo/transport/tcp/unbound_buffer.cc:78] Timed out waiting 30000ms for recv operation to complete`. Rank 1 was then SIGTERMed by the agent (not in the folder).",
    "difficulty": "hard"})
add("r121gz-monitored-barrier-3ranks", "mbar", "sed -n 9,41p",
    f"timeout 180 {TR} --nproc-per-node 3 --master-port 45609 --tee 3 scenarios/ddp_mlp.py --fault fifo_eval --fault-rank 2 --fault-step 10 --pg-timeout 60",
    "ddp_mlp.py", ["monitored-barrier-timeout"], 2, ["pytorch"],
    "Induced: 3 ranks; at step 10 rank 2 blocks reading an eval shard from a named pipe before the eval sync, ranks 0/1 enter dist.monitored_barrier(timeout=10s). Log shows `[default2]:step 10: reading eval shard from stream` and `[default0]:[rank0]: RuntimeError: [Rank 0]: Rank 2 failed to pass monitoredBarrier in 10000 ms`; rank 1's `successfully reached monitoredBarrier, but received errors ... from rank 0` is collateral.",
    "medium")
add("r121gz-segv-launcher-tail", "segv", "tail -n 40",
    f"timeout 180 {TR} --nproc-per-node 2 --master-port 45608 scenarios/ddp_mlp.py --fault segv --fault-rank 1 --fault-step 11",
    "ddp_mlp.py", ["worker-killed-by-signal"], 1, ["pytorch"],
    "Induced: at step 11 rank 1 calls a 'zero-copy' ctypes.string_at on a stale staging-buffer address, which segfaults the worker (no Python traceback). Paste is the last 40 lines: agent SIGTERMs rank 0, `failed (exitcode: -11) local_rank: 1`, and the Root Cause block `rank : 1 (local_rank: 1)` `exitcode : -11` `traceback : Signal 11 (SIGSEGV) received by PID 9237`.",
    "medium")
add("r121gz-cpu-alloc-ulimit", "alloc", "sed -n 8,33p",
    f"(ulimit -v 8000000; timeout 180 {TR} --nproc-per-node 2 --master-port 45610 scenarios/ddp_mlp.py --fault alloc --fault-rank 1 --fault-step 14 --use-logging > raw/alloc.full.log 2>&1)",
    "ddp_mlp.py", ["cpu-allocator-oom"], 1, ["pytorch"],
    "Induced: address-space limit (ulimit -v 8 GB) for the job; at step 14 rank 1 sizes an activation-stats buffer from the dataset length instead of the batch (torch.zeros of ~2 TB). Log shows `[rank1]: RuntimeError: [enforce fail at alloc_cpu.cpp:127] err == 0. DefaultCPUAllocator: can't allocate memory: you tried to allocate 2199023255552 bytes. Error code 12 (Cannot allocate memory)`; rank 0's `Connection closed by peer` is collateral.",
    "easy")
add("r121gz-launcher-sigterm", "sigterm", "tail -n 45",
    f"timeout -k 30 -s TERM 14 {TR} --nproc-per-node 2 --master-port 45613 scenarios/ddp_mlp.py --steps 2000 --epochs 20 --use-logging",
    "ddp_mlp.py", ["launcher-signal-received"], None, ["pytorch"],
    "Induced: healthy training; after 14 s the torchrun process itself receives SIGTERM (coreutils timeout, as a scheduler kill would). Log shows steady step lines, then `Received 15 death signal, shutting down workers` and `torch.distributed.elastic.multiprocessing.api.SignalException: Process 11367 got signal: 15`.",
    "medium")
add("r121gz-ctrlc-tqdm", "ctrlc", "tail -n 8",
    f"timeout -k 20 -s INT 9 {PY} scenarios/ddp_mlp.py --progress --steps 3000 --epochs 30",
    "ddp_mlp.py", ["user-interrupt"], None, ["pytorch", "tqdm"],
    "Induced: single-process run with a tqdm bar, interrupted with SIGINT (Ctrl-C) after 9 s during steady progress. Log shows tqdm carriage-return updates then `KeyboardInterrupt` raised from `time.sleep(args.sleep)` in the training loop.",
    "easy")
add("r121gz-perm-ckpt-rank0-tb", "perm", "sed -n 12,20p",
    f"timeout 180 setpriv --bounding-set=-dac_override,-dac_read_search {TR} --nproc-per-node 2 --master-port 45614 --tee 3 scenarios/ddp_mlp.py --ckpt-dir work/ro_ckpt --save-every 10 --steps 30",
    "ddp_mlp.py", ["permission-denied"], 0, ["pytorch"],
    "Induced: checkpoint directory chmod 555 and root's DAC override dropped with setpriv; rank 0 tries to write its step-10 checkpoint. Paste is only rank 0's traceback (tee prefix kept): `[default0]:[rank0]: PermissionError: [Errno 13] Permission denied: 'work/ro_ckpt/step_00010.pt.tmp'`.",
    "easy")
add("r121gz-enospc-ckpt", "diskfull", "tail -n 62",
    f"mount -t tmpfs -o size=1m tmpfs work/scratch_ckpt && CKPT_PAD=120000 timeout 180 {TR} --nproc-per-node 2 --master-port 45615 scenarios/ddp_mlp.py --ckpt-dir work/scratch_ckpt --save-every 10 --steps 40 --use-logging > raw/diskfull.full.log 2>&1; umount work/scratch_ckpt",
    "ddp_mlp.py", ["disk-full"], 0, ["pytorch"],
    "Induced: checkpoints go to a 1 MB tmpfs; the first checkpoint (550 KB) fits, the second does not. Rank 0 writes through a Python file object and gets `[rank0]: OSError: [Errno 28] No space left on device` (after `saved checkpoint work/scratch_ckpt/step_00010.pt`); rank 1's gloo `Connection closed by peer` is collateral, launcher report follows.",
    "easy")
add("r121gz-spawn-sd-mismatch", "sdmm", "tail -n 30",
    f"timeout 180 {PY} scenarios/ddp_mlp.py --spawn 2 --hidden 96 --resume-from work/ckpt_good/step_00020.pt",
    "ddp_mlp.py", ["state-dict-mismatch"], None, ["pytorch"],
    "Induced: torch.multiprocessing.spawn run resumed with hidden=96 from a checkpoint trained with hidden=64 (both ranks load it). Log shows `-- Process 0 terminated with the following error:` and `RuntimeError: Error(s) in loading state_dict for Net: size mismatch for fc1.weight: copying a param with shape torch.Size([64, 24]) from checkpoint, the shape in current model is torch.Size([96, 24]).`",
    "easy")
add("r121gz-weights-only-namespace", "wonly", "sed -n 3,17p",
    f"timeout 180 {PY} scenarios/ddp_mlp.py --resume-from work/ckpt_args/step_00020.pt --progress",
    "ddp_mlp.py", ["torch-load-weights-only"], None, ["pytorch"],
    "Induced: the checkpoint was saved with the argparse Namespace inside (`--save-args`); resuming with torch.load's default weights_only=True. Log shows `_pickle.UnpicklingError: Weights only load failed.` and `WeightsUnpickler error: Unsupported global: GLOBAL argparse.Namespace was not an allowed global by default`.",
    "easy")
add("r121gz-optim-groups-prefixed", "optmm", "sed -n 9,41p",
    f"timeout 180 {TR} --nproc-per-node 2 --master-port 45618 --tee 3 scenarios/ddp_mlp.py --resume-from work/ckpt_good/step_00020.pt --resume-optimizer --wd-groups 2>&1 | awk '{{ printf \"%s trn-a100-03 %s\\n\", strftime(\"[%b %d %H:%M:%S]\", systime(), 1), $0; fflush() }}'",
    "ddp_mlp.py", ["optimizer-state-mismatch"], None, ["pytorch"],
    "Induced: checkpoint saved with a single AdamW param group; the resumed run splits parameters into decay/no-decay groups and restores the optimizer state on both ranks. Stacked prefix (time + host + [defaultN]:[rankN]:). Log shows `[rank0]: ValueError: loaded state dict has a different number of parameter groups` (same on rank 1) from `opt.load_state_dict(sd[\"optimizer\"])`.",
    "medium")
add("r121gz-backward-twice-midtb", "bwd2", "sed -n 7,17p",
    f"timeout 180 {PY} scenarios/ddp_mlp.py --fault backward_twice --fault-rank 0 --fault-step 6",
    "ddp_mlp.py", ["backward-twice"], None, ["pytorch"],
    "Induced: from step 6 the loop calls loss.backward() and then (loss + reg).backward() on the same graph without retain_graph. The paste starts in the middle of the traceback (`    main()`) and ends with `RuntimeError: Trying to backward through the graph a second time (or directly access saved tensors after they have already been freed).`",
    "easy")
add("r121gz-collate-varlen-midtb", "collate", "sed -n 28,86p",
    f"timeout 180 {TR} --nproc-per-node 2 --master-port 45620 --log-dir work/logs_collate --redirects 3 --tee 3 scenarios/data_pipe.py --data-dir work/data/varlen",
    "data_pipe.py", ["collate-size-mismatch"], None, ["pytorch"],
    "Induced: token shards of variable length (20-47) fed to a DataLoader with the default collate and no padding. Paste starts mid rank-1 worker traceback and shows on both ranks `RuntimeError: Caught RuntimeError in DataLoader worker process 0.` with `RuntimeError: stack expects each tensor to be equal size, but got [25] at entry 0 and [30] at entry 1`.",
    "medium")
add("r121gz-corrupt-npy-shard", "corrupt", "sed -n 8,61p",
    f"timeout 180 {TR} --nproc-per-node 2 --master-port 45622 scenarios/data_pipe.py --data-dir work/data/corrupt --bs 4",
    "data_pipe.py", ["corrupt-data-sample"], 1, ["pytorch", "numpy"],
    "Induced: one of 240 .npy token shards (shard_00137.npy) truncated to 150 bytes, as by an interrupted copy; the rank that samples it fails in a DataLoader worker. Log shows `[rank1]: ValueError: Caught ValueError in DataLoader worker process 1.` and `[rank1]: ValueError: Failed to read all data for array. Expected (32,) = 32 elements, could only read 2 elements. (file seems not fully written?)`; rank 0's `Connection closed by peer` is collateral.",
    "medium")
add("r121gz-hf-nopad-tail", "hf_nopad", "tail -n 28",
    f"timeout 180 {PY} scenarios/hf_lm.py --case nopad --out work/hf_nopad",
    "hf_lm.py", ["tokenizer-padding-missing"], None, ["pytorch", "transformers", "datasets"],
    "Induced: locally built word-level tokenizer without a pad token, tokenised with padding='max_length' in datasets.map. Log shows `ValueError: Asking to pad but the tokenizer does not have a padding token. Please select a token to use as `pad_token``.",
    "easy")
add("r121gz-port-in-use", "portinuse", "cat",
    "timeout 60 python3 -c \"import socket,time; s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(('0.0.0.0',45627)); s.listen(); time.sleep(50)\" & LPID=$!; sleep 1; timeout 180 " + TR + " --nproc-per-node 2 --master-port 45627 scenarios/ddp_mlp.py --steps 20 > raw/portinuse.full.log 2>&1; kill $LPID",
    "ddp_mlp.py", ["rendezvous-port-in-use"], None, ["pytorch"],
    "Induced: another process already listens on the master port 45627 when torchrun starts. Whole console: `torch.distributed.DistNetworkError: The server socket has failed to listen on any local network address. port: 45627, useIpv6: false, code: -98, name: EADDRINUSE, message: address already in use`.",
    "easy")
add("r121gz-inplace-spawn", "inplace", "tail -n 30",
    f"timeout 180 {PY} scenarios/ddp_mlp.py --spawn 2 --fault inplace --fault-rank -1 --use-logging",
    "ddp_mlp.py", ["inplace-modification"], None, ["pytorch"],
    "Induced: the model normalises the sigmoid output in place (h -= h.mean(...)), which sigmoid's backward needs. torch.multiprocessing.spawn run; log shows `-- Process 0 terminated with the following error:` and `RuntimeError: one of the variables needed for gradient computation has been modified by an inplace operation: [torch.FloatTensor [16, 64]], which is output 0 of Sigmoid, is at version 1; expected version 0 instead.`",
    "easy")
# other
add("r121gz-sparse-grad-clip", "sparse", "sed -n 9,40p",
    f"timeout 180 {TR} --nproc-per-node 2 --master-port 45611 scenarios/ddp_mlp.py --fault sparse_adam --fault-step 99",
    "ddp_mlp.py", ["other:sparse-grad-unsupported-op"], None, ["pytorch"],
    "Induced: the categorical embedding is created with sparse=True, so its gradient is a sparse tensor; clip_grad_norm_ then calls linalg_vector_norm on it. Paste is rank 1's traceback and the start of the dispatcher's backend list: `[rank1]: NotImplementedError: Could not run 'aten::linalg_vector_norm' with arguments from the 'SparseCPU' backend.` (rank 0 fails the same way). No KB class covers a sparse-gradient op gap (not a dtype or MPS kernel gap).",
    "hard")
add("r121gz-onecycle-overstep", "onecycle", "sed -n 5,45p",
    f"timeout 180 {PY} -m torch.distributed.run --nproc-per-node 2 --master-port 45612 scenarios/ddp_mlp.py --sched onecycle --steps 40 --use-logging",
    "ddp_mlp.py", ["other:lr-scheduler-total-steps-exceeded"], None, ["pytorch"],
    "Induced: OneCycleLR built with total_steps=40 but the loop's stop check is off by one (`step > args.steps`), so sched.step() is called a 41st time on every rank. Log shows step 40/40 then `ValueError: Tried to step 41 times. The specified number of total steps is 40` on rank 1 and rank 0.",
    "medium")
add("r121gz-efbig-ckpt", "fsize", "sed -n 5,34p",
    f"(ulimit -f 1024; CKPT_PAD=400000 timeout 180 {PY} -m torch.distributed.run --nproc-per-node 2 --master-port 45616 scenarios/ddp_mlp.py --ckpt-dir work/ckpt_fsize --save-every 10 --steps 30 > raw/fsize.full.log 2>&1)",
    "ddp_mlp.py", ["other:file-size-limit-exceeded"], 0, ["pytorch"],
    "Induced: per-process file-size limit (ulimit -f 1024 = 1 MiB) while the step-10 checkpoint is ~1.6 MB; rank 0 writes it through a Python file object. Log shows `[rank0]: OSError: [Errno 27] File too large` (EFBIG from RLIMIT_FSIZE: not a full disk, not a quota); rank 1's `Connection closed by peer` is collateral.",
    "hard")
# none
add("r121gz-healthy-find-unused", "healthy_ddp", "cat",
    f"timeout 180 {TR} --nproc-per-node 2 --master-port 45619 scenarios/ddp_mlp.py --find-unused --steps 40",
    "ddp_mlp.py", ["none"], None, ["pytorch"],
    "Healthy: DDP with find_unused_parameters=True on a model that uses all parameters; both ranks print `[W... reducer.cpp:1529] Warning: find_unused_parameters=True was specified in DDP constructor, but did not find any unused parameters` plus the OMP_NUM_THREADS banner, then train to `training finished: 40 steps`.",
    "easy")
add("r121gz-healthy-spawn-sched-warn", "healthy_spawn", "cat",
    f"timeout 180 {PY} scenarios/ddp_mlp.py --spawn 2 --fault none_sched_order --use-logging --steps 30",
    "ddp_mlp.py", ["none"], None, ["pytorch"],
    "Healthy: torch.multiprocessing.spawn run that steps the LR scheduler once before the first optimizer step; both ranks print `UserWarning: Detected call of `lr_scheduler.step()` before `optimizer.step()`` and the run finishes normally (`training finished: 30 steps`).",
    "easy")
add("r121gz-healthy-hf-trainer-ddp", "hf_ok_ddp", "tail -n 45",
    f"timeout 300 {TR} --nproc-per-node 2 --master-port 45624 scenarios/hf_lm.py --case ok --out work/hf_ok2 --max-steps 30",
    "hf_lm.py", ["none"], None, ["pytorch", "transformers", "datasets"],
    "Healthy: HF Trainer fine-tune of a tiny GPT-2 under torchrun (2 gloo ranks). Log has alarming-looking lines: `Warning: find_unused_parameters=True was specified in DDP constructor, but did not find any unused parameters`, `The tokenizer has new PAD/BOS/EOS tokens that differ from the model config`, `loss_type=None was set in the config but it is unrecognized`, `mtime may not be reliable on this filesystem`, yet it ends with TrainOutput(global_step=30, ...) and eval metrics.",
    "medium")
add("r121gz-healthy-lightning-ddp", "pl_ddp", "cat",
    f"timeout 300 {TR} --nproc-per-node 2 --master-port 45626 scenarios/pl_cls.py --devices 2 --root work/pl_runs2",
    "pl_cls.py", ["none"], None, ["pytorch", "lightning"],
    "Healthy: Lightning Trainer with strategy='ddp' on CPU under torchrun (gloo). Log shows `GPU available: False, used: False`, deprecation warning about LeafSpec, `It is recommended to use self.log('val_loss', ..., sync_dist=True)`, then `Trainer.fit stopped: max_epochs=3 reached.` and the checkpoint path.",
    "easy")

with open("cases.jsonl", "w") as f:
    for c in cases:
        f.write(json.dumps(c, ensure_ascii=False) + "\n")
print(len(cases))
