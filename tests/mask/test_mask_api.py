"""The public API other stages call is pinned, and every detector is a complete unit of data."""

from __future__ import annotations

import inspect
import re

import hyperscan

import traintriage.ingest.mask as mask_api
from tests.mask import (
    test_mask_assignments,
    test_mask_cloud,
    test_mask_pii,
    test_mask_vcs,
    test_mask_vendor,
    test_mask_web,
)
from traintriage.ingest.mask import ALL_DETECTORS, Masker, mask_stream
from traintriage.ingest.mask.prefilter import detector_database

FAMILY_CASES = [
    *test_mask_vendor.CASES,
    *test_mask_cloud.CASES,
    *test_mask_vcs.CASES,
    *test_mask_web.CASES,
    *test_mask_assignments.CASES,
    *test_mask_pii.CASES,
]


def test_public_api_is_pinned() -> None:
    assert sorted(mask_api.__all__) == ["ALL_DETECTORS", "Candidate", "Detector", "Masker", "mask_stream", "state_prefilters"]
    assert list(inspect.signature(Masker.mask_line).parameters) == ["self", "line"]
    assert list(inspect.signature(Masker.mask_chunk).parameters) == ["self", "chunk"]
    assert list(inspect.signature(Masker.mask_lines).parameters) == ["self", "chunk", "wanted", "state_lines", "limit"]
    assert list(inspect.signature(mask_stream).parameters) == ["src", "dst", "chunk_size"]
    assert inspect.signature(mask_stream).parameters["chunk_size"].default == 8 << 20


def test_detectors_are_complete_and_unique() -> None:
    names = [d.name for d in ALL_DETECTORS]
    assert len(names) == len(set(names))
    for detector in ALL_DETECTORS:
        assert re.fullmatch(r"[a-z0-9-]+", detector.name)
        assert re.fullmatch(r"[A-Z0-9_]+", detector.kind)
        assert detector.prefilter and detector.doc
        assert any(g in detector.pattern.compiled.groupindex for g in ("s", "s2")), detector.name


def test_prefilters_compile_into_one_database() -> None:
    assert isinstance(detector_database(ALL_DETECTORS), hyperscan.Database)


def test_every_detector_has_positive_payloads() -> None:
    covered = {case.detector for case in FAMILY_CASES} | {"private-key"}  # PEM has its own module
    assert covered == {d.name for d in ALL_DETECTORS}
