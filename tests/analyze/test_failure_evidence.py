"""Failure evidence without a traceback header, and healthy logs that only look alarming."""

from __future__ import annotations

from pathlib import Path

import pytest

from traintriage.pipeline import diagnose
from traintriage.report.model import Status

FAILED = {
    "old-style runtime error then terminate": [
        "RuntimeError: cuda runtime error (214) : uncorrectable ECC error encountered at /opt/conda/conda-bld/"
        "pytorch_1556653099582/work/aten/src/THC/THCCachingAllocator.cpp:510",
        "terminate called after throwing an instance of 'c10::Error'",
    ],
    "a THC error pasted without its exception class (Torch7, PyTorch 0.x)": [
        "luajit: cuda runtime error (4) : driver shutting down at /tmp/cutorch/lib/THC/generic/THCStorage.c:32",
    ],
    "onnx runtime's error status in a trainer's log line": [
        "2025-02-11 10:02:33 - ERROR - trainer - export check failed: [ONNXRuntimeError] : 1 : FAIL : "
        "Load model from encoder.onnx failed: Protobuf parsing failed.",
    ],
    "torchrun stops the other workers; the failed one was killed before it printed anything": [
        "Loading checkpoint shards:  62%|######2   | 5/8 [01:12<00:43, 14.41s/it]",
        "W1104 03:12:09.118000 90211 torch/distributed/elastic/multiprocessing/api.py:897] Sending process 90250 "
        "closing signal SIGTERM",
        "W1104 03:12:09.119000 90211 torch/distributed/elastic/multiprocessing/api.py:897] Sending process 90251 "
        "closing signal SIGTERM",
    ],
    "Spark's scheduler gives up on a stage of a training job": [
        "24/11/02 08:14:51 WARN TaskSetManager: Lost task 3.0 in stage 2.0 (TID 41, worker-7, executor 4): "
        "ExecutorLostFailure (executor 4 exited caused by one of the running tasks)",
        "24/11/02 08:14:52 ERROR TaskSetManager: Task 3 in stage 2.0 failed 4 times; aborting job",
        "24/11/02 08:14:52 INFO YarnClusterScheduler: Cancelling stage 2",
    ],
    "LightGBM's command-line program caught an exception": [
        "[LightGBM] [Info] Total Bins 4081",
        "[LightGBM] [Info] Number of data points in the train set: 120000, number of used features: 31",
        "Met Exceptions:",
        "Number of classes should be specified and greater than 1 for multiclass training",
    ],
    "the trainer printed its summary, then the process aborted on an uncaught C++ exception": [
        "{'train_runtime': 5123.4, 'train_samples_per_second': 3.1, 'train_steps_per_second': 0.4, 'train_loss': 0.82, 'epoch': 1.0}",
        "Saving model checkpoint to output/final",
        "terminate called after throwing an instance of 'c10::Error'",
        "  what():  CUDA error: an illegal memory access was encountered",
    ],
    "an old wandb.init could not start its background process": [
        "wandb: Tracking run with wandb version 0.9.7",
        "wandb: ERROR W&B process (PID 40211) did not respond",
        "wandb: ERROR W&B process failed to launch, see: wandb/debug.log",
    ],
    "a ray actor died, in a log line": [
        "(TrainController pid=812) 2025-02-11 10:02:33,101\tERROR worker.py:408 -- "
        "The actor died unexpectedly before finishing this task.",
    ],
    "wandb gives up reaching its server at init": [
        "wandb: Currently logged in as: demo-user. Use `wandb login --relogin` to force relogin",
        "wandb: \\ Waiting for wandb.init()...",
        "wandb: ERROR Run initialization has timed out after 90.0 sec. ",
    ],
    "mpich aborts in MPI_Init": [
        "MPICH ERROR [Rank 0] [job id 88123.0] [Mon Mar  3 10:12:40 2025] [x1000c0s1b0n0] - Abort(1091215) (rank 0 in "
        "comm 0): Fatal error in PMPI_Init_thread: Other MPI error, error stack:",
        "MPIR_Init_thread(170).......:",
    ],
    "open mpi's daemons cannot reach each other over tcp": [
        "------------------------------------------------------------",
        "A process or daemon was unable to complete a TCP connection",
        "to another process:",
        "  Local host:    node-a17",
        "  Remote host:   node-b03",
        "This is usually caused by a firewall on the remote host. Please",
    ],
    "open mpi's default error handler aborts in MPI_Init": [
        "*** An error occurred in MPI_Init_thread",
        "*** on a NULL communicator",
        "*** MPI_ERRORS_ARE_FATAL (processes in this communicator will now abort,",
        "***    and potentially your MPI job)",
    ],
    "libtpu's crash handler aborts the process": [
        "I0301 10:02:11.204133  91822 tpu_compile_op_common.cc:245] Compilation of program took 1.2s",
        "*** SIGABRT received by PID 91822 (TID 91822) on cpu 7 from PID 91822; stack trace: ***",
        "PC: @     0x7f31c2a9e00b  (unknown)  raise",
    ],
    "a failed large allocation reported by tcmalloc": [
        "tcmalloc: large alloc 281474976710656 bytes == (nil) @  0x7f2e1b2c4680 0x7f2e1b2e5824",
        "Unhandled exception:",
    ],
    "tf 1.x's coordinator stops the input threads on an error": [
        "INFO:tensorflow:global step 410: loss = 0.8812 (0.331 sec/step)",
        "INFO:tensorflow:Error reported to Coordinator: <class 'tensorflow.python.framework.errors_impl."
        "InvalidArgumentError'>, Input to reshape is a tensor with 0 values, but the requested shape has 4",
    ],
    "tensorflow's summary of a failed step's grouped errors, logged by an estimator without its exception line": [
        "I0917 04:12:55.120411 140311 basic_session_run_hooks.py:260] loss = 1.2731, step = 4800 (41.2 sec)",
        "E0917 04:13:31.998102 140311 error_handling.py:75] Error recorded from training_loop: From /job:worker:",
        "2 root error(s) found.",
        "  (0) Unavailable: Socket closed",
        "  (1) Unavailable: Socket closed",
        "0 successful operations.",
    ],
    "tensorflow's numbered statuses of a failed step, pasted without the summary line": [
        "  (0) Invalid argument: Computation requires more parameters (912) than supported (limit 236).",
        "\t [[{{node XRTCompile}}]]",
        "  (1) Invalid argument: Computation requires more parameters (912) than supported (limit 236).",
    ],
    "an mpi launcher's ssh cannot resolve a worker's name": [
        "+ horovodrun -np 4 -H trainer-worker-0:2,trainer-worker-1:2 python train.py",
        "ssh: Could not resolve hostname trainer-worker-1: Temporary failure in name resolution",
    ],
    "a detector's exporter reports a failed export, then exports the next format": [
        "ONNX: starting export with onnx 1.17.0 opset 19...",
        "ONNX: export failure \u274c 1.4s: Unfold with a non-static input size is not supported by this opset",
        "TorchScript: export success \u2705 2.2s, saved as best.torchscript (42.8 MB)",
    ],
    "a notebook kernel died and jupyter restarts it": [
        "May 2, 2021, 3:11:09 PM | INFO | KernelRestarter: restarting kernel (1/5), keep random ports",
        "May 2, 2021, 3:11:09 PM | WARNING | WARNING:root:kernel 7f0c2d1e restarted",
    ],
    "hydra refuses an override, pasted without its closing line": [
        "Could not override 'trainer.max_epochs_total'.",
        "To append to your config use +trainer.max_epochs_total=30",
        "Key 'max_epochs_total' is not in struct",
    ],
    "hydra's own config error, without a traceback": [
        "Additional config directory '/work/exp/conf/pretraining' not found",
        "",
        "Set the environment variable HYDRA_FULL_ERROR=1 for a complete stack trace.",
    ],
    "a cuda check macro's failure line, then the process exits (nccl-tests, custom all-reduce kernels)": [
        "# nThread 1 nGpus 1 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20",
        "Failed: Cuda error /src/kernels/fused_allreduce.cuh:212 'invalid resource handle'",
        "[rank0]:[W1130 10:02:16.260656038 CudaIPCTypes.cpp:16] Producer process has been terminated before all "
        "shared CUDA tensors released. See Note [Sharing CUDA tensors]",
    ],
    "compute-sanitizer's initcheck finds a read of memory nothing wrote": [
        "========= COMPUTE-SANITIZER",
        "========= Uninitialized __global__ memory read of size 4 bytes",
        "=========     at 0x1c0 in reduce.cu:88:block_sum(const float *, float *, int)",
        "=========     by thread (31,0,0) in block (2,0,0)",
        "========= ERROR SUMMARY: 1 error",
    ],
    "a failed googletest case in a build check": [
        "[ RUN      ] RenderTest.test_can_render",
        "[  FAILED  ] RenderTest.test_can_render (212 ms)",
    ],
    "a failed unittest case": [
        "ERROR: test_can_render (__main__.RenderTest)",
        "----------------------------------------------------------------------",
    ],
    "c++ exception only": [
        "terminate called after throwing an instance of 'std::runtime_error'",
        "  what():  unable to mmap 1048576 bytes from file </dev/shm/torch_1234_567>: Cannot allocate memory (12)",
        "Aborted (core dumped)",
    ],
    "tensorflow fatal allocation lines": [
        "2026-12-03 07:12:40.456418: E external/local_xla/xla/stream_executor/cuda/cuda_driver.cc:1230] failed to "
        "alloc 17179869184 bytes on host: CUDA_ERROR_OUT_OF_MEMORY: out of memory",
    ],
    "a sycl exception before the program exits (dpct's handler)": [
        "Native API failed. Native API returns: 39 (UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY)Exception caught at "
        "file:/src/ggml/src/ggml-sycl/ggml-sycl.cpp, line:3312",
    ],
    "glog check failure": [
        "F1203 07:12:40.123456 4412 pjrt_stream_executor_client.cc:1023] Check failed: buffer != nullptr",
    ],
    "c10's fatal log line in January (three-digit date, nanoseconds, no thread id)": [
        "[F105 07:12:40.123456789 TCPStore.cpp:412] terminate handler: the store server died",
    ],
    "glog's fatal line with the year in its prefix": [
        "F20261203 07:12:40.123456 4412 gpu_device.cc:331] Non-OK-status: GpuLaunchKernel(...) status: INTERNAL",
    ],
    "illegal instruction from the shell": ["Illegal instruction (core dumped)"],
    "a bare Exception from a process pool": [
        "Epoch: [19][1200/1250] Loss 0.00021",
        "  File \"/usr/lib/python3.10/multiprocessing/spawn.py\", line 12, in _main",
        "Exception: process 1 terminated with signal SIGKILL",
    ],
    "tensorflow 1.x error with its traceback pointer": [
        "[1,1]<stderr>:ResourceExhaustedError (see above for traceback): OOM when allocating tensor with shape[2,1023,50257]",
    ],
    "horovodrun's exit report": ["Process 0 exit with status code 137."],
    "the tail of an OOM message, pasted without its first words": [
        "Tried to allocate 20.00 MiB (GPU 0; 1.96 GiB total capacity; 1.24 GiB already allocated; 2.88 MiB free; "
        "1.25 GiB reserved in total by PyTorch)",
    ],
    "an XLA error-level line without the word error": [
        "E1203 07:12:40.187087 4412 cuda_dnn.cc:456] Loaded runtime CuDNN library: 9.1.0 but source was compiled "
        "with: 9.3.0.  CuDNN library needs to have matching major version and equal or higher minor version.",
    ],
    "a device assertion wrapped by the terminal": [
        "/pytorch/aten/src/ATen/native/cuda/Indexing.cu:1422: indexSelectLargeIndex: block: [3,0,0], thread: [6,0,0] "
        "Assertion `srcIndex < srcSelectDimSize`",
        " failed.",
    ],
    "an exception class with a private name": [
        "torch._C._LinAlgError: linalg.cholesky: The factorization could not be completed because the input is not "
        "positive-definite (the leading minor of order 12 is not positive-definite).",
    ],
    "an internal assert pasted inside the application's own message": [
        'Request 17 failed: NVML_SUCCESS == r INTERNAL ASSERT FAILED at "/pytorch/c10/cuda/CUDACachingAllocator.cpp":'
        "1131, please report a bug to PyTorch.",
    ],
    "libc++ terminate on macOS": [
        "libc++abi: terminating due to uncaught exception of type std::runtime_error: [metal::Device] Unable to load "
        "kernel gemv_float32",
    ],
    "a tensorflow op failed with an error status": [
        "2026-12-03 07:12:40.655: W tensorflow/core/framework/op_kernel.cc:1816] OP_REQUIRES failed at "
        "xla_ops.cc:503 : INTERNAL: ptxas exited with non-zero error code 65280",
    ],
    "slurm refused the job": ["sbatch: error: Batch job submission failed: Invalid account or account/partition"],
    "the docker daemon refused the container": [
        "Attaching to trainer-1",
        'Error response from daemon: could not select device driver "" with capabilities: [[gpu]]',
    ],
    "a rust launcher's final error": [
        "2026-12-03T07:12:40.112Z ERROR text_generation_launcher: Shard 1 failed to start",
        "Error: ShardCannotStart",
    ],
    "llama.cpp could not load the model": [
        "llama_model_load: error loading model: error loading model hyperparameters: key not found in model: "
        "general.architecture",
        "llama_model_load_from_file_impl: failed to load model",
    ],
    "a rust panic in the tokenizer": [
        "thread '<unnamed>' panicked at tokenizers/src/models/bpe/model.rs:512:41:",
        "called `Option::unwrap()` on a `None` value",
    ],
    "a go panic in the serving process": [
        "panic: runtime error: invalid memory address or nil pointer dereference",
        "[signal SIGSEGV: segmentation violation code=0x1 addr=0x18 pc=0x5d2c1a]",
    ],
    "a crash faulthandler reports on windows": ["Windows fatal exception: access violation"],
    "macos's crash report of a thread that aborted": [
        "Thread 2 Crashed::  Dispatch queue: metal gpu stream",
        "0   libsystem_kernel.dylib        \t       0x18a1d6600 __pthread_kill + 8",
        "1   libsystem_c.dylib             \t       0x18a11e9e8 abort + 124",
    ],
    "a cuda extension that did not compile": [
        "/home/alice/ext/csrc/fused_adam.cu(57): error: identifier \"__hfma2\" is undefined",
        "1 error detected in the compilation of \"/home/alice/ext/csrc/fused_adam.cu\".",
        "ninja: build stopped: subcommand failed.",
    ],
    "pip could not build a dependency": [
        "  error: subprocess-exited-with-error",
        "  ERROR: Failed building wheel for flash-attn",
    ],
    "a pod status with a non-zero exit code": ["Last State: Terminated", "  Reason: Error", "  exitCode: 2"],
    "ray re-raised a worker's exception": [
        "ray.exceptions.RayTaskError(ValueError): ray::TrainWorker.step() (pid=812, ip=10.0.0.4, actor_id=ab12)",
    ],
    "an MPI launcher could not start its daemon": ["bash: orted: command not found"],
    "a make recipe failed": ["python train.py --config base.yaml", "make: *** [Makefile:14: train] Error 1"],
    "mpirun could not start the job": [
        "mpirun was unable to find the specified executable file, and therefore",
        "did not launch the job.",
    ],
    "a missing library that is not an optional probe": [
        "ImportError: libcudnn.so.9: cannot open shared object file: No such file or directory",
    ],
    "tf.keras stopped fit() because the data ran short of steps_per_epoch * epochs": [
        "Epoch 3/20",
        "WARNING:tensorflow:Your input ran out of data; interrupting training. Make sure that your dataset or "
        "generator can generate at least `steps_per_epoch * epochs` batches (in this case, 4000 batches). You may "
        "need to use the repeat() function when building your dataset.",
    ],
    "an exception class from a module, not named Error": [
        "requests.exceptions.ReadTimeout: HTTPSConnectionPool(host='huggingface.co', port=443): Read timed out. "
        "(read timeout=10)",
    ],
    "a service's report of an uncaught exception": [
        "2026-12-03 07:12:40,101 ERROR - job_runner - uncaught exception in worker thread: metadata server timed out",
        "2026-12-03 07:12:40,102 INFO - job_runner - shutting down",
    ],
    "an error report named by its code": ["Unknown CUDA Error (999)"],
    "torch.linalg's check pasted without its exception class": [
        "step 40 loss 0.91",
        "linalg.svd: The algorithm failed to converge because the input matrix is ill-conditioned or has too many "
        "repeated singular values (error code: 127).",
    ],
    "c10d's nccl check pasted without its exception class": [
        "NCCL error in: /opt/pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, invalid usage "
        "(run with NCCL_DEBUG=WARN for details), NCCL version 2.21.5",
    ],
    "an error-level line ends the log": ["loading shards 3/4", "", "ERROR: could not read shard 4 of the checkpoint", ""],
    "the openmp runtime's fatal error, followed by its hint": [
        "OMP: Error #15: Initializing libomp.dylib, but found libiomp5.dylib already initialized.",
        "OMP: Hint This means that multiple copies of the OpenMP runtime have been linked into the program.",
    ],
    "a last line that says the job failed": ["queued 4 nodes", "sbatch: error: Batch job submission failed: Invalid qos"],
    "gnu make gives up on a build step a package runs at import": [
        "make: Entering directory '/opt/venv/lib/python3.11/site-packages/some_pkg/datasets/helpers'",
        "make: *** No targets specified and no makefile found.  Stop.",
        "make: Leaving directory '/opt/venv/lib/python3.11/site-packages/some_pkg/datasets/helpers'",
    ],
    "open mpi could not start its daemon on a node": [
        "bash: /opt/openmpi/bin/orted: No such file or directory",
        "--------------------------------------------------------------------------",
        "ORTE was unable to reliably start one or more daemons.",
        "This usually is caused by:",
    ],
    "nccl traces a system error up the stack, no warn line says fail": [
        "node3:2210:2290 [1] NCCL INFO Channel 00/0 : 1[1] -> 9[1] [send] via NET/Socket/0",
        "node3:2210:2290 [1] NCCL INFO misc/socket.cc:540 -> 2",
        "node3:2210:2290 [1] NCCL INFO transport/net.cc:890 -> 2",
        "node3:2210:2290 [1] NCCL INFO group.cc:64 -> 2 [Async thread]",
    ],
    "a traceback cut before its exception": [
        "Traceback (most recent call last):",
        '  File "/home/ana/train.py", line 88, in main',
        "    with accelerator.accumulate(model):",
        '  File "/opt/venv/lib/python3.10/site-packages/accelerate/accelerator.py", line 1092, in accumulate',
        "    cm_stack.enter_context(self.no_sync(m))",
    ],
    "the shell reports the process stopped by its cpu-time limit": [
        "2026-12-04 10:31:02,118 - INFO - step 420/5000 loss 3.1841 lr 2.9e-04",
        "2026-12-04 10:31:04,027 - INFO - step 430/5000 loss 3.1790 lr 2.9e-04",
        "bash: line 1: 80412 CPU time limit exceeded (core dumped) python train.py --steps 5000",
    ],
    "a paste of frames only, the last one raising": [
        '  File "/home/ana/train.py", line 140, in build_loader',
        "    ds = ConcatDataset(parts)",
        '  File "/home/ana/data/concat.py", line 31, in __init__',
        "    assert len(parts) < 255",
    ],
}

