"""The knowledge-base entry schema (see KB.md): one YAML file per failure class.

Entries are data read by engineers mid-incident, so the schema is strict: unknown
keys are errors (a typo must not silently drop a field) and every text is non-empty.
"""

from __future__ import annotations

from enum import Enum
from typing import Annotated
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator

Text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]
KebabId = Annotated[str, StringConstraints(pattern=r"^[a-z0-9]+(-[a-z0-9]+)*$")]


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


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


class Signature(Strict):
    id: KebabId
    pattern: Text
    role: Role
    weight: float = Field(default=1.0, gt=0.0, le=1.0)


class Symptom(Strict):
    symptom: Text
    why: Text


class Fix(Strict):
    summary: Text
    steps: list[Text] = Field(min_length=1)
    code: dict[str, Text] = Field(default_factory=dict)

    @field_validator("code")
    @classmethod
    def known_stacks(cls, value: dict[str, str]) -> dict[str, str]:
        unknown = set(value) - STACKS
        if unknown:
            raise ValueError(f"unknown stack(s) {sorted(unknown)}; use one of {sorted(STACKS)}")
        return value


STACKS = frozenset(
    {"pytorch", "hf-trainer", "deepspeed", "fsdp", "megatron", "lightning", "vllm", "shell", "jax",
     "accelerate", "slurm", "kubernetes"}
)


class Perspectives(Strict):
    executive: Text
    engineer: Text
    oncall: Text


class Reference(Strict):
    title: Text
    url: Text

    @field_validator("url")
    @classmethod
    def https_only(cls, value: str) -> str:
        """An absolute https URL (checked with urllib: pydantic's URL type costs start-up time)."""
        parts = urlsplit(value)
        if parts.scheme != "https" or not parts.netloc or " " in value:
            raise ValueError("references must be absolute https URLs")
        return value


class Entry(Strict):
    id: KebabId
    title: Text
    category: Category
    phase: Phase
    severity: Severity
    nature: Nature = Nature.root
    systems: list[Text] = Field(min_length=1)
    tags: list[Text] = Field(default_factory=list)
    summary: Text
    mechanism: Text
    symptoms: list[Symptom] = Field(min_length=1)
    signatures: list[Signature] = Field(min_length=1)
    excludes: list[Text] = Field(default_factory=list)
    explains: list[KebabId] = Field(default_factory=list)
    specializes: list[KebabId] = Field(default_factory=list)
    confirm: list[Text] = Field(min_length=1)
    fix: Fix
    verify: Text
    prevention: list[Text] = Field(min_length=1)
    perspectives: Perspectives
    scale: Text | None = None
    references: list[Reference] = Field(min_length=1)
    related: list[KebabId] = Field(default_factory=list)

    @field_validator("specializes", mode="before")
    @classmethod
    def one_or_many(cls, value: object) -> object:
        """`specializes: cuda-oom` and `specializes: [cuda-oom, state-dict-mismatch]` both read."""
        return [value] if isinstance(value, str) else value

    @field_validator("signatures")
    @classmethod
    def unique_signature_ids(cls, value: list[Signature]) -> list[Signature]:
        ids = [s.id for s in value]
        duplicates = sorted({i for i in ids if ids.count(i) > 1})
        if duplicates:
            raise ValueError(f"duplicate signature id(s): {duplicates}")
        return value

    @property
    def root_signatures(self) -> list[Signature]:
        return [s for s in self.signatures if s.role is Role.root]
