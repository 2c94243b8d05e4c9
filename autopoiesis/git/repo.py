"""MemoryGit: the one porcelain git wrapper of a memory repository, composed by concern:

    commits.py  GitCore: `run` (with index.lock recovery), commits and their messages
    transcripts.py  `conversation:` commits (group commit, through plumbing: direct_commit.py)
    refs.py     tags and explore/* branches (GitPython)
    remote.py   fetch, ls-remote, push, merge (`autopoiesis sync`)
    recall.py   log -S, learned, history, blame, a file at a tag or a date

Plumbing shared with the hooks and the index (status, cat-file, uncommitted paths) is
git.runner's.
"""

from __future__ import annotations

from autopoiesis.git.commits import CommitResult, GitCore, process_start
from autopoiesis.git.recall import CommitInfo, RecallMixin
from autopoiesis.git.refs import TAG_PREFIX, RefsMixin
from autopoiesis.git.remote import MergeResult, PushResult, RemoteMixin
from autopoiesis.git.transcripts import TranscriptCommitsMixin


class MemoryGit(TranscriptCommitsMixin, RefsMixin, RemoteMixin, RecallMixin, GitCore):
    """Git operations of one memory repository."""


__all__ = [
    "TAG_PREFIX",
    "CommitInfo",
    "CommitResult",
    "MemoryGit",
    "MergeResult",
    "PushResult",
    "process_start",
]
