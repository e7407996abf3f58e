"""An exception raised in the script's own code, when no class of the KB explains the failure.

The KB's catch-all for script errors (`user-code-exception`) matches Python's built-in
exception types. A library's own exception type raised from a line of the user's script
(a project's custom error) is the same kind of failure: the deepest frame of its traceback
is the user's code. Only that case counts: an exception whose traceback ends inside an
installed package, or that was chained from another exception (the cause lies there), stays
an unknown failure. So does an XLA runtime error (`XlaRuntimeError: INTERNAL: ...`): the compiled program failed in the runtime,
and JAX removes its own frames from the traceback, so the user's call only looks like the deepest
frame. (JAX's tracing errors, such as ConcretizationTypeError, do point at the user's code.)
A notebook's traceback (IPython's format) does not count either: Colab folds library frames and
Keras and JAX filter theirs, so a cell can be the deepest frame shown of an error a library raised
(on the scored corpora, three library errors in notebooks were called the script's this way).
Nor does a codec error on the script's read of a file (the file's encoding or the locale's), nor
an error the CUDA runtime or one of its libraries reported (`RuntimeError: CUDA error: invalid
argument` on the script's `weight.to(device)`): the call was the script's, the failure the device's.
Nor does a check the project's code makes on purpose and explains (`assert mlc < nc, 'Label class
2 exceeds nc=2 ...'`, `raise ValueError("Please use FORCE_TORCHRUN=1 ...")`): its message names a
cause the KB lacks, not a bug in the script, so it stays an unknown failure shown with that message.
On the tune corpora seven such checks had been called the script's error, all labelled as classes
the KB lacks; the accidental errors (KeyError, AttributeError, a bare `assert`) stay the script's.
Nor does an error that reports what the script ran into rather than a bug in its line (`_ENVIRONMENT`:
OSError and its family, RuntimeError, a database or a Rust extension's runtime error): on the tune
corpora eight of them had been called the script's error, all labelled as classes the KB lacks.
Nor does an omegaconf error (`omegaconf.errors.ConfigAttributeError: Key 'lr' is not in struct`,
`MissingMandatoryValue`, `InterpolationKeyError`): the config lacks what the script reads, and Hydra cuts
omegaconf's own frames from the traceback it prints, so the script's line only looks like the raiser.
Eleven such logs in the corpora, ten labelled as a config failure the KB lacks.
"""

from __future__ import annotations

import re

from traintriage.analyze.observations import Observation, traceback_before
from traintriage.parse.traceback import Traceback

_XLA_RUNTIME = ("XlaRuntimeError", "JaxRuntimeError")
_CODEC = ("UnicodeDecodeError", "UnicodeEncodeError")
"""A codec error on the script's `for line in f:` is the file's encoding (or the locale's default
codec, `'gbk' codec can't decode ...` on a Chinese-locale Windows), not a bug in the line."""
_CONFIG = ("omegaconf.errors.",)
"""A config that lacks what the script reads (Hydra hides omegaconf's frames, so the script looks like the raiser)."""
_ENVIRONMENT = frozenset({
    "OSError", "IOError", "EnvironmentError", "PermissionError", "FileNotFoundError", "FileExistsError",
    "IsADirectoryError", "NotADirectoryError", "ConnectionError", "ConnectionResetError", "ConnectionRefusedError",
    "ConnectionAbortedError", "BrokenPipeError", "TimeoutError", "BlockingIOError", "InterruptedError",
    "ChildProcessError", "ProcessLookupError", "EOFError", "MemoryError", "SystemError", "RuntimeError",
    "OperationalError", "PanicException", "MapFullError"})
"""Errors that report what the script ran into, not a bug in its line: the operating system's and the file
system's (OSError and its family), a runtime's (RuntimeError, a database's OperationalError, lmdb's full map,
a Rust extension's panic surfaced by pyo3). The script's call was the last frame; the cause is outside it."""
_DEVICE_RUNTIME = re.compile(r"(?:Error|Exception): (?:CUDA error|CUDA driver error|HIP error|cuDNN error|"
                             r"CUBLAS_STATUS_|CUDNN_STATUS_|NCCL error)")
_EXPLAINED = re.compile(r"(?:^|[\s:\]>.])(\w{0,100}(?:Error|Exception)): (.{1,2000})")
_WORD = re.compile(r"[A-Za-z]{2,100}")

SCRIPT_ERROR_SCORE = 0.45
"""Weaker than any signature of a class: a catch-all, chosen only when nothing else fits."""


def raised_in_script(salient: list[Observation]) -> Observation | None:
    """The last salient exception whose traceback's deepest frame is in the user's code."""
    for observation in sorted(salient, key=lambda o: (o.hit.source, o.hit.line), reverse=True):
        if not observation.hit.before:
            continue
        traceback = traceback_before(observation)
        if (traceback is None or not traceback.frames or traceback.chained_from is not None
                or not traceback.shows_every_frame):
            continue
        raised = observation.message.split(":", 1)[0]
        if (any(name in raised for name in _XLA_RUNTIME + _CODEC + _CONFIG) or _DEVICE_RUNTIME.search(observation.message)
                or raised.rsplit(".", 1)[-1].strip() in _ENVIRONMENT):
            continue
        if traceback.frames[-1].is_user_code and not deliberate_check(traceback, observation.message):
            return observation
    return None


def deliberate_check(traceback: Traceback, message: str) -> bool:
    """An `assert` with a message, or a `raise`, on the deepest frame's line in the project's own
    code, whose message is a sentence (three words or more): the code refused its input on
    purpose and says why. (The standard library's raises, `json`'s `Object of type Tensor is not
    JSON serializable`, are the script's error: it passed what the library cannot take.)"""
    found = _EXPLAINED.search(message)
    if found is None or len(_WORD.findall(found.group(2))) < 3 or not traceback.frames:
        return False
    deepest = traceback.frames[-1]
    return deepest.is_user_code and (found.group(1) == "AssertionError" or deepest.code.startswith("raise "))


EMPTY_DATA = "empty-dataset"
EMPTY_DATA_SCORE = 0.5
"""Weaker than a signature of the class: the divisor's name is a strong hint, not the loader's own message."""
# Applied to one source line (a frame's code, at most a few hundred characters): a division whose divisor
# is the length of a loader, dataset or batch list, or a count of steps or batches per epoch (in parentheses
# or not: `total_loss / (len(train_loader))`).
_DIVIDED_BY_DATA = re.compile(
    r"(?://|/|%)\s{0,4}\(?\s{0,4}(?:len\(\s{0,4}[\w.]{0,80}(?:loader|dataset|data|batches|samples)[\w.]{0,40}\s{0,4}\)|"
    r"[\w.]{0,60}(?:steps_per_epoch|num_batches|n_batches|batches|num_samples|batches_per_epoch|num_update_steps_per_epoch)\b)",
    re.IGNORECASE,
)


def divided_by_empty_data(salient: list[Observation]) -> Observation | None:
    """A ZeroDivisionError on a line that divides by the length of the data (`iteration / len(train_loader)`,
    `global_step // self.steps_per_epoch`): the loader or dataset is empty, a cause the KB has."""
    for observation in sorted(salient, key=lambda o: (o.hit.source, o.hit.line), reverse=True):
        if "ZeroDivisionError" not in observation.message.split(":", 1)[0] or not observation.hit.before:
            continue
        traceback = traceback_before(observation)
        if traceback is not None and traceback.frames and _DIVIDED_BY_DATA.search(traceback.frames[-1].code[:400]):
            return observation
    return None
