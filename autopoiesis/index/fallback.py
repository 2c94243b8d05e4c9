"""Search without the index: git grep (or ripgrep when installed) over the memory files,
for when memory.db is missing, unreadable or corrupt. Files are ranked by how many
distinct query terms they contain, then by how many lines match."""

from __future__ import annotations

import shutil
import subprocess

from autopoiesis.core.paths import INDEXED_DIRS, MemoryRepo, category_of
from autopoiesis.git import runner as git
from autopoiesis.index.query import SearchResult, make_snippet
from autopoiesis.index.text import query_terms

MAX_TERMS = 16


class IndexFallbackWarning(UserWarning):
    """search() answered from git grep / ripgrep instead of the index."""


def grep_search(
    repo: MemoryRepo, query: str, limit: int = 10, category: str | None = None
) -> tuple[list[SearchResult], str]:
    """Results for QUERY without the index, and the tool used ("git grep" or "ripgrep")."""
    terms = query_terms(query)[:MAX_TERMS]
    if not terms:
        return [], "git grep"
    dirs = [d for d in INDEXED_DIRS if (repo.root / d).is_dir()]
    if not dirs:
        return [], "git grep"
    pattern_args = [a for t in terms for a in ("-e", t)]
    if shutil.which("rg"):
        tool = "ripgrep"
        cmd = [
            "rg",
            "-n",
            "-i",
            "-F",
            "--no-heading",
            "--with-filename",
            "-g",
            "*.md",
            *pattern_args,
            "--",
            *dirs,
        ]
        out = subprocess.run(cmd, cwd=repo.root, capture_output=True, check=False).stdout
    else:
        tool = "git grep"
        out = git.run(
            repo.root,
            "grep",
            "-n",
            "-i",
            "-I",
            "-F",
            "--untracked",
            "--no-color",
            *pattern_args,
            "--",
            *[f"{d}/*.md" for d in dirs],
            check=False,
        )
    hits: dict[str, list[tuple[int, str]]] = {}
    for line in out.decode("utf-8", "replace").splitlines():
        parts = line.split(":", 2)
        if len(parts) < 3 or not parts[1].isdigit():
            continue
        hits.setdefault(parts[0], []).append((int(parts[1]), parts[2]))
    ranked = []
    for path, lines in hits.items():
        cat = category_of(path)
        if cat is None or (category and cat != category):
            continue
        joined = " ".join(t for _, t in lines).lower()
        distinct = sum(1 for t in terms if t in joined)
        ranked.append((distinct + min(len(lines), 20) / 100.0, path, lines, cat))
    ranked.sort(key=lambda x: (-x[0], x[1]))
    results = [
        SearchResult(
            path=path,
            start_line=lines[0][0],
            end_line=lines[0][0],
            snippet=make_snippet(lines[0][1], terms),
            score=round(score, 4),
            category=cat,
            archived=cat == "archive",
        )
        for score, path, lines, cat in ranked[:limit]
    ]
    return results, tool
