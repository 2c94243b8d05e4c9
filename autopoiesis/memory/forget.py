"""`autopoiesis forget`: the one sanctioned exception to immutability.

A secret that redaction missed is in every later clone of the history. `forget` removes a
string, or a whole transcript, from every commit with git-filter-repo (a well-kept tool,
run as a subprocess; fast-import runs no hooks, so the pre-commit guard of raw/ is not in
the way; git.rewrite runs it and keeps the record; a string is replaced in file contents,
commit and tag messages and file names), then:

- every branch and tag is re-pointed at the rewritten commits (filter-repo does it);
  remote-tracking refs, which still hold the old history, are deleted first;
- reflogs are expired and `git gc --prune=now` drops the old objects;
- the object store and the history's file names are scanned: if the string is still
  there, forget fails loudly, before it records anything (so `autopoiesis sync
  --force-after-forget` has no rewrite to push);
- memory.db is rebuilt from the rewritten files, and every cache and log under
  .autopoiesis/ that could quote the text is deleted (all of them are rebuildable);
- a `maintenance:` commit records what was forgotten, when and why: the kind and length
  of the string and a salted SHA-256 (so whoever knows the secret can check it was this
  one), never the string itself.

Before anything is rewritten, `plan_forget` checks the request and says what will go:
how many times the string is in the history and where (files, file names, messages), or
which knowledge entries a transcript produced. It refuses a string found nowhere, and
one that is part of the repository's structure (a frontmatter key, a folder, a config
key, a .gitignore pattern, a transcript marker: replacing it would break every file that
uses it) unless forced. A transcript's entries (their citation names its session) are
deleted from the knowledge files in a commit of their own, and their lines dropped from
every older version, so nothing extracted from it survives either.

It refuses a dirty tree, and says what a pushed remote needs: a force-push of every
branch and tag, and every collaborator re-cloning (a pull would bring the secret back).
"""

from __future__ import annotations

import hashlib
import posixpath
import re
import secrets as _secrets
import shutil
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autopoiesis.core.clock import format_ts, utc_now
from autopoiesis.core.config import CONFIG_FILENAME
from autopoiesis.core.events import previous_generation
from autopoiesis.core.paths import CONVERSATIONS_DIR, STATE_FILES, MemoryRepo, shared_mounts
from autopoiesis.core.text import counted, is_utf8, noun, typed_bytes
from autopoiesis.errors import GitError
from autopoiesis.formats.transcript import ROLES
from autopoiesis.git import rewrite
from autopoiesis.git.repo import MemoryGit
from autopoiesis.git.verify import accept_current

# the steps forget reports to its progress callback: the rewrite, the check that nothing is
# left, the caches cleared, memory.db rebuilt, the record committed
FORGET_STEPS = 5
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


# What a string a team's repository holds needs: its keeper's forget, then a new mount here
TEAM_KEEPER = (
    "Whoever keeps the team's repository takes it out of its history (`autopoiesis forget` "
    "in a clone of it, then `autopoiesis sync --force-after-forget`); then here `autopoiesis "
    "team remove NAME` and `autopoiesis team add NAME URL` mount the rewritten one (a sync "
    "would merge the old history back)."
)


@dataclass
class ForgetReport:
    what: str  # how the record describes it (never the secret)
    commit: str  # the maintenance commit that records it
    rewritten_refs: list[str]  # branches and tags now pointing at rewritten commits
    cleared: list[str]  # state under .autopoiesis/ that was deleted
    index_rebuilt: bool
    remotes: dict[str, str] = field(default_factory=dict)
    teams: list[str] = field(default_factory=list)  # the team mounts that hold it still

    def team_advice(self) -> str | None:
        """What is left in the team memories mounted here: forget rewrites this memory's
        history alone, and a team's repository is the team's."""
        if not self.teams:
            return None
        return (
            f"{', '.join(self.teams)} still hold{'s' if len(self.teams) == 1 else ''} it: a "
            "team's memory is its own repository, which forget does not rewrite, and its "
            f"notes stay in search here. {TEAM_KEEPER} Rotate the secret meanwhile."
        )

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
    digest = hashlib.sha256(salt.encode() + typed_bytes(text)).hexdigest()
    return f"a string of {len(text)} characters (kind: {kind}; salted sha256: {salt}:{digest})"


