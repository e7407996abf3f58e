"""An exception raised in the script's own code, when no class of the KB explains the failure.

The KB's catch-all for script errors (`user-code-exception`) matches Python's built-in
exception types. A library's own exception type raised from a line of the user's script
(omegaconf's `ConfigAttributeError` on `cfg.train.key`, a project's custom error) is the
same kind of failure: the deepest frame of its traceback is the user's code. Only that
case counts: an exception whose traceback ends inside an installed package, or that was
chained from another exception (the cause lies there), stays an unknown failure. So does an
XLA runtime error (`XlaRuntimeError: INTERNAL: ...`): the compiled program failed in the runtime,
and JAX removes its own frames from the traceback, so the user's call only looks like the deepest
frame. (JAX's tracing errors, such as ConcretizationTypeError, do point at the user's code.)
A notebook's traceback (IPython's format) does not count either: Colab folds library frames and
Keras and JAX filter theirs, so a cell can be the deepest frame shown of an error a library raised
(on the scored corpora, three library errors in notebooks were called the script's this way).
"""

from __future__ import annotations

from traintriage.analyze.observations import Observation, traceback_before

_XLA_RUNTIME = ("XlaRuntimeError", "JaxRuntimeError")

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
        if any(name in observation.message.split(":", 1)[0] for name in _XLA_RUNTIME):
            continue
        if traceback.frames[-1].is_user_code:
            return observation
    return None
