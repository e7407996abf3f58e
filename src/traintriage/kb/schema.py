"""The knowledge-base entry schema (see KB.md): one YAML file per failure class.

Entries are data read by engineers mid-incident, so the schema is strict: unknown
keys are errors (a typo must not silently drop a field) and every text is non-empty.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date
from enum import Enum
from typing import TYPE_CHECKING, Annotated
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from annotated_types import Interval, MinLen, Predicate
    from pydantic import TypeAdapter

_KEBAB = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")


def is_kebab_case(value: str) -> bool:
    return _KEBAB.fullmatch(value) is not None


def is_https_url(value: str) -> bool:
    parts = urlsplit(value)
    return parts.scheme == "https" and bool(parts.netloc) and " " not in value


if TYPE_CHECKING:
    Text = Annotated[str, MinLen(1)]
    KebabId = Annotated[str, Predicate(is_kebab_case)]
    NonEmpty = MinLen(1)


def _constraint_names() -> dict[str, object]:
    """Text, KebabId and the constraint types appear only in (string) annotations, so a
    diagnosis never imports annotated_types; pydantic resolves them in this module's
    namespace, where `validate_entry` puts them first."""
    from annotated_types import Interval, MinLen, Predicate

    return {"Interval": Interval, "MinLen": MinLen, "NonEmpty": MinLen(1), "Text": Annotated[str, MinLen(1)],
            "KebabId": Annotated[str, Predicate(is_kebab_case)]}


class Category(str, Enum):
    memory = "memory"
    cuda = "cuda"
    hardware = "hardware"
    distributed = "distributed"
    fsdp = "fsdp"
    deepspeed = "deepspeed"
    numerics = "numerics"
    model_code = "model-code"
    data = "data"
    checkpoint = "checkpoint"
    compile = "compile"
    environment = "environment"
    config = "config"
    cluster = "cluster"
    serving = "serving"
    performance = "performance"


class Phase(str, Enum):
    launch = "launch"
    init = "init"
    data = "data"
    forward = "forward"
    backward = "backward"
    optimizer = "optimizer"
    checkpoint = "checkpoint"
    eval = "eval"
    serve = "serve"
    any = "any"


class Severity(str, Enum):
    critical = "critical"
    high = "high"
    medium = "medium"
    low = "low"


class Role(str, Enum):
    """What a matching line says about this entry.

    root: the line names this failure. supporting: raises confidence when a root
    line is present (and is the context a `specializes` entry needs). collateral:
    a line this failure causes elsewhere; it never makes the entry a candidate.
    """

    root = "root"
    supporting = "supporting"
    collateral = "collateral"


class Nature(str, Enum):
    """Whether a class is usually the cause, or usually a consequence of another.

    collateral and wrapper entries are explained by any root-natured candidate in
    the same log; they are the answer only when nothing else explains the failure.
    """

    root = "root"
    collateral = "collateral"
    wrapper = "wrapper"


class Strict:
    """Entries are plain frozen dataclasses, so a diagnosis never imports pydantic (its import
    costs more start-up time than a small diagnosis); pydantic validates them, with this
    config, when YAML is read (`validate_entry`)."""

    __pydantic_config__ = {"extra": "forbid"}


@dataclass(frozen=True, kw_only=True)
class Signature(Strict):
    id: KebabId
    pattern: Text
    role: Role
    weight: Annotated[float, Interval(gt=0.0, le=1.0)] = 1.0


@dataclass(frozen=True, kw_only=True)
class Symptom(Strict):
    symptom: Text
    why: Text


STACKS = frozenset(
    {"pytorch", "hf-trainer", "deepspeed", "fsdp", "megatron", "lightning", "vllm", "shell", "jax",
     "accelerate", "slurm", "kubernetes"}
)


REMEDIES = frozenset({"anomaly-mode", "anomaly-mode-forward", "monitored-barrier", "async-error-handling",
                      "nccl-debug-info", "expandable-segments"})
"""Remedies the log can show already in use (analyze/facts.py, `RunFacts.already`)."""

FACT_VALUES: dict[str, frozenset[str]] = {
    "phase": frozenset({"setup", "model-load", "first-step", "step", "eval", "checkpoint", "shutdown"}),
    "stack": frozenset({"pytorch", "ddp", "fsdp", "deepspeed", "hf-trainer", "accelerate", "lightning", "megatron",
                        "vllm", "jax", "tensorflow", "llama-cpp", "lua-torch"}),
    "launcher": frozenset({"torchrun", "deepspeed", "accelerate", "slurm", "mpirun"}),
    "dtype": frozenset({"fp32", "fp16", "bf16", "fp8"}),
    "backend": frozenset({"nccl", "gloo", "mpi", "rccl"}),
    "already": REMEDIES,
    "not_already": REMEDIES,
}
"""The conditions a fix variant may state (facts of the run, analyze/facts.py) and their values.

