"""The Diagnosis: the one report model every front door renders (OUTPUT.md, schema 1).

The CLI's text and Markdown views (report/render.py), `--format json`, the HTTP API and the
web result page all render this one object, so a rule about what a report says (whole
sentences, the fix that fits this run, consistent ranks) lands once for all of them:
`root_cause.report_summary` is the one sentence to show (never cut); `facts` are the facts
of the run read from the log; `fix.steps` are already ordered for this run (`fix.because`
says why the first `fix.chosen` steps come first; `fix.more` points at the rest);
`notes` are whole sentences that qualify the diagnosis (the initiator is not in this log,
every rank failed the same way, a launcher's "Root Cause" overridden) and must be shown.

Fields may be added; none may change meaning without bumping SCHEMA_ID.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

from traintriage.plain import plain

if TYPE_CHECKING:
    from annotated_types import Ge, Interval, MaxLen

SCHEMA_ID = "traintriage.diagnosis/1"

# Plain dataclasses, not pydantic models: importing pydantic costs more start-up time than a
# small diagnosis. pydantic still reads these classes (constraints, attribute docstrings and
# this config) to write and check the JSON Schema. The constraint types appear only in the
# (string) annotations, so that a diagnosis does not import annotated_types either.
_CONFIG = {"extra": "forbid", "use_attribute_docstrings": True}


class Status(str, Enum):
    failure = "failure"
    unknown_failure = "unknown-failure"
    no_failure = "no-failure"


@dataclass(kw_only=True)
class UserFrame:
    """The innermost traceback frame in the user's own code (outside site-packages)."""

    __pydantic_config__ = _CONFIG
    file: str
    line: int
    function: str


@dataclass(kw_only=True)
class Evidence:
    __pydantic_config__ = _CONFIG
    source: str
    line: Annotated[int, Ge(1)]
    rank: int | None = None
    host: str | None = None
    time: str | None = None
    text: str
    matched: list[int] | None = None
    """[start, end) of the part of `text` the failure class's signature matched: a view that
    shortens the line keeps this part."""


@dataclass(kw_only=True)
class RootCause:
    __pydantic_config__ = _CONFIG
    id: str
    title: str
    category: str
    severity: str
    confidence: Annotated[float, Interval(ge=0.0, le=1.0)]
    summary: str
    evidence: list[Evidence]
    exception: str | None = None
    user_frame: UserFrame | None = None
    report_summary: str | None = None
    """One whole sentence written for the report (the KB entry's report_summary)."""


@dataclass(kw_only=True)
class Candidate:
    __pydantic_config__ = _CONFIG
    id: str
    confidence: Annotated[float, Interval(ge=0.0, le=1.0)]


@dataclass(kw_only=True)
class Ranks:
    __pydantic_config__ = _CONFIG
    seen: list[int] = field(default_factory=list)
    failed: list[int] = field(default_factory=list)
    collateral: list[int] = field(default_factory=list)


@dataclass(kw_only=True)
class Collateral:
    __pydantic_config__ = _CONFIG
    id: str
    title: str = ""
    ranks: list[int] = field(default_factory=list)
    explained_by: str
    count: int = 0
    """matching lines in the whole log, beyond those kept as evidence"""


@dataclass(kw_only=True)
class Suspect:
    __pydantic_config__ = _CONFIG
    rank: int | None = None
    host: str | None = None
    reason: str


@dataclass(kw_only=True)
class Anomaly:
    __pydantic_config__ = _CONFIG
    kind: str
    rank: int | None = None
    step: int | None = None
    detail: str


@dataclass(kw_only=True)
class TimelineEvent:
    __pydantic_config__ = _CONFIG
    time: str | None = None
    rank: int | None = None
    what: str
    source: str
    line: int


@dataclass(kw_only=True)
class FixAdvice:
    __pydantic_config__ = _CONFIG
    summary: str
    steps: list[str]
    """Ordered for this run: the variants chosen by the facts first, then the steps for every run."""
    code: dict[str, str] = field(default_factory=dict)
    chosen: int = 0
    """How many leading steps are variants chosen by the facts of this run."""
    because: list[str] = field(default_factory=list)
    """Why those steps come first, one clause each (shown after the word "because")."""
    more: str | None = None
    """Where the steps left out (they do not fit this run) are: a `traintriage kb show` command."""


@dataclass(kw_only=True)
class Facts:
    """Facts of the run read from the log; null when the log does not say."""

    __pydantic_config__ = _CONFIG
    stack: list[str] = field(default_factory=list)
    """Frameworks seen, most specific first (deepspeed, hf-trainer, ..., pytorch)."""
    launcher: str | None = None
    backend: str | None = None
    phase: str | None = None
    """setup, model-load, first-step, step, eval, checkpoint or shutdown."""
    phase_reason: str | None = None
    step: int | None = None
    """The last training step logged before the failure."""
    dtype: str | None = None
    platform: str | None = None
    zero_stage: int | None = None
    world_size: int | None = None
    ranks_failed: int = 0
    all_ranks_same: bool | None = None
    """Every rank failed with the same error at the same frame: code or environment, not one node."""
    stalled: bool = False
    """The failure is a hang or a timeout: the run stopped making progress after `step`; it did
    not fail at that step."""
    versions: dict[str, str] = field(default_factory=dict)
    """Versions and hardware the log names (torch, cuda, nccl, deepspeed, transformers, driver, gpu)."""


@dataclass(kw_only=True)
class Stats:
    __pydantic_config__ = _CONFIG
    sources: int
    lines: int
    bytes: int
    seconds: float


@dataclass(kw_only=True)
class Diagnosis:
    __pydantic_config__ = _CONFIG
    schema: str = SCHEMA_ID
    status: Status
    root_cause: RootCause | None = None
    candidates: Annotated[list[Candidate], MaxLen(5)] = field(default_factory=list)
    initiating_rank: int | None = None
    suspects: list[Suspect] = field(default_factory=list)
    ranks: Ranks = field(default_factory=Ranks)
    collateral: list[Collateral] = field(default_factory=list)
    anomalies: list[Anomaly] = field(default_factory=list)
    timeline: list[TimelineEvent] = field(default_factory=list)
    fix: FixAdvice | None = None
    verify: str | None = None
    environment: dict[str, str] = field(default_factory=dict)
    facts: Facts | None = None
    notes: list[str] = field(default_factory=list)
    """Whole sentences that qualify the diagnosis; every front door shows them."""
    unknown: list[Evidence] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    stats: Stats

    def to_json_dict(self) -> dict[str, object]:
        """The diagnosis as JSON-ready data, in the shape of diagnosis.schema.json."""
        data = plain(self)
        assert isinstance(data, dict)
        return data

    @property
    def exit_code(self) -> int:
        return {Status.no_failure: 0, Status.failure: 1, Status.unknown_failure: 2}[self.status]


SCHEMA_PATH = Path(__file__).with_name("diagnosis.schema.json")


def diagnosis_json_schema() -> dict[str, object]:
    """The JSON Schema of the output contract, as shipped in diagnosis.schema.json."""
    from annotated_types import Ge, Interval, MaxLen
    from pydantic import TypeAdapter

    globals().update(Ge=Ge, Interval=Interval, MaxLen=MaxLen)  # pydantic resolves annotations here
    schema = TypeAdapter(Diagnosis).json_schema(mode="serialization")
    schema["$id"] = "urn:traintriage:schema:diagnosis:1"
    schema["title"] = "traintriage diagnosis (schema traintriage.diagnosis/1)"
    return schema
