"""Facts of the run, read once from the lines the scanner kept: which stack and launcher,
which collective backend, in which phase it failed, precision, platform, world size, and
whether every rank failed the same way.

Nothing here reads the file again: the inputs are the kept lines (hits with their context,
each source's tail) and the metric points, all bounded in number and length. The report
shows these facts and chooses the fix variant that fits them (report/fixes.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from traintriage.analyze.observations import Observation, same_rank_context
from traintriage.analyze.scoring import Candidate
from traintriage.kb.schema import Entry, Phase
from traintriage.match.scan import SourceScan
from traintriage.parse.metrics import MetricPoint
from traintriage.parse.traceback import Traceback

MAX_TEXT = 2000
"""Each kept line is looked at up to this many characters (lines can be megabytes long)."""

# (value, pattern) in order of precedence: the first stack listed that matches is the most
# specific one, but every match is kept (DeepSpeed runs under the HF Trainer, FSDP under torchrun).
_STACKS: tuple[tuple[str, str], ...] = (
    ("deepspeed", r"/deepspeed/|\bDeepSpeed\b|\bdeepspeed\.(?:ops|runtime|launcher)|\[deepspeed\]"),
    ("fsdp", r"/fsdp/|FullyShardedDataParallel|fully_shard\b"),
    ("megatron", r"/megatron/|\bMegatron(?:-LM| Core)?\b"),
    ("hf-trainer", r"/transformers/trainer\.py|\bTrainer\.train\b|\btrain_runtime\b"),
    ("accelerate", r"/accelerate/|\baccelerate launch\b|Accelerator\("),
    ("lightning", r"/(?:pytorch_)?lightning/|\bLightning(?:Module)?\b|`Trainer\.fit`"),
    ("vllm", r"/vllm/|\bvLLM\b|\bvllm\.(?:engine|entrypoints)"),
    ("jax", r"/jax/|/jaxlib/|\bXlaRuntimeError\b|\bjax\.errors\b"),
    ("tensorflow", r"/tensorflow/|\btensorflow/(?:core|compiler|tsl)/|\btf\.errors\.|\btensorflow\.python\."),
    ("llama-cpp", r"\bllama_(?:model_load|new_context|init_from)|\bggml_(?:cuda|backend)|\bllama\.cpp\b"),
    ("lua-torch", r"\.lua:\d+:|\bluajit\b|/torch/install/share/lua/"),
    ("ddp", r"DistributedDataParallel|/nn/parallel/distributed\.py|\bReducer\b"),
    ("pytorch", r"/torch/|\btorch\.\w|\[rank\d+\]:|\bProcessGroup(?:NCCL|Gloo)\b"),
)
_LAUNCHERS: tuple[tuple[str, str], ...] = (
    ("torchrun", r"torch\.distributed\.(?:elastic|run|launch)|/torch/distributed/elastic/|\btorchrun\b|"
                            r"(?m:^\[(?:default|worker)\d+\]:)|ChildFailedError"),
    ("deepspeed", r"deepspeed\.launcher|\[launch\.py:\d+:main\]|runner\.py:\d+:main\]"),
    ("accelerate", r"\baccelerate launch\b|accelerate/commands/launch\.py"),
    ("slurm", r"\bsrun: |slurmstepd: |\bSLURM_JOB_ID\b"),
    ("mpirun", r"\bmpirun\b|<std(?:out|err)>:|\bPRRTE\b|\bORTE\b"),
)
# PyTorch's own marks, for a log that also names Lua Torch (whose paths and `torch.CudaTensor`
# match the loose pattern above).
_PYTORCH_STRICT = (r"(?:site|dist)-packages/torch/|\[rank\d+\]:|\bProcessGroup(?:NCCL|Gloo)\b|\btorch\.distributed\b|"
                   r"\btorch\.(?:cuda\.)?OutOfMemoryError\b|\btorch\.nn\.modules\b")
_TORCH_BASED = frozenset({"ddp", "fsdp", "deepspeed", "hf-trainer", "accelerate", "lightning", "megatron", "vllm"})
"""Stacks that run on PyTorch: a run on one of them is a PyTorch run for `when: {stack: pytorch}`."""

# Remedies the log shows in use, each (name, pattern, advice): a line matching the pattern
# counts unless it also matches the advice pattern - the message that recommends the remedy
# (the OOM hint naming expandable_segments, NCCL errors saying "run with NCCL_DEBUG=INFO").
_REMEDIES: tuple[tuple[str, str, str | None], ...] = (
    # torch/autograd/anomaly_mode.py warns on entering detect_anomaly(); with anomaly mode on,
    # python_anomaly_mode.cpp prints the forward traceback and the engine's NaN check raises.
    ("anomaly-mode", r"Anomaly Detection has been enabled\.|Error detected in \w+\. (?:Traceback of forward call|No forward pass information)|"
                     r"Function '\w+' returned nan values in its \d+(?:st|nd|rd|th) output", None),
    # ... and on during the forward pass too: the op's forward traceback was recorded (without it
    # the warning says `No forward pass information available`).
    ("anomaly-mode-forward", r"Traceback of forward call that (?:caused|induced)", None),
    # ProcessGroupGloo::monitoredBarrier's messages, or the call in a traceback.
    ("monitored-barrier", r"monitoredBarrier|\bin monitored_barrier\b|\bmonitored_barrier\(", None),
    # ProcessGroupNCCL's start-up line (`TORCH_NCCL_ASYNC_ERROR_HANDLING: 3`), an environment
    # dump, or the teardown it causes on a watchdog error.
    ("async-error-handling", r"\b(?:TORCH_)?NCCL_ASYNC_ERROR_HANDLING\s?[:=]\s?['\"]?[123]\b|"
                             r"we are taking the entire process down", None),
    # INFO-level NCCL lines are printed only with NCCL_DEBUG=INFO (or TRACE).
    ("nccl-debug-info", r"NCCL INFO |\bNCCL_DEBUG\s?[:=]\s?['\"]?(?:INFO|TRACE)\b", r"run with NCCL_DEBUG"),
    # torch 2.15's OOM message says `expandable_segments is enabled.` when the setting is on.
    ("expandable-segments", r"expandable_segments\s?:\s?['\"]?True|expandable_segments is enabled\.",
     r"try setting|to avoid fragmentation|If reserved but unallocated"),
)

_NCCL = r"\bNCCL\b|ProcessGroupNCCL|\bnccl[A-Z]\w+|backend\s?[=:]\s?['\"]?nccl\b"
_GLOO = r"(?i:\bgloo\b)|ProcessGroupGloo|backend\s?[=:]\s?['\"]?(?i:gloo)\b"
_MPI = r"ProcessGroupMPI|backend\s?[=:]\s?['\"]?mpi\b|\bMPI_ERR_\w+"
_RCCL = r"\bRCCL\b|librccl"

_DTYPES: tuple[tuple[str, str], ...] = (
    ("fp8", r"\bfp8\s?[=:]\s?True|\bFloat8_e4m3|mixed_precision\s?[=:]\s?['\"]?fp8"),
    ("bf16", r"\bbf16\s?[=:]\s?True|torch_dtype\s?[=:]\s?['\"]?(?:torch\.)?bfloat16|"
                        r"mixed_precision\s?[=:]\s?['\"]?bf16|CUDA_R_16BF|\bBFloat16\b|cublasLt\w*bf16"),
    ("fp16", r"\bfp16\s?[=:]\s?True|torch_dtype\s?[=:]\s?['\"]?(?:torch\.)?float16|"
                        r"mixed_precision\s?[=:]\s?['\"]?fp16|CUDA_R_16F\b|\bHgemm\b|'Half'|\bc10::Half\b"),
    ("fp32", r"\bcublasSgemm\w*|CUDA_R_32F\b.*CUDA_R_32F|torch_dtype\s?[=:]\s?['\"]?(?:torch\.)?float32\b"),
)
_PLATFORMS: tuple[tuple[str, str], ...] = (
    ("windows", r"\b[A-Z]:\\\\?(?:Users|Program|Python|ProgramData|Anaconda|conda)|\.dll\b|\bWinError\b"),
    ("macos", r"/Users/[^/\s]+/|\bDarwin\b|\bmacOS\b|/Library/Frameworks/|\bMPS backend\b"),
    ("rocm", r"\bHIP error\b|\bROCm\b|\bhipError\w+|\bgfx\d{3,4}\b|AMD Instinct"),
    ("kubernetes", r"\bkubelet\b|\bOOMKilled\b|\bCrashLoopBackOff\b"),
)
_WORLD = r"(?:\bworld_size\s?[=:]\s?|WORLD_SIZE[=:]\s?|[Ww]orld size:? )(\d{1,6})\b"
_NPROC = r"--nproc[-_]per[-_]node[= ](\d{1,4})\b"
_NNODES = r"--nnodes[= ](\d{1,5})\b"
_ZERO = r"ZeRO [Ss]tage (\d)|\"stage\":\s?(\d)|zero_stage\s?[=:]\s?(\d)"

# Phase from the frames of the failing traceback: function names first, then the code line.
_PHASE_FUNCTIONS: tuple[tuple[str, frozenset[str], str], ...] = (
    ("checkpoint", frozenset({"save_checkpoint", "_save_checkpoint", "save_model", "save_pretrained", "save_state",
                              "_save", "save", "save_file", "consolidate_state_dict", "load_checkpoint",
                              "_load_from_checkpoint", "resume_from_checkpoint", "load_state"}),
     "the traceback passes through checkpoint saving or loading"),
    ("eval", frozenset({"evaluate", "evaluation_loop", "prediction_step", "prediction_loop", "validation_step",
                        "validate", "eval_step", "_run_evaluate", "run_evaluation", "_evaluation_step",
                        "evaluation_step", "test_step", "generate"}),
     "the traceback passes through evaluation"),
    ("model-load", frozenset({"from_pretrained", "_load_pretrained_model", "load_state_dict", "dispatch_model",
                              "load_checkpoint_and_dispatch", "_move_model_to_device", "_configure_distributed_model",
                              "_wrap_model", "prepare_model", "_apply", "to_empty", "_lazy_init"}),
     "the failure happened while the model was being loaded or moved to the GPU"),
    ("step", frozenset({"backward", "training_step", "train_step", "_inner_training_loop", "step", "optimizer_step",
                        "_engine_run_backward", "forward", "run_backward", "fit_loop", "training_loop"}),
     "the failure happened inside a training step"),
    ("setup", frozenset({"init_process_group", "_rendezvous", "next_rendezvous", "_store_based_barrier",
                         "initialize_model_parallel", "_find_and_load", "import_module", "_call_with_frames_removed"}),
     "the failure happened while the job was being set up"),
)
_FIRST_COLLECTIVE = re.compile(r"WorkNCCL\(SeqNum=1, ")
_STEP_LINE = re.compile(r"\b(?:loss|step|iter(?:ation)?)\b[\s:=]+\d", re.I)
_MOVE_MODEL = re.compile(r"\b(?:model|net|module|self\.model)\w*\s*(?:=\s*\w+\s*)?\.(?:to|cuda)\(")
# Progress lines of weight loading (HF `from_pretrained`, its index file, vLLM, DeepSpeed): the
# phase of a failure that has no traceback (a process killed by the OOM killer) when the
# lines just before it are these.
_LOADING_LINE = re.compile(r"Loading checkpoint shards|loading weights file|Loading safetensors checkpoint shards|"
                           r"Loading model weights|Loading pipeline components")
_ENTRY_PHASE = {Phase.launch: "setup", Phase.init: "setup", Phase.checkpoint: "checkpoint", Phase.eval: "eval",
                Phase.forward: "step", Phase.backward: "step", Phase.optimizer: "step", Phase.data: "step"}
_MESSAGE_DIGITS = re.compile(r"0x[0-9a-fA-F]+|\d+")
_REPORT_RANK = re.compile(r"\brank\s*: (\d+) \(local_rank: \d+\)")


@dataclass(frozen=True)
class RunFacts:
    stack: list[str] = field(default_factory=list)
    """Most specific first (`deepspeed`, `hf-trainer`, `pytorch`)."""
    launcher: str | None = None
    backend: str | None = None
    phase: str | None = None
    phase_reason: str | None = None
    step: int | None = None
    """The last training step logged before the failure, when the log shows steps."""
    dtype: str | None = None
    platform: str | None = None
    zero_stage: int | None = None
    world_size: int | None = None
    single_node: bool | None = None
    ranks_failed: int = 0
    all_ranks_same: bool | None = None
    """Every rank of the run failed with the same message at the same frame (code or environment)."""
    already: list[str] = field(default_factory=list)
    """Remedies the log shows in use (`anomaly-mode`, `nccl-debug-info`, ...): advice to turn
    them on does not fit this run."""

    def value(self, name: str) -> list[str]:
        """The fact's values as strings, for matching `when` conditions; [] when unknown."""
        if name == "phase" and self.phase == "first-step":
            return ["first-step", "step"]
        if name == "stack":
            implied = ["pytorch"] if set(self.stack) & _TORCH_BASED and "pytorch" not in self.stack else []
            return list(self.stack) + implied
        if name in ("already", "not_already"):
            return list(self.already)
        value = getattr(self, name)
        return [] if value is None else [str(value).lower() if isinstance(value, bool) else str(value)]


