"""The entry schema refuses what an incident reader must never see: non-https or relative
references, unknown keys (typos), duplicate signature ids, unknown fix stacks."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from traintriage.errors import KnowledgeBaseError
from traintriage.kb.loader import load_entries, load_kb
from traintriage.kb.schema import Reference, validate_entry
from traintriage.plain import plain


@pytest.mark.parametrize("url", ["http://pytorch.org/docs", "https:/relative", "pytorch.org", "https://exa mple.com"])
def test_references_must_be_absolute_https(url: str) -> None:
    with pytest.raises(ValueError, match="absolute https"):
        Reference(title="t", url=url)
    with pytest.raises(ValidationError, match="absolute https"):
        validate_entry({**_raw("cuda-oom"), "references": [{"title": "t", "url": url}]})


def test_a_real_reference_is_accepted() -> None:
    assert Reference(title="t", url="https://github.com/pytorch/pytorch/issues/1").url.startswith("https://")


def test_typos_and_duplicates_are_errors() -> None:
    raw = _raw("cuda-oom")
    assert validate_entry(raw) == load_kb().entries["cuda-oom"]
    with pytest.raises(ValidationError, match="mechansim"):
        validate_entry({**raw, "mechansim": "typo"})
    with pytest.raises(ValidationError, match="duplicate signature"):
        validate_entry({**raw, "signatures": raw["signatures"] + raw["signatures"][:1]})
    with pytest.raises(ValidationError, match="unknown stack"):
        validate_entry({**raw, "fix": {**raw["fix"], "code": {"tensorflow": "x"}}})


def test_texts_are_stripped_and_one_specialized_id_reads_as_a_list() -> None:
    raw = _raw("cuda-oom")
    entry = validate_entry({**raw, "summary": "  padded\n", "specializes": "cuda-oom"})
    assert entry.summary == "padded"
    assert entry.specializes == ["cuda-oom"]
    with pytest.raises(ValidationError, match="at least 1"):
        validate_entry({**raw, "summary": "   "})
    with pytest.raises(ValidationError, match="kebab"):
        validate_entry({**raw, "related": ["Not_Kebab"]})


def _raw(entry_id: str) -> dict[str, object]:
    data = plain(load_kb().entries[entry_id])
    assert isinstance(data, dict)
    return data


def test_a_bad_entry_file_is_one_line_naming_file_and_key(tmp_path: Path) -> None:
    import yaml

    folder = tmp_path / "memory"
    folder.mkdir()
    raw = {**_raw("cuda-oom"), "mechansim": "typo"}
    (folder / "cuda-oom.yaml").write_text(yaml.safe_dump(raw), encoding="utf-8")
    with pytest.raises(KnowledgeBaseError) as caught:
        load_entries(tmp_path)
    assert str(caught.value) == "cuda-oom.yaml: mechansim: unknown key (a typo?)"
