"""`autopoiesis forget`: the one sanctioned exception to immutability.

A secret that redaction missed is in every later clone of the history. `forget` removes a
string, or a whole transcript, from every commit with git-filter-repo (a well-kept tool,
run as a subprocess; fast-import runs no hooks, so the pre-commit guard of raw/ is not in
the way; git.rewrite runs it and keeps the record), then:

- every branch and tag is re-pointed at the rewritten commits (filter-repo does it);
  remote-tracking refs, which still hold the old history, are deleted first;
- reflogs are expired and `git gc --prune=now` drops the old objects;
- memory.db is rebuilt from the rewritten files, and every cache and log under
  .autopoiesis/ that could quote the text is deleted (all of them are rebuildable);
- a `maintenance:` commit records what was forgotten, when and why: the kind and length
  of the string and a salted SHA-256 (so whoever knows the secret can check it was this
  one), never the string itself;
- the object store is then scanned (`git cat-file --batch-all-objects`): if the string is
  still in any object, forget fails loudly.

It refuses a dirty tree, and says what a pushed remote needs: a force-push of every
branch and tag, and every collaborator re-cloning (a pull would bring the secret back).
"""

from __future__ import annotations

import hashlib
import re
import secrets as _secrets
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from autopoiesis.core.clock import format_ts, utc_now
from autopoiesis.core.paths import STATE_FILES, MemoryRepo
from autopoiesis.errors import GitError
from autopoiesis.git import rewrite
from autopoiesis.git.repo import MemoryGit
from autopoiesis.git.verify import accept_current

MIN_LENGTH = 6  # shorter strings are words, not secrets; forgetting them would rewrite prose
# State under .autopoiesis/ that is not a cache of text: locks (held right now), worktrees,
# the record of earlier rewrites not pushed yet (`autopoiesis sync --force-after-forget`),
# and the records of harness sessions: without them the session watcher or the harness
# hooks would import a forgotten session again from the harness's own log, or never import
# one still waiting (paths, sizes, hashes and redacted errors; no conversation).
_KEEP_STATE = (
    "locks_dir",
    "worktrees_dir",
    "config_cache",
    "verify_rewrites",
    "session_watch",
    "harness_sessions",
)


@dataclass
class ForgetReport:
    what: str  # how the record describes it (never the secret)
    commit: str  # the maintenance commit that records it
    rewritten_refs: list[str]  # branches and tags now pointing at rewritten commits
    cleared: list[str]  # state under .autopoiesis/ that was deleted
    index_rebuilt: bool
    remotes: dict[str, str] = field(default_factory=dict)

    def remote_advice(self) -> str | None:
        if not self.remotes:
            return None
        names = ", ".join(f"{n} ({u})" for n, u in sorted(self.remotes.items()))
        first = sorted(self.remotes)[0]
        return (
            f"this repo has remotes: {names}. Their copies still hold the old history, and "
            "`autopoiesis sync` refuses "
            f"to pull it back. Replace it with `autopoiesis sync --remote {first} "
            "--force-after-forget` (it force-pushes "
            "the rewritten branches and tags, and only while the remote holds nothing newer than "
            "the old history), "
            "ask every collaborator to re-clone (a pull would bring the secret back), ask the "
            "host to drop cached "
            "views if it was public, and rotate the secret."
        )


def _refuse_dirty(root: Path) -> None:
    dirty = rewrite.uncommitted_status(root)
    if dirty:
        shown = "\n  ".join(dirty[:10])
        raise GitError(
            "forget rewrites history and needs a clean working tree; these files are modified or "
            "untracked:\n  "
            f"{shown}\nCommit them (autopoiesis commit), finish open sessions, or stash them, "
            "then run forget again."
        )
    if rewrite.has_linked_worktrees(root):
        raise GitError(
            "forget cannot rewrite a repository with linked worktrees (git worktree list); remove "
            "them first."
        )


