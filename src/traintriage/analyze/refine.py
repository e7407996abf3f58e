"""Refinements a regex cannot express: numbers inside a matched line, frames of a traceback.

CUDA OOM messages of every PyTorch version end with the same fragmentation hint, so
only the numbers tell a fragmented cache from a plain shortage: fragmentation needs idle
cached memory that covers the request and is a large share of what the process holds
or of the card ("reserved >> allocated"), on a card not mostly held by other processes.
And the catch-all for plain script errors only applies when the traceback passes through
the user's own code and no installed package below it raised the error: an exception raised
entirely inside installed tools (a launcher, a serving CLI), or by a library refusing what the
script gave it, is an unknown failure. And a Slurm step cancelled right after one of its tasks
exited with an error was cancelled because of that task (srun's kill-on-bad-exit), not by
an outside signal. And torch.save's iostream error after `File too large` (EFBIG) is a write past a
file-size limit, not a full disk; a JSONDecodeError outside any data reading is no corrupt sample. And
an Orbax restore whose differing paths are all under the optimizer state restored the model. And a
SIGABRT right after a glog/abseil fatal line is that line's abort, and a dataset build that failed on ENOSPC failed
for the disk. And tensors of different sizes inside an optimizer's own update are its restored state, not the model.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from traintriage.analyze.observations import traceback_before
from traintriage.analyze.scoring import Candidate
from traintriage.analyze.script_error import deliberate_check, missing_checkpoint_entry
from traintriage.kb.loader import KnowledgeBase
from traintriage.parse.traceback import Traceback

USER_CODE = "user-code-exception"
_INSTALLED = re.compile(r"[/\\](?:site|dist)-packages[/\\]")

_UNITS = {"bytes": 1 / 1024**2, "B": 1 / 1024**2, "KiB": 1 / 1024, "MiB": 1.0, "GiB": 1024.0, "TiB": 1024.0**2}
_SIZE = r"(\d+(?:\.\d+)?) ?(bytes|B|KiB|MiB|GiB|TiB)"
# Applied with .search to one OOM line (at most MAX_TEXT characters); no nested quantifiers.
_REQUESTED = re.compile(r"Tried to allocate " + _SIZE)
_TOTAL = re.compile(r"total capacity of " + _SIZE + r"|" + _SIZE + r" total capacity")
_FREE = re.compile(r"of which " + _SIZE + r" is free|" + _SIZE + r" free;")
_ALLOWED = re.compile(_SIZE + r" allowed;")
_THIS_PROCESS = re.compile(r"this process has " + _SIZE + r" memory in use")
_ALLOCATED_NEW = re.compile(r"Of the allocated memory " + _SIZE + r" is allocated by PyTorch")
_UNALLOCATED_NEW = re.compile(_SIZE + r" is reserved by PyTorch but unallocated")
_RESERVED_OLD = re.compile(_SIZE + r" reserved in total by PyTorch")
_ALLOCATED_OLD = re.compile(_SIZE + r" already allocated")

HELD_SHARE = 0.4
"""Reserved-but-unallocated memory that is this share of what the process holds is "reserved >>
allocated" in the allocator's own words (reserved at least 5/3 of allocated). At 0.25 (4/3), and a tenth
of the card, seven OOMs of the tune corpora with 15-38% of the cache idle were called fragmentation; their
labellers read five of them as a plain shortage and two as either."""
CARD_SHARE = 0.3
"""... or this share of the card (24 GiB idle in the cache of an 80 GiB card)."""


def _mib(match: re.Match[str] | None) -> float | None:
    """The first size a pattern captured (patterns with alternatives capture in either place)."""
    if match is None:
        return None
    groups = [g for g in match.groups()]
    for number, unit in zip(groups[::2], groups[1::2], strict=True):
        if number is not None and unit is not None:
            return float(number) * _UNITS[unit]
    return None


@dataclass(frozen=True)
class OomNumbers:
    """What an OOM message says, in MiB (None: not in this wording)."""

    requested: float
    unallocated: float
    held: float
    card: float | None
    free: float | None

    @property
    def others(self) -> float | None:
        """Memory other processes hold on the card (with the driver's own overhead)."""
        if self.card is None or self.free is None:
            return None
        return max(0.0, self.card - self.free - self.held)


def oom_numbers(text: str) -> OomNumbers | None:
    """The numbers of a PyTorch CUDA/HIP OOM line, new (2.x) or old (1.x) wording."""
    requested = _mib(_REQUESTED.search(text))
    unallocated = _mib(_UNALLOCATED_NEW.search(text))
    allocated = _mib(_ALLOCATED_NEW.search(text))
    if unallocated is not None:
        held = _mib(_THIS_PROCESS.search(text)) or (allocated or 0.0) + unallocated
    else:
        reserved, allocated = _mib(_RESERVED_OLD.search(text)), _mib(_ALLOCATED_OLD.search(text))
        if reserved is None or allocated is None:
            return None
        unallocated, held = max(0.0, reserved - allocated), reserved
    if requested is None or requested <= 0:
        return None
    card = _mib(_ALLOWED.search(text)) or _mib(_TOTAL.search(text))
    free = _mib(_FREE.search(text))
    return OomNumbers(requested=requested, unallocated=unallocated, held=held, card=card, free=free)


def is_fragmented(numbers: OomNumbers) -> bool:
    """The request failed although the cache holds more idle memory than it asked for, that idle
    memory is a large share of what the process holds or of the card, and the card is not
    mostly held by other processes (then freeing the card is the fix, not the allocator)."""
    if numbers.unallocated < numbers.requested:
        return False
    others = numbers.others
    if others is not None and others > numbers.held:
        return False
    large_for_process = numbers.held > 0 and numbers.unallocated >= HELD_SHARE * numbers.held
    large_for_card = numbers.card is not None and numbers.unallocated >= CARD_SHARE * numbers.card
    return large_for_process or large_for_card


def apply(candidates: dict[str, Candidate], kb: KnowledgeBase) -> frozenset[str]:
    """Refine the candidates in place; returns the classes the evidence refuted, which the similarity
    search may still offer but must not name the root cause."""
    before = set(candidates)
    _refine_oom(candidates, kb)
    _require_user_frame(candidates)
    _cancel_after_task_failure(candidates)
    _file_size_limit(candidates)
    _pickled_for_another_reason(candidates)
    _read_by_a_dataset(candidates, kb)
    _json_outside_the_data(candidates)
    _optimizer_tree_only(candidates, kb)
    _shape_error_in_optimizer_step(candidates, kb)
    _abort_of_a_failed_check(candidates)
    _dataset_build_out_of_space(candidates)
    _hub_rejected_the_request(candidates)
    return frozenset(before - set(candidates))


SPAWN_PICKLING = "pickling-error-spawn"
# Where a pickling error's traceback shows who pickled: torch.save's pickler, or torch.distributed's object
# collectives (`_object_to_tensor`), as against multiprocessing handing a process its arguments (the standard
# library's multiprocessing: torch.multiprocessing's `_wrap` runs every mp.spawn child's function, whatever it pickles).
_OTHER_PICKLER = re.compile(r"[/\\]torch[/\\](?:serialization|distributed[/\\]distributed_c10d)\.py$")
_PROCESS_START = re.compile(r"(?<![/\\]torch)[/\\]multiprocessing[/\\]|[/\\]torch[/\\]utils[/\\]data[/\\]dataloader\.py$")


def _pickled_for_another_reason(candidates: dict[str, Candidate]) -> None:
    """A pickling error whose traceback runs through torch.save or an object collective, and not through
    multiprocessing starting a process, is not the spawn start method's: the checkpoint or the object sent
    holds something pickle cannot store (a lambda, a lock), and another class or an unknown failure says so."""
    spawn = candidates.get(SPAWN_PICKLING)
    if spawn is None:
        return
    for observation in spawn.roots:
        traceback = traceback_before(observation)
        if traceback is None or not traceback.frames:
            return
        files = [frame.file for frame in traceback.frames]
        if any(_PROCESS_START.search(f) for f in files) or not any(_OTHER_PICKLER.search(f) for f in files):
            return
    del candidates[SPAWN_PICKLING]


CHECKPOINT_CORRUPT = "checkpoint-corrupt"
DATA_SAMPLE = "corrupt-data-sample"
# A Dataset handing out a sample: its own __getitem__ (not a module container's in torch.nn), or the
# DataLoader's fetcher that calls it; applied with .search to one frame's file.
_DATASET_FETCH = re.compile(r"[/\\]torch[/\\]utils[/\\]data[/\\]_utils[/\\]fetch\.py$")
_MODULE_CONTAINER = re.compile(r"[/\\]torch[/\\]nn[/\\]")


_JSON_SAMPLE = frozenset({"json-decode-error-sample"})
# Where a sample is read: the DataLoader's fetcher, a worker, or Hugging Face datasets' builders and loaders.
_DATA_READER = re.compile(r"[/\\]torch[/\\]utils[/\\]data[/\\]|[/\\]datasets[/\\]")


def _json_outside_the_data(candidates: dict[str, Candidate]) -> None:
    """A JSONDecodeError whose traceback never passes through a Dataset or a data loader (a config file, a
    tokenizer's JSON, a metrics file the script parses) is no corrupt sample: only the message is the same."""
    data = candidates.get(DATA_SAMPLE)
    if data is None or not data.signatures <= _JSON_SAMPLE:
        return
    for observation in data.roots:
        traceback = traceback_before(observation)
        if traceback is None or not traceback.frames or any(
                _DATA_READER.search(frame.file) or frame.function == "__getitem__" for frame in traceback.frames):
            return
    del candidates[DATA_SAMPLE]


def _read_by_a_dataset(candidates: dict[str, Candidate], kb: KnowledgeBase) -> None:
    """A file cut short or corrupt (a .npy, an HDF5 file, a torch.save'd tensor) that a Dataset was reading
    for a sample is a bad data file, not a bad checkpoint: the same messages name both, and only the
    traceback tells which file the run was reading."""
    corrupt = candidates.get(CHECKPOINT_CORRUPT)
    if corrupt is None or DATA_SAMPLE not in kb.entries or not corrupt.roots:
        return
    for observation in corrupt.roots:
        traceback = traceback_before(observation)
        if traceback is None or not any(
                _DATASET_FETCH.search(frame.file)
                or (frame.function == "__getitem__" and not _MODULE_CONTAINER.search(frame.file))
                for frame in traceback.frames):
            return
    del candidates[CHECKPOINT_CORRUPT]
    data = candidates.get(DATA_SAMPLE)
    if data is None:
        candidates[DATA_SAMPLE] = _as_class(corrupt, DATA_SAMPLE, "a Dataset was reading the file")
    else:
        data.score = max(data.score, corrupt.score)
        data.roots = sorted({id(o): o for o in data.roots + corrupt.roots}.values(), key=lambda o: o.sort_key)


# A task's non-zero exit as srun reports it, and a cancel that names no reason (`DUE TO TIME
# LIMIT` and the like are matched by other entries); applied with .search to one matched line.
_TASK_ERROR_EXIT = re.compile(r"srun: error: \S+: tasks? [0-9,\-]+: Exited with exit code [1-9]")
_BARE_CANCEL = re.compile(r"\*\*\* (?:JOB|STEP) \S+ (?:ON \S+ )?CANCELLED AT \S+ \*\*\*")


def _cancel_after_task_failure(candidates: dict[str, Candidate]) -> None:
    """`task 5: Exited with exit code 1` before `*** STEP ... CANCELLED AT ... ***` in the same
    log: srun cancelled the step because the task failed; the cancel is not the cause."""
    signal, exited = candidates.get("launcher-signal-received"), candidates.get("slurm-srun-task-exited")
    if signal is None or exited is None or not all(_BARE_CANCEL.search(o.hit.text) for o in signal.roots):
        return
    failures = [o for o in exited.roots if _TASK_ERROR_EXIT.search(o.hit.text)]
    first_cancel = min(signal.roots, key=lambda o: (o.hit.source, o.hit.line), default=None)
    if first_cancel is not None and any(f.hit.source == first_cancel.hit.source and f.hit.line < first_cancel.hit.line
                                        for f in failures):
        # Removed, not demoted: as a collateral entry it would still outrank the wrapper entry.
        del candidates["launcher-signal-received"]


SIGNAL = "worker-killed-by-signal"
# An abort as a crash handler or launcher reports it; applied with .search to one matched line.
_ABORT = re.compile(r"SIGABRT|\bAbort(?:ed)?\b|exitcode\s*:? -6\b|\(6\)")
# glog's and abseil's fatal log line (`F1107 09:12:41.907733 30211 file.cc:51] `, abseil before its clock is set:
# `F0000 00:00:1762145632.630296  135502 file.cc:226] `, TensorFlow's Python-side `...: F file.cc:227] `) and
# CHECK's own words; applied with .search to one line of the matched line's context.
_FATAL_CHECK = re.compile(r"(?:^|[\s:\]])F\d{4} \d\d:\d\d:\d{2,12}\.\d{1,9} |: F [\w/\\.:-]{1,300}\.(?:cc|cpp|h):\d{1,6}\] "
                          r"|\bCheck failed: ")


def _abort_of_a_failed_check(candidates: dict[str, Candidate]) -> None:
    """A SIGABRT reported just after a glog/abseil fatal line is that line's own abort: LOG(FATAL) and a failed
    CHECK print the message, then call abort(), whose signal the crash handler reports. The fatal line is the
    failure (a class that claims its words, or an unknown failure), not a signal from outside."""
    signal = candidates.get(SIGNAL)
    if signal is None or not signal.roots:
        return
    if all(_ABORT.search(o.hit.text) and any(_FATAL_CHECK.search(line) for line in o.hit.before)
           for o in signal.roots):
        del candidates[SIGNAL]


DISK_FULL = "disk-full"
_FILE_TOO_LARGE = re.compile(r"\bFile too large\b")
_NO_SPACE = re.compile(r"No space left on device|\bENOSPC\b|[Qq]uota exceeded")


DATASET_BUILD = "hf-dataset-generation-error"


def _dataset_build_out_of_space(candidates: dict[str, Candidate]) -> None:
    """datasets wraps whatever stopped a split's build in `DatasetGenerationError ... from e`; when the cause
    it names is ENOSPC, the disk filled up while the cache was written: the data files were fine."""
    build = candidates.get(DATASET_BUILD)
    if build is None or DISK_FULL not in candidates:
        return
    for observation in build.roots:
        traceback = traceback_before(observation)
        if traceback is None or traceback.chained_from is None or not _NO_SPACE.search(traceback.chained_from):
            return
    del candidates[DATASET_BUILD]


def _file_size_limit(candidates: dict[str, Candidate]) -> None:
    """EFBIG (errno 27, `File too large`) in the chain above every line disk-full matched: the write passed
    the process's file-size limit (`ulimit -f`) or the filesystem's largest file, and torch.save's iostream
    error (`unexpected pos N vs M`) only followed from it; with no ENOSPC anywhere near, the disk was not full."""
    disk = candidates.get(DISK_FULL)
    if disk is None:
        return
    if all(any(_FILE_TOO_LARGE.search(line) for line in o.hit.before)
           and not any(_NO_SPACE.search(line) for line in (*o.hit.before, o.hit.text)) for o in disk.roots):
        del candidates[DISK_FULL]


def _require_user_frame(candidates: dict[str, Candidate]) -> None:
    """The catch-all for script errors stands only on a traceback through the user's own code.
    A bare `TypeError: ...` line, or a traceback entirely inside installed packages, does not
    show whose code raised it (often a library refusing a model or option), so it stays an
    unknown failure with its lines instead of being called a bug in the script."""
    script_error = candidates.get(USER_CODE)
    if script_error is None:
        return
    for observation in script_error.roots:
        traceback = traceback_before(observation)
        if (traceback is not None and traceback.user_frame is not None and not _raised_in_a_package(traceback)
                and not deliberate_check(traceback, observation.message)
                and not missing_checkpoint_entry(traceback, observation.message)):
            return
    del candidates[USER_CODE]


def _raised_in_a_package(traceback: Traceback) -> bool:
    """An installed package raised it with its own `raise` statement, below the user's deepest
    frame: a library refusing the model, option or input it was given (transformers' `The model
    did not return a loss`), whose message names the cause - not a bug in the script. An
    `assert` of the package's own is the same refusal (torch's GradScaler: `No inf checks were
    recorded for this optimizer`). The standard library (json, pickle) does not count, nor a
    package frame that only passed the call on (`return forward_call(*args, **kwargs)`) or
    failed on a line of its own. A Cython frame (`h5py/h5f.pyx`, `pyarrow/error.pxi`) is a
    compiled extension's own code: whatever it raised, it raised."""
    deepest = traceback.frames[-1]
    if deepest.is_compiled_extension:
        return True
    return (not deepest.is_user_code and bool(_INSTALLED.search(deepest.file))
            and (deepest.code.startswith(("raise ", "assert ")) or _MESSAGE_LINE.match(deepest.code) is not None))


# Python before 3.8 shows the last line of a statement that spans lines: for a `raise X(\n f'...')` in a
# package, the line with the message's string literal (mmcv's registry: `f'{obj_type} is not in the
# {registry.name} registry')`). Applied with .match to one source line.
_MESSAGE_LINE = re.compile(r"""[fFrRbBuU]{0,2}['"]""")


def _refine_oom(candidates: dict[str, Candidate], kb: KnowledgeBase) -> None:
    oom = candidates.get("cuda-oom")
    fragmented = candidates.get("cuda-oom-fragmentation")
    if oom is None and fragmented is None:
        return
    lines = [o.hit.text for o in (oom.roots if oom else [])] + [o.hit.text for o in (fragmented.roots if fragmented else [])]
    readings = [n for n in (oom_numbers(t) for t in lines) if n is not None]
    if not readings:
        if fragmented is not None and oom is not None:
            fragmented.score = min(fragmented.score, oom.score - 0.05)
        return
    is_fragmented_now = any(is_fragmented(n) for n in readings)
    winner, loser = (fragmented, oom) if is_fragmented_now else (oom, fragmented)
    if winner is None:
        source = loser
        assert source is not None
        winner_id = "cuda-oom-fragmentation" if is_fragmented_now else "cuda-oom"
        if winner_id not in kb.entries:
            return
        winner = _as_class(source, winner_id, "compared reserved and requested memory")
        candidates[winner_id] = winner
    if loser is not None:
        winner.score = max(winner.score, loser.score)
        loser.score = winner.score * 0.5  # the numbers decided: the other reading is a weak rival


STATE_DICT = "state-dict-mismatch"
OPTIMIZER_STATE = "optimizer-state-mismatch"
# One path of Orbax's tree-mismatch report, alone on its line (`opt_state[0]:`, `1.opt_state.1:`,
# `params.Dense_0.kernel:`); its `- Source: ...` and `- Target: ...` lines follow it.
_TREE_PATH = re.compile(r"\s{0,8}([\w.\[\]'\"-]{1,300}):\s*$")
_OPTIMIZER_PATH = re.compile(r"(?:\d{1,4}\.)?opt_state\b")


def _optimizer_tree_only(candidates: dict[str, Candidate], kb: KnowledgeBase) -> None:
    """Orbax lists each path where the tree to restore into and the saved one differ: when every path it
    shows is under the optimizer state, the model's own tree matched and the optimizer changed (another
    optax chain, a different optimizer), which is optimizer-state-mismatch."""
    mismatch = candidates.get(STATE_DICT)
    if mismatch is None or OPTIMIZER_STATE not in kb.entries or OPTIMIZER_STATE in candidates or not mismatch.roots:
        return
    for observation in mismatch.roots:
        if "tree structures do not match" not in observation.hit.text:
            return
        paths = [m.group(1) for m in map(_TREE_PATH.match, observation.hit.after) if m]
        if not paths or not all(_OPTIMIZER_PATH.match(path) for path in paths):
            return
    del candidates[STATE_DICT]
    candidates[OPTIMIZER_STATE] = _as_class(mismatch, OPTIMIZER_STATE,
                                            "every path Orbax reports as differing is under the optimizer state")


SHAPE = "shape-mismatch"
# A frame of an optimizer's own update in torch (`torch/optim/adam.py ... in _single_tensor_adam`), POSIX or Windows path.
_OPTIMIZER_FRAME = re.compile(r"torch[/\\]optim[/\\]\w{1,40}\.py$")


def _shape_error_in_optimizer_step(candidates: dict[str, Candidate], kb: KnowledgeBase) -> None:
    """Tensors of different sizes inside the optimizer's own update (the deepest frame in torch/optim,
    `exp_avg.lerp_(grad, ...)`): the state it holds per parameter (moments, momentum buffers) was shaped for
    other parameters, a state restored from another model or another parameter order. The model's own
    tensors never meet there. All four such logs of the corpora were labelled optimizer-state-mismatch."""
    shape = candidates.get(SHAPE)
    if shape is None or OPTIMIZER_STATE not in kb.entries or OPTIMIZER_STATE in candidates or not shape.roots:
        return
    for observation in shape.roots:
        traceback = traceback_before(observation)
        if traceback is None or not traceback.frames or not _OPTIMIZER_FRAME.search(traceback.frames[-1].file):
            return
    del candidates[SHAPE]
    candidates[OPTIMIZER_STATE] = _as_class(shape, OPTIMIZER_STATE,
                                            "the sizes differ inside the optimizer's update of its own state")


def _as_class(source: Candidate, entry_id: str, reason: str) -> Candidate:
    """The evidence of `source` read as another class, which the log's own numbers or traceback chose."""
    return Candidate(entry_id=entry_id, score=source.score, nature=source.nature, roots=list(source.roots),
                     supporting=list(source.supporting), reason=reason)


HUB_ACCESS = "hf-hub-access-error"
_HUB_BAD_REQUEST = re.compile(r"huggingface_hub\.(?:utils\._errors|errors)\.BadRequestError: ")
_HUB_STATUS_FRAME = re.compile(r"\bin hf_raise_for_status\b")


def _hub_rejected_the_request(candidates: dict[str, Candidate]) -> None:
    """hf_raise_for_status raises BadRequestError for an HTTP 400: the Hub refused what was sent (a model card's
    metadata, a commit's content). The Hub's generic lines (its request id, the status frame) then name no access
    or network problem that a token, an access request or a cache would fix."""
    hub = candidates.get(HUB_ACCESS)
    if hub is None:
        return
    roots = [o.hit.text for o in hub.roots]
    supporting = [o.hit.text for o in hub.supporting]
    if any(_HUB_BAD_REQUEST.search(line) for line in roots + supporting) and all(
            _HUB_BAD_REQUEST.search(line) or _HUB_STATUS_FRAME.search(line) for line in roots):
        del candidates[HUB_ACCESS]
