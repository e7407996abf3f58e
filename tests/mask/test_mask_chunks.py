"""Chunk and stream behaviour: line counts, boundaries, bytes that are not UTF-8, long lines."""

from __future__ import annotations

import io

import pytest

from tests.mask.fakes import B64, fake, hf_token, leaked, mask, password
from traintriage.ingest.mask import Masker, mask_stream
from traintriage.ingest.mask import stream as stream_module

TOKEN = hf_token(101)
PW = password(102)
KEY_BODY = [fake(B64, 64, 103 + i) for i in range(8)]
LOG = (
    "\n".join(
        [
            "start on node01",
            f"HF_TOKEN={TOKEN}",
            f"PGPASSWORD={PW}",
            "+ export MASTER_ADDR=10.9.8.7",
            "-----BEGIN RSA PRIVATE KEY-----",
            *KEY_BODY,
            "-----END RSA PRIVATE KEY-----",
            *(f"step={i} loss=2.{i} on 10.9.8.7:29500" for i in range(40)),
            f"retry with {PW}",
            "jane@example.com\r",
        ]
    )
    + "\n"
).encode()


def _stream(data: bytes, chunk_size: int) -> bytes:
    out = io.BytesIO()
    mask_stream(io.BytesIO(data), out, chunk_size=chunk_size)
    return out.getvalue()


def test_mask_chunk_keeps_every_newline() -> None:
    output = Masker().mask_chunk(LOG)
    assert output.count(b"\n") == LOG.count(b"\n")
    assert not leaked(TOKEN, output.decode()) and not leaked(PW, output.decode())


@pytest.mark.parametrize("chunk_size", [1, 7, 64, 333, 4096, 1 << 20])
def test_stream_result_does_not_depend_on_chunk_size(chunk_size: int) -> None:
    assert _stream(LOG, chunk_size) == Masker().mask_chunk(LOG)


def test_a_secret_split_by_a_read_boundary_is_still_masked() -> None:
    cut = LOG.index(TOKEN.encode()) + 10
    output = _stream(LOG, cut).decode()
    assert not leaked(TOKEN, output)


def test_carriage_returns_and_missing_final_newline_are_kept() -> None:
    data = b"a 10.0.0.1\r\nprogress\r 50%\rdone 10.0.0.1"
    assert _stream(data, 5) == b"a <IP-1>\r\nprogress\r 50%\rdone <IP-1>"


def test_invalid_utf8_passes_through_untouched() -> None:
    data = b"\xff\xfe binary \xc3\x28 junk\nhost 10.0.0.1 \xe2\x82 tail\n\x80\x81\x82\n"
    output = Masker().mask_chunk(data)
    assert output == b"\xff\xfe binary \xc3\x28 junk\nhost <IP-1> \xe2\x82 tail\n\x80\x81\x82\n"


def test_empty_and_blank_input() -> None:
    assert Masker().mask_chunk(b"") == b""
    assert _stream(b"", 8) == b""
    assert _stream(b"\n\n\n", 2) == b"\n\n\n"


def test_an_endless_line_is_cut_without_losing_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stream_module, "MAX_LINE", 1000)
    data = (b"word " * 1000) + b"10.0.0.1 " + (b"x" * 5000) + b"\nnext 10.0.0.1\n"
    output = _stream(data, 256)
    assert output.count(b"\n") == 2
    assert output.endswith(b"\nnext <IP-1>\n")
    assert len(output) == len(data) - 2 * len(b"10.0.0.1") + 2 * len(b"<IP-1>")


def test_a_learned_value_is_found_in_later_chunks() -> None:
    masker = Masker()
    first = masker.mask_chunk(f"PGPASSWORD={PW}\n".encode())
    second = masker.mask_chunk(f"psql: auth failed for {PW}\n".encode())
    assert first == b"PGPASSWORD=<PASSWORD-1>\n"
    assert second == b"psql: auth failed for <PASSWORD-1>\n"


def test_mask_line_accepts_any_str() -> None:
    masker = Masker()
    assert masker.mask_line("") == ""
    assert masker.mask_line("lone \udc80 surrogate 10.0.0.1 \ud800") == "lone \udc80 surrogate <IP-1> \ud800"
    assert masker.mask_line("two\nlines 10.0.0.1") == "two\nlines <IP-1>"


def test_repeated_lines_use_the_cache_consistently() -> None:
    text = "\n".join(["traceback in /home/jfake/train.py line 3"] * 50 + ["HOME=/home/jfake"]) + "\n"
    output = mask(text)
    assert output.count("/home/<USER-1>/train.py") == 50
    assert "jfake" not in output


def test_literal_search_falls_back_when_hyperscan_refuses_a_value() -> None:
    from traintriage.ingest.mask.prefilter import LiteralFilter

    literal = b"k" * 70_000  # beyond Hyperscan's pattern length limit
    hits = LiteralFilter([b"abc", literal]).scan(b"x\nabc y\n" + literal + b"\n")
    assert hits == {2: 0b01, 8: 0b10}
