"""A second opinion for wording no signature knows: KB entries ranked by BM25 similarity.

Each entry is one document: the words `kb search` indexes (id, title, tags, summary,
symptoms, signature literals; kb/search_index.py) plus the failure lines of the entry's
positive example logs (the lines its signatures or the engine's exception and fatal-line
patterns match), which carry other libraries' and versions' wording. The query is the
salient lines of a failure, already masked at ingest, with numbers and hashes dropped.

bm25s (and numpy with it) is imported only to build the index, which is pickled as plain
Python beside the KB cache and rebuilt when an entry or an example changes.
"""

from __future__ import annotations

import hashlib
import pickle
import re
from dataclasses import dataclass
from pathlib import Path

from traintriage.kb.loader import (
    EXAMPLES_DIR,
    KnowledgeBase,
    cache_dir,
    kb_cache_key,
    read_cache,
    write_cache,
)
from traintriage.kb.schema import Entry
from traintriage.kb.search_index import document, tokens
from traintriage.match.compiler import PatternKind, Scanner, matching_patterns
from traintriage.match.internal import Internal

EXAMPLE_LINES = 40
"""Failure lines taken from one example log: enough for its wording, not its whole noise."""
_EXAMPLE_KINDS = frozenset({Internal.exception, Internal.fatal_line, Internal.fatal_signal, Internal.error_level})


# A library's named status (`CUBLAS_STATUS_INVALID_VALUE`, `CUDA_ERROR_ILLEGAL_ADDRESS`): the
# family is the part up to STATUS_/ERROR_.
_STATUS_CODE = re.compile(r"\b([A-Z][A-Z0-9]{1,15}_(?:STATUS|ERROR)_)([A-Z0-9_]{2,40})\b")

# File paths name the machine and the build (`/opt/conda/conda-bld/pytorch_1524.../THCStorage.cu`),
# not the failure; applied to a few short lines only.
_PATH = re.compile(r"(?:[A-Za-z]:)?(?:[\\/][\w.<>@+-]{1,200}){2,64}")


def query_words(lines: list[str]) -> list[str]:
    """Distinct words of log lines, without paths, numbers and hashes (they name this run, not its class)."""
    return list(dict.fromkeys(_words(tokens(_PATH.sub(" ", " ".join(lines))))))


def _words(raw: list[str]) -> list[str]:
    """`CUDA_ERROR_OUT_OF_MEMORY` reads as its parts, like the prose that names it."""
    return [part for word in raw for part in word.split("_") if part and _is_word(part)]


def _is_word(word: str) -> bool:
    digits = sum(c.isdigit() for c in word)
    return digits == 0 or (digits <= 3 and len(word) <= 12 and not word.isdigit())


def status_codes(lines: list[str]) -> set[tuple[str, str]]:
    """The named library statuses, as (family, name), in short lines (bounded: salient lines and entry texts)."""
    return {(family, name) for line in lines for family, name in _STATUS_CODE.findall(line[:4096])}


@dataclass
class SimilarityIndex:
    entry_ids: list[str]
    postings: dict[str, tuple[tuple[int, float], ...]]
    """Per word, the (entry position, BM25 weight) of every entry it occurs in: bm25s computes every
    weight at indexing time and a query's score is their sum, so the pickled index is plain Python and
    loads without numpy (a tenth of a second of a short diagnosis that asks for alternatives)."""
    codes: dict[str, frozenset[tuple[str, str]]]
    """Per entry, the library statuses its text and examples name."""

    def contradicts(self, entry_id: str, codes: set[tuple[str, str]]) -> bool:
        """Whether the log names a status of a family the entry lists, but not one the entry lists:
        `CUBLAS_STATUS_INVALID_VALUE` against an entry about EXECUTION_FAILED and NOT_SUPPORTED.
        Words alone cannot tell these apart; the status can."""
        known = self.codes.get(entry_id, frozenset())
        families = {family for family, _ in known}
        return any(code not in known and code[0] in families for code in codes)

    def scores(self, words: list[str]) -> dict[str, float]:
        """BM25 score per entry that shares a word with the query."""
        totals: dict[int, float] = {}
        for word in words:
            for position, weight in self.postings.get(word, ()):
                totals[position] = totals.get(position, 0.0) + weight
        return {self.entry_ids[position]: total for position, total in totals.items() if total > 0}

    def rank(self, words: list[str], top: int = 5) -> list[tuple[str, float]]:
        """The best entries for the words, best first, with their BM25 scores (> 0)."""
        return sorted(self.scores(words).items(), key=lambda pair: (-pair[1], pair[0]))[:top]