HEALTHY = {
    "an Optuna study whose first trial failed and whose later trials ran to their end": [
        "[LightGBM] [Fatal] Check failed: (num_leaves) > (1) at /__w/LightGBM/LightGBM/src/io/config_auto.cpp, line 352 .",
        "[W 2026-11-30 10:00:01,915] Trial 0 failed with parameters: {'num_leaves': 1} because of the following error: "
        "LightGBMError('Check failed: (num_leaves) > (1) at /__w/LightGBM/LightGBM/src/io/config_auto.cpp, line 352 .').",
        "Traceback (most recent call last):",
        '  File "/opt/venv/lib/python3.11/site-packages/optuna/study/_optimize.py", line 206, in _run_trial',
        "    value_or_values = func(trial)",
        "lightgbm.basic.LightGBMError: Check failed: (num_leaves) > (1) at /__w/LightGBM/LightGBM/src/io/config_auto.cpp, line 352 .",
        "[W 2026-11-30 10:00:01,921] Trial 0 failed with value None.",
        "[I 2026-11-30 10:00:03,114] Trial 1 finished with value: 0.2531 and parameters: {'num_leaves': 14}. "
        "Best is trial 1 with value: 0.2531.",
        "[I 2026-11-30 10:00:04,870] Trial 2 finished with value: 0.1886 and parameters: {'num_leaves': 29}. "
        "Best is trial 2 with value: 0.1886.",
    ],
    "tf 1.x queue runners cancelled as a healthy run shuts down": [
        "INFO:tensorflow:global step 20000: loss = 0.2114 (0.301 sec/step)",
        "INFO:tensorflow:Stopping Training.",
        "INFO:tensorflow:Error reported to Coordinator: <class 'tensorflow.python.framework.errors_impl."
        "CancelledError'>, Enqueue operation was cancelled",
        "INFO:tensorflow:Finished training! Saving model to disk.",
    ],
    "tensorflow's numbered statuses of an input pipeline that reached its end": [
        "I0917 04:12:55.120411 140311 basic_session_run_hooks.py:260] loss = 0.2731, step = 9800 (41.2 sec)",
        "  (0) Out of range: End of sequence",
        "\t [[{{node IteratorGetNext}}]]",
        "  (1) Cancelled: Iterator was cancelled",
        "I0917 04:13:02.004413 140311 estimator.py:371] Loss for final step: 0.2694.",
    ],
    "a traceback printed in full, then training goes on": [
        "Traceback (most recent call last):",
        '  File "/home/ana/train.py", line 88, in log_batch',
        "    wandb.log(metrics)",
        "ConnectionResetError: [Errno 104] Connection reset by peer",
        "step 1200 | loss 1.93",
        "step 1300 | loss 1.91",
    ],
    "python reports an exception it ignored at exit, the paste cut in its traceback": [
        "Epoch 299/299: 100%|##########| 40/40 [00:12<00:00,  3.21it/s]",
        "Exception ignored in: <function _MultiProcessingDataLoaderIter.__del__ at 0x7f4972feac10>",
        "Traceback (most recent call last):",
        '  File "/opt/venv/lib/python3.8/site-packages/torch/utils/data/dataloader.py", line 1328, in __del__',
        '  File "/opt/venv/lib/python3.8/site-packages/torch/utils/data/dataloader.py", line 1262, in _shutdown_workers',
    ],
    "python's logging could not format a record and says so, the paste cut in its call stack": [
        "--- Logging error ---",
        "Traceback (most recent call last):",
        '  File "/opt/conda/lib/python3.10/logging/__init__.py", line 1100, in emit',
        "    msg = self.format(record)",
        "TypeError: not all arguments converted during string formatting",
        "Call stack:",
        '  File "/home/ana/train.py", line 210, in <module>',
        "    main()",
        '  File "/home/ana/train.py", line 95, in main',
    ],
    "xformers logs the ImportError of its triton probe with its traceback and goes on": [
        "[2025-03-02 21:14:05,118] WARNING: A matching Triton is not available, some optimizations will not be enabled",
        "Traceback (most recent call last):",
        '  File "C:\\venvs\\sd\\lib\\site-packages\\xformers\\__init__.py", line 57, in _is_triton_available',
        "    import triton  # noqa",
        "    ^^^^^^^^^^^^^",
        "ModuleNotFoundError: No module named 'triton'",
        "[2025-03-02 21:14:09,402] INFO: epoch 1 step 10 loss 0.412",
    ],
    "nccl's sockets close at teardown after the run finished": [
        "[rank1] epoch 3 done, saving final weights",
        "node3:2210:9931 [1] NCCL INFO misc/socket.cc:47 -> 3",
        "node3:2210:9931 [1] NCCL INFO misc/socket.cc:58 -> 3",
        "node3:2210:9931 [1] NCCL INFO misc/socket.cc:781 -> 3",
        "node3:2210:2210 [1] NCCL INFO comm 0x5581e0a0 rank 1 nranks 2 cudaDev 1 busId 3b000 - Abort COMPLETE",
    ],
    "nccl traces a call that returned in progress (non-blocking communicators)": [
        "node3:2210:2210 [1] NCCL INFO Comm config Blocking set to 0",
        "node3:2210:2210 [1] NCCL INFO init.cc:1881 -> 7",
        "node3:2210:2210 [1] NCCL INFO Connected all rings",
    ],
    "a stack the script prints on purpose (traceback.print_stack) under its own title": [
        "step 1200 | loss 1.93",
        "save_checkpoint called from:",
        '  File "/home/ana/train.py", line 210, in <module>',
        "    main()",
        '  File "/home/ana/train.py", line 180, in main',
        "    save_checkpoint(model, step)",
    ],
    "a stack printed without a traceback's header, nothing before it": [
        '  File "/home/ana/train.py", line 210, in <module>',
        "    main()",
        '  File "/home/ana/train.py", line 180, in main',
        "    save_checkpoint(model, step)",
    ],
    "a warning that names the file and line of its caller": [
        "step 1200 | loss 1.93",
        '  File "/home/ana/train.py", line 88, in main',
        "    scheduler.step()",
    ],
    "onnx runtime falls back to another execution provider": [
        "*************** EP Error ***************",
        "EP Error [ONNXRuntimeError] : 1 : FAIL : TensorRT EP failed to create engine from network. when using "
        "['TensorrtExecutionProvider', 'CUDAExecutionProvider']",
        "Falling back to ['CUDAExecutionProvider', 'CPUExecutionProvider'] and retrying.",
        "****************************************",
    ],
    "nccl falls back to sockets": [
        "gpu7:4412:4412 [0] NCCL INFO Bootstrap : Using eth0:10.1.2.3<0>",
        "gpu7:4412:4412 [0] misc/ibvwrap.cc:105 NCCL WARN Failed to open libibverbs.so[.1]",
        "gpu7:4412:4412 [0] NCCL INFO NET/Socket : Using [0]eth0:10.1.2.3<0>",
        "gpu7:4412:4412 [0] NCCL INFO Using network Socket",
    ],
    "tensorflow's start-up registers its CUDA plugins twice": [
        "2026-12-03 07:12:40.101: E external/local_xla/xla/stream_executor/cuda/cuda_dnn.cc:9261] Unable to register "
        "cuDNN factory: Attempting to register factory for plugin cuDNN when one has already been registered",
        "2026-12-03 07:12:40.102: E external/local_xla/xla/stream_executor/cuda/cuda_blas.cc:1515] Unable to register "
        "cuBLAS factory: Attempting to register factory for plugin cuBLAS when one has already been registered",
        "Epoch 1/3",
    ],
    "an exception the loop caught, then training went on": [
        "step 100 loss 2.31",
        "ConnectionResetError: [Errno 104] Connection reset by peer",
        "retrying upload of metrics in 5 s",
        "step 101 loss 2.30",
        "step 102 loss 2.29",
    ],
    "torch.compile graph breaks logged with TORCH_LOGS=graph_breaks": [
        "V1203 07:12:40.783000 4412 torch/_dynamo/symbolic_convert.py:611] [0/0] [__graph_breaks] Graph break in user "
        "code at /workspace/model.py:62",
        "V1203 07:12:40.783000 4412 torch/_dynamo/symbolic_convert.py:611] [0/0] [__graph_breaks] Graph Break Reason: "
        "Unsupported Tensor.item() call with capture_scalar_outputs=False",
        "V1203 07:12:40.783000 4412 torch/_dynamo/symbolic_convert.py:611] [0/0] [__graph_breaks] User code traceback:",
        'V1203 07:12:40.783000 4412 torch/_dynamo/symbolic_convert.py:611] [0/0] [__graph_breaks]   File '
        '"/workspace/model.py", line 62, in forward',
        "V1203 07:12:40.783000 4412 torch/_dynamo/symbolic_convert.py:611] [0/0] [__graph_breaks]     n = int(mask.sum().item())",
        "V1203 07:12:40.783000 4412 torch/_dynamo/symbolic_convert.py:611] [0/0] [__graph_breaks] "
        "torch._dynamo.exc.Unsupported: Unsupported Tensor.item() call with capture_scalar_outputs=False",
        "epoch 0 step 10 loss 1.92",
    ],
    "dynamo falls back to eager for a frame its backend failed to compile (suppress_errors)": [
        "[2026-12-04 09:10:02,118] torch._dynamo.convert_frame: [WARNING] WON'T CONVERT <resume in forward> "
        "/srv/train/model.py line 88 ",
        "[2026-12-04 09:10:02,118] torch._dynamo.convert_frame: [WARNING] due to: ",
        "[2026-12-04 09:10:02,118] torch._dynamo.convert_frame: [WARNING] Traceback (most recent call last):",
        "[2026-12-04 09:10:02,118] torch._dynamo.convert_frame: [WARNING] torch._dynamo.exc.BackendCompilerFailed: "
        "backend='inductor' raised:",
        "[2026-12-04 09:10:02,118] torch._dynamo.convert_frame: [WARNING] RuntimeError: Cannot find a working triton "
        "installation.",
        "epoch 0 step 10 loss 1.92",
    ],
    "a warning whose category is named like an exception": [
        "/srv/app/deploy.py:14: DeprecationError: 2025-06-01: `keep_warm` has been renamed to `min_containers`.",
        "  @app.function(",
        "Deploying the fine-tuning job.",
    ],
    "a tensorflow input pipeline reaching the end of its data": [
        "Epoch 1/2",
        "2026-12-03 07:12:40.655: W tensorflow/core/framework/op_kernel.cc:1816] OP_REQUIRES failed at "
        "iterator_ops.cc:1107 : OUT_OF_RANGE: End of sequence",
        "Epoch 2/2",
    ],
    "a rust panic caught by the trainer, which went on": [
        "step 1 loss 2.31",
        "thread '<unnamed>' panicked at src/metrics/push.rs:88:14: connection refused",
        "step 2 loss 2.20", "step 3 loss 2.11",
    ],
    "an openmp warning, then training": [
        "OMP: Warning #96: Cannot form a team with 48 threads, using 8 instead.", "step 1 loss 2.31", "step 2 loss 2.20",
    ],
    "a warning with a failure in its words ends the log": [
        "step 9 loss 1.02", "W1204 10:02:11.512000 88 api.py:412] metrics push failed, will resend with the next step",
    ],
        "a metric named Error": ["epoch 1 Error: 0.231", "epoch 2 Error: 0.198", "Finished training"],
    "a setup script missed an optional tool, then training ran": [
        "bash: nvidia-smi: command not found", "step 1 loss 2.31", "step 2 loss 2.20", "step 3 loss 2.11",
    ],
    "a pod status with exit code zero": ["Last State: Terminated", "  Reason: Completed", "  exitCode: 0"],
    "nccl finds no external network plugin": [
        "node3:811:811 [0] NCCL INFO NET/Plugin: Plugin load returned 2 : libnccl-net.so: cannot open shared object "
        "file: No such file or directory : when loading libnccl-net.so",
        "node3:811:811 [0] NCCL INFO NET/Plugin: Using internal network plugin.",
    ],
    "nccl's tuner plugin misses a library it needs, and nccl goes on with its own tuning": [
        "node3:811:811 [0] NCCL INFO TUNER/Plugin: libnccl-tuner.so: libcudart.so.11.0: cannot open shared object "
        "file: No such file or directory",
        "node3:811:811 [0] NCCL INFO PROFILER/Plugin: Could not find: libnccl-profiler.so",
        "step 1 loss 2.31",
    ],
    "a paste that kept only nccl's dlopen error for its optional plugin": [
        "Could not load libnccl-tuner.so: libnccl-tuner.so: cannot open shared object file: No such file or directory",
    ],
    "jax probes the backends it was not built for": [
        "INFO:jax._src.xla_bridge:Unable to initialize backend 'tpu': INTERNAL: Failed to open libtpu.so: libtpu.so: "
        "cannot open shared object file: No such file or directory",
        "INFO:root:Restoring checkpoint from /ckpt/params",
    ],
    "jax's backend probe through a logger that prints the source location last": [
        "14:02:11.508 [I] Unable to initialize backend 'tpu': INTERNAL: Failed to open libtpu.so: libtpu.so: "
        "cannot open shared object file: No such file or directory (48113:xla_bridge.py:906)",
        "14:02:15.120 [I] step 0: loss 4.812 (48113:train.py:233)",
    ],
    "xla's cuinit probe on a host without a cuda driver, then the run goes on": [
        "2026-12-04 03:10:02.118304: E external/local_xla/xla/stream_executor/cuda/cuda_platform.cc:51] failed call to "
        "cuInit: INTERNAL: CUDA error: Failed call to cuInit: UNKNOWN ERROR (303)",
        "I1204 03:10:04.551920 139871 train.py:88] Jax distributed system initialized!",
    ],
    "tensorflow's cuinit probe on a cpu-only machine": [
        "2026-12-04 03:10:02.118304: E tensorflow/stream_executor/cuda/cuda_driver.cc:271] failed call to cuInit: "
        "CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected",
        "Epoch 1/3",
    ],
    "xla's slow-compile alarm at E level while the compile goes on": [
        "2026-12-04 03:12:40.573300: E external/xla/xla/service/slow_operation_alarm.cc:65] Constant folding an "
        "instruction is taking > 1s:",
        "",
        "  %reduce.7 = f32[8192,8192]{1,0} reduce(f32[8192,8192,4]{2,1,0} %p0, f32[] %c0), dimensions={2}",
        "2026-12-04 03:12:41.789842: E external/xla/xla/service/slow_operation_alarm.cc:133] The operation took "
        "2.216622055s",
        "I1204 03:12:55.104428 139871 train.py:141] step 0: loss=4.118",
    ],
    "inductor's max-autotune skips candidate kernels it could not run, and training goes on": [
        "E0412 08:14:02.331000 91822 site-packages/torch/_inductor/select_algorithm.py:1795] [2/0] Runtime error "
        "during autotuning: ",
        "E0412 08:14:02.331000 91822 site-packages/torch/_inductor/select_algorithm.py:1795] [2/0] No valid triton "
        "configs. OutOfResources: out of resource: shared memory, Required: 196608, Hardware limit: 166912. Reducing "
        "block sizes or `num_stages` may help.. ",
        "E0412 08:14:02.331000 91822 site-packages/torch/_inductor/select_algorithm.py:1795] [2/0] Ignoring this "
        "choice.",
        "step 10 | loss 3.912 | lr 1.0e-04",
    ],
    "conda activate in a batch shell conda was not initialised for, then the job runs": [
        "",
        "CommandNotFoundError: Your shell has not been properly configured to use 'conda activate'.",
        "To initialize your shell, run",
        "",
        "    $ conda init <SHELL_NAME>",
        "",
        "epoch 1 | val_acc 0.8812",
        "done in 612.3 s",
    ],
    "vllm from a source checkout warns it cannot read its commit hash, and falls back to version dev": [
        "/opt/venv/lib/python3.10/site-packages/vllm/__init__.py:7: RuntimeWarning: Failed to read commit hash:",
        "No module named 'vllm._version'",
        "  from vllm.version import __version__ as VLLM_VERSION",
        "(RolloutWorker pid=41877) No module named 'vllm._version'",
        "(RolloutWorker pid=41877)   from vllm.version import __version__ as VLLM_VERSION",
    ],
    "xformers probes for triton at import on a machine without it, and training goes on": [
        "A matching Triton is not available, some optimizations will not be enabled.",
        "Error caught was: No module named 'triton'",
        "steps:  12%|#2        | 120/1000 [01:40<12:13,  1.20it/s, avr_loss=0.0921]",
    ],
    "xformers logs its failed triton import with the traceback, and training goes on": [
        "A matching Triton is not available, some optimizations will not be enabled",
        "Traceback (most recent call last):",
        '  File "/opt/venv/lib/python3.10/site-packages/xformers/__init__.py", line 57, in _is_triton_available',
        "    import triton  # noqa",
        "ModuleNotFoundError: No module named 'triton'",
        "steps:  12%|#2        | 120/1000 [01:40<12:13,  1.20it/s, avr_loss=0.0921]",
        "steps:  13%|#3        | 130/1000 [01:48<12:03,  1.20it/s, avr_loss=0.0917]",
    ],
    "a compute-sanitizer run that found nothing": [
        "========= COMPUTE-SANITIZER",
        "step 0 loss 2.304",
        "step 1 loss 2.291",
        "========= ERROR SUMMARY: 0 errors",
    ],
    "libibverbs probes a provider that is not installed": [
        "libibverbs: Warning: couldn't load driver 'libmlx4-rdmav34.so': libmlx4-rdmav34.so: cannot open shared "
        "object file: No such file or directory",
    ],
    "torch probes cuda on a machine without a gpu, then trains on the cpu": [
        "/usr/lib/python3.11/site-packages/torch/cuda/__init__.py:129: UserWarning: CUDA initialization: Found no "
        "NVIDIA driver on your system. Please check that you have an NVIDIA GPU and installed a driver",
        "  return torch._C._cuda_getDeviceCount() > 0",
        "device: cpu",
    ],
    "keras 3 ends a pass over a finite dataset": [
        "/usr/lib/python3.12/contextlib.py:158: UserWarning: Your input ran out of data; interrupting training. "
        "Make sure that your dataset or generator can generate at least `steps_per_epoch * epochs` batches. You "
        "may need to use the `.repeat()` function when building your dataset.",
        "  self.gen.throw(value)",
    ],
    "an error-level line the run went past": [
        "ERROR: could not reach the metrics server, will retry", "step 1 loss 2.31", "step 2 loss 2.20",
    ],
    "a warning class from a module, at the end of the log": [
        "epoch 3 done",
        "sklearn.exceptions.ConvergenceWarning: lbfgs failed to converge (status=1):",
    ],
}