MAX_HITS = 200
"""Hits read per source from each end: start-up facts sit near the first hits, the failure near the last."""
MAX_CHARS = 4_000_000
"""Total characters read, whatever the hits' context holds (a 10 GB log keeps thousands of hits)."""


def kept_texts(scans: list[SourceScan]) -> list[str]:
    """The lines the scanner kept (matches, their context, the tails), each line once and
    capped, the first and last hits of each source, within a fixed budget."""
    seen: dict[str, None] = {}
    total = 0
    for scan in scans:
        hits = scan.hits if len(scan.hits) <= 2 * MAX_HITS else scan.hits[:MAX_HITS] + scan.hits[-MAX_HITS:]
        groups = [[hit.text, *hit.before, *hit.after] for hit in hits] + [scan.tail]
        for group in groups:
            for line in group:
                text = line[:MAX_TEXT]
                if text not in seen:
                    seen[text] = None
                    total += len(text)
            if total > MAX_CHARS:
                return list(seen)
    return list(seen)


def run_facts(
    scans: list[SourceScan],
    root: Candidate | None,
    entry: Entry | None,
    traceback: Traceback | None,
    points: list[MetricPoint],
    seen_ranks: set[int],
) -> RunFacts:
    texts = kept_texts(scans)
    joined = "\n".join(texts)
    stack = [name for name, pattern in _STACKS if _rx(pattern).search(joined)]
    if "lua-torch" in stack and "pytorch" in stack and not _rx(_PYTORCH_STRICT).search(joined):
        stack.remove("pytorch")
    launcher = next((name for name, pattern in _LAUNCHERS if _rx(pattern).search(joined)), None)
    phase, reason, step = _phase(root, entry, traceback, points)
    world = _world_size(joined, seen_ranks)
    nproc = _first_int(_NPROC, joined)
    nnodes = _first_int(_NNODES, joined)
    single = True if nnodes == 1 or (world is not None and nproc is not None and world == nproc) else \
        False if nnodes is not None and nnodes > 1 else None
    zero_match = _rx(_ZERO).search(joined)
    zero = next((int(g) for g in zero_match.groups() if g), None) if zero_match else None
    same, failed = _all_ranks_same(root, traceback, world or (len(seen_ranks) or None))
    return RunFacts(stack=stack, launcher=launcher, backend=_backend(joined), phase=phase, phase_reason=reason,
                    step=step, dtype=_dtype(root, joined),
                    platform=next((name for name, p in _PLATFORMS if _rx(p).search(joined)), None), zero_stage=zero,
                    world_size=world, single_node=single, ranks_failed=failed, all_ranks_same=same,
                    already=remedies_in_use(texts, joined))


