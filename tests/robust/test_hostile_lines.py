"""Property tests: random long lines made of the tokens the patterns look for (rank lists,
NaNs, prefixes, escapes, key markers...) are diagnosed in time linear in their size; random
and cut archives are read or refused with a clear error, never a crash; the scanner's hits do
not depend on where its reads are cut."""

from __future__ import annotations

import bz2
import gzip
import lzma
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import zstandard
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from tests.robust.conftest import PROFILE
from traintriage.analyze.diff import collect
from traintriage.errors import TraintriageError
from traintriage.ingest.sources import Source, is_binary, sources_from_bytes
from traintriage.kb.schema import Role
from traintriage.match.compiler import PatternKind, load_scanner
from traintriage.match.scan import LineHit, scan_source
from traintriage.parse.prefix import parse_prefix
from traintriage.pipeline import diagnose_bytes

SECONDS_PER_MB = 8.0
FIXED_SECONDS = 1.5
TOKENS = [
    "Ranks ", "Rank ", "1", "23", "700", ", ", ",", " ", "  ", "\t", "x", "failed to pass monitoredBarrier",
    "nan", "inf", "NaN", "loss", "grad_norm", "lr", "step", ":", "=", "'", '"', "(", ")", "[", "]", "{", "}",
    "RuntimeError: ", "Error", "Exception", "Traceback (most recent call last):", 'File "t.py", line 3, in f',
    "[rank3]: ", "[default0]:", "node0-", "node12.cluster.local", "host-a:", "2024-05-01T12:00:00.123Z ",
    "I1202 14:48:49.607000 2384 api.py:10] ", "\r", "\x1b[31m", "\x1b[", "\x1b]", "\x07",
    "exitcode: ", "local_rank: ", "SeqNum=", "last completed work: ", "CUDA out of memory. Tried to allocate ",
    "2.00 GiB", "-----BEGIN PRIVATE KEY-----", "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC", "password=", "token: ",
    "AKIA", "ghp_", "user@", "10.0.0.1", "/home/alice/", "0x7f3a", "e-05", "-", "_", ".", "|", "%",
]
motifs = st.lists(st.sampled_from(TOKENS), min_size=1, max_size=24).map("".join)


@pytest.fixture(scope="module", autouse=True)
def _warm() -> None:
    """Load the KB and compile the scanner once, outside the timed calls."""
    diagnose_bytes([("warm.log", b"step 1 loss 1.0\n")])


def _timed(call: Callable[[], object], size: int) -> float:
    started = time.perf_counter()
    call()
    elapsed = time.perf_counter() - started
    assert elapsed <= FIXED_SECONDS + SECONDS_PER_MB * size / 1e6, f"{elapsed:.1f} s for {size / 1e6:.2f} MB"
    return elapsed