def _describe_string(repo: MemoryRepo, text: str, salt: str) -> str:
    red = repo.redactor()
    red.redact(text)
    kind = next(iter(sorted(red.counts)), "string")
    digest = hashlib.sha256((salt + text).encode()).hexdigest()
    return f"a string of {len(text)} characters (kind: {kind}; salted sha256: {salt}:{digest})"


def _transcript_label(relpath: str) -> str:
    """raw/conversations/2026/02/16/1845-ses_a1-some-slug.md -> .../1845-ses_a1-….md: the slug
    of a transcript comes from its first message, so the record keeps the session, not it."""
    head, _, name = relpath.rpartition("/")
    m = re.match(r"(\d{4}-[A-Za-z0-9_.]+?)-", name)
    return f"{head}/{m.group(1)}-….md" if m else relpath


def forget(
    repo: MemoryRepo, *, text: str | None = None, transcript: str | None = None, reason: str
) -> ForgetReport:
    """Remove TEXT (a string) or TRANSCRIPT (a path under raw/) from all history; see the module
    doc."""
    if (text is None) == (transcript is None):
        raise GitError("give exactly one thing to forget: a string, or --transcript PATH.")
    if not reason.strip():
        raise GitError(
            "say why (--reason): the maintenance commit records why history was rewritten."
        )
    root = repo.root
    what, rel = _what_to_forget(repo, text, transcript)
    _refuse_dirty(root)
    remotes = rewrite.remotes(root)

    with repo.lock("git"):
        _refuse_dirty(root)  # again, now that no capture can commit behind our back
        # the old history is recorded, so that sync can tell a remote holding only it (safe
        # to overwrite) from one where others have built on it since
        rewritten = rewrite.rewrite_history(root, text=text, path=rel)
        refs = rewritten.refs

    cleared = _clear_state(repo, text)
    index_rebuilt = _rebuild_index(repo)
    # verify's record still describes the old history: the rewritten branches are the new truth
    for branch in rewrite.branches(root):
        accept_current(repo, branch)

    gitops = MemoryGit(repo)
    _commit_record(repo, gitops, text, what, reason, len(refs), len(cleared), index_rebuilt)
    sha = gitops.head() or ""
    rewrite.record_rewrite(
        repo,
        commit=sha,
        what=what,
        old_tips=rewritten.old_tips,
        new_tips=rewrite.tips(root),
        old_commits=rewritten.old_commits,
    )
    _check_forgotten(root, text, rel)
    return ForgetReport(
        what=what,
        commit=sha,
        rewritten_refs=refs,
        cleared=cleared,
        index_rebuilt=index_rebuilt,
        remotes=remotes,
    )


def _what_to_forget(
    repo: MemoryRepo, text: str | None, transcript: str | None
) -> tuple[str, str | None]:
    """(what the record commit names, the transcript's repo-relative path or None for a
    string), once the request is checked: a whole secret on one line, or a transcript
    under raw/ that some commit holds."""
    root = repo.root
    salt = _secrets.token_hex(8)
    rel: str | None = None
    if text is not None:
        if len(text) < MIN_LENGTH:
            raise GitError(
                f"refusing to forget a string of {len(text)} characters: it would rewrite "
                "ordinary words. "
                f"Give the whole secret (at least {MIN_LENGTH} characters)."
            )
        if "\n" in text or "\r" in text or "==>" in text:
            raise GitError(
                "forget one line at a time: the string may not hold a line break or '==>'. "
                "To drop a whole conversation, use --transcript PATH."
            )
        what = _describe_string(repo, text, salt)
    else:
        assert transcript is not None
        rel = (
            transcript.replace("\\", "/").lstrip("./")
            if not Path(transcript).is_absolute()
            else repo.rel(transcript)
        )
        if not rel.startswith("raw/") or not rel.endswith(".md"):
            raise GitError(
                f"{transcript} is not a transcript: give its path under raw/ (as `git ls-files "
                "raw` shows it)."
            )
        if not rewrite.in_history(root, rel):
            raise GitError(
                f"{rel} is in no commit of this repository; nothing to forget (check the path "
                "with git ls-files raw)."
            )
        what = f"the transcript {_transcript_label(rel)}"
    return what, rel


