"""Shared machinery of the per-family payload tests: each case names the detector that owns it."""

from __future__ import annotations

from dataclasses import dataclass

from tests.mask.fakes import leaked
from traintriage.ingest.mask import ALL_DETECTORS, Masker


@dataclass(frozen=True)
class Case:
    """A positive payload: ``line`` must come out without ``secret``, named ``<kind-n>``."""

    detector: str
    line: str
    secret: str
    kind: str

    def __str__(self) -> str:
        return f"{self.detector}:{self.line[:40]}"


BY_NAME = {detector.name: detector for detector in ALL_DETECTORS}


def check_case(case: Case) -> None:
    """The full masker hides the secret, and so does the case's own detector on its own."""
    for masker in (Masker(), Masker(detectors=(BY_NAME[case.detector],))):
        output = masker.mask_line(case.line)
        assert not leaked(case.secret, output), f"{case.secret!r} leaked: {output!r}"
        assert output.count("\n") == case.line.count("\n")
    full = Masker().mask_line(case.line)
    assert f"<{case.kind}-" in full, f"expected <{case.kind}-n> in {full!r}"


def check_negative(line: str) -> None:
    """A look-alike that must come back byte for byte."""
    output = Masker().mask_line(line)
    assert output == line, f"changed: {line!r} -> {output!r}"