`already` and `not_already` name remedies the log shows in use (anomaly detection's own
warnings, NCCL INFO lines, `expandable_segments:True` in the environment...); unlike the
other facts these are never unknown: a remedy the log does not show is taken as not in use."""


@dataclass(frozen=True, kw_only=True)
class When(Strict):
    """Conditions on the facts of the run; each names one value or several (any of them).

    A variant applies when every stated fact is known and matches; it contradicts the run
    when a stated fact is known and differs; an unknown fact neither selects nor drops it.
    `already: X` holds when the log shows every named remedy in use (a step that reads what
    the remedy printed) and contradicts otherwise. `not_already: X` only drops: the step
    (advice to turn X on) is left out when the log shows any named remedy in use, and the
    condition never makes a step lead."""

    phase: str | list[str] | None = None
    stack: str | list[str] | None = None
    launcher: str | list[str] | None = None
    dtype: str | list[str] | None = None
    backend: str | list[str] | None = None
    already: str | list[str] | None = None
    not_already: str | list[str] | None = None
    all_ranks_same: bool | None = None

    def __post_init__(self) -> None:
        for name in FACT_VALUES:
            problem = unknown_values(name, self.values(name))
            if problem:
                raise ValueError(problem)

    def values(self, name: str) -> list[str]:
        value = getattr(self, name)
        return [] if value is None else [value] if isinstance(value, str) else list(value)

    @property
    def selects(self) -> bool:
        """Whether some condition can choose the variant (`not_already` alone only drops it)."""
        return any(self.values(name) for name in FACT_VALUES if name != "not_already") or \
            self.all_ranks_same is not None


def unknown_values(name: str, values: list[str]) -> str | None:
    """What is wrong with a condition's values (for the schema and `kb lint`); None when all are known."""
    allowed = FACT_VALUES[name]
    unknown = sorted(set(values) - allowed)
    return f"when.{name}: unknown value(s) {unknown}; use one of {sorted(allowed)}" if unknown else None


@dataclass(frozen=True, kw_only=True)
class FixStep(Strict):
    """A fix step for some runs only. With `because` (the report's reason, after the word
    "because") it leads the fix when its facts match. Without it the condition only filters:
    the step keeps its place when the facts fit or are unknown and is left out when they
    contradict (a PyTorch DataLoader step for a llama.cpp process)."""

    step: Text
    when: When
    because: Text = ""


@dataclass(frozen=True, kw_only=True)
class FixCode(Strict):
    """A stack's snippet for some runs only; it replaces the stack's `code` when it matches."""

    code: Text
    when: When
    because: Text = ""