def remedies_in_use(texts: list[str], joined: str | None = None) -> list[str]:
    """The remedies some kept line shows in use; a line that only recommends one does not count."""
    joined = "\n".join(texts) if joined is None else joined
    found = []
    for name, pattern, advice in _REMEDIES:
        # The lines holding a match, found in the joined text: searching every kept line on its
        # own cost a search per line (13,000 on a fleet of small logs) for each remedy.
        for match in _rx(pattern).finditer(joined):
            start = joined.rfind("\n", 0, match.start()) + 1
            stop = joined.find("\n", match.start())
            if advice is None or not _rx(advice).search(joined[start : stop if stop >= 0 else len(joined)]):
                found.append(name)
                break
    return found


def _dtype(root: Candidate | None, joined: str) -> str | None:
    """The precision of the failing operation when its own lines name it (`cublasSgemm` is an
    fp32 GEMM even in a bf16 run), else the run's configured precision."""
    failing = "\n".join(o.hit.text[:MAX_TEXT] for o in (root.roots if root else [])[:8])
    for text in (failing, joined):
        found = next((name for name, pattern in _DTYPES if _rx(pattern).search(text)), None)
        if found is not None:
            return found
    return None


def _backend(joined: str) -> str | None:
    for name, pattern in (("rccl", _RCCL), ("nccl", _NCCL), ("gloo", _GLOO), ("mpi", _MPI)):
        if _rx(pattern).search(joined):
            return name
    return None


