"""Every `fix.code` example of every KB entry parses in its own language.

An engineer copies these mid-incident: a Kubernetes manifest that is not YAML of mappings,
a DeepSpeed config that `json.load` rejects (so accelerate and the HF integration reject it
too) or a Python snippet with a syntax error costs them time exactly when it is shortest.
"""

from __future__ import annotations

import ast
import json
import re
import shutil
import subprocess

import pytest
import yaml

from traintriage.kb.loader import load_kb

PYTHON_STACKS = frozenset({"pytorch", "hf-trainer", "lightning", "fsdp", "jax", "megatron"})
SHELL_STACKS = frozenset({"shell", "slurm"})
YAML_STACKS = frozenset({"kubernetes"})

_PLACEHOLDER = re.compile(r"<[A-Za-z][^<>\n]*>")  # a documentation placeholder: <pid-of-rank>
_ELIDED = re.compile(r"^\s*\.\.\.\s*$", re.MULTILINE)  # a lone `...` line


def parses_as_python(code: str) -> bool:
    try:
        ast.parse(code)
    except SyntaxError:
        return False
    return True


def parses_as_shell(code: str) -> bool:
    """`bash -n` accepts it once `<placeholder>` words and elided `...` lines are filled in."""
    filled = _ELIDED.sub(":", _PLACEHOLDER.sub("PLACEHOLDER", code))
    bash = shutil.which("bash") or "/bin/bash"
    return subprocess.run([bash, "-n"], input=filled, text=True, capture_output=True, check=False).returncode == 0


def parses_as_yaml_mappings(code: str) -> bool:
    """Every document is a mapping (a manifest), not a scalar or a list of quoted strings."""
    try:
        documents = [d for d in yaml.safe_load_all(code) if d is not None]
    except yaml.YAMLError:
        return False
    return bool(documents) and all(isinstance(d, dict) for d in documents) and not _quoted_item_keys(documents)


def _quoted_item_keys(node: object) -> bool:
    """A list item written as a quoted "name: x" string is a YAML scalar, not the mapping meant."""
    if isinstance(node, dict):
        return any(_quoted_item_keys(v) for v in node.values())
    if isinstance(node, list):
        return any((isinstance(v, str) and re.match(r"^\{?\w[\w.-]*: ", v) is not None) or _quoted_item_keys(v)
                   for v in node)
    return False


def parses_as_strict_json(code: str) -> bool:
    try:
        json.loads(code)
    except ValueError:
        return False
    return True


def parses_in_its_language(stack: str, code: str) -> bool:
    if code.lstrip().startswith("{"):
        return parses_as_strict_json(code)  # accelerate and HF read a DeepSpeed config with json.load
    if stack in PYTHON_STACKS:
        return parses_as_python(code) or parses_as_shell(code)  # a launcher command line is fine too
    if stack in SHELL_STACKS:
        return parses_as_shell(code)
    if stack in YAML_STACKS:
        return parses_as_yaml_mappings(code)
    # deepspeed, accelerate, vllm: a config file (YAML mapping), Python, or a launcher command
    return parses_as_yaml_mappings(code) or parses_as_python(code) or parses_as_shell(code)


def _snippets() -> list[tuple[str, str, str]]:
    """Every stack's plain snippet and its variants' snippets."""
    return [(entry.id, stack, text) for entry in sorted(load_kb().entries.values(), key=lambda e: e.id)
            for stack in entry.fix.stacks for text, _ in entry.fix.snippets(stack)]


@pytest.mark.parametrize(("entry_id", "stack", "code"), _snippets(), ids=lambda v: v if "\n" not in v else "")
def test_every_fix_example_parses_in_its_language(entry_id: str, stack: str, code: str) -> None:
    assert parses_in_its_language(stack, code), f"{entry_id}: the {stack} example does not parse"


@pytest.mark.parametrize(("stack", "code"), [
    ("kubernetes", "spec:\n  containers:\n    - 'name: pytorch'\n      command: [sleep]\n"),
    ("kubernetes", "spec:\n  containers:\n    - 'name: pytorch'\n"),
    ("kubernetes", "kubectl cordon gpu-node-17\n"),
    ("deepspeed", '{\n  "zero_optimization": {"stage": 2}\n}\n// derived: 4 * 8 * world_size\n'),
    ("deepspeed", '{"train_batch_size": "auto",}'),
    ("pytorch", "model = torch.compile(model, dynamic=False\n"),
    ("shell", "if [ -z \"$X\" ]; then echo missing\n"),
])
def test_broken_examples_are_rejected(stack: str, code: str) -> None:
    assert not parses_in_its_language(stack, code)


@pytest.mark.parametrize(("stack", "code"), [
    ("shell", "py-spy dump --pid <pid-of-rank>\n...\nnvidia-smi -L\n"),
    ("deepspeed", "deepspeed --num_gpus 8 train.py --deepspeed ds_config.json\n"),
    ("accelerate", "compute_environment: LOCAL_MACHINE\ndistributed_type: DEEPSPEED\n"),
    ("pytorch", "torchrun --nproc-per-node 8 train.py\n"),
])
def test_launcher_lines_placeholders_and_config_files_are_accepted(stack: str, code: str) -> None:
    assert parses_in_its_language(stack, code)
