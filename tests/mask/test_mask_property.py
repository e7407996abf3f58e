"""Property: masking never changes the line count and never raises, whatever the bytes."""

from __future__ import annotations

import io
import re
from functools import cache

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.mask.fakes import B64, fake, hf_token, password
from traintriage.ingest.mask import Masker, mask_stream, state_prefilters

FRAGMENTS = [
    hf_token(201),
    f"PGPASSWORD={password(202)}",
    "10.1.2.3",
    "fe80::1:2:3:4",
    "98:31:7d:ee:2c:19",
    "jane@example.com",
    "/home/jfake/",
    "-----BEGIN RSA PRIVATE KEY-----",
    "-----END RSA PRIVATE KEY-----",
    fake(B64, 64, 203),
    "token: ",
    "password ",
    "Authorization: Bearer ",
    "https://user:",
    "@host/",
    "eyJhbGciOi.eyJzdWIiOi.",
    "\r",
    "\n",
    " ",
    "'",
    '"',
    "=",
    ":",
]

log_text = st.lists(
    st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=20), st.binary(max_size=20)), max_size=60
).map(
    lambda parts: b"".join(p if isinstance(p, bytes) else p.encode("utf-8", "surrogatepass") for p in parts)
)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=4000))
def test_arbitrary_bytes_keep_their_line_count(data: bytes) -> None:
    output = Masker().mask_chunk(data)
    assert output.count(b"\n") == data.count(b"\n")


@settings(max_examples=300, deadline=None)
@given(log_text, st.integers(min_value=1, max_value=300))
def test_log_like_bytes_keep_lines_and_do_not_depend_on_chunking(data: bytes, chunk_size: int) -> None:
    whole = Masker().mask_chunk(data)
    out = io.BytesIO()
    mask_stream(io.BytesIO(data), out, chunk_size=chunk_size)
    assert whole.count(b"\n") == data.count(b"\n")
    assert out.getvalue() == whole


@settings(max_examples=20, deadline=None)
@given(
    st.sampled_from(FRAGMENTS + ["a", "0", ":", "::", "x=", "@"]),
    st.integers(min_value=10_000, max_value=200_000),
)
def test_very_long_lines_finish(fragment: str, repeat: int) -> None:
    data = (fragment.replace("\n", " ") * (repeat // max(1, len(fragment)))).encode("utf-8", "surrogatepass")
    data = data[:200_000] + b"\nend\n"
    output = Masker().mask_chunk(data)
    assert output.count(b"\n") == 2


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_mask_line_never_raises(line: str) -> None:
    output = Masker().mask_line(line)
    assert output.count("\n") == line.count("\n")


@cache
def _state_database() -> object:
    import hyperscan

    patterns = state_prefilters()
    database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    database.compile(
        expressions=[p.encode() for p, _, _ in patterns], ids=list(range(len(patterns))), elements=len(patterns),
        flags=[hyperscan.HS_FLAG_CASELESS if caseless else 0 for _, caseless, _ in patterns],
    )
    return database


def _state_lines(data: bytes) -> set[int]:
    """The line starts the scanner's pass would hand over: where a state prefilter fires."""
    ends: list[int] = []
    _state_database().scan(data, match_event_handler=lambda i, s, end, f, c: ends.append(end))  # type: ignore[attr-defined]
    return {data.rfind(b"\n", 0, max(end - 1, 0)) + 1 for end in ends}


def _line_starts(data: bytes) -> list[int]:
    return ([0] if data else []) + [i + 1 for i, byte in enumerate(data) if byte == 10 and i + 1 < len(data)]


def _unnamed(line: bytes) -> bytes:
    """Placeholders as one token: a value keeps the placeholder of the kind it was first seen
    as, and masking only some lines may first see it elsewhere (as a PEM body, not a token)."""
    return re.sub(rb"<[A-Z][A-Z0-9_]*-\d+>", b"<MASKED>", line)


@settings(max_examples=300, deadline=None)
@given(log_text, log_text, st.data())
def test_masking_only_kept_lines_masks_them_as_the_whole_log_would(first: bytes, second: bytes, data: st.DataObject) -> None:
    """The scanner masks only the lines it keeps: each must come out as full masking gives it
    (placeholder names aside), including state carried over from earlier chunks."""
    chunks = [first + b"\n", second]
    full = Masker()
    partial = Masker()
    for chunk in chunks:
        expected = full.mask_chunk(chunk).split(b"\n")
        starts = _line_starts(chunk)
        wanted = data.draw(st.lists(st.sampled_from(starts), unique=True)) if starts else []
        got = partial.mask_lines(chunk, wanted, _state_lines(chunk))
        assert set(got) == set(wanted)
        for start in wanted:
            assert _unnamed(got[start]) == _unnamed(expected[starts.index(start)])
