"""Every detector of the masking stage, one small unit of data per kind, by family."""

from __future__ import annotations

from traintriage.ingest.mask.detectors import assignments, cloud, keys, pii, vcs, vendor, web
from traintriage.ingest.mask.model import Detector

ALL_DETECTORS: tuple[Detector, ...] = (
    *keys.DETECTORS,
    *vendor.DETECTORS,
    *cloud.DETECTORS,
    *vcs.DETECTORS,
    *web.DETECTORS,
    *assignments.DETECTORS,
    *pii.DETECTORS,
)

__all__ = ["ALL_DETECTORS"]