def _transcript_label(relpath: str) -> str:
    """raw/conversations/2026/02/16/1845-ses_a1-some-slug.md -> .../1845-ses_a1-….md: the slug
    of a transcript comes from its first message, so the record keeps the session, not it."""
    head, _, name = relpath.rpartition("/")
    m = re.match(r"(\d{4}-[A-Za-z0-9_.]+?)-", name)
    return f"{head}/{m.group(1)}-….md" if m else relpath


@dataclass
class ForgetPlan:
    """What `forget` will remove, checked, before anything is rewritten: the string and
    where the history holds it, or the transcript and the knowledge entries it produced."""

    what: str  # how the record describes it (never the secret)
    text: str | None = None
    ignore_case: bool = False
    transcript: str | None = None  # repo-relative path under raw/
    found: rewrite.Occurrences | None = None  # the string's occurrences
    derived: list[tuple[str, str]] = field(default_factory=list)  # (path, entry id)
    # what an earlier run of this same forget, stopped before its record, kept
    # (rewrite.begin_rewrite); FINISHING: its rewrite reached the refs, only the rest is left
    under_way: dict[str, Any] | None = None
    finishing: bool = False
    teams: list[str] = field(default_factory=list)  # team mounts whose history holds TEXT

    def summary(self) -> str:
        """Where the things to forget are, for the confirmation (a path that holds the
        string is shown with it masked)."""
        if self.finishing:
            return (
                "an earlier run of this forget was stopped after the history was rewritten "
                "and before it was recorded; this run finishes it (the work tree is reset to "
                "the rewritten history, the old objects pruned, the record committed)"
            )
        if self.found is not None:
            f = self.found
            places = [f"{self.masked(p)} ({n})" for p, n in sorted(f.in_files.items())]
            if f.in_names:
                shown = ", ".join(self.masked(n) for n in f.in_names)
                places.append(f"{counted(len(f.in_names), 'file name')}: {shown}")
            if f.in_messages:
                places.append(f"{counted(f.in_messages, 'commit or tag message')}")
            told = f"{counted(f.total, 'occurrence')} in the history: " + "; ".join(places)
            if self.teams:
                told += f"; also in {', '.join(self.teams)} (a team's memory: not rewritten)"
            return told
        files = sorted({p for p, _ in self.derived})
        derived = (
            f"{len(self.derived)} knowledge entries extracted from it ({', '.join(files)})"
            if self.derived
            else "no knowledge entries cite it"
        )
        return f"{self.transcript}, and {derived}"

    def masked(self, path: str) -> str:
        """PATH with the string to forget shown as …."""
        assert self.text is not None
        pattern = rewrite.pattern_for(self.text, ignore_case=self.ignore_case)
        return pattern.sub(b"\xe2\x80\xa6", path.encode("utf-8")).decode("utf-8", "replace")