@cache
def _rx(pattern: str) -> Any:
    """RE2 for the patterns run over all kept lines: linear time, and alternations of
    literals stay fast (Python's re tries each one at every position). Imported on the
    failure path only, like everything that runs after a root cause is found."""
    import re2

    return re2.compile(pattern)


def _first_int(pattern: str, text: str) -> int | None:
    match = _rx(pattern).search(text)
    return int(match.group(1)) if match else None


def _world_size(joined: str, seen: set[int]) -> int | None:
    stated = _first_int(_WORLD, joined)
    if stated is not None and stated > 0:
        return max(stated, max(seen) + 1 if seen else 0)
    return max(seen) + 1 if len(seen) > 1 else None


def _phase(
    root: Candidate | None, entry: Entry | None, traceback: Traceback | None, points: list[MetricPoint]
) -> tuple[str | None, str | None, int | None]:
    """(phase, why, last step logged before the failure)."""
    first = root.first if root else None
    before = [p for p in points if first is None or (p.source, p.line) < (first.hit.source, first.hit.line)]
    steps = [p.step for p in before if p.step is not None]
    last_step = max(steps) if steps else None
    from_frames = _phase_from_frames(traceback, first)
    if from_frames is not None:
        phase, reason = from_frames
    elif root is not None and any(_loading_before(o) for o in root.roots[:8]):
        return "model-load", "the last lines before the failure show the model's weights being loaded", last_step
    elif root is not None and any(_FIRST_COLLECTIVE.search(o.hit.text) for o in root.roots[:8]):
        return "setup", "the collective that timed out was the first of the run (SeqNum=1)", last_step
    elif entry is not None and entry.phase in _ENTRY_PHASE:
        phase, reason = _ENTRY_PHASE[entry.phase], None
    elif last_step is not None:
        phase, reason = "step", "training steps were logged before the failure"
    else:
        return None, None, last_step
    if phase == "step":
        # A step or a loss on the failure's own line: that step ran (a progress bar's states share one line).
        at_failure = [p.step or p.loss is not None for p in points
                      if first is not None and (p.source, p.line) == (first.hit.source, first.hit.line)]
        if last_step is None and not before and points and not any(at_failure):
            return "first-step", "no training step was logged before the failure", None
        return "step", reason or "training steps were logged before the failure", last_step
    return phase, reason, last_step


