"""`autopoiesis commit`: batch-commit knowledge changes, with the summary line written by
the LLM's commit_message stage when a model is configured.

It lives in the composition (autopoiesis.memory) because it joins MemoryGit (below the LLM layer)
with the LLM
client; MemoryGit only takes a summarize(diff, type) callable, and calls it before it
takes the git lock (a slow model never blocks a capture's commit). The client bounds the
call by its deadline (llm.deadline_seconds) and redacts the diff before it leaves.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from autopoiesis.core.paths import MemoryRepo
from autopoiesis.git.repo import CommitResult, MemoryGit

if TYPE_CHECKING:
    from autopoiesis.llm import LLMClient

SUMMARY_PROMPT = (
    "Summarize this git diff of an AI agent's memory as a one-line commit summary "
    "(at most 72 characters, no type prefix, no trailing period).\n\nDiff:\n{diff}"
)


def llm_summarizer(
    repo: MemoryRepo, client: LLMClient | None = None
) -> Callable[[str, str], str | None] | None:
    """The commit_message stage as a summarize(diff, type) callable; None when offline.
    CLIENT: the LLM client to ask through (a daemon job's, with its token budget); by
    default one of its own for each call."""
    if repo.config.llm.provider == "offline":
        return None

    def summarize(diff: str, commit_type: str) -> str | None:
        diff = without_private(repo, diff)
        if not diff.strip():
            return None  # only private files changed: the deterministic message
        prompt = SUMMARY_PROMPT.format(diff=diff[:4000])
        try:
            if client is not None:
                return client.complete("commit_message", prompt, max_tokens=60).text
            from autopoiesis.llm import LLMClient

            with LLMClient(repo) as own:
                return own.complete("commit_message", prompt, max_tokens=60).text
        except Exception:  # an unavailable model must never block a commit
            return None

    return summarize


def without_private(repo: MemoryRepo, diff: str) -> str:
    """DIFF (`git diff` output) without the files that may not reach a model: a private
    file's diff is its plain text in an unlocked clone (git-crypt's textconv)."""
    if "diff --git " not in diff:
        return diff
    parts = re.split(r"(?m)^(?=diff --git )", diff)
    kept = []
    for part in parts:
        m = re.match(r"diff --git a/(\S+) b/(\S+)", part)
        if m and not all(repo.may_reach_model(p) for p in m.groups()):
            continue
        kept.append(part)
    return "".join(kept)


def commit_knowledge(
    repo: MemoryRepo,
    message: str | None = None,
    *,
    session: str | None = None,
    llm: LLMClient | None = None,
) -> CommitResult:
    """Commit pending changes under knowledge/, topics/ and archive/ (nothing if none)."""
    return MemoryGit(repo).commit_pending(
        message, session=session, summarize=None if message else llm_summarizer(repo, llm)
    )
