import json
cmds = dict(l.rstrip("\n").split("\t", 1) for l in open("cmds.tsv"))
cmds["r132id-sklearn-loky-tracker-relaunch"] = "./kill_loky.sh  (script content preserved as scenarios/kill_loky_tracker.sh)"
C = [
("r132id-flax-dense-shape","jax_flax",["shape-mismatch"],None,["jax","flax","optax"],
 "Induced: at step 23 the batch is sliced to 12 of the 16 features the Flax MLP was initialised with. Log: `flax.errors.ScopeParamShapeError: For parameter \"kernel\" in \"/Dense_0\", the given initializer is expected to generate shape (12, 64), but the existing parameter it received has shape (16, 64).`","easy"),
("r132id-jax-debug-nans-log","jax_flax",["loss-nan"],None,["jax","flax","optax"],
 "Induced: loss uses jnp.log(pred) on predictions that go negative; run with JAX_DEBUG_NANS=True and timestamped logging. Log: `Invalid nan value encountered in the output of a jax.jit function` then `FloatingPointError: invalid value (nan) encountered in log`.","medium"),
("r132id-jax-tpu-probe-healthy","jax_flax",["none"],None,["jax","flax","optax"],
 "Healthy: 60 steps on CPU, loss falls, `training finished`. Alarming-looking noise: `Unable to initialize backend 'tpu': INTERNAL: Failed to open libtpu.so: libtpu.so: cannot open shared object file` (JAX probing for a TPU).","medium"),
("r132id-jax-rank1-alloc-coord","jax_flax",["cpu-allocator-oom"],1,["jax","flax","optax","pytorch"],
 "Induced: 2 JAX processes (jax.distributed, launched by torchrun --tee 3); rank 1 sets RLIMIT_AS to current+1.5 GB and grows an unbounded in-memory cache. Log: `[default1]:numpy._core._exceptions._ArrayMemoryError: Unable to allocate 64.0 MiB for an array with shape (64, 1024, 1024)`; afterwards both tasks abort with `Terminating process because the JAX distributed service detected fatal errors` (Shutdown barrier, collateral) and torchrun reports SIGABRT.","hard"),
("r132id-keras-onehot-target","keras3",["loss-target-mismatch"],None,["keras","jax"],
 "Induced: model compiled with categorical_crossentropy while labels are integer class ids (should be sparse_categorical_crossentropy). Log: `ValueError: Arguments `target` and `output` must have the same shape. Received: target.shape=(64,), output.shape=(64, 3)`.","easy"),
("r132id-keras-terminate-on-nan","keras3",["loss-nan"],None,["keras","pytorch"],
 "Induced: one feature value is inf (division by zero in the feature pipeline); Keras torch backend with TerminateOnNaN. Process exits 0, log shows `Batch 16: Invalid loss, terminating training` and `loss: nan - ... val_loss: nan`.","medium"),
("r132id-keras-csvlogger-readonly","keras3",["permission-denied"],None,["keras","pytorch"],
 "Induced: output dir /tmp/rr132id_ro is root-owned mode 555 and the process runs without CAP_DAC_OVERRIDE (setpriv). CSVLogger opens its file at train start. Log: `PermissionError: [Errno 13] Permission denied: '/tmp/rr132id_ro/history.csv'`.","easy"),
("r132id-sklearn-input-nan-merge","sklearn_jobs",["other:input-contains-nan"],None,["scikit-learn","pandas"],
 "Induced: a left join against a lookup table missing 200 keys leaves NaN in a feature column; cross_val_score(error_score='raise') on a StandardScaler+LogisticRegression pipeline. Log: `ValueError: Input X contains NaN. LogisticRegression does not accept missing values encoded as NaN natively.`","easy"),
("r132id-sklearn-l1-lbfgs","sklearn_jobs",["other:invalid-estimator-hyperparameters"],None,["scikit-learn"],
 "Induced: LogisticRegression(penalty='l1', solver='lbfgs'), an incompatible solver/penalty combination. Log: `ValueError: Solver lbfgs supports only 'l2' or None penalties, got l1 penalty.`","easy"),
("r132id-sklearn-convergence-healthy","sklearn_jobs",["none"],None,["scikit-learn"],
 "Healthy: 4-fold CV of unscaled polynomial features with max_iter=30 finishes (`cv accuracy 0.8770`, `done`, exit 0) but prints repeated `ConvergenceWarning: lbfgs failed to converge after 30 iteration(s)`.","easy"),
("r132id-sklearn-loky-tracker-relaunch","kill_loky_tracker",["none"],None,["scikit-learn","joblib"],
 "Intended a loky worker kill, but the SIGKILL hit joblib/loky's resource_tracker. The GridSearchCV (n_jobs=2, 27 fits) finishes normally (`best {'max_depth': None, 'n_estimators': 200} 0.9137`, `done`, exit 0); alarming noise: `UserWarning: resource_tracker: process died unexpectedly, relaunching.  Some resources might leak.` and several tracebacks `KeyError: '/loky-...'` at exit.","hard"),
("r132id-xgb-cuda-fallback-healthy","gbdt_jobs",["none"],None,["xgboost"],
 "Healthy: a GPU config (device='cuda') run on this CPU machine; XGBoost falls back and trains 60 rounds (`done`). Alarming noise: `WARNING: ... No visible GPU is found, setting device to CPU.` and `Device is changed from GPU to CPU as we couldn't find any available GPU on the system.`","medium"),
("r132id-xgb-logistic-label-range","gbdt_jobs",["loss-target-mismatch"],None,["xgboost"],
 "Induced: labels relabelled to 3 grades (0,1,2) while the objective stays binary:logistic. Log: `xgboost.core.XGBoostError: ... label must be in (0, 1) for logistic regression`.","medium"),
("r132id-catboost-float-catfeature","gbdt_jobs",["other:categorical-feature-float-values"],None,["catboost","pandas"],
 "Induced: a float column (f3) listed in cat_features (schema drift). Log: `_catboost.CatBoostError: Invalid type for cat_feature[non-default value idx=0,feature_idx=3]=-1.306... : cat_features must be integer or string, real number values and NaN values should be converted to string.`","easy"),
("r132id-catboost-train-dir-readonly","gbdt_jobs",["permission-denied"],None,["catboost"],
 "Induced: train_dir under /tmp/rr132id_ro (root-owned, mode 555), process without CAP_DAC_OVERRIDE (setpriv). Log: `_catboost.CatBoostError: catboost/libs/train_lib/dir_helper.cpp:20: Can't create train working dir: /tmp/rr132id_ro/catboost_info` (errno not shown).","hard"),
("r132id-lgb-no-split-warnings-healthy","gbdt_jobs",["none"],None,["lightgbm"],
 "Healthy: 80 boosting rounds on a 300-row pilot sample with min_data_in_leaf=40; finishes (`done, trees: 80`). Alarming noise: 80 lines `[LightGBM] [Warning] No further splits with positive gain, best gain: -inf`.","medium"),
("r132id-lgb-missing-bin-cache","gbdt_jobs",["file-not-found"],None,["lightgbm"],
 "Induced: lgb.Dataset points at a cached binary dataset that does not exist. Log: `lightgbm.basic.LightGBMError: Cannot open data file /tmp/rr132id_cache/train_v3.bin`.","easy"),
("r132id-sb3-subproc-no-main-guard","sb3_noguard",["spawn-without-main-guard"],None,["stable-baselines3","gymnasium","pytorch"],
 "Induced: script builds SubprocVecEnv(start_method='spawn') at module top level without `if __name__ == \"__main__\":`. Log: children print `RuntimeError: ... An attempt has been made to start a new process before the current process has finished its bootstrapping phase.`, parent then `ConnectionResetError: [Errno 104] Connection reset by peer`.","medium"),
("r132id-sb3-ppo-reward-nan","sb3_jobs",["loss-nan"],None,["stable-baselines3","gymnasium","pytorch"],
 "Induced: reward shaping multiplies by exp(t), which overflows float32; PPO's advantages and then the policy become NaN. Log: `RuntimeWarning: overflow encountered in cast`, `invalid value encountered in multiply`, then `ValueError: Expected parameter loc (Tensor of shape (64, 1)) of distribution Normal(...) to satisfy the constraint Real(), but found invalid values: tensor([[nan], ...`.","medium"),
("r132id-ray-train-rank1-shape","ray_jobs",["shape-mismatch"],1,["ray","pytorch"],
 "Induced: Ray Train TorchTrainer, 2 workers (gloo, DDP); at epoch 2 rank 1's shard gets an extra column. Log: `(RayTrainWorker pid=...) RuntimeError: mat1 and mat2 shapes cannot be multiplied (32x17 and 16x32)`, `ray.train.WorkerGroupError: Training failed due to worker errors: [Rank 1 Error Snippet]`.","medium"),
("r132id-ray-tune-trial-keyerror","ray_jobs",["user-code-exception"],None,["ray"],
 "Induced: trainable reads config['weight_decay'] only on the lr>0.05 branch, a key not in the search space. Log: `ERROR tune_controller.py:1336 -- Trial task failed for trial tune_fn_..._00002`, `KeyError: 'weight_decay'`, `Trials did not complete`; the driver still exits 0 and prints the best config.","medium"),
("r132id-keras-spawn-missing-shard","keras_dist",["file-not-found"],1,["keras","pytorch"],
 "Induced: torch.multiprocessing.spawn, 2 gloo ranks training Keras (torch backend) on per-rank shards; rank 1's shard file is missing. Log: `-- Process 1 terminated with the following error:` ... `FileNotFoundError: [Errno 2] No such file or directory: '/tmp/rr132id_shards/shard-00001.npz'`; spawn SIGTERMs rank 0.","easy"),
("r132id-keras-torchrun-wide-shard","keras_dist",["shape-mismatch"],1,["keras","pytorch"],
 "Induced: torchrun --log-dir/--redirects 3, 2 gloo ranks; rank 1's shard was exported with 22 instead of 20 columns. Folder (attempt_0/1/stderr.log): `ValueError: Exception encountered when calling Sequential.call(). Input 0 ... of layer 'dense' is incompatible with the layer: expected axis -1 of input shape to have value 20, but received input with shape (64, 22)`; rank 0 then fails in all_reduce with `Connection closed by peer` (collateral).","medium"),
("r132id-jax-coordinator-port-busy","jax_flax",["rendezvous-port-in-use"],0,["jax","flax","pytorch"],
 "Induced: a stale process (scenarios/hold_port.py) listens on the JAX coordinator port 46331; 2 JAX processes launched by python -m torch.distributed.run. Log: `add_port.cc:83] Failed to add port to server: No address added out of total 1 resolved for '[::]:46331'` then `jax.errors.JaxRuntimeError: UNKNOWN: Failed to start RPC server` on rank 0 (which hosts the coordinator).","hard"),
("r132id-jax-pairwise-kernel-oom","jax_flax",["jax-resource-exhausted"],None,["jax","flax","optax"],
 "Induced: at step 12 the script builds a full pairwise RBF kernel over a 400x-tiled dataset (204800 x 204800 x 16 float32 intermediate), under prlimit --as=8 GB. Log: `jax.errors.JaxRuntimeError: INTERNAL: Error dispatching computation: ... Out of memory allocating 2684354560000 bytes.` (XLA CPU device allocation).","medium"),
("r132id-keras-torchrun-rank2-sigkill","keras_dist",["worker-killed-by-signal"],2,["keras","pytorch"],
 "Induced: 3 gloo ranks under torchrun (TORCH_DISTRIBUTED_DEBUG=INFO) training Keras on shards; after 25 s the rank whose RANK=2 is sent SIGKILL from outside (found by its environ and cwd). Log: rank 1 `RuntimeError: ... Read error ... Connection reset by peer` (collateral), then `failed (exitcode: -9) local_rank: 2` and Root Cause `rank : 2 ... exitcode : -9 (pid: ...)  (SIGKILL)`.","medium"),
]
scripts = {"kill_loky_tracker": "kill_loky_tracker.sh + scenarios/sklearn_jobs.py", "sb3_noguard": "sb3_noguard.py + scenarios/sb3_jobs.py",
           "jax_flax_port": "jax_port_busy.sh"}
import os
kb = {x["id"] for x in json.load(open("/tmp/kbids.json"))}
with open("cases.jsonl", "w") as f:
    for cid, scr, labels, ir, fw, ev, diff in C:
        folder = os.path.isdir(cid + ".d")
        fn = cid + (".d/" if folder else ".log")
        assert os.path.exists(fn), fn
        for l in labels: assert l in kb or l == "none" or l.startswith("other:"), l
        s = scripts.get(scr, scr + ".py")
        if cid == "r132id-keras-torchrun-rank2-sigkill": s = "kill_rank.sh + scenarios/keras_dist.py"
        if cid == "r132id-jax-coordinator-port-busy": s = "jax_port_busy.sh + scenarios/hold_port.py + scenarios/jax_flax.py"
        if cid == "r132id-sklearn-loky-tracker-relaunch": s = "kill_loky_tracker.sh + scenarios/sklearn_jobs.py"
        f.write(json.dumps({"id": cid, "file": fn, "source": f"realrun: {cmds[cid]}  [scenarios/{s}, torch 2.13.0+cpu, gloo]",
                            "labels": labels, "initiating_rank": ir, "frameworks": fw, "evidence": ev, "difficulty": diff}) + "\n")
print(len(C))