@dataclass(frozen=True, kw_only=True)
class Fix(Strict):
    """`code` holds one plain snippet per stack (for every run); `code_variants` the snippets
    for some runs only, kept apart so that every `code` value stays a snippet in its language."""

    summary: Text
    steps: Annotated[list[Text | FixStep], NonEmpty]
    code: dict[str, Text] = field(default_factory=dict)
    code_variants: dict[str, Annotated[list[FixCode], NonEmpty]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        unknown = (set(self.code) | set(self.code_variants)) - STACKS
        if unknown:
            raise ValueError(f"unknown stack(s) {sorted(unknown)}; use one of {sorted(STACKS)}")

    def snippets(self, stack: str) -> list[tuple[str, When | None]]:
        """Every snippet of one stack: the plain one first, then the variants with their condition."""
        plain = [(self.code[stack], None)] if stack in self.code else []
        return plain + [(variant.code, variant.when) for variant in self.code_variants.get(stack, [])]

    @property
    def stacks(self) -> list[str]:
        return list(dict.fromkeys([*self.code, *self.code_variants]))


@dataclass(frozen=True, kw_only=True)
class Perspectives(Strict):
    executive: Text
    engineer: Text
    oncall: Text


@dataclass(frozen=True, kw_only=True)
class Reference(Strict):
    title: Text
    url: Text

    def __post_init__(self) -> None:
        """An absolute https URL."""
        if not is_https_url(self.url):
            raise ValueError("references must be absolute https URLs")


@dataclass(frozen=True, kw_only=True)
class Review(Strict):
    """When an entry was last checked against upstream, for which releases, against what.

    `versions` maps a system to the release read (quoted, so YAML keeps "2.20" a string);
    `kb lint` warns when another entry names a newer release of the same system."""

    date: date
    versions: Annotated[dict[Text, Text], NonEmpty]
    sources: Annotated[list[Text], NonEmpty]

    def __post_init__(self) -> None:
        bad = [url for url in self.sources if not is_https_url(url)]
        if bad:
            raise ValueError(f"reviewed.sources must be absolute https URLs, not {bad}")


@dataclass(frozen=True, kw_only=True)
class Entry(Strict):
    id: KebabId
    title: Text
    category: Category
    phase: Phase
    severity: Severity
    nature: Nature = Nature.root
    systems: Annotated[list[Text], NonEmpty]
    tags: list[Text] = field(default_factory=list)
    summary: Text
    report_summary: Text | None = None
    """One whole sentence written for the report; `summary` stays for `kb show` and the web page."""
    mechanism: Text
    symptoms: Annotated[list[Symptom], NonEmpty]
    signatures: Annotated[list[Signature], NonEmpty]
    excludes: list[Text] = field(default_factory=list)
    explains: list[KebabId] = field(default_factory=list)
    specializes: list[KebabId] = field(default_factory=list)
    confirm: Annotated[list[Text], NonEmpty]
    fix: Fix
    verify: Text
    prevention: Annotated[list[Text], NonEmpty]
    perspectives: Perspectives
    scale: Text | None = None
    references: Annotated[list[Reference], NonEmpty]
    related: list[KebabId] = field(default_factory=list)
    reviewed: Review | None = None

    def __post_init__(self) -> None:
        ids = [s.id for s in self.signatures]
        duplicates = sorted({i for i in ids if ids.count(i) > 1})
        if duplicates:
            raise ValueError(f"duplicate signature id(s): {duplicates}")

    @property
    def root_signatures(self) -> list[Signature]:
        return [s for s in self.signatures if s.role is Role.root]


def validate_entry(raw: dict[str, object]) -> Entry:
    """An Entry from parsed YAML; raises pydantic's ValidationError naming each bad field.

    Texts are stripped first (YAML block scalars end in a newline); `specializes` may be one
    id or a list."""
    data = _stripped(raw)
    assert isinstance(data, dict)
    if isinstance(data.get("specializes"), str):
        data["specializes"] = [data["specializes"]]
    return _entry_adapter().validate_python(data)


def _stripped(value: object) -> object:
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, list):
        return [_stripped(item) for item in value]
    if isinstance(value, dict):
        return {key: _stripped(item) for key, item in value.items()}
    return value


_ADAPTER: list[TypeAdapter[Entry]] = []


def _entry_adapter() -> TypeAdapter[Entry]:
    if not _ADAPTER:
        from pydantic import TypeAdapter

        globals().update(_constraint_names())
        _ADAPTER.append(TypeAdapter(Entry))
    return _ADAPTER[0]