def example_failure_lines(entry_id: str, scanner: Scanner) -> list[str]:
    """The lines of the entry's positive examples that show the failure."""
    lines: list[str] = []
    for path in sorted((EXAMPLES_DIR / entry_id).glob("positive-*.log")):
        kept = 0
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            if kept >= EXAMPLE_LINES:
                break
            if any(_shows_failure(scanner, pattern, entry_id) for pattern in matching_patterns(scanner, line)):
                lines.append(line)
                kept += 1
    return lines


def _shows_failure(scanner: Scanner, pattern: int, entry_id: str) -> bool:
    info = scanner.table[pattern]
    if info.kind is PatternKind.internal:
        return info.internal in _EXAMPLE_KINDS
    return info.kind is PatternKind.signature and info.entry_id == entry_id


def build_index(kb: KnowledgeBase, scanner: Scanner) -> SimilarityIndex:
    import bm25s  # numpy comes with it: only building the index pays for it

    entry_ids = sorted(kb.entries)
    lines = {e: example_failure_lines(e, scanner) for e in entry_ids}
    corpus = [_words(document(kb.entries[e])) + query_words(lines[e]) for e in entry_ids]
    retriever = bm25s.BM25()
    retriever.index(corpus, show_progress=False)
    codes = {e: frozenset(status_codes(_entry_text(kb.entries[e]) + lines[e])) for e in entry_ids}
    return SimilarityIndex(entry_ids, _postings(retriever), codes)


def _postings(retriever: object) -> dict[str, tuple[tuple[int, float], ...]]:
    """bm25s's eager score matrix (one column of entry weights per word) as plain tuples."""
    matrix = retriever.scores  # type: ignore[attr-defined]
    data, indices, indptr = matrix["data"].tolist(), matrix["indices"].tolist(), matrix["indptr"].tolist()
    spans = {word: (indptr[column], indptr[column + 1])
             for word, column in retriever.vocab_dict.items()  # type: ignore[attr-defined]
             if column + 1 < len(indptr)}  # bm25s adds an empty word that has no column
    return {word: tuple(zip(indices[start:end], data[start:end], strict=True)) for word, (start, end) in spans.items()}


def _entry_text(entry: Entry) -> list[str]:
    return [entry.title, " ".join(entry.tags), entry.summary, entry.mechanism, *(s.symptom for s in entry.symptoms)]


def _index_key() -> str:
    examples = sorted(EXAMPLES_DIR.glob("*/positive-*.log"))
    hasher = hashlib.sha256(f"{_INDEX_VERSION}\0{kb_cache_key()}".encode())
    for path in examples:
        stat = path.stat()
        hasher.update(f"{path}\0{stat.st_size}\0{stat.st_mtime_ns}\0".encode())
    return hasher.hexdigest()[:20]


_INDEX_VERSION = 4
"""Bumped when SimilarityIndex changes shape, so an older pickle is never loaded."""
_LOADED: dict[str, SimilarityIndex] = {}


def similarity_index(kb: KnowledgeBase, scanner: Scanner) -> SimilarityIndex:
    """The index, from the on-disk cache when neither an entry nor an example changed."""
    key = _index_key()
    if key in _LOADED:
        return _LOADED[key]
    cached = Path(cache_dir()) / f"similar-{key}.pickle"
    index = read_cache(cached)
    if not isinstance(index, SimilarityIndex) or set(index.entry_ids) != set(kb.entries):
        index = build_index(kb, scanner)
        write_cache(cached, pickle.dumps(index, protocol=pickle.HIGHEST_PROTOCOL))
    _LOADED[key] = index
    return index
