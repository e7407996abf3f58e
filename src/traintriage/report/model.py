"""The Diagnosis: the one data model every front door returns (OUTPUT.md, schema 1).

Fields may be added; none may change meaning without bumping SCHEMA_ID.
"""

from __future__ import annotations

from enum import Enum
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

SCHEMA_ID = "traintriage.diagnosis/1"


class Status(str, Enum):
    failure = "failure"
    unknown_failure = "unknown-failure"
    no_failure = "no-failure"


class Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class UserFrame(Model):
    """The innermost traceback frame in the user's own code (outside site-packages)."""

    file: str
    line: int
    function: str


class Evidence(Model):
    source: str
    line: int = Field(ge=1)
    rank: int | None = None
    host: str | None = None
    time: str | None = None
    text: str


class RootCause(Model):
    id: str
    title: str
    category: str
    severity: str
    confidence: float = Field(ge=0.0, le=1.0)
    summary: str
    evidence: list[Evidence]
    exception: str | None = None
    user_frame: UserFrame | None = None


class Candidate(Model):
    id: str
    confidence: float = Field(ge=0.0, le=1.0)


class Ranks(Model):
    seen: list[int] = Field(default_factory=list)
    failed: list[int] = Field(default_factory=list)
    collateral: list[int] = Field(default_factory=list)


class Collateral(Model):
    id: str
    title: str = ""
    ranks: list[int] = Field(default_factory=list)
    explained_by: str
    count: int = Field(default=0, description="matching lines in the whole log, beyond those kept as evidence")


class Suspect(Model):
    rank: int | None = None
    host: str | None = None
    reason: str


class Anomaly(Model):
    kind: str
    rank: int | None = None
    step: int | None = None
    detail: str


class TimelineEvent(Model):
    time: str | None = None
    rank: int | None = None
    what: str
    source: str
    line: int


class FixAdvice(Model):
    summary: str
    steps: list[str]
    code: dict[str, str] = Field(default_factory=dict)


class Stats(Model):
    sources: int
    lines: int
    bytes: int
    seconds: float


class Diagnosis(Model):
    schema_: str = Field(default=SCHEMA_ID, alias="schema")
    status: Status
    root_cause: RootCause | None = None
    candidates: list[Candidate] = Field(default_factory=list, max_length=5)
    initiating_rank: int | None = None
    suspects: list[Suspect] = Field(default_factory=list)
    ranks: Ranks = Field(default_factory=Ranks)
    collateral: list[Collateral] = Field(default_factory=list)
    anomalies: list[Anomaly] = Field(default_factory=list)
    timeline: list[TimelineEvent] = Field(default_factory=list)
    fix: FixAdvice | None = None
    verify: str | None = None
    environment: dict[str, str] = Field(default_factory=dict)
    unknown: list[Evidence] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    stats: Stats

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    def to_json_dict(self) -> dict[str, object]:
        return self.model_dump(mode="json", by_alias=True)

    @property
    def exit_code(self) -> int:
        return {Status.no_failure: 0, Status.failure: 1, Status.unknown_failure: 2}[self.status]


SCHEMA_PATH = Path(__file__).with_name("diagnosis.schema.json")


def diagnosis_json_schema() -> dict[str, object]:
    """The JSON Schema of the output contract, as shipped in diagnosis.schema.json."""
    schema = Diagnosis.model_json_schema(by_alias=True, mode="serialization")
    schema["$id"] = "urn:traintriage:schema:diagnosis:1"
    schema["title"] = "traintriage diagnosis (schema traintriage.diagnosis/1)"
    return schema