def plan_forget(
    repo: MemoryRepo,
    *,
    text: str | None = None,
    transcript: str | None = None,
    ignore_case: bool = False,
    force: bool = False,
) -> ForgetPlan:
    """Check a request to forget TEXT or TRANSCRIPT and find what it will remove; GitError
    when it is refused (see the module doc). FORCE allows a string that is structure."""
    if (text is None) == (transcript is None):
        raise GitError("give exactly one thing to forget: a string, or --transcript PATH.")
    root = repo.root
    salt = _secrets.token_hex(8)
    under_way = rewrite.rewrite_under_way(repo)
    if under_way is not None:
        rel = _transcript_rel(repo, transcript) if transcript is not None else None
        if not _same_request(under_way, text, rel, ignore_case):
            raise GitError(rewrite.stopped_forget(under_way) + "; then run this one.")
        if text is not None:
            pattern = rewrite.pattern_for(text, ignore_case=ignore_case)
            left = rewrite.occurrences(root, pattern).total
        else:
            assert rel is not None
            left = rewrite.in_history(root, rel)
        if not left:  # the rewrite reached the refs: what is left is the rest of it
            return ForgetPlan(
                str(under_way.get("what") or "what an earlier forget began"),
                text=text,
                ignore_case=ignore_case,
                transcript=rel,
                under_way=under_way,
                finishing=True,
            )
    if text is not None:
        _check_string(repo, text, force=force)
        pattern = rewrite.pattern_for(text, ignore_case=ignore_case)
        found = rewrite.occurrences(root, pattern)
        teams = _teams_holding(root, pattern)
        if not found.total and teams:
            raise GitError(
                f"the string is in no file, file name or message of this memory's history, "
                f"but {', '.join(teams)} holds it: a team's memory is its own repository. "
                + TEAM_KEEPER
            )
        if not found.total:
            hint = (
                " It is there in another case: add --ignore-case."
                if not ignore_case
                and rewrite.occurrences(root, rewrite.pattern_for(text, ignore_case=True)).total
                else ""
            )
            if not is_utf8(text):
                hint += (
                    " It is not UTF-8 text (a terminal of another encoding, such as Latin-1, "
                    "typed it), and it was looked for as those bytes; a memory's notes and "
                    "transcripts are UTF-8, where the same characters are other bytes: give "
                    "it as UTF-8."
                )
            raise GitError(f"the string is in no file, file name or message of the history.{hint}")
        what = _describe_string(repo, text, salt)
        return ForgetPlan(
            what,
            text=text,
            ignore_case=ignore_case,
            found=found,
            under_way=under_way,
            teams=teams,
        )
    assert transcript is not None
    rel = _transcript_path(repo, transcript)
    derived = _derived_entries(repo, rel)
    what = f"the transcript {_transcript_label(rel)}"
    if derived:
        what += f" and the {len(derived)} knowledge entries extracted from it"
    return ForgetPlan(what, transcript=rel, derived=derived, under_way=under_way)


def _teams_holding(root: Path, pattern: re.Pattern[bytes]) -> list[str]:
    """The team mounts (`shared/<team>`) whose history holds PATTERN: a note shared with a
    team went to its repository, which this memory's rewrite does not reach."""
    held = []
    for mount in shared_mounts(root):
        try:
            if rewrite.occurrences(root / mount, pattern).total:
                held.append(mount)
        except GitError:  # a mount not checked out here: nothing of it to read
            continue
    return held


def _request(text: str | None, transcript: str | None, ignore_case: bool) -> dict[str, Any]:
    """What tells this forget's request from another's in `rewrite.begin_rewrite`'s record:
    the transcript's path, or a salted hash of the string (never the string)."""
    if transcript is not None:
        return {"transcript": transcript}
    assert text is not None
    salt = _secrets.token_hex(8)
    digest = hashlib.sha256(salt.encode() + typed_bytes(text)).hexdigest()
    return {"salt": salt, "digest": digest, "ignore_case": ignore_case}


def _same_request(
    under_way: dict[str, Any], text: str | None, transcript: str | None, ignore_case: bool
) -> bool:
    """Whether UNDER_WAY was kept by a forget of this very TEXT or TRANSCRIPT."""
    if transcript is not None:
        return under_way.get("transcript") == transcript
    assert text is not None
    salt = under_way.get("salt")
    if not isinstance(salt, str) or bool(under_way.get("ignore_case")) != ignore_case:
        return False
    digest = hashlib.sha256(salt.encode() + typed_bytes(text)).hexdigest()
    return bool(under_way.get("digest") == digest)


