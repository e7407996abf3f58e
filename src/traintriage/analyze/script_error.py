"""Three readings of a script's traceback that the KB's signatures cannot make.

- A check the project's code makes on purpose and explains (`assert mlc < nc, 'Label class 2 exceeds
  nc=2 ...'`, `raise ValueError("Please use FORCE_TORCHRUN=1 ...")`) is no bug in the script: its
  message names a cause the KB lacks, so it is not the catch-all for script errors
  (`user-code-exception`, which matches Python's built-in exception types) but an unknown failure
  shown with that message. On the tune corpora seven such checks had been called the script's error,
  all labelled as classes the KB lacks; the accidental errors (KeyError, AttributeError, a bare
  `assert`) stay the script's.
- A KeyError on the line that reads that key from a loaded checkpoint is a checkpoint saved without it.
- A ZeroDivisionError on a line that divides by the length of the data is an empty loader or dataset.

A library's own exception type raised on a line of the script (`jax.errors.TracerBoolConversionError`,
`torch.linalg.LinAlgError`, a project's custom error) is not called the script's error either. Calling
it so when no class fitted and the script's line was the deepest frame named 12 logs of the tune
corpora, 11 of them failures the KB lacks (a JAX tracer in a Python `if`, a Cholesky factorisation of
a matrix that is not positive-definite, a closed pipe on stdout); the scored corpora agreed (25 to 1).
Such a failure is an unknown failure, shown with its exception line.
"""

from __future__ import annotations

import re

from traintriage.analyze.observations import Observation, traceback_before
from traintriage.parse.traceback import Traceback

_EXPLAINED = re.compile(r"(?:^|[\s:\]>.])(\w{0,100}(?:Error|Exception)): (.{1,2000})")
_WORD = re.compile(r"[A-Za-z]{2,100}")


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


# The line's subscript of a loaded checkpoint (`checkpoint["optimizer"]`, `state_dict["optimizer"]`, `torch.load(path)["ema"]`),
# applied to one source line.
_CHECKPOINT_ENTRY = re.compile(
    r"(?:\b(?:checkpoint|ckpt|chkpt|state_dict)\w{0,40}|torch\.load\([^\n]{0,200}\))\s{0,4}\[\s{0,4}['\"]([^'\"\n]{1,80})['\"]\s{0,4}\]")
_KEY_ERROR = re.compile(r"KeyError: ['\"]([^'\"\n]{1,80})['\"]\s{0,8}$")


def missing_checkpoint_entry(traceback: Traceback, message: str) -> bool:
    """A KeyError on the script's line that reads that very key from a loaded checkpoint
    (`optimizer.load_state_dict(checkpoint["optimizer"])` -> `KeyError: 'optimizer'`): the file was saved
    without it (a released model without its optimizer state, a checkpoint of another trainer), a cause
    the KB lacks. Not the script's bug (user-code-exception): on the corpora all five such logs (three in
    tune halves) were labelled as classes the KB lacks."""
    key = _KEY_ERROR.search(message)
    if key is None or not traceback.frames or not traceback.frames[-1].is_user_code:
        return False
    read = _CHECKPOINT_ENTRY.search(traceback.frames[-1].code[:400])
    return read is not None and read.group(1) == key.group(1)


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
