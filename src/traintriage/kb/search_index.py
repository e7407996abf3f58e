"""A BM25 index over the KB entries, for `kb search` and the web app's search box.

Each entry is one document: its id, title (counted three times: a title says what the
entry is), tags, summary, symptoms, and the literal words of its signatures (what the
log itself says). Ranking is bm25s's; the caller adds what BM25 cannot know (a query that
a signature matches outright).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from traintriage.kb.loader import KnowledgeBase
from traintriage.kb.schema import Entry

_WORD = re.compile(r"[a-z0-9_]+")
_STOPWORDS = frozenset({"a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "in", "is", "it", "of",
                        "on", "or", "that", "the", "this", "to", "was", "with"})
# Regex syntax around a signature's literal words: classes, escapes like \d, groups, quantifiers.
_REGEX_SYNTAX = re.compile(r"\\[dDsSwWbB]|\[[^\]]{0,200}\]|\(\?[:=!<]*|[(){}|?*+^$]|\{\d+(?:,\d*)?\}")
_ESCAPED = re.compile(r"\\(.)")
TITLE_WEIGHT = 3


def tokens(text: str) -> list[str]:
    """Lower-case words and numbers, without the commonest English words."""
    return [w for w in _WORD.findall(text.lower()) if w not in _STOPWORDS]


def signature_words(pattern: str) -> str:
    """The literal text of a signature pattern (`CUDA out of memory\\. Tried` -> `CUDA out of memory. Tried`)."""
    return _ESCAPED.sub(r"\1", _REGEX_SYNTAX.sub(" ", pattern))


def document(entry: Entry) -> list[str]:
    parts = [entry.id.replace("-", " "), *[entry.title] * TITLE_WEIGHT, " ".join(entry.tags), entry.summary,
             *(s.symptom for s in entry.symptoms), *(signature_words(s.pattern) for s in entry.signatures)]
    return tokens(" ".join(parts))


@dataclass
class SearchIndex:
    entries: list[Entry]
    retriever: object

    def scores(self, query: str) -> dict[str, float]:
        """BM25 score per entry id, for the entries that share a word with the query."""
        words = tokens(query)
        if not words:
            return {}
        values = self.retriever.get_scores(words)  # type: ignore[attr-defined]
        return {e.id: float(v) for e, v in zip(self.entries, values, strict=True) if v > 0}


_CACHE: dict[int, tuple[KnowledgeBase, SearchIndex]] = {}


def search_index(kb: KnowledgeBase) -> SearchIndex:
    """The index of this KB, built once per KB object."""
    cached = _CACHE.get(id(kb))
    if cached is not None and cached[0] is kb:
        return cached[1]
    import bm25s  # numpy comes with it: keep both off the `diagnose` start-up path

    entries = sorted(kb.entries.values(), key=lambda e: e.id)
    retriever = bm25s.BM25()
    retriever.index([document(e) for e in entries], show_progress=False)
    index = SearchIndex(entries, retriever)
    _CACHE.clear()
    _CACHE[id(kb)] = (kb, index)
    return index
