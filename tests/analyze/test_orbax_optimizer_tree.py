"""Orbax's tree-mismatch report names the class by the paths it lists: the optimizer's alone, or the model's."""

from __future__ import annotations

from pathlib import Path

from tests.analyze.run_facts import root_of

HEAD = [
    "I1203 11:20:41.118300 139921 checkpoint_manager.py:1560] Restoring checkpoint from /ckpt/runs/lm/4000.",
    "Traceback (most recent call last):",
    '  File "/srv/lm/resume.py", line 57, in <module>',
    "    state = mngr.restore(step, args=ocp.args.StandardRestore(abstract_state))",
    "ValueError: User-provided restore item and on-disk value metadata tree structures do not match:",
]
OPTIMIZER_PATHS = [
    "opt_state[0]:",
    "    - Source: <class 'optax._src.base.EmptyState'>",
    "    - Target: <class 'dict'>",
    "opt_state[1].mu:",
    "    - Source: MISSING",
    "    - Target: {'dense': {'kernel': ValueMetadataEntry(value_type='jax.Array')}}",
]
PARAM_PATH = ["params.dense_2:", "    - Source: MISSING", "    - Target: {'kernel': ValueMetadataEntry(value_type='jax.Array')}"]
TAIL = ["If this mismatch is intentional, pass `partial_restore=True` to only restore parameters found in `item`."]


def test_only_optimizer_paths_differ_so_the_optimizer_changed(tmp_path: Path) -> None:
    assert root_of(tmp_path, "\n".join(HEAD + OPTIMIZER_PATHS + TAIL) + "\n") == "optimizer-state-mismatch"


def test_a_model_path_among_them_is_a_model_that_changed(tmp_path: Path) -> None:
    assert root_of(tmp_path, "\n".join(HEAD + PARAM_PATH + OPTIMIZER_PATHS + TAIL) + "\n") == "state-dict-mismatch"
