"""`autopoiesis commit`: batch-commit knowledge changes, with the summary line written by
the LLM's commit_message stage when a model is configured.

It lives in the app layer because it joins gitops (below the LLM layer) with the LLM
client; MemoryGit only takes a summarize(diff, type) callable, and calls it before it
takes the git lock (a slow model never blocks a capture's commit). The client bounds the
call by its deadline (llm.deadline_seconds) and redacts the diff before it leaves.
"""

from __future__ import annotations

from autopoiesis.core.paths import MemoryRepo
from autopoiesis.gitops import CommitResult, MemoryGit

SUMMARY_PROMPT = (
    "Summarize this git diff of an AI agent's memory as a one-line commit summary "
    "(at most 72 characters, no type prefix, no trailing period).\n\nDiff:\n{diff}"
)


def llm_summarizer(repo: MemoryRepo):
    """The commit_message stage as a summarize(diff, type) callable; None when offline."""
    if repo.config.llm.provider == "offline":
        return None

    def summarize(diff: str, commit_type: str) -> str | None:
        from autopoiesis.llm import LLMClient

        try:
            with LLMClient(repo) as client:
                return client.complete("commit_message", SUMMARY_PROMPT.format(diff=diff[:4000]), max_tokens=60).text
        except Exception:  # an unavailable model must never block a commit
            return None

    return summarize


def commit_knowledge(repo: MemoryRepo, message: str | None = None, *, session: str | None = None) -> CommitResult:
    """Commit pending changes under knowledge/, topics/ and archive/ (nothing if none)."""
    return MemoryGit(repo).commit_pending(message, session=session, summarize=None if message else llm_summarizer(repo))
