"""Placeholders: named by kind, numbered per log, stable per value, and telling nothing else."""

from __future__ import annotations

from tests.mask.fakes import hf_token, mask
from traintriage.ingest.mask import Masker
from traintriage.ingest.mask.placeholders import Placeholders


def test_same_value_same_placeholder_throughout_a_log() -> None:
    text = "a 10.0.0.5\nb 10.0.0.6\nc 10.0.0.5 and 10.0.0.6\nd jane@example.com 10.0.0.5"
    assert mask(text) == "a <IP-1>\nb <IP-2>\nc <IP-1> and <IP-2>\nd <EMAIL-1> <IP-1>"


def test_numbering_is_per_kind() -> None:
    assert mask("x 10.0.0.5 y a@example.com z 10.0.0.6") == "x <IP-1> y <EMAIL-1> z <IP-2>"


def test_each_masker_is_one_log() -> None:
    first, second = Masker(), Masker()
    assert first.mask_line("10.0.0.5") == "<IP-1>"
    assert first.mask_line("10.0.0.6") == "<IP-2>"
    assert second.mask_line("10.0.0.6") == "<IP-1>"


def test_a_value_keeps_its_first_name_under_another_key() -> None:
    token = hf_token(5)
    assert mask(f"HF_TOKEN={token}\n--hub_token {token}") == "HF_TOKEN=<HF_TOKEN-1>\n--hub_token <HF_TOKEN-1>"


def test_no_prefix_and_no_length_survive() -> None:
    short, long = hf_token(6), hf_token(7) + "Ab"
    out_short, out_long = mask(f"t={short}"), mask(f"t={long}")
    assert out_short == out_long == "t=<HF_TOKEN-1>"
    assert "hf_" not in out_short


def test_past_the_limit_values_are_still_hidden() -> None:
    names = Placeholders(limit=2)
    assert [names.name("IP", v) for v in ("a", "b", "c", "a")] == ["<IP-1>", "<IP-2>", "<IP>", "<IP-1>"]
    assert len(names) == 2
