"""Patterns the engine itself needs besides the KB signatures.

They share the one Hyperscan database with the signatures, so finding a traceback,
torchrun's failure report or a version line costs nothing extra on the hot path.
Each has a cap on the hits kept per source: beyond it, hits are only counted.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from traintriage.parse.metrics import GBM_EVAL_NAN, LOSS_AGGREGATE, LOSS_TERM_NAMES


class Internal(str, Enum):
    traceback = "traceback"
    exception = "exception"
    error_level = "error-level"
    fatal_signal = "fatal-signal"
    exit_code = "exit-code"
    root_cause_report = "root-cause-report"
    watchdog_seq = "watchdog-seq"
    version = "version"
    gpu_model = "gpu-model"
    completion = "completion"
    metric_nonfinite = "metric-nonfinite"
    collective_timeout = "collective-timeout"
    faulty_rank = "faulty-rank"
    stack_dump = "stack-dump"
    agent_failure = "agent-failure"
    agent_forced_kill = "agent-forced-kill"
    report_rank = "report-rank"
    exception_ignored = "exception-ignored"
    exception_logged = "exception-logged"
    run_fact = "run-fact"
    fatal_line = "fatal-line"
    graph_break = "graph-break"
    benign_notice = "benign-notice"


# The default name of a tensor Horovod reduces, as its stall report lists it: `HorovodAllreduce_x`
# (TensorFlow), `horovod_allreduce.N` (MXNet) or `broadcast.noname.1` / `allreduce.<param name>`
# (PyTorch: horovod/torch/mpi_ops_v2.cc GetOpName, `<op>.<name>` or `<op>.noname.<handle>`, and
# `grouped_allreduce.` for grouped ops); analyze/ranks.py reads the rank before it.
HOROVOD_TENSOR = (r"(?:Horovod(?:Allreduce|Allgather|Broadcast|Alltoall|ReduceScatter)|"
                  r"(?:horovod_|grouped_)?(?:allreduce|allgather|broadcast|alltoall|reducescatter)\.)")

NOT_ENDING_IN_WARNING = "(?:[^\\Wg]|[^\\Wn]g|[^\\Wi]ng|[^\\Wn]ing|[^\\Wr]ning|[^\\Wa]rning|[^\\WW]arning)"
"""The last characters of a class name that is not `...Warning` (Hyperscan has no lookbehind)."""
TRIALS_UNFINISHED = r"\bTrials did not complete: \["
"""Ray Tune's run()/Tuner.fit() when trials errored and raise_on_failed_trial is off: logged, not raised, in
the summary after every trial (analyze/salient.py keeps it as evidence though the best trial's metrics follow)."""
HYDRA_CLOSING = "Set the environment variable HYDRA_FULL_ERROR=1"
"""Hydra's closing line after an error it caught (`... for a complete stack trace.`); analyze/salient.py
shows the message printed above it instead."""


@dataclass(frozen=True)
class InternalPattern:
    """`confirm`, when set, is checked (Python `re`, bytes) on each line the fast pattern hits
    before the hit counts: the fast pattern keys on a rare word so that the scan stays quick."""

    kind: Internal
    pattern: str
    cap: int
    context: bool = False
    confirm: str | None = None


INTERNAL_PATTERNS: tuple[InternalPattern, ...] = (
    InternalPattern(Internal.traceback, r"Traceback \(most recent call", 64),  # see TRACEBACK_HEADER
    InternalPattern(
        Internal.exception,
        r"(?:^|[\s\]:>|])(?:(?:[A-Za-z_][\w]*\.)*_?[A-Z][A-Za-z0-9_]*(?:Error|Exception|Interrupt|Exit|Failure)|Exception)"
        # Ray wraps the cause's class: `ray.exceptions.RayTaskError(OutOfMemoryError): ray::...`
        r"(?:\([A-Za-z_][\w.]{0,80}\))?"
        r"(?::\s|:$|$| \(see above for traceback\): )|"  # the last form: TensorFlow 1.x
        # the builtin exception named otherwise, alone at the start of the message as a traceback ends: an iterator
        # exhausted where nothing caught it (not a frame's code line that mentions it)
        r"(?:^|\]:? ?)Stop(?:Async)?Iteration(?::\s|\s*$)|"
        # pyarrow's classes (pyarrow/error.pxi, module pyarrow.lib), some named otherwise: `ArrowInvalid`, `ArrowCancelled`
        r"(?:^|[\s\]:>|])pyarrow\.lib\.Arrow[A-Z][A-Za-z]{1,30}: |"
        # a class whose name says nothing, from a package's errors module, at the start of the line as a
        # traceback ends (`filelock._core._errors.Timeout: ...`, `triton.runtime.errors.OutOfResources: ...`,
        # `torch._dynamo.exc.Unsupported: ...`); the module's name is the literal the scan looks for first.
        # Not a warning category from such a module (`sklearn.exceptions.ConvergenceWarning: ...`).
        r"(?:^|\]:? ?)(?:[a-z_][a-z0-9_]{0,40}\.){0,6}_?(?:errors?|exc|exceptions)\.[A-Z][A-Za-z0-9_]{0,60}"
        + NOT_ENDING_IN_WARNING + r": [^\s\d]",
        512,
        context=True,
    ),
    InternalPattern(Internal.error_level, r"(?:\bERROR\b|\bFATAL\b|\bCRITICAL\b|^E\d{4} \d\d:\d\d:\d\d)", 256),
    InternalPattern(
        Internal.fatal_signal,
        r"(?:Signal \d+ \(SIG[A-Z]+\) received by PID|Segmentation fault|core dumped|\bAborted\b|"
        r"exited on signal \d+|\bKilled\b|Fatal Python error|"
        # torchrun's agent stopping its workers because one failed or the agent itself was signalled
        # (torch/distributed/elastic/multiprocessing/api.py, logged at warning level): a failure even
        # when the failed worker's own lines were not captured (killed mid-load without a traceback)
        r"Sending process \d+ closing signal SIG[A-Z]+)",
        256,
    ),
    # Any case: Kubernetes says `exitCode: 137` and `Exit Code:    137`, launchers `exit code 1`.
    InternalPattern(Internal.exit_code,
                    r"(?i)(?:exit_?code\s*[:=]\s*-?\d+|exit(?:ed)?(?: with)? (?:status )?(?:code|status)[: ]+-?\d+)", 256),
    InternalPattern(Internal.root_cause_report, r"Root Cause \(first observed failure\)", 16, context=True),
    InternalPattern(
        Internal.watchdog_seq,
        r"(?:SeqNum=\d+|last enqueued (?:NCCL )?work: -?\d+, last completed (?:NCCL )?work: -?\d+)",
        4096,
    ),
    InternalPattern(
        Internal.version,
        r"(?:\btorch(?:\.__version__)?\s*(?:version)?\s*[:=]?\s*v?\d+\.\d+\.\d+|PyTorch version:? \d|"
        r"NCCL version \d+\.\d+\.\d+|Driver Version: ?\d+|CUDA Version:? ?\d+|CUDA used to build PyTorch: \d|"
        r"DeepSpeed info: version=|\bdeepspeed(?:\s+version)?\s*[:=]\s*\d|transformers(?:\s+version)?\s*[:=]\s*\d|"
        r"Python version:? \d|ROCM used to build PyTorch|\bvllm\s+version)",
        24,
    ),
    InternalPattern(
        Internal.gpu_model,
        r"(?:NVIDIA (?:[A-Z]\d{2,4}|GeForce|RTX|Tesla|A100|H100|H200|B200|GB200|L40|L4)\b|AMD Instinct MI\d+)",
        8,
    ),
    InternalPattern(
        Internal.completion,
        r"(?:Training completed\.|`Trainer\.fit` stopped|'train_runtime'|\btrain_runtime\s*=|Finished training|"
        r"[Tt]raining (?:finished|complete|done)\b|\bdone training\b|"
        r"Waiting for W&B process to finish\.\.\. \(success\)|"
        # Optuna's study log (optuna/study/_tell.py): a trial that ran to its end after an earlier trial failed
        r"\bTrial \d{1,7} finished with values?: )",
        16,
    ),
    InternalPattern(
        Internal.collective_timeout,
        r"(?:Watchdog caught collective operation timeout|Timed out waiting \d+ ?ms for (?:send|recv) operation|"
        r"failed to pass monitoredBarrier|successfully reached monitoredBarrier, but received errors|"
        r"collective operation timeout|Some NCCL operations have failed or timed out)",
        4096,
    ),
    InternalPattern(
        Internal.faulty_rank,
        r"(?:check rank \d+ logs for faulty rank|Culprit rank \d+; Error type|Ranks? \d+(?:, ?\d+)* failed to pass monitoredBarrier|"
        r"waiting for send/recv from rank \d+|possible application crash on rank \d+|\[Rank \d{1,7} Error Snippet\]:|"
        r"Task \d{1,7} heartbeat timeout|/job:jax_worker/replica:\d{1,4}/task:\d{1,7} (?:has been set to ERROR|heartbeat timeout)|Detected mismatch between collectives on ranks\. Rank \d|DDP expects same model across all ranks, but Rank \d|\[missing ranks: \d|\[ready ranks: \d|CheckpointException ranks:dict_keys\(\[\d|\d!?: \[[^\]\n]{0,300}" + HOROVOD_TENSOR + ")",
        256,
    ),
    InternalPattern(
        Internal.stack_dump,
        # Python 3.14 adds the thread's name: `Thread 0x00007f... [python] (most recent call first):`
        r"(?:^Current thread 0x[0-9a-f]+(?: \[[^\]\n]{1,64}\])? \(most recent call first\)|"
        r"Thread 0x[0-9a-f]+(?: \[[^\]\n]{1,64}\])? \(most recent call first\)|"
        r"Stack dump of)",
        64,
    ),
    # Python's logging prints `--- Logging error ---` and the traceback of a record it could not
    # format or emit (Handler.handleError), then the program goes on. An exit handler that raised is
    # reported and the exit status stays 0: `Error in atexit._run_exitfuncs:` up to Python 3.9,
    # `Exception ignored in atexit callback: <function ...>` from 3.10 (3.13: `... callback <function ...>:`).
    InternalPattern(Internal.exception_ignored,
                    r"^(?:\S+: ?)?(?:Exception ignored in(?:: | atexit callback)|--- Logging error ---|"
                    r"Error in atexit\._run_exitfuncs:)", 256),
    # A library's warning logged with `exc_info=True`: the traceback of an exception it caught and
    # recovered from follows. xFormers' import-time probe for Triton (xformers/__init__.py
    # _is_triton_available; xFormers runs without it, typically on Windows).
    InternalPattern(Internal.exception_logged,
                    r"A matching Triton is not available, some optimizations will not be enabled\s*$", 256),
    # Start-up lines that state a fact of the run (analyze/facts.py): world size, precision,
    # backend, ZeRO stage. Keyed on rare literals so the scan stays fast.
    InternalPattern(
        Internal.run_fact,
        r"(?:\bworld_size\s?[=:]\s?\d|WORLD_SIZE[=:]\s?\d|--nnodes[= ]\d|--nproc[-_]per[-_]node[= ]\d|"
        r"\b(?:bf16|fp16)\s?[=:]\s?True|torch_dtype\s?[=:]|mixed_precision\s?[=:]|ZeRO [Ss]tage \d|"
        r"\bbackend\s?[=:]\s?['\"]?(?:nccl|gloo|mpi)\b|Distributed environment: )",
        64,
    ),
    # Lines that show a remedy already in use (analyze/facts.py `_REMEDIES`): anomaly mode's
    # start-up warning, NCCL's INFO lines (once-per-rank ones only: INFO logs are long),
    # ProcessGroupNCCL's environment line, an allocator setting, a monitored barrier.
    InternalPattern(
        Internal.run_fact,
        r"(?:Anomaly Detection has been enabled|Traceback of forward call|No forward pass information|NCCL INFO (?:Bootstrap|cudaDriverVersion|NET/(?:Socket|IB|Plugin))|"
        r"NCCL_ASYNC_ERROR_HANDLING|expandable_segments:|NCCL_DEBUG=|monitoredBarrier)",
        32,
    ),
    # Failure evidence that needs no Python traceback: a C++ exception that terminated the
    # process, glog fatal/check-failure and error-level lines of C++ code (PyTorch, TF,
    # JAX/XLA; their start-up noise is excused in analyze/salient.py), NCCL warnings of a
    # failure, a C assertion (CUDA device asserts), fatal signals as shells and debuggers
    # report them, an allocator's OOM message pasted without its first words; PyTorch's
    # internal asserts, libc++'s terminate (macOS), a TensorFlow op that failed with an error
    # status (not the end of a dataset: OUT_OF_RANGE), and the error lines of command-line
    # tools that stop there (Slurm, the Docker daemon, Rust/Go launchers such as TGI's,
    # llama.cpp's model loader); PyTorch 0.x/1.x's and Torch7's THC errors (`cuda runtime error (N) : ...`,
    # `cublas runtime error : ...`, pasted without their `RuntimeError:`); an error status of ONNX Runtime (common/status.cc
    # Status::ToString, also when a trainer logs it instead of raising); a Ray actor that died
    # (ray/exceptions.py ActorDiedError's message, also in a log line); c10d's NCCL check
    # (`NCCL error in: <file>:<line>, <NCCL's result string>`, C10D_NCCL_CHECK), pasted without its
    # exception class; Hydra's closing line after the error that ended the app
    # (hydra/_internal/utils.py run_and_report, then exit 1), also after Hydra's own config errors
    # that print no traceback; the OpenMP runtime's fatal message (Intel's and LLVM's libomp/libiomp5:
    # __kmp_fatal prints the `Fatal` format of i18n/en_US.txt, `OMP: Error #%1$d: %2$s`, then
    # aborts; its warnings are `OMP: Warning #N:`), such as two OpenMP runtimes in one process
    # (`OMP: Error #15: Initializing libiomp5md.dll, but found libiomp5md.dll already initialized.`);
    # torch.linalg's check of a LAPACK/cuSOLVER result (`linalg.eigh: The algorithm
    # failed to converge ...`, _linalg_check_errors in BatchLinearAlgebra.cpp), pasted without
    # `torch._C._LinAlgError:`; a shell that could not find a command (`bash: orted: command
    # not found` from an MPI launcher), a make recipe that failed, an MPI launcher that could
    # not start the job, torch.multiprocessing.spawn's report of a child's exception, the exit
    # handler of SYCL code migrated from CUDA by DPCT (llama.cpp's SYCL backend), a script's
    # argparse refusing its arguments (`train.py: error: unrecognized arguments: --local-rank=0`,
    # also under another prog name, then exit status 2); Rust and Go panics (tokenizers, TGI's
    # router, Ollama), a Windows crash faulthandler reports, and a build that failed (pip, ninja,
    # the linker, CMake, a compiler error in a C++/CUDA extension); Keras stopping fit() because
    # its input ran short of the steps it was asked for (tf.keras data_adapter.py DataHandler.catch_stop_iteration, TF1
    # training_arrays/training_distributed, TensorFlow.js fitDataset): only the forms that name
    # the batch count, which are printed when the step count was known and the data ran out
    # early (Keras 3's bare `Your input ran out of data; interrupting training.` also ends every
    # pass over a finite dataset of a healthy run).
    InternalPattern(
        Internal.fatal_line,
        r"(?:terminate called (?:after throwing|recursively|without an active exception)|\bwhat\(\): |"
        r"(?:(?:^|[\s:\]\[])F\d{3,8} \d\d:\d\d:\d\d|F0000 00:00:\d{9,12})\.\d{1,9}(?: {1,8}\d{1,9})? [^\s\]]{1,200}\.(?:cc|cpp|h|c|cu|cuh|hpp):\d{1,6}\] |"
        r": F [\w/\\.:-]+\.(?:cc|cpp|h):\d+\] |Check failed: |"
        r"(?:^|[\s:\]\[])E(?:\d{4} \d\d:\d\d:\d\d\.\d+(?: +\d+)?)? ?[^\s\]]*\.(?:cc|cpp|h|c):\d+\] |"
        r"NCCL WARN [^\n]*(?:[Ff]ail|[Ee]rror|[Aa]bort|[Tt]imeout)|Assertion `[^`\n]*`(?: failed|\s*$)|"
        # NCCL_DEBUG=INFO traces a failed call up the stack, one `<file>.cc:<line> -> <ncclResult_t>` line a
        # frame: 1 unhandled CUDA error, 2 system error, 4 invalid argument, 5 invalid usage, 6 remote error.
        # Not 3 (internal error): a healthy run's teardown prints `misc/socket.cc:<line> -> 3` chains when
        # a peer closes first. Not 7 (ncclInProgress). Matched from the file name on, not from `NCCL INFO`:
        # that literal leads most lines of an NCCL_DEBUG=INFO log, and a bounded repeat started at each of
        # them cost a fifth of the Hyperscan pass over the bench's metric-dense log.
        r"[\w/-]\.(?:cc|h):\d{1,6} -> [124-6](?:\s|$)|"
        r"\bIllegal instruction\b|\bBus error\b|Floating point exception|received signal SIG[A-Z]+|"
        r"(?:^|[\s:\]])(?:CUDA|HIP) error: |\bcuda runtime error \(\d{1,4}\) : |\bcublas runtime error : |\bTried to allocate \d[\d.]* ?[KMGT]?i?B\b|"
        r"INTERNAL ASSERT FAILED at |libc\+\+abi: terminating|"
        r"OP_REQUIRES failed at \S+ : (?:INTERNAL|RESOURCE_EXHAUSTED|INVALID_ARGUMENT|NOT_FOUND|FAILED_PRECONDITION|"
        r"UNIMPLEMENTED|UNKNOWN|DATA_LOSS|Internal|Resource exhausted|Invalid argument|Not found|Failed precondition|"
        r"Unimplemented|Unknown)|"
        r"(?:^|[\s|\]])(?:sbatch|srun|salloc|slurmstepd): error: |^Error response from daemon: |"
        r"(?:^|[|\]>] ?)Error: [A-Za-z]|: error loading model: |"
        r"\bpanicked at\b|(?:^|[|\]>] ?)panic: |Windows fatal exception: |"
        # macOS's crash report names the thread that crashed above its stack (`Thread 4 Crashed::  Dispatch queue: ...`)
        r"^Thread \d{1,4} Crashed::|"
        r"\b(?:ba|z|da)?sh(?:: line \d{1,6})?: [^\s:]{1,200}: command not found|"
        r"\[ONNXRuntimeError\] : \d{1,3} : [A-Z_]{2,40} : |actor died unexpectedly before finishing this task|"
        # a failed test of googletest or Python's unittest (a build or environment check run as tests)
        r"^\[  FAILED  \] \w|^(?:ERROR|FAIL): test\w{0,100} \(|"
        # compute-sanitizer (and cuda-memcheck) reports, each line under `========= `
        r"={9} {1,8}(?:Invalid __\w{1,10}__ |Uninitialized __\w{1,10}__ memory read|Program hit cuda|ERROR SUMMARY: [1-9])|"
        r"\bNCCL error in: \S{1,300}:\d{1,6}, |\bFailed: (?:Cuda|NCCL|HIP|MPI) error \S{1,300}:\d{1,6} '|"
        r"\bOMP: Error #\d{1,4}: |" + TRIALS_UNFINISHED + "|"
        # LightGBM's fatal log line (Log::Fatal throws), and its command-line program's catch-all, which prints
        # `Met Exceptions:` and the message on the next line (src/main.cpp)
        r"\[LightGBM\] \[Fatal\] |^Met Exceptions:\s{0,8}$|"
        # Spark's scheduler gives up on a stage once a task failed spark.task.maxFailures times (TaskSetManager.scala
        # handleFailedTask); the job (a TensorFlowOnSpark, Horovod-on-Spark or MLlib training) fails with it
        r"\bTask \S{1,40} in stage \S{1,40} failed \d{1,5} times; aborting job|"
        # MXNet's Symbol.infer_shape prints this and the input shapes just before it re-raises the MXNetError
        r"\binfer_shape error\. Arguments:|"
        # MPICH's abort of an MPI call (`Abort(<code>) (rank 0 in comm 0): Fatal error in PMPI_Init_thread: ...`)
        r"\bFatal error in PMPI_\w{1,40}: |"
        # Open MPI's default error handler before it aborts (ompi/errhandler/errhandler_predefined.c), also
        # under mpirun's `[1,3]<stderr>:` tag
        r"(?:^|[\s:>\]])\*\*\* MPI_ERRORS_ARE_FATAL \(processes in this communicator will now abort|"
        # native crash handlers of Google's runtimes (libtpu/XLA: `*** SIGABRT received by PID 12 (TID 12) on cpu 3 from
        # PID 12; stack trace: ***`) and TensorFlow's (`*** Received signal 11 ***`); tcmalloc reporting a large
        # allocation that returned NULL (`tcmalloc: large alloc 377396076847104 bytes == (nil) @ ...`)
        r"^\*\*\* SIG[A-Z]{3,6} received by PID \d{1,10} \(TID \d{1,10}\)|^\*\*\* Received signal \d{1,2} \*\*\*|"
        r"\btcmalloc: large alloc \d{1,20} bytes == \(nil\)|"
        # TF 1.x's Coordinator stopping the input threads on an error (the step's re-raise may be cut from the paste;
        # not CancelledError, which queue runners report while a healthy run shuts down), and Jupyter's kernel
        # restarter after the kernel process died (Colab's runtime log)
        r"\bError reported to Coordinator: <class 'tensorflow\.python\.framework\.errors_impl\.(?:InvalidArgument|"
        r"ResourceExhausted|Internal|DataLoss|NotFound|FailedPrecondition|Unknown|Unavailable|PermissionDenied|"
        r"Unimplemented)Error'>|\bKernelRestarter: restarting kernel \(\d{1,3}/\d{1,3}\)|"
        # TensorFlow's summary of a failed step's grouped status (`2 root error(s) found.`, StatusGroup in its
        # platform status code), printed only inside the error a step raises; the paste may hold it without the
        # exception line above it (a notebook's cell output, an estimator's `Error recorded from ...`)
        r"(?:^|[\s:])\d{1,4} root error\(s\) found\.|"
        # ... and the numbered statuses it lists (`  (0) Resource exhausted: OOM when allocating ...`; newer releases print
        # the codes' canonical names, `(0) RESOURCE_EXHAUSTED: ...`), pasted without the summary line; not CANCELLED or OUT_OF_RANGE
        r"^\s{0,8}\(\d{1,3}\) (?:Invalid argument|Resource exhausted|Internal|Not found|Failed precondition|Unimplemented|"
        r"Unknown|Data loss|Unavailable|Permission denied|Aborted|INVALID_ARGUMENT|RESOURCE_EXHAUSTED|INTERNAL|NOT_FOUND|"
        r"FAILED_PRECONDITION|UNIMPLEMENTED|UNKNOWN|DATA_LOSS|UNAVAILABLE|PERMISSION_DENIED|ABORTED): |"
        # the ssh client could not reach a node (an MPI, horovodrun or pdsh launcher's pre-check or remote start)
        r"\bssh: (?:Could not resolve hostname \S{1,200}: |connect to host \S{1,200} port \d{1,5}: )|"
        # YOLOv5's and Ultralytics' exporters (`ONNX: export failure ❌ 2.0s: <the exception>`, try_export)
        r"\bexport failure \S{1,4} ?\d{1,6}\.\d{1,3}s: |"
        # wandb.init giving up on its server (the CommError it raises may not be in the paste)
        r"wandb: ERROR Run initialization has timed out after |"
        # wandb < 0.10's wandb.init when its background process did not come up (raises LaunchError)
        r"wandb: ERROR W&B process failed to launch, see: |"
        r"(?:^|[\s:\]])" + HYDRA_CLOSING + r" for a complete stack trace|"
        # Hydra refusing a command-line override (ConfigCompositionException, config_loader_impl.py), when the
        # paste stops before its closing line
        r"^Could not override '[^'\n]{1,200}'\.\s*$|"
        r": The (?:factorization could not be completed because the input is not positive-definite|"
        r"algorithm failed to converge because the input matrix is ill-conditioned|"
        r"diagonal element \d{1,9} is zero, the (?:inversion|solve) could not be completed)|"
        r"\bmake(?:\[\d{1,3}\])?: \*\*\* (?:\[[^\]\n]{1,200}\] Error \d{1,3}|[^\n]{1,300}\.  Stop\.)|"
        # Paddle's launcher (paddle.distributed.launch, utils/launch_utils.py) when a trainer process exited non-zero
        r"\bABORT!!! Out of all \d{1,6} trainers, the trainer process with rank=\[|"
        r"\b(?:mpirun|mpiexec|prterun) was unable to |(?:^|-- )Process \d{1,6} terminated with the following error:|"
        # Open MPI's launcher could not start its daemon on a node (orte/mca/plm help-plm-base.txt)
        r"\bORTE was unable to reliably start one or more daemons|"
        # ... or one of its daemons could not reach another (help-oob-tcp.txt; a firewall between the hosts)
        r"^A process or daemon was unable to complete a TCP connection|"
        r"Exception caught at file:\S{1,300}, line:\d{1,6}|(?:^|[\s\]>:])\w[\w.-]{0,100}\.py: error: |"
        # argparse's error() under a prog name the script set (`ArgumentParser(prog=...)`), known by argparse's own
        # messages (Lib/argparse.py); under the default prog (the script's file name) the `.py: error: ` above is enough
        r"(?:^|[\s\]>:])\w[\w.-]{0,100}: error: (?:unrecognized arguments: |the following arguments are required: |"
        r"one of the arguments |ambiguous option: |argument -{0,2}\w)|"
        r"error: subprocess-exited-with-error|ERROR: Failed building wheel for |ninja: build stopped: |"
        r"collect2: error: |CMake Error at |"
        r"ran out of data; interrupting (?:training|evaluation)\. Make sure that your [^\n]{0,160}\(in this case, \d{1,15} batches\)|"
        r"ran out of data after \d{1,15} batches; interrupting training|\.(?:cu|cuh|cpp|cc|c|h|hpp)(?::\d+:\d+: |\(\d+\): )(?:fatal )?error: )",
        256,
        context=True,
    ),
    # Notices healthy runs print when an optional component is absent: NCCL's probes for its
    # external plugins (network, tuner, profiler, ...: `<KIND>/Plugin: Could not find: ...`, and
    # the plugin library's own dlopen error when a paste keeps only that line),
    # JAX's logged probe of backends it was not built for (not the
    # RuntimeError of a backend asked for; some loggers print the source location last,
    # `(<pid>:xla_bridge.py:<line>)`, others the module, `jax._src.xla_bridge | Unable ...`, a bare
    # format only the message, which then opens the line),
    # libibverbs' probe of provider drivers, torch's CUDA
    # probe on a machine without a driver (a warning; using CUDA afterwards raises its own
    # error), and TF's and XLA's cuInit probe on a host without a usable CUDA driver (a TPU or
    # CPU host: `failed call to cuInit: ... UNKNOWN ERROR (303)` or `CUDA_ERROR_NO_DEVICE`,
    # logged at E level while the run goes on without the GPU). Their `cannot open shared
    # object file` or `Found no NVIDIA driver` is not a failure: analyze/salient.py excuses
    # these lines.
    InternalPattern(
        Internal.benign_notice,
        r"(?:NCCL INFO (?:NET|GIN|RMA|TUNER|PROFILER|ENV)/Plugin|xla_bridge\S{0,12}(?: [|-])? ?Unable to initialize backend '|"
        r"^Unable to initialize backend '[^'\n]{1,40}': |"
        r"Unable to initialize backend '[^'\n]{1,40}'[^\n]{0,400}\(\d{1,9}:xla_bridge\.py:\d{1,5}\)|"
        r"libnccl-(?:net|tuner|profiler|env)\S{0,40}: cannot open shared object file|"
        r"libibverbs: Warning: couldn't load driver|UserWarning: CUDA initialization: Found no NVIDIA driver|"
        r"failed call to cuInit: (?:INTERNAL: CUDA error: Failed call to cuInit: )?(?:UNKNOWN ERROR \(303\)|CUDA_ERROR_NO_DEVICE\b)|"
        # Inductor's max-autotune logs (at E level) each candidate kernel that failed to compile or run,
        # and skips it (torch/_inductor/select_algorithm.py; NoValidChoicesError if none is left);
        # `conda activate` in a shell conda was not initialised for prints its error and the job goes on;
        r"select_algorithm\.py:\d{1,5}\] (?:\[[^\]\n]{1,40}\] )?(?:Runtime error during autotuning|No valid triton configs|Ignoring this choice)|"
        r"CommandNotFoundError: Your shell has not been properly configured to use 'conda activate'|"
        # xFormers probing for Triton at import, older releases (a warning; xFormers runs without it;
        # newer ones log the ImportError's traceback, which python-package-missing's excludes cover)
        r"^Error caught was: No module named 'triton'|"
        # vLLM's version.py without its generated _version module (a source checkout): it warns
        # `Failed to read commit hash:` with the import error and falls back to version "dev"
        r"(?:^|\) |\]: ?)No module named 'vllm\._version'\s*$|"
        # XLA's slow-compile alarm logs at E level while compilation goes on (xla/service/slow_operation_alarm.cc)
        r"slow_operation_alarm\.cc:\d{1,5}\] (?:Constant folding an instruction is taking > |The operation took \d|"
        r"Very slow compile\?))",
        256,
    ),
    # TORCH_LOGS=graph_breaks prints a Dynamo traceback under this header while the run goes on;
    # so does Dynamo when it falls back to eager for a frame it failed to compile (suppress_errors:
    # torch/_dynamo/exc.py format_error_msg, `WON'T CONVERT <name> <file> line <n>`).
    InternalPattern(Internal.graph_break,
                    r"(?:\[__graph_breaks\]|\.__graph_breaks: |Graph break in user code at |Graph Break Reason: |"
                    r"WON'T CONVERT \S)", 256),
    InternalPattern(Internal.agent_failure, r"failed \(exitcode: -?\d+\) local_rank: \d+", 1024),
    # torchrun's agent (elastic/multiprocessing/api.py) and mp.spawn (multiprocessing/spawn.py) SIGKILL a
    # worker that outlived their SIGTERM; the signals print as numbers, `Signals.SIGTERM` or `SIGTERM `.
    InternalPattern(Internal.agent_forced_kill,
                    r"Unable to shutdown process \d+ via [\w.]{1,20} ?, forcefully exiting via (?:9\b|(?:Signals\.)?SIGKILL)",
                    256),
    # Keyed on `(local_rank: N)`: a fast pattern led by `rank` made Hyperscan check every
    # `[rankN]:` prefix of a console log (a fifth of the scan of the bench's console log).
    InternalPattern(Internal.report_rank, r"\(local_rank: \d+\)", 1024,
                    confirm=r"(?m)(?:^|[\s:>\]])rank\s*: \d+ \(local_rank: \d+\)"),
    # A loss is also printed as its cross-entropy or perplexity (OpenNMT-py's `ppl:   nan; xent:  nan;`).
    # Keyed on the non-finite value, not on "loss": loss is on every step line and "inf" in
    # every INFO line, and making Hyperscan check each of those halves the scan's speed.
    # `nan` after a blank must not follow "of": Megatron prints `number of nan iterations:`
    # on every iteration line, and each such match would be confirmed in Python.
    *(
        InternalPattern(
            Internal.metric_nonfinite,
            fast,
            256,
            context=True,  # a guard's notice that it skipped the step may follow (analyze/curves.skipped_by_guard)
            confirm=r"(?i)(?:(?:" + LOSS_TERM_NAMES + r")" + LOSS_AGGREGATE + r"|\bxent|\bppl|perplexity|grad[_ ]?norm)['\"]?\s*(?:is\s+)?[:=]?\s*['\"]?\[?[-+]?(?:nan|inf)\b"
                    r"|(?m:^)" + GBM_EVAL_NAN,
        )
        for fast in (r"(?i)(?:[:='\"+\[-]|(?:^|[^\sf]|[^\so]f)\s+)nan\b", r"[\s:='\"+-](?:inf|Inf)(?:inity)?\b")
    ),
)