def _diagnose(tmp_path: Path, lines: list[str]) -> Status:
    path = tmp_path / "pasted.log"
    path.write_text("\n".join(lines) + "\n")
    return diagnose([str(path)]).status


@pytest.mark.parametrize("name", sorted(FAILED))
def test_failure_without_traceback_is_a_failure(tmp_path: Path, name: str) -> None:
    assert _diagnose(tmp_path, FAILED[name]) in (Status.failure, Status.unknown_failure)


@pytest.mark.parametrize("name", sorted(HEALTHY))
def test_alarming_but_healthy_stays_healthy(tmp_path: Path, name: str) -> None:
    assert _diagnose(tmp_path, HEALTHY[name]) is Status.no_failure


def test_the_same_exception_at_the_end_is_a_failure(tmp_path: Path) -> None:
    lines = ["step 100 loss 2.31", "step 101 loss 2.30", "ConnectionResetError: [Errno 104] Connection reset by peer"]
    assert _diagnose(tmp_path, lines) is not Status.no_failure


def test_hydras_own_error_is_shown_by_its_message_not_by_hydras_closing_line(tmp_path: Path) -> None:
    path = tmp_path / "pasted.log"
    path.write_text("\n".join(FAILED["hydra's own config error, without a traceback"]) + "\n")
    diagnosis = diagnose([str(path)])
    assert diagnosis.status is Status.unknown_failure
    first = diagnosis.unknown[0]
    assert (first.line, first.text) == (1, "Additional config directory '/work/exp/conf/pretraining' not found")


