"""The masking stage: secrets and personal data leave every line before anything reads it.

    masker = Masker()                      # one per log: placeholders are numbered per log
    masker.mask_line("HF_TOKEN=hf_...")    # -> "HF_TOKEN=<HF_TOKEN-1>"
    masker.mask_chunk(b"...\\n...\\n")       # bytes in, bytes out, same number of newlines
    mask_stream(src, dst)                  # whole streams, bounded memory

What is masked, the placeholder format and what is kept on purpose: docs/MASKING.md.
"""

from __future__ import annotations

from traintriage.ingest.mask.detectors import ALL_DETECTORS
from traintriage.ingest.mask.masker import Masker, state_prefilters
from traintriage.ingest.mask.model import Candidate, Detector
from traintriage.ingest.mask.stream import mask_stream

__all__ = ["ALL_DETECTORS", "Candidate", "Detector", "Masker", "mask_stream", "state_prefilters"]
