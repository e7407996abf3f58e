"""The entry schema refuses what an incident reader must never see: non-https or relative
references, unknown keys (typos), duplicate signature ids, unknown fix stacks."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from traintriage.kb.loader import load_kb
from traintriage.kb.schema import Entry, Reference


@pytest.mark.parametrize("url", ["http://pytorch.org/docs", "https:/relative", "pytorch.org", "https://exa mple.com"])
def test_references_must_be_absolute_https(url: str) -> None:
    with pytest.raises(ValidationError):
        Reference(title="t", url=url)


def test_a_real_reference_is_accepted() -> None:
    assert Reference(title="t", url="https://github.com/pytorch/pytorch/issues/1").url.startswith("https://")


def test_typos_and_duplicates_are_errors() -> None:
    raw = load_kb().entries["cuda-oom"].model_dump(mode="json")
    with pytest.raises(ValidationError, match="extra"):
        Entry.model_validate({**raw, "mechansim": "typo"})
    with pytest.raises(ValidationError, match="duplicate signature"):
        Entry.model_validate({**raw, "signatures": raw["signatures"] + raw["signatures"][:1]})
    with pytest.raises(ValidationError, match="unknown stack"):
        Entry.model_validate({**raw, "fix": {**raw["fix"], "code": {"tensorflow": "x"}}})