def test_a_cut_traceback_names_the_rank_that_printed_it(tmp_path: Path) -> None:
    """One rank's traceback, cut before its exception: that rank is the one that failed."""
    path = tmp_path / "cut.log"
    path.write_text("".join(f"[rank2]: {line}\n" for line in FAILED["a traceback cut before its exception"]))
    diagnosis = diagnose([str(path)])
    assert diagnosis.status == Status.unknown_failure
    assert diagnosis.initiating_rank == 2


def test_a_failure_after_a_logged_and_recovered_exception_still_counts(tmp_path: Path) -> None:
    """The excused span of a logged exception covers its own short traceback, not the run after it."""
    recovered = HEALTHY["xformers logs the ImportError of its triton probe with its traceback and goes on"]
    steps = [f"[2025-03-02 21:14:1{n},000] INFO: epoch 1 step {20 + n} loss 0.40" for n in range(3)]
    failure = ["Traceback (most recent call last):", '  File "train.py", line 88, in <module>',
               "RuntimeError: CUDA error: an illegal memory access was encountered"]
    path = tmp_path / "run.log"
    path.write_text("\n".join(recovered + steps + failure) + "\n")
    diagnosis = diagnose([str(path)])
    assert diagnosis.status is Status.failure
    assert diagnosis.root_cause is not None and diagnosis.root_cause.id == "cuda-illegal-memory-access"


