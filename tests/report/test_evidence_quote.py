"""Over every KB example: the text report's evidence rows keep the part of the line that the
class's signature matched, and the JSON keeps the whole line with where that part is."""

from __future__ import annotations

from pathlib import Path

import pytest

from traintriage.kb.loader import EXAMPLES_DIR
from traintriage.pipeline import diagnose
from traintriage.report.render import TEXT_WIDTH, quote_evidence, render_json, render_text

POSITIVES = sorted(EXAMPLES_DIR.glob("*/positive-*.log"))


@pytest.mark.parametrize("example", POSITIVES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_evidence_keeps_what_the_signature_matched(example: Path) -> None:
    diagnosis = diagnose([str(example)])
    if diagnosis.root_cause is None:
        return
    report = render_text(diagnosis)
    for evidence in diagnosis.root_cause.evidence:
        if evidence.matched is None:  # a metric line (loss spike, slow rank), not a signature's
            continue
        start, end = evidence.matched
        part = " ".join(evidence.text[start:end].split())
        assert part, evidence
        quoted = quote_evidence(evidence)
        assert quoted in report
        if quoted.startswith("collectives differ:"):  # the fields that differ say more than the match
            continue
        if len(part) <= TEXT_WIDTH - 4:
            assert part in quoted, (part, quoted)
        assert len(quoted) <= TEXT_WIDTH + 1


def test_json_evidence_is_the_whole_line_with_the_matched_part(tmp_path: Path) -> None:
    import json

    line = ("[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.91 GiB. GPU 1 has a total "
            "capacity of 79.10 GiB of which 1.20 GiB is free. Including non-PyTorch memory, this process has 77.88 GiB "
            "memory in use. Of the allocated memory 71.02 GiB is allocated by PyTorch, and 5.31 GiB is reserved by "
            "PyTorch but unallocated.")
    path = tmp_path / "job.out"
    path.write_text(line + "\n")
    evidence = json.loads(render_json(diagnose([str(path)])))["root_cause"]["evidence"][0]
    assert evidence["text"] == line
    start, end = evidence["matched"]
    assert "CUDA out of memory" in evidence["text"][start:end]
