"""What capture runs after it commits a transcript, built from the config.

Capture sits below the lifecycle and never imports it; this app-layer function is where
the two meet (docs/design.md#flow-conversation: with `lifecycle.extraction_trigger: on_session_end`, the
extractors run on each conversation as soon as it is committed).
"""

from __future__ import annotations

from collections.abc import Callable

from autopoiesis.core.paths import MemoryRepo


def after_commit_hook(repo: MemoryRepo) -> Callable[[str], None] | None:
    """The `on_committed` callback for ConversationCapture / process_stream on REPO: the
    lifecycle's extraction when `lifecycle.extraction_trigger` is `on_session_end`, else
    None. The extraction never raises: a failure is logged and the transcript stays
    pending for `autopoiesis extract --pending`."""
    if repo.config.lifecycle.extraction_trigger != "on_session_end":
        return None

    def extract(transcript_path: str) -> None:
        # imported on the first commit, not at start-up: a harness's capture process
        # must start fast, and many never close a session
        from autopoiesis.knowledge.extract import on_session_end
        from autopoiesis.memory.commit import llm_summarizer

        on_session_end(repo, transcript_path, summarize=llm_summarizer(repo))

    return extract
