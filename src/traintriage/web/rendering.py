"""The Jinja2 environment shared by the server and the static site: autoescape on for every
template, so every byte of a log or an entry is printed as text."""

from __future__ import annotations

from functools import cache
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from markupsafe import Markup, escape

from traintriage import __version__
from traintriage.kb.reporttext import code_snippets
from traintriage.kb.schema import STACKS
from traintriage.report.render import rank_ranges
from traintriage.web.links import Links

STACK_LABELS = {"pytorch": "PyTorch", "hf-trainer": "HF Trainer", "deepspeed": "DeepSpeed", "fsdp": "FSDP",
                "megatron": "Megatron", "lightning": "Lightning", "vllm": "vLLM", "shell": "Shell",
                "jax": "JAX", "accelerate": "Accelerate", "slurm": "Slurm", "kubernetes": "Kubernetes"}
assert set(STACK_LABELS) >= STACKS


def stack_label(stack: str) -> str:
    return STACK_LABELS.get(stack, stack)


def inline_code(text: str) -> Markup:
    """KB prose marks code with backticks: each `span` becomes <code>, every part escaped."""
    parts = str(text).split("`")
    if len(parts) % 2 == 0:  # an unpaired backtick: show the text as it is
        return escape(text)
    return Markup("").join(escape(part) if n % 2 == 0 else Markup("<code>%s</code>") % part
                           for n, part in enumerate(parts))


@cache
def environment() -> Environment:
    env = Environment(
        loader=PackageLoader("traintriage.web", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(rank_ranges=rank_ranges, stack=stack_label, pct=lambda value: f"{float(value):.0%}",
                       prose=inline_code)
    env.globals.update(version=__version__, code_snippets=code_snippets)
    return env


def render(template: str, links: Links, **context: Any) -> str:
    return environment().get_template(template).render(link=links, **context)
