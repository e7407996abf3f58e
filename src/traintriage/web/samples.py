"""Sample logs to try: the KB's own positive examples (kb/examples/<id>/positive-*.log)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from traintriage.kb.loader import EXAMPLES_DIR, load_kb

FEATURED = ("cuda-oom", "gpu-ecc-error", "loss-nan", "deepspeed-checkpoint-mismatch", "vllm-kv-cache-insufficient")


@dataclass(frozen=True)
class Sample:
    key: str
    entry_id: str
    title: str
    file: str


@cache
def samples() -> dict[str, Sample]:
    """Every positive example, keyed 'entry-id/positive-N.log', ordered by entry title."""
    kb = load_kb()
    found = []
    for path in sorted(EXAMPLES_DIR.glob("*/positive-*.log")):
        entry = kb.get(path.parent.name)
        if entry is not None:
            key = f"{entry.id}/{path.name}"
            found.append(Sample(key=key, entry_id=entry.id, title=entry.title, file=path.name))
    found.sort(key=lambda s: (s.title.lower(), s.file))
    return {sample.key: sample for sample in found}


def featured() -> list[Sample]:
    """One example each of a few well-known failures, for one-click tries."""
    chosen = {s.entry_id: s for s in reversed(list(samples().values()))}
    return [chosen[i] for i in FEATURED if i in chosen]


def sample_bytes(key: str) -> tuple[str, bytes] | None:
    """(name, bytes) of a known sample; None for anything else (no path from the user is opened)."""
    sample = samples().get(key)
    if sample is None:
        return None
    return f"{sample.entry_id}-{sample.file}", (EXAMPLES_DIR / sample.entry_id / sample.file).read_bytes()