def _phase_from_frames(traceback: Traceback | None, first: Observation | None) -> tuple[str, str] | None:
    if traceback is None or not traceback.frames:
        return None
    names = {frame.function for frame in traceback.frames}
    for phase, functions, reason in _PHASE_FUNCTIONS:  # most specific phase first: an eval inside train()
        if names & functions:
            if phase == "setup" and names & {"_find_and_load", "import_module"}:
                return "setup", "the failure happened while importing a module"
            return phase, reason
    code = _user_code_lines(first)
    if any(_MOVE_MODEL.search(line) for line in code):
        return "model-load", "the failure happened while the model was being moved to the GPU"
    return None


def _loading_before(line: Observation) -> bool:
    """The few lines printed just before a line of the failure report weight loading, and no
    training step came after them (a loading bar is the last thing the process printed)."""
    recent = [text[:MAX_TEXT] for text in line.hit.before[-6:]]
    return any(_LOADING_LINE.search(text) for text in recent) and not any(_STEP_LINE.search(text) for text in recent)


def _user_code_lines(first: Observation | None) -> list[str]:
    """Source lines printed under user frames of the traceback before the failing line."""
    if first is None:
        return []
    lines = first.hit.before
    code = []
    for index, text in enumerate(lines[:-1]):
        if 'File "' in text and "site-packages" not in text and "dist-packages" not in text:
            code.append(lines[index + 1][:MAX_TEXT])
    return code[-2:]