def test_an_uncaught_stop_iteration_is_the_salient_line_not_a_code_line_that_names_it(tmp_path: Path) -> None:
    """StopIteration is named without `Error`: the bare line that ends the traceback is the exception."""
    path = tmp_path / "train.log"
    path.write_text("\n".join(["[rank1]: Traceback (most recent call last):",
                                '[rank1]:   File "/opt/venv/lib/python3.11/site-packages/torch/utils/data/sampler.py", '
                                "line 77, in _next_index",
                                "[rank1]:     return next(self._sampler_iter)  # may raise StopIteration",
                                "[rank1]: StopIteration"]) + "\n")
    diagnosis = diagnose([str(path)])
    assert diagnosis.status is Status.unknown_failure
    assert [line.text for line in diagnosis.unknown] == ["[rank1]: StopIteration"]


def test_paddles_spawn_report_names_the_process_that_failed(tmp_path: Path) -> None:
    """paddle.distributed.spawn words torch's `-- Process N terminated ...` without the dashes."""
    path = tmp_path / "spawn.log"
    path.write_text("----------------------------------------------\n"
                    "Process 1 terminated with the following error:\n"
                    "----------------------------------------------\n\n"
                    "OSError: (External) Cuda error(700), an illegal memory access was encountered.\n")
    assert diagnose([str(path)]).initiating_rank == 1
