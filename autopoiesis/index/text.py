"""Query text -> terms: the only road from user text to FTS5.

User text never reaches FTS5 as syntax: it is cut into word tokens (core.text.words:
Unicode letters and digits, as FTS5's unicode61 tokenizer cuts them), stopwords are
dropped, and each remaining term is written as a double-quoted FTS5 string, OR-ed.
Quotes, parentheses, AND/OR/NOT/NEAR, '-', ':', '*' and '^' are therefore inert.
"""

from __future__ import annotations

from autopoiesis.core.text import STOPWORDS, words

MAX_QUERY_TERMS = 64  # a 10,000-character query is cut to its first distinct terms

# core.text's stopwords but "may": here it is the month more often than the verb, and
# transcripts are dated ("Caroline (user), 8 May 2023:"); as a stopword it cost LoCoMo
# 0.004 of recall@5 and MRR. The hashing embedder drops the same words.
SEARCH_STOPWORDS = STOPWORDS - {"may"}


def query_terms(query: str) -> list[str]:
    """Distinct content terms of QUERY in order; all words when every word is a stopword."""
    toks = words(query[:20000])
    seen: dict[str, None] = {}
    for t in toks:
        if t not in SEARCH_STOPWORDS and t not in seen:
            seen[t] = None
    if not seen:
        for t in toks:
            seen.setdefault(t, None)
    return list(seen)[:MAX_QUERY_TERMS]


def fts_match(terms: list[str]) -> str | None:
    """An FTS5 MATCH expression OR-ing TERMS, each quoted; None when there is nothing."""
    if not terms:
        return None
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
