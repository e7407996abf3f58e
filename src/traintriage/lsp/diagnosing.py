"""An open document's text -> its diagnosis and marked lines, through the pipeline the CLI
and the web app use (`run_bytes` + `diagnosis_of_run`, masked at ingest, in this process)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath
from urllib.parse import unquote, urlparse

from traintriage.lsp.marks import Mark, marks_of
from traintriage.pipeline import diagnosis_of_run, run_bytes
from traintriage.report.model import Diagnosis

COMPRESSION_SUFFIXES = frozenset({".gz", ".bz2", ".xz", ".lzma", ".zst"})
"""The pipeline decompresses by the name's suffix; an editor already sends decoded text."""
FALLBACK_NAME = "document.log"


@dataclass(frozen=True)
class DocumentReport:
    diagnosis: Diagnosis
    marks: list[Mark]


def source_name(uri: str) -> str:
    """The file name of a document URI (its rank, as in `rank3.log`, counts), without a
    compression suffix; an untitled buffer gets a plain log name."""
    name = PurePosixPath(unquote(urlparse(uri).path)).name
    if PurePosixPath(name).suffix.lower() in COMPRESSION_SUFFIXES:
        name = PurePosixPath(name).stem
    return name or FALLBACK_NAME


def diagnose_text(name: str, text: str) -> DocumentReport:
    """Raises TraintriageError (binary content, empty input) with a one-line message. A lone
    surrogate the client's JSON may carry becomes "?"; line numbers are unchanged."""
    run, started = run_bytes([(name, text.encode("utf-8", "replace"))], mask=True)
    diagnosis = diagnosis_of_run(run, started)
    return DocumentReport(diagnosis=diagnosis, marks=marks_of(diagnosis, run))