def _commit_record(
    repo: MemoryRepo,
    gitops: MemoryGit,
    text: str | None,
    what: str,
    reason: str,
    n_refs: int,
    n_cleared: int,
    index_rebuilt: bool,
) -> None:
    """The maintenance commit that records the rewrite: what, why (redacted), when, how."""
    when = format_ts(utc_now())
    reason_line = " ".join(repo.redactor().redact(reason).split())
    message = (
        f"maintenance: forget {'a secret' if text is not None else 'a transcript'} (history "
        "rewritten)\n\n"
        f"What: {what}\n"
        f"Why: {reason_line}\n"
        f"When: {when}\n"
        f"How: git-filter-repo over every commit; {n_refs} branches and tags re-pointed; "
        "reflogs expired; "
        f"old objects pruned; memory.db {'rebuilt' if index_rebuilt else 'absent, not rebuilt'}; "
        f"{n_cleared} caches and logs under .autopoiesis/ deleted.\n"
    )
    with repo.lock("git"):
        done_commit = gitops.run(
            "commit", "--allow-empty", "-q", "-F", "-", input=message, check=False
        )
    if done_commit.returncode != 0:
        raise GitError(
            "the history was rewritten, but the maintenance commit that records it was refused: "
            f"{(done_commit.stderr or done_commit.stdout).strip()}"
        )


def _check_forgotten(root: Path, text: str | None, rel: str | None) -> None:
    """GitError when the string or the transcript is still in the repository after the
    rewrite."""
    if text is not None and rewrite.object_store_holds(root, text.encode("utf-8")):
        raise GitError(
            "the string is still in the object store after the rewrite (an object git-filter-repo "
            "cannot edit, "
            "such as a binary file or a stash); find it with git grep or git log -S, remove it, "
            "and run forget again."
        )
    if rel is not None and rewrite.in_history(root, rel):
        raise GitError(f"{rel} is still in the history after the rewrite; run forget again.")


def _clear_state(repo: MemoryRepo, text: str | None) -> list[str]:
    """Delete every cache and log under .autopoiesis/ (all rebuildable, and any may quote the
    forgotten text), and any other file there that holds the string."""
    cleared: list[str] = []
    state = repo.state_dir
    if not state.exists():
        return cleared
    keep = {state.joinpath(*STATE_FILES[k]) for k in _KEEP_STATE}
    for name, parts in STATE_FILES.items():
        path = state.joinpath(*parts)
        if name in _KEEP_STATE or not path.exists():
            continue
        if name == "llm_dir":
            continue  # its files are llm_cache and llm_ledger, cleared by name
        _remove(path)
        cleared.append(str(path.relative_to(repo.root)))
    if text is not None:
        needle = text.encode("utf-8")
        for path in sorted(state.rglob("*")):
            if (
                not path.is_file()
                or any(path == k or k in path.parents for k in keep)
                or path == repo.index_path
            ):
                continue
            try:
                if needle in path.read_bytes():
                    _remove(path)
                    cleared.append(str(path.relative_to(repo.root)))
            except OSError:
                continue
    return cleared


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        for p in (
            path,
            path.with_name(path.name + "-wal"),
            path.with_name(path.name + "-shm"),
            path.with_name(path.name + "-journal"),
        ):
            p.unlink(missing_ok=True)


def _rebuild_index(repo: MemoryRepo) -> bool:
    """memory.db holds the text of every chunk: delete it and index the rewritten files afresh."""
    if not repo.index_path.exists():
        return False
    _remove(repo.index_path)
    from autopoiesis.index import SearchIndex

    with SearchIndex(repo) as index:
        index.rebuild_full()
    return True
