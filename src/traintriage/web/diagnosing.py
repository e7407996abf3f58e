"""One function for every door of the web app: logs in memory -> stored, masked document."""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any

from traintriage.pipeline import diagnosis_of_run, run_bytes
from traintriage.report.model import Diagnosis
from traintriage.web.document import build_document, contract_part
from traintriage.web.storage import DiagnosisStore

if TYPE_CHECKING:
    from pydantic import TypeAdapter


def diagnose_and_store(items: list[tuple[str, bytes]], store: DiagnosisStore, owner: str | None) -> str:
    """Diagnose uploaded logs (masked at ingest, never written to disk) and store the result;
    returns its id. Runs in a worker thread: scanning is CPU-bound."""
    run, started = run_bytes(items, mask=True)
    diagnosis = diagnosis_of_run(run, started)
    document = build_document(diagnosis, run)
    return store.save_diagnosis(document, owner=owner, sources=[name for name, _ in items])


def diagnosis_of(document: dict[str, Any]) -> Diagnosis:
    """The Diagnosis a stored document holds, for the CLI's renderers (JSON, Markdown)."""
    return _adapter().validate_python(contract_part(document))


@cache
def _adapter() -> TypeAdapter[Diagnosis]:
    from pydantic import TypeAdapter

    from traintriage.report.model import diagnosis_json_schema

    diagnosis_json_schema()  # puts the constraint types where pydantic resolves the annotations
    return TypeAdapter(Diagnosis)