def _normalized(message: str) -> str:
    return _MESSAGE_DIGITS.sub("#", message.split("]:", 1)[-1]).strip()[:300]


def _all_ranks_same(root: Candidate | None, traceback: Traceback | None, world: int | None) -> tuple[bool | None, int]:
    """Whether every rank of the run raised the root cause with the same message (numbers
    aside) from the same innermost frame; (None, n) when the log cannot tell."""
    if root is None:
        return None, 0
    per_rank: dict[int, Observation] = {}
    reported: set[int] = set()
    for observation in sorted(root.roots, key=lambda o: o.sort_key):
        if observation.rank is not None:
            per_rank.setdefault(observation.rank, observation)
        else:
            reported.update(_reported_rank(observation))
    failed = len(per_rank) or len(reported)
    if not per_rank:
        return (False if failed and world is not None and failed < world else None), failed
    if failed < 2 or world is None or failed < world:
        return (False if failed >= 1 and world is not None and world > 1 else None), failed
    messages = {_normalized(o.message) for o in per_rank.values()}
    frames = {_innermost_frame(o) for o in per_rank.values()}
    return len(messages) == 1 and len(frames) == 1 and "" not in frames, failed


def _reported_rank(observation: Observation) -> set[int]:
    """The rank of an entry of torchrun's failure report (`rank : 13 (local_rank: 1)` just above)."""
    for text in observation.hit.before[-4:]:
        match = _REPORT_RANK.search(text)
        if match:
            return {int(match.group(1))}
    return set()


def _innermost_frame(observation: Observation) -> str:
    """The innermost `File "...", line N` of the failing thread on the line's rank: the last
    frame of the Python traceback printed before it, or for faulthandler's `Fatal Python error`
    the first frame of the current thread after it (most recent call first); "" when there is
    none (a watchdog thread's message)."""
    if "Fatal Python error" in observation.message:
        after = [p.message for p in same_rank_context(observation.hit.after, observation.rank)]
        start = next((i for i, text in enumerate(after) if text.startswith("Current thread")), 0)
        frames = [text for text in after[start:] if 'File "' in text][:1]
    else:
        frames = [p.message for p in same_rank_context(observation.hit.before, observation.rank) if 'File "' in p.message]
    return frames[-1].split('File "', 1)[1].strip() if frames else ""