def forget(
    repo: MemoryRepo,
    *,
    text: str | None = None,
    transcript: str | None = None,
    reason: str,
    ignore_case: bool = False,
    force: bool = False,
    plan: ForgetPlan | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> ForgetReport:
    """Remove TEXT (a string) or TRANSCRIPT (a path under raw/) from all history; see the
    module doc. PLAN: what `plan_forget` found (made here when not given). PROGRESS(done,
    total) after each of its FORGET_STEPS."""
    step = progress or (lambda done, total: None)
    if not reason.strip():
        raise GitError(
            "say why (--reason): the maintenance commit records why history was rewritten."
        )
    if plan is None:
        plan = plan_forget(
            repo, text=text, transcript=transcript, ignore_case=ignore_case, force=force
        )
    root = repo.root
    if not plan.finishing:
        _refuse_dirty(root)
    remotes = rewrite.remotes(root)
    gitops = MemoryGit(repo)
    earlier = plan.under_way or {}

    # the writer's lock first (as a merge takes them): no writer writes a knowledge file
    # between the removal of the transcript's entries and their commit, whose message
    # would then carry its lines, nor into the files the rewrite is replacing
    with repo.writer_lock(), repo.lock("git"):
        if plan.finishing:
            # the old files a run killed inside git-filter-repo left checked out (they
            # hold what is forgotten: never changes to commit), and the old objects
            rewrite.reset_work_tree(root)
            rewrite.drop_old_objects(root)
            drop = _strings(earlier.get("drop"))
            old_tips = {str(k): str(v) for k, v in dict(earlier.get("old_tips") or {}).items()}
            old_commits = _strings(earlier.get("old_commits"))
            refs = rewrite.ref_names(root)
        else:
            _refuse_dirty(root)  # again, now that no capture can commit behind our back
            drop, old_tips, old_commits, refs = _rewrite(repo, gitops, plan, earlier)
    step(1, FORGET_STEPS)
    # before anything claims success: nothing is recorded (and `sync --force-after-forget`
    # pushes nothing) while the string or the transcript is still there
    _check_forgotten(root, plan, drop)
    step(2, FORGET_STEPS)

    cleared = _clear_state(
        repo,
        None if plan.text is None else rewrite.pattern_for(plan.text, ignore_case=plan.ignore_case),
    )
    step(3, FORGET_STEPS)
    index_rebuilt = _rebuild_index(repo)
    step(4, FORGET_STEPS)
    # verify's record still describes the old history: the rewritten branches are the new truth
    for branch in rewrite.branches(root):
        accept_current(repo, branch)

    # a run killed after its record commit, finished now, has one already
    sha = rewrite.record_commit_of(root, old_tips) if plan.finishing else None
    if sha is None:
        _commit_record(
            repo,
            gitops,
            plan.text,
            plan.what,
            reason,
            len(refs),
            len(cleared),
            index_rebuilt,
            old_tips,
            set(old_commits) - set(rewrite.all_commits(root)),
        )
        sha = gitops.head() or ""
    step(5, FORGET_STEPS)
    rewrite.record_rewrite(
        repo,
        commit=sha,
        what=plan.what,
        old_tips=old_tips,
        new_tips=rewrite.tips(root),
        old_commits=old_commits,
    )
    rewrite.end_rewrite(repo)
    return ForgetReport(
        what=plan.what,
        commit=sha,
        rewritten_refs=refs,
        cleared=cleared,
        index_rebuilt=index_rebuilt,
        remotes=remotes,
        teams=plan.teams,
    )


def _rewrite(
    repo: MemoryRepo, gitops: MemoryGit, plan: ForgetPlan, earlier: dict[str, Any]
) -> tuple[list[str], dict[str, str], list[str], list[str]]:
    """The rewrite of PLAN, announced first (`rewrite.begin_rewrite`) so that a run stopped
    anywhere in it is finished by the same forget run again; EARLIER: what such a stopped
    run kept (the entries it had removed already, the commits of the history before it).
    Returns (the markers of the lines dropped, the old tips, the old commits, the refs
    re-pointed)."""
    root = repo.root
    drop = _strings(earlier.get("drop"))
    scrub_lines = _strings(earlier.get("scrub_lines"))
    scrub: list[str] = []
    rules: list[bytes] = []
    old_commits = set(_strings(earlier.get("old_commits")))
    under_way = {
        **_request(plan.text, plan.transcript, plan.ignore_case),
        "what": plan.what,
        "when": format_ts(utc_now()),
    }

    def announce() -> None:
        old_commits.update(rewrite.all_commits(root))
        rewrite.begin_rewrite(
            repo,
            {
                **under_way,
                "old_tips": rewrite.tips(root),
                "old_commits": sorted(old_commits),
                "drop": drop,
                "scrub_lines": scrub_lines,
            },
        )

    if plan.transcript is not None:
        scrub, rules = _transcript_names(repo, plan.transcript)
        entries = _derived_texts(repo, plan.transcript)
        drop = sorted({*drop, *("{id: " + i + "}" for i, _ in entries)})
        scrub_lines = sorted({*scrub_lines, *(o for o in (_opening(t) for _, t in entries) if o)})
        announce()  # before the entries are removed: their markers are needed to the end
        _remove_derived(repo, gitops, plan.transcript)
    announce()
    try:
        rewritten = rewrite.rewrite_history(
            root,
            text=plan.text,
            ignore_case=plan.ignore_case,
            path=plan.transcript,
            # the record of what was extracted names the transcript on a line a version
            drop_lines_with=drop + ([plan.transcript] if plan.transcript else []),
            scrub_messages=scrub,
            scrub_message_lines=scrub_lines,
            scrub_message_rules=rules,
        )
    except GitError:
        if plan.transcript is None:  # nothing was changed: nothing is left to finish
            rewrite.end_rewrite(repo)
        raise
    return (
        drop,
        rewritten.old_tips,
        sorted(old_commits | set(rewritten.old_commits)),
        rewritten.refs,
    )


def _strings(value: Any) -> list[str]:
    """VALUE (from the record of a forget under way) as a list of strings."""
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _check_string(repo: MemoryRepo, text: str, *, force: bool) -> None:
    """GitError unless TEXT can be a whole secret: long enough, one line, and (unless
    FORCE) no part of the repository's structure, in any case."""
    if len(text) < MIN_LENGTH:
        raise GitError(
            f"refusing to forget a string of {len(text)} characters: it would rewrite "
            f"ordinary words. Give the whole secret (at least {MIN_LENGTH} characters)."
        )
    if "\n" in text or "\r" in text or "==>" in text:
        raise GitError(
            "forget one line at a time: the string may not hold a line break or '==>'. "
            "To drop a whole conversation, use --transcript PATH."
        )
    if force:
        return
    needle = text.casefold()
    hits = [(word, kind) for word, kind in _structure(repo).items() if needle in word.casefold()]
    if hits:
        word, kind = min(hits, key=lambda h: len(h[0]))  # the word itself, when it is one
        raise GitError(
            f"refusing to forget {text!r}: it is part of {kind} {word!r}, and replacing it "
            "everywhere would break every file that uses it. Give the whole secret, or "
            "--force if this really is it."
        )


# transcript and knowledge markup (formats/transcript.py, formats/knowledge.py)
_MARKUP = {
    "> [tool:": "a transcript marker",
    "> [knowledge:": "a transcript marker",
    "> [attachment:": "a transcript marker",
    " [memory]": "a transcript marker",
    "(via ": "a knowledge citation",
    "{id: ": "a knowledge entry id",
    "#superseded-by:": "a knowledge tag",
    "#about:": "a knowledge tag",
    "[redacted:forgotten]": "forget's own marker",
}
_FRONTMATTER_KEY = re.compile(r"^\s*-?\s*([A-Za-z_][\w.-]*):", re.MULTILINE)


def _structure(repo: MemoryRepo) -> dict[str, str]:
    """{word: what it is} of the strings the repository's files are made of: frontmatter
    keys of the tracked Markdown files, folders, the names of the files outside raw/, the
    config's keys, the patterns of .gitignore and .gitattributes, the state files' names,
    the transcript roles and the markup. A secret is never one of them nor a part of one."""
    words: dict[str, str] = {m: k for m, k in _MARKUP.items()}
    words.update({role: "a transcript role" for role in ROLES})
    words.update({n: "a state file" for parts in STATE_FILES.values() for n in parts})
    words[repo.index_path.name] = "the search index"
    for rel in rewrite.tracked_files(repo.root):
        for word, kind in _structure_of(repo.root, rel):
            words.setdefault(word, kind)
    return words


def _structure_of(root: Path, rel: str) -> Iterator[tuple[str, str]]:
    """(word, what it is) of the tracked file REL: its folders, its name (outside raw/,
    where a transcript's name comes from its first message), and the keys or patterns it
    holds."""
    parts = rel.split("/")
    for i in range(1, len(parts)):
        yield "/".join(parts[:i]), "a folder"
    if parts[0] != "raw":
        yield rel, "a file name"
    if rel.endswith(".md"):
        for key in _FRONTMATTER_KEY.findall(_frontmatter_of(root / rel)):
            yield key, "a frontmatter key"
    elif parts[-1] in (".gitignore", ".gitattributes"):
        for line in _read(root / rel).splitlines():
            if not line.lstrip().startswith("#"):
                yield from ((token, f"a {parts[-1]} pattern") for token in line.split())
    elif rel == CONFIG_FILENAME:
        for key in _FRONTMATTER_KEY.findall(_read(root / rel)):
            yield key, "a config key"


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _frontmatter_of(path: Path) -> str:
    """The YAML between the `---` fences at the top of PATH ('' when it has none)."""
    try:
        with path.open(encoding="utf-8", errors="replace") as f:
            if f.readline().strip() != "---":
                return ""
            lines: list[str] = []
            for line in f:
                if line.strip() == "---":
                    return "".join(lines)
                lines.append(line)
    except OSError:
        pass
    return ""


def _transcript_path(repo: MemoryRepo, transcript: str) -> str:
    """TRANSCRIPT as the repo-relative path of one transcript some commit holds; GitError
    for anything else (a folder, a glob, a file outside raw/)."""
    rel = _transcript_rel(repo, transcript)
    if not rewrite.in_history(repo.root, rel):
        raise GitError(
            f"{rel} is in no commit of this repository; nothing to forget (check the path "
            "with git ls-files raw)."
        )
    return rel


def _transcript_rel(repo: MemoryRepo, transcript: str) -> str:
    """TRANSCRIPT as the repo-relative path of a transcript; GitError for anything else (a
    folder, a glob, a file outside raw/)."""
    given = transcript.replace("\\", "/")
    rel = posixpath.normpath(repo.rel(given) if Path(given).is_absolute() else given)
    if any(c in rel for c in "*?["):
        raise GitError(
            f"{transcript} is a pattern, not a transcript: forget takes one path under raw/ (as "
            "`git ls-files raw` shows it), never a glob."
        )
    if not rel.startswith("raw/") or not rel.endswith(".md"):
        # A path given as `git ls-files raw` shows it can still be no transcript (the
        # .gitkeep of raw/conversations/): say what a transcript is, not how to spell it.
        where = "is in raw/ but" if rel.startswith("raw/") else "is not under raw/ and"
        raise GitError(
            f"{transcript} {where} is no transcript: a transcript is a Markdown file, "
            f"{CONVERSATIONS_DIR}/YYYY/MM/DD/HHMM-SESSION-SLUG.md; give one of those "
            f"`git ls-files '{CONVERSATIONS_DIR}/*.md'` lists."
        )
    return rel


def _derived_entries(repo: MemoryRepo, rel: str) -> list[tuple[str, str]]:
    """(path, entry id) of every knowledge entry that cites the transcript REL, as the
    files are now (read without writing)."""
    from autopoiesis.knowledge.writer import KnowledgeWriter

    return [(p, e.id) for p, e in KnowledgeWriter(repo).remove_entries_from(rel, dry_run=True)]


def _transcript_names(repo: MemoryRepo, rel: str) -> tuple[list[str], list[bytes]]:
    """What names the transcript REL in commit messages, and nothing else: its path and its
    file's stem ("Session: PATH", "From STEM: ..."), replaced wherever they are; and its
    slug (from its first message) as the subject of the commit that added it
    (`conversation: SLUG` above its `Session:` line), a filter-repo rule, since another
    session may have the same slug."""
    name = rel.rsplit("/", 1)[-1].removesuffix(".md")
    m = re.match(r"\d{4}-[A-Za-z0-9_.:]+?-(.+)$", name)
    rules: list[bytes] = []
    if m:
        subject = re.escape(f"conversation: {m.group(1)}".encode()) + rb"(?=\n\nSession: "
        rules.append(
            b"regex:" + subject + re.escape(rel.encode()) + b")==>conversation: " + rewrite.REDACTED
        )
    return [rel, name], rules


def _opening(text: str) -> str:
    """The first words of an entry's TEXT that a commit message quoting it begins with
    (formats.commit_message titles it: its first sentence, cut at a word); "" when they
    are too few to tell it from another session's entry."""
    flat = " ".join(text.replace("**", "").split())
    opening = flat[:40].rsplit(" ", 1)[0] if len(flat) > 40 else flat
    return opening if len(opening) >= 20 and len(opening.split()) >= 3 else ""


def _derived_texts(repo: MemoryRepo, rel: str) -> list[tuple[str, str]]:
    """(entry id, text) of every knowledge entry that cites the transcript REL: the rewrite
    drops their lines (`{id: ...}`) from every older version, and the messages of the
    commits that added them quote their texts."""
    from autopoiesis.knowledge.writer import KnowledgeWriter

    return [(e.id, e.text) for _, e in KnowledgeWriter(repo).remove_entries_from(rel, dry_run=True)]


def _remove_derived(repo: MemoryRepo, gitops: MemoryGit, rel: str) -> None:
    """Delete the entries that cite the transcript REL from the knowledge files and commit
    that."""
    from autopoiesis.knowledge.writer import KnowledgeWriter

    removed = KnowledgeWriter(repo).remove_entries_from(rel)
    if not removed:
        return
    paths = sorted({p for p, _ in removed})
    gitops.run("add", "--", *paths)
    done = gitops.run(
        "commit",
        "-q",
        "-m",
        f"maintenance: drop {len(removed)} knowledge entries extracted from a forgotten transcript",
        check=False,
    )
    if done.returncode != 0:
        raise GitError(
            "could not commit the removal of the entries extracted from the transcript: "
            f"{(done.stderr or done.stdout).strip()}"
        )


def _commit_record(
    repo: MemoryRepo,
    gitops: MemoryGit,
    text: str | None,
    what: str,
    reason: str,
    n_refs: int,
    n_cleared: int,
    index_rebuilt: bool,
    old_tips: dict[str, str],
    replaced: Iterable[str] = (),
) -> None:
    """The maintenance commit that records the rewrite: what, why (redacted), when, how,
    and the tips of the history it replaced (rewrite.OLD_TIP lines: a clone that pulls this
    record can then refuse a merge that brings that history back)."""
    when = format_ts(utc_now())
    reason_line = " ".join(repo.redactor().redact(reason).split())
    message = (
        f"maintenance: forget {'a secret' if text is not None else 'a transcript'} (history "
        "rewritten)\n\n"
        f"What: {what}\n"
        f"Why: {reason_line}\n"
        f"When: {when}\n"
        "How: git-filter-repo over every commit; "
        f"{counted(n_refs, 'branch or tag', 'branches and tags')} re-pointed; "
        "reflogs expired; "
        f"old objects pruned; memory.db {'rebuilt' if index_rebuilt else 'absent, not rebuilt'}; "
        f"{counted(n_cleared, 'cache or log', 'caches and logs')} under .autopoiesis/ deleted.\n"
        "\n" + rewrite.old_tip_lines(old_tips, replaced)
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


def _check_forgotten(root: Path, plan: ForgetPlan, dropped: list[str]) -> None:
    """GitError when the string, the transcript or a line of what was extracted from it
    (DROPPED: their markers) is still in the repository after the rewrite."""
    if plan.text is not None:
        pattern = rewrite.pattern_for(plan.text, ignore_case=plan.ignore_case)
        left = rewrite.occurrences(root, pattern)
        if rewrite.object_store_holds(root, pattern) or left.total:
            where = ", ".join(
                [*map(plan.masked, left.in_files), *(["file names"] if left.in_names else [])]
            )
            raise GitError(
                "the history was rewritten, but the string is still in the object store "
                f"({where or 'an unreachable object'}): an object git-filter-repo cannot edit, "
                "such as a binary file or a stash. Find it with git grep or git log -S, remove "
                "it, and run forget again; nothing was recorded, and sync will not push this "
                "history."
            )
    if plan.transcript is not None and rewrite.in_history(root, plan.transcript):
        raise GitError(
            f"{plan.transcript} is still in the history after the rewrite; run forget again."
        )
    kept = [m for m in dropped if rewrite.object_store_holds(root, m.encode("utf-8"))]
    if kept:
        raise GitError(
            f"the history was rewritten, but {counted(len(kept), 'entry', 'entries')} extracted "
            f"from the transcript {noun(len(kept), 'is', 'are')} still in it "
            f"({', '.join(kept[:3])}); find {noun(len(kept), 'it', 'them')} with git log -S, "
            f"remove {noun(len(kept), 'it', 'them')}, and run forget again. Nothing was recorded."
        )


def _clear_state(repo: MemoryRepo, pattern: re.Pattern[bytes] | None) -> list[str]:
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
        rotated = previous_generation(path)  # a bounded log's generation before
        if rotated.exists():
            _remove(rotated)
            cleared.append(str(rotated.relative_to(repo.root)))
    if pattern is not None:
        for path in sorted(state.rglob("*")):
            if (
                not path.is_file()
                or any(path == k or k in path.parents for k in keep)
                or path == repo.index_path
            ):
                continue
            try:
                if pattern.search(path.read_bytes()):
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