@settings(settings.get_profile(PROFILE))
@given(motif=motifs, size=st.integers(50_000, 1_000_000), newline_every=st.sampled_from([0, 0, 1, 37, 4000]))
def test_long_lines_of_pattern_tokens_take_linear_time(motif: str, size: int, newline_every: int) -> None:
    line = (motif * (size // len(motif) + 1))[:size]
    if newline_every:
        text = "\n".join(line[i : i + newline_every] for i in range(0, len(line), newline_every))
    else:
        text = "step 1 loss 2.5\n" + line + "\n"
    data = text.encode()
    assume(not is_binary(data[:8192]))
    _timed(lambda: diagnose_bytes([("run.log", data)]), len(data))


@pytest.mark.parametrize("tail", [b"\x1b[0m\x1b[1m", b"\x1b]0;title\x07"], ids=["csi", "osc"])
def test_a_last_line_of_escape_sequences_only_is_no_line(tail: bytes) -> None:
    """A window that holds nothing but terminal escapes (a log cut after a colour reset) is empty
    once they are removed: no line to scan, and no crash on it."""
    for data in (tail, b"step 1 loss 2.5\n" + tail):
        assert diagnose_bytes([("run.log", data)]).status.value == "no-failure"


@settings(settings.get_profile(PROFILE))
@given(motif=motifs, size=st.integers(10_000, 400_000))
def test_diff_and_prefix_parser_take_linear_time(motif: str, size: int) -> None:
    line = (motif * (size // len(motif) + 1))[:size]
    data = ("\n".join([line[: size // 2], line[size // 2 :], line[:4000]]) + "\n").encode()
    assume(not is_binary(data[:8192]))  # escapes and control bytes only: refused as binary, rightly
    source = sources_from_bytes([("bad.log", data)])
    _timed(lambda: collect(source, mask=True), len(data))
    _timed(lambda: [parse_prefix(line[i : i + 4000]) for i in range(0, len(line), 4000)], len(line))


COMPRESSORS: dict[str, Callable[[bytes], bytes]] = {".gz": gzip.compress, ".bz2": bz2.compress, ".xz": lzma.compress,
               ".zst": zstandard.ZstdCompressor().compress}


@settings(settings.get_profile(PROFILE))
@given(suffix=st.sampled_from(sorted(COMPRESSORS)), blob=st.binary(max_size=4096))
def test_random_bytes_named_as_an_archive_are_read_or_refused_clearly(suffix: str, blob: bytes) -> None:
    try:
        diagnose_bytes([(f"run.log{suffix}", blob)])
    except TraintriageError as exc:
        assert str(exc).startswith(f"run.log{suffix}: ") and "\n" not in str(exc)


@settings(settings.get_profile(PROFILE))
@given(suffix=st.sampled_from(sorted(COMPRESSORS)), motif=motifs, lines=st.integers(1, 30_000),
       cut=st.floats(0.05, 1.0))
def test_a_cut_archive_yields_a_prefix_of_its_text_and_says_so(suffix: str, motif: str, lines: int,
                                                                 cut: float) -> None:
    text = "".join(f"{n} {motif.replace(chr(10), ' ')}\n" for n in range(lines)).encode()
    blob = COMPRESSORS[suffix](text)
    kept = blob[: max(1, int(len(blob) * cut))]
    try:
        source = sources_from_bytes([(f"run.log{suffix}", kept)])[0]
    except TraintriageError:
        return  # cut inside the archive's header: nothing decodes, refused with its name
    scan = scan_source(0, source, load_scanner())
    assert scan.bytes <= len(text)
    if len(kept) < len(blob):
        assert any("cut short" in p.message or "ends early" in p.message for p in scan.problems)
    else:
        assert scan.bytes == len(text) and not scan.problems


@settings(settings.get_profile(PROFILE))
@given(lines=st.lists(motifs, min_size=1, max_size=400), chunk=st.sampled_from([1024, 4096, 65536]))
def test_hits_do_not_depend_on_where_reads_are_cut(tmp_path_factory: pytest.TempPathFactory, lines: list[str],
                                                   chunk: int) -> None:
    path: Path = tmp_path_factory.mktemp("scan") / "run.log"
    path.write_text("\n".join(lines) + "\n")
    source = Source(name="run.log", path=path, size=path.stat().st_size)
    scanner = load_scanner()
    small = scan_source(0, source, scanner, chunk_size=chunk)
    large = scan_source(0, source, scanner, chunk_size=1 << 22)
    # Supporting signatures count by presence and are reported once per read window
    # (compiler.table_flags): which of their lines is kept depends on the windows, that
    # they were seen does not.
    supporting = {i for i, p in enumerate(scanner.table) if p.kind is PatternKind.signature
                  and p.role is Role.supporting}

    def located(hits: list[LineHit]) -> list[tuple[int, list[int]]]:
        kept = [(h.line, sorted(set(h.patterns) - supporting)) for h in hits]
        return [(line, patterns) for line, patterns in kept if patterns]

    def present(hits: list[LineHit]) -> set[int]:
        return {p for h in hits for p in h.patterns if p in supporting}

    assert located(small.hits) == located(large.hits)
    assert present(small.hits) == present(large.hits)
    assert small.lines == large.lines and small.bytes == large.bytes
