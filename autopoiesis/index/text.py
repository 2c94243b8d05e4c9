"""Query text -> terms: the only road from user text to FTS5.

User text never reaches FTS5 as syntax: it is cut into word tokens (Unicode letters and
digits, as FTS5's unicode61 tokenizer cuts them), stopwords are dropped, and each
remaining term is written as a double-quoted FTS5 string, OR-ed. Quotes, parentheses,
AND/OR/NOT/NEAR, '-', ':', '*' and '^' are therefore inert.
"""

from __future__ import annotations

import re

WORD_RE = re.compile(r"[^\W_]+", re.UNICODE)
MAX_QUERY_TERMS = 64  # a 10,000-character query is cut to its first distinct terms

# English function words and question words: they carry no topic, and OR-ing them into a
# BM25 query only adds noise.
STOPWORDS = frozenset(
    """
a about above after again against all am an and any are aren as at be because been before being below
between both but by can cannot could couldn did didn do does doesn doing don down during each few for from
further had hadn has hasn have haven having he her here hers herself him himself his how i if in into is
isn it its itself just let ll me might more most must mustn my myself no nor not now of off on once only
or other ought our ours ourselves out over own re same shall she should shouldn so some such than that the
their theirs them themselves then there these they this those through to too under until up upon us very
was wasn we were weren what when where which while who whom whose why will with won would wouldn you your
yours yourself yourselves s t d m ve y also get got ever
""".split()
)


def words(text: str) -> list[str]:
    """Lower-cased word tokens of TEXT."""
    return WORD_RE.findall(text.lower())


def query_terms(query: str) -> list[str]:
    """Distinct content terms of QUERY in order; all words when every word is a stopword."""
    toks = words(query[:20000])
    seen: dict[str, None] = {}
    for t in toks:
        if t not in STOPWORDS and t not in seen:
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
