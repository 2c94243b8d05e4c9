"""`autopoiesis verify`: a transcript, once committed, never changes in the history,
whatever git command made the change.

The pre-commit hook guards `git commit`, but merges, cherry-picks, rebases, `git am`,
`git revert`, `reset --soft`, an orphan branch renamed to main or `git replace` never
run it. This module looks at the history itself:

* **the walk**: every commit of the branch's history is diffed against each of its
  parents (`rev-list --parents` piped to `diff-tree --stdin -m`, restricted to
  raw/conversations/, renames as delete + add). Adding a transcript is the only change
  allowed; a commit that modifies, deletes, retypes or re-adds one with other content is a
  finding, named with the transcript and the commit.
* **the checkpoint**: what the last clean run verified, per branch: the commit, kept in
  git as `refs/autopoiesis/verified/<branch>` (so its objects outlive any rewrite of the
  branch, and its tree is the blob id of each transcript then), and beside it in the
  record (`.git/autopoiesis/verify.json`, with the repository, not among the caches of
  .autopoiesis/, whose deletion would make a replaced history look like a fresh clone's)
  how far the reflog was read. A history that was replaced wholesale (an orphan branch
  renamed to main, a reset to an unrelated root, a rebase that edited the commit which
  added a transcript) has no commit that shows the change; comparing the branch with the
  checkpoint's tree does. It also makes the walk incremental: after the first full walk
  only the commits since the checkpoint are read, and of the checkpoint's tree only the
  entries those commits add (a record of every transcript was 12 MB of JSON to read and
  write on each run at 100,000). A clone starts from the history as cloned
  (`trust_clone`); `--full` walks from the first commit.
* **admission**: every transcript a walked commit adds is checked as the pre-commit hook
  checks a staged one (git/admission.py: a regular file, a frontmatter the format reads,
  closed, named after its frontmatter), so one committed without hooks is reported too.
* **the reflog** of the branch since the last run: a tip the branch was moved away from
  (reset, rebase, amend) whose transcripts the new tip lost or changed is a finding too,
  so a rewrite of commits made since the last run is caught without a record of them.
* **replacements**: `refs/replace/*` (and a grafts file) make git show other content than
  the history holds; each is a finding, naming the transcripts it would alter. Every
  read here runs with `--no-replace-objects`, so the walk sees the real objects.

Light path: the git hooks import this (post-merge, post-rewrite, pre-push and
reference-transaction), so it uses only the standard library and the kernel's git
plumbing (no GitPython).
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from autopoiesis.core.paths import (
    CONVERSATIONS_DIR,
    MemoryRepo,
    atomic_write,
    git_state_path,
    unwritable,
)
from autopoiesis.core.text import counted
from autopoiesis.errors import GitError
from autopoiesis.git.admission import added_findings
from autopoiesis.git.history import (
    TRANSCRIPTS,
    Finding,
    branch_name,
    current_ref,
    diff_lines,
    existing_commits,
    git_real,
    is_ancestor,
    link_findings,
    lost_since,
    reflog_entries,
    resolve,
    rev_list,
    rev_list_all,
    short,
    transcripts_at,
    tree_entry,
)
from autopoiesis.git.replacements import replacement_findings
from autopoiesis.git.runner import decode

RECORD_VERSION = 1
MEMORY_BRANCH = "refs/heads/main"
# Set by a sanctioned rewrite (`autopoiesis forget`): the reference-transaction hook lets
# it through. verify still reports the rewrite until the record is re-based (`accept`).
ALLOW_REWRITE_ENV = "AUTOPOIESIS_ALLOW_HISTORY_REWRITE"


class VerifyResult:
    """What a run found: the findings (empty when the history is clean), how many
    transcripts the branch holds and how many commits were read."""

    __slots__ = (
        "ref",
        "tip",
        "findings",
        "transcripts",
        "commits",
        "full",
        "since",
        "accepted",
        "unsaved",
    )

    def __init__(
        self,
        ref: str,
        tip: str,
        findings: list[Finding],
        transcripts: int,
        commits: int,
        full: bool,
        since: str = "",
        accepted: int = 0,
    ):
        self.ref, self.tip, self.findings = ref, tip, findings
        self.transcripts, self.commits, self.full, self.since = transcripts, commits, full, since
        self.accepted = accepted
        # why the check's bookmark (its checkpoint ref and record) could not be written,
        # "" when it was or need not be: the check ran all the same
        self.unsaved = ""

    @property
    def ok(self) -> bool:
        return not self.findings

    def summary(self) -> str:
        if self.ok:
            return (
                f"ok: {counted(self.transcripts, 'transcript')}, "
                f"{counted(self.commits, 'commit')} checked"
            )
        n = len(self.findings)
        where = self.ref.removeprefix("refs/heads/")
        return (
            f"FAILED: {n} problem{'s' if n != 1 else ''} in the history of {where} "
            f"({counted(self.transcripts, 'transcript')}, {counted(self.commits, 'commit')} "
            "checked)"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "ref": self.ref,
            "tip": self.tip,
            "transcripts": self.transcripts,
            "commits_checked": self.commits,
            "full": self.full,
            "since": self.since,
            "accepted": self.accepted,
            "findings": [f.to_dict() for f in self.findings],
            "bookmark_not_saved": self.unsaved or None,
        }


# ── the record and the checkpoint ──
CHECKPOINT_PREFIX = "refs/autopoiesis/verified/"
# Where the record was kept before it moved into the git folder (read once, when the new
# one is missing: a run of an older version recorded there).
_OLD_RECORD = ("verify", "record.json")


def record_path(repo: MemoryRepo) -> Path:
    """`.git/autopoiesis/verify.json`: this machine's witness of what it verified, kept
    with the repository (not under .autopoiesis/, whose caches may be deleted: a history
    replaced wholesale would then look like a fresh clone's)."""
    return git_state_path(repo.root, "verify_record")


def checkpoint_ref(ref: str) -> str:
    """Where the checkpoint of the branch REF is kept."""
    return CHECKPOINT_PREFIX + ref.removeprefix("refs/heads/")


def recorded_transcripts(root: Path, branch: dict[str, Any] | None) -> dict[str, str]:
    """Path -> blob of every transcript a branch's checkpoint holds ({} for none): its
    commit's tree, or what a record made before the checkpoint lists."""
    if not branch:
        return {}
    if isinstance(branch.get("transcripts"), dict):
        return dict(branch["transcripts"])
    commit = branch.get("commit", "")
    return transcripts_at(root, commit) if commit and existing_commits(root, [commit]) else {}


def _known_at(root: Path, base: str, revs: list[str]) -> dict[str, str]:
    """Path -> blob, at BASE, of the transcripts the commits REVS (`rev-list --parents`
    lines) add: what the walk of those commits needs of the checkpoint's tree."""
    added = sorted({c[2] for c in diff_lines(root, revs) if c[1] == "A"})
    known: dict[str, str] = {}
    for i in range(0, len(added), 500):
        out = git_real(root, "ls-tree", "-z", "--full-tree", base, "--", *added[i : i + 500])
        for entry in decode(out).split("\x00"):
            meta, _, path = entry.partition("\t")
            parts = meta.split()
            if len(parts) == 3:
                known[path] = tree_entry(parts[2], parts[0])
    return known


def save_checkpoint(
    repo: MemoryRepo, record: dict[str, Any], ref: str, tip: str, reflog: int, count: int
) -> None:
    """Record TIP as the verified state of the branch REF (its reflog read to REFLOG
    entries, COUNT transcripts)."""
    git_real(repo.root, "update-ref", "-m", "autopoiesis verify", checkpoint_ref(ref), tip)
    record.setdefault("branches", {})[ref] = {"commit": tip, "reflog": reflog, "count": count}
    save_record(repo, record)


def count_transcripts(root: Path, commit: str) -> int:
    out = git_real(
        root, "ls-tree", "-r", "--name-only", "-z", "--full-tree", commit, "--", TRANSCRIPTS
    )
    return sum(p.endswith(b".md") for p in out.split(b"\x00"))


def trust_clone(repo: MemoryRepo) -> str | None:
    """A new clone's checkpoint: its branch as cloned, without a walk (what the remote holds
    is what every clone of it starts from; `verify --full` walks it all). The commit."""
    root = repo.root
    ref = current_ref(root)
    tip = resolve(root, ref) if ref.startswith("refs/heads/") else None
    if tip is None:
        return None
    out = git_real(
        root, "ls-tree", "-r", "--name-only", "-z", "--full-tree", tip, "--", TRANSCRIPTS
    )
    count = sum(p.endswith(b".md") for p in out.split(b"\x00"))
    save_checkpoint(repo, load_record(repo), ref, tip, len(reflog_entries(root, ref)), count)
    return tip


def load_record(repo: MemoryRepo) -> dict[str, Any]:
    """The record of the last clean run ({} when there is none or it cannot be read:
    the next run then walks the whole history)."""
    for path in (record_path(repo), repo.state_dir.joinpath(*_OLD_RECORD)):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if (
            isinstance(data, dict)
            and data.get("version") == RECORD_VERSION
            and isinstance(data.get("branches"), dict)
        ):
            return data
        return {}
    return {}


def save_record(repo: MemoryRepo, record: dict[str, Any]) -> None:
    record["version"] = RECORD_VERSION
    atomic_write(record_path(repo), json.dumps(record, separators=(",", ":"), sort_keys=True))


# ── the walk ──
class Walk:
    """The outcome of walking commits: findings, the first blob of each transcript, and
    which commit brought each (path, blob) into the history."""

    __slots__ = ("findings", "known", "adders", "commits", "added")

    def __init__(self, known: dict[str, str]):
        self.findings: list[Finding] = []
        self.known = known
        self.adders: dict[tuple[str, str], str] = {}
        self.commits: list[str] = []
        self.added: list[tuple[str, str, str]] = []  # (path, tree entry, commit) of each addition


_TYPES = {"120000": "a symbolic link", "160000": "a submodule", "040000": "a folder"}


def walk(
    root: Path,
    tip: str,
    exclude: Iterable[str] = (),
    known: dict[str, str] | None = None,
    base: str = "",
) -> Walk:
    """Check every commit of TIP's history that EXCLUDE does not reach. KNOWN (path →
    blob) is what the history already holds; it is extended with what the commits add.
    BASE: the commit whose transcripts KNOWN holds only some of (an incremental walk),
    read in full for a second file of a session (git/admission.py)."""
    w = Walk(dict(known or {}))
    revs = rev_list(root, tip, exclude)
    w.commits = [line.split(" ", 1)[0] for line in revs]
    seen: set[tuple[str, str]] = set()
    for commit, status, path, old, new, modes in diff_lines(root, revs):
        blob = tree_entry(new, modes.split()[1])
        if status == "A":
            w.adders.setdefault((path, blob), commit)
            first = w.known.setdefault(path, blob)
            if first == blob:
                w.added.append((path, blob, commit))
            elif (commit, path) not in seen:
                seen.add((commit, path))
                w.findings.append(
                    Finding(
                        path,
                        commit,
                        "readded",
                        f"added again with other content (blob {short(new)}, it was "
                        f"{short(first)}) by commit {commit}",
                    )
                )
            continue
        if (commit, path) in seen:
            continue
        seen.add((commit, path))
        if status == "D":
            w.findings.append(
                Finding(path, commit, "deleted", f"deleted after it was added, by commit {commit}")
            )
        elif status == "T":
            mode = modes.split()[1]
            w.findings.append(
                Finding(
                    path,
                    commit,
                    "retyped",
                    f"turned into {_TYPES.get(mode, 'another kind of file')} after it was added, "
                    f"by commit {commit}",
                )
            )
        else:
            w.adders.setdefault((path, blob), commit)
            what = "its file mode changed" if old == new else "modified"
            w.findings.append(
                Finding(path, commit, "modified", f"{what} after it was added, by commit {commit}")
            )
    # what the pre-commit hook refuses, wherever the transcript came from (git/admission.py)
    w.findings += added_findings(root, w.added, w.known, base)
    return w


# ── verify ──
class _Walked:
    """What the walk of a branch established, which the record and the reflog are then
    checked against: the tip's transcripts (TREE), the recorded ones, and the paths
    already reported (one finding per transcript)."""

    __slots__ = ("ref", "tip", "base", "incremental", "walk", "tree", "recorded", "reported")

    def __init__(
        self,
        ref: str,
        tip: str,
        base: str,
        incremental: bool,
        w: Walk,
        tree: dict[str, str],
        recorded: dict[str, str],
    ):
        self.ref, self.tip, self.base, self.incremental = ref, tip, base, incremental
        self.walk, self.tree, self.recorded = w, tree, recorded
        self.reported = {f.path for f in w.findings}

    def adder(self, path: str) -> str:
        """The commit that brought PATH's content at the tip into the history ("" unknown)."""
        return self.walk.adders.get((path, self.tree.get(path, "")), "")

    def complete(self, root: Path) -> None:
        """An incremental walk reads of the checkpoint only what the new commits add; a
        check of the whole tip (a reflog move) reads both trees in full."""
        if self.incremental and not self.tree:
            self.tree = transcripts_at(root, self.tip)
            self.recorded = {**transcripts_at(root, self.base), **self.recorded}


def _walk_branch(
    root: Path, ref: str, tip: str, branch: dict[str, Any] | None, full: bool
) -> _Walked:
    """The walk of TIP's history: since the recorded commit when it is an ancestor of TIP
    (unless FULL), else the whole of it."""
    base = branch.get("commit", "") if branch else ""
    base_ok = bool(base) and base in existing_commits(root, [base])
    if not full and base_ok and base != tip and is_ancestor(root, tip, base):
        # TIP is inside the history already verified (a push of the tip a later commit
        # has since moved past): nothing in it to walk, nothing the record says it lacks
        w = walk(root, tip, [tip], {})
        return _Walked(ref, tip, base, True, w, transcripts_at(root, tip), {})
    incremental = not full and base_ok and is_ancestor(root, base, tip)
    if incremental:
        legacy = isinstance(branch.get("transcripts") if branch else None, dict)
        known = recorded_transcripts(root, branch) if legacy else None
        if known is None:
            known = _known_at(root, base, rev_list(root, tip, [base]))
        w = walk(root, tip, [base], known, base)
        return _Walked(ref, tip, base, True, w, {}, known)
    recorded = recorded_transcripts(root, branch)
    return _Walked(ref, tip, base, False, walk(root, tip), transcripts_at(root, tip), recorded)


def record_findings(walked: _Walked) -> list[Finding]:
    """The record: a transcript the last clean run saw on this branch that the tip lacks or
    holds with other content (a history replaced wholesale shows no commit that did it)."""
    findings: list[Finding] = []
    ref, tip, base = walked.ref, walked.tip, walked.base
    for path, blob in sorted(walked.recorded.items()):
        if path in walked.reported:
            continue
        now = walked.tree.get(path)
        if now is None:
            findings.append(
                Finding(
                    path,
                    tip,
                    "vanished",
                    f"was in the verified history of {branch_name(ref)} (commit {base}) but is "
                    f"not in commit {tip} any more: the history was replaced (orphan branch, "
                    "reset or rebase)",
                    anchor=base,
                )
            )
        elif now != blob:
            by = walked.adder(path) or tip
            findings.append(
                Finding(
                    path,
                    by,
                    "changed",
                    f"differs from the verified record (blob {short(blob.split(':')[0])}): "
                    f"commit {by} added it with other content (blob {short(now.split(':')[0])}), "
                    "so the history was rewritten",
                    anchor=f"{base}>{by}",
                )
            )
        walked.reported.add(path)
    return findings


def reflog_findings(
    root: Path, walked: _Walked, reflog: Sequence[tuple[str, str]], start: int
) -> list[Finding]:
    """The reflog: a tip the branch was moved away from since entry START (reset, rebase,
    amend) whose transcripts the tip lost or changed."""
    olds = {sha for entry in reflog[start:] for sha in entry}
    olds -= {walked.tip, walked.base, *walked.walk.commits}
    olds = existing_commits(root, olds)
    if walked.incremental and olds:  # the walk read only what is new: an old tip may be an ancestor
        ancestors = (
            set(rev_list_all(root, walked.tip))
            if len(olds) > 16
            else {o for o in olds if is_ancestor(root, o, walked.tip)}
        )
        olds -= ancestors
    if olds:
        walked.complete(root)
    ref, tip, recorded, tree = walked.ref, walked.tip, walked.recorded, walked.tree
    findings: list[Finding] = []
    for old, status, path in lost_since(root, tip, sorted(olds)) if olds else []:
        if path in walked.reported or (
            status == "changed" and path in recorded and tree.get(path) == recorded[path]
        ):
            # (moving back from a forged tip to the verified content is a repair, not a forgery)
            continue
        walked.reported.add(path)
        if status == "vanished":
            findings.append(
                Finding(
                    path,
                    tip,
                    "vanished",
                    f"was in {branch_name(ref)} at commit {old} "
                    f"(see `git reflog {branch_name(ref)}`) but is gone from "
                    f"commit {tip}: the branch was reset or rewritten",
                    anchor=old,
                )
            )
        else:
            by = walked.adder(path) or tip
            findings.append(
                Finding(
                    path,
                    by,
                    "changed",
                    f"was in {branch_name(ref)} at commit {old} "
                    f"(see `git reflog {branch_name(ref)}`) with other content; "
                    f"commit {by} holds a different version: the branch was reset or rewritten",
                    anchor=f"{old}>{by}",
                )
            )
    return findings


def verify(
    repo: MemoryRepo,
    *,
    ref: str | None = None,
    tip: str | None = None,
    full: bool = False,
    save: bool = True,
    accept: bool = False,
) -> VerifyResult:
    """Check the history of REF (default: the branch HEAD is on) at TIP (default: where REF
    points). Incremental when the record holds an ancestor of TIP, unless FULL. When SAVE
    and the result is clean (or ACCEPT), the record moves to TIP.

    The findings come from the walk of the commits, the record of the last clean run, the
    reflog since then, and the replacements (see the module doc)."""
    root = repo.root
    ref = ref or current_ref(root)
    tip = tip or resolve(root, ref)
    record = load_record(repo)
    branches: dict[str, Any] = record.setdefault("branches", {})
    if not tip:  # no commit yet
        return VerifyResult(ref, "", replacement_findings(root, {}), 0, 0, True)
    branch = branches.get(ref) if ref.startswith("refs/heads/") else None
    walked = _walk_branch(root, ref, tip, branch, full)
    findings = list(walked.walk.findings)
    if not walked.incremental and walked.recorded:
        findings += record_findings(walked)
    reflog = reflog_entries(root, ref) if ref.startswith("refs/heads/") else []
    start = int(branch.get("reflog", 0)) if branch and walked.incremental else 0
    # a TIP the branch has since moved past (a commit landed while TIP was pushed): the
    # branch's own moves are checked where it is now, at the next verify of it
    current = resolve(root, ref) if ref.startswith("refs/heads/") else tip
    moved_on = bool(current) and current != tip and is_ancestor(root, tip, str(current))
    if not moved_on:
        findings += reflog_findings(root, walked, reflog, start if start <= len(reflog) else 0)
    findings += replacement_findings(root, walked.tree or None, tip)
    reported = {f.path for f in findings}
    findings += [f for f in link_findings(root, tip) if f.path not in reported]

    kept, n_accepted = _not_accepted(record, findings, accept)
    _subjects(root, kept)
    n_transcripts = _count(root, tip, walked, branch)
    since = walked.base if walked.incremental else ""
    result = VerifyResult(
        ref,
        tip,
        kept,
        n_transcripts,
        len(walked.walk.commits),
        not walked.incremental,
        since,
        n_accepted,
    )
    if save and not moved_on and ref.startswith("refs/heads/") and (not kept or accept):
        if not (
            branch
            and branch.get("commit") == tip
            and branch.get("reflog") == len(reflog)
            and "transcripts" not in branch
            and not accept
        ):
            try:
                save_checkpoint(repo, record, ref, tip, len(reflog), n_transcripts)
            except (GitError, OSError) as exc:  # a read-only repository: it was read all the same
                result.unsaved = _why_not_saved(repo, exc)
    return result


def worktree_findings(root: Path) -> list[Finding]:
    """Each committed transcript the working tree holds otherwise than HEAD (edited,
    staged, or deleted): the history is intact, but the index, search and the compiled
    context read the file as it is on disk, so an edit there (by hand, or by a tool with
    access to the folder) would speak as the conversation. `verify` and `doctor` name it;
    the pre-commit hook refuses to commit it."""
    out = git_real(
        root,
        "diff",
        "--no-renames",
        "--ignore-submodules=all",  # a gitlink there is a finding of its own ("link")
        "--name-status",
        "-z",
        "HEAD",
        "--",
        CONVERSATIONS_DIR,
        check=False,
    )
    fields = decode(out).split("\x00")
    found: list[Finding] = []
    for status, path in zip(fields[::2], fields[1::2]):
        if not path or status == "A":  # a new one, not yet committed: no text to differ from
            continue
        what = "deleted" if status == "D" else "changed"
        found.append(
            Finding(
                path,
                "HEAD",
                "worktree",
                f"{what} in the working tree since its commit (search and the context read "
                f"it as it is there): restore it with `git checkout HEAD -- {shlex.quote(path)}`",
            )
        )
    return found


def _why_not_saved(repo: MemoryRepo, exc: Exception) -> str:
    """Why the checkpoint could not be written, for a person: the file system's reason
    when it is one (git says only that it could not lock the ref), else git's own."""
    from autopoiesis.core.gitdirs import common_git_dir

    gitdir = common_git_dir(repo.root / ".git") or repo.root / ".git"
    refused = unwritable(gitdir / "refs") if not isinstance(exc, OSError) else exc
    if refused is not None:
        return f"{refused.strerror or refused} ({refused.filename or gitdir})"
    return str(exc)


def _count(root: Path, tip: str, walked: _Walked, branch: dict[str, Any] | None) -> int:
    """How many transcripts TIP holds: the checkpoint's count and what the walk added, or
    counted in TIP's tree."""
    if not walked.incremental or walked.tree:
        return sum(p.endswith(".md") for p in walked.tree)
    count = branch.get("count") if branch else None
    added = {p for (p, _) in walked.walk.adders}
    if isinstance(count, int) and not walked.walk.findings:
        return count + sum(p.endswith(".md") and p not in walked.recorded for p in added)
    out = git_real(
        root, "ls-tree", "-r", "--name-only", "-z", "--full-tree", tip, "--", TRANSCRIPTS
    )
    return sum(p.endswith(b".md") for p in out.split(b"\x00"))


def _not_accepted(
    record: dict[str, Any], findings: list[Finding], accept: bool
) -> tuple[list[Finding], int]:
    """(the findings not accepted earlier, how many were). With ACCEPT, today's findings
    join the accepted ones in RECORD, all but replacements (those stay reported)."""
    accepted_keys = set(record.get("accepted", []))
    kept = [f for f in findings if f.key not in accepted_keys]
    n_accepted = len(findings) - len(kept)
    if accept:
        record["accepted"] = sorted(
            accepted_keys | {f.key for f in kept if f.kind not in ("replaced", "grafts")}
        )
        kept = [f for f in kept if f.kind in ("replaced", "grafts")]
    return kept, n_accepted


def _subjects(root: Path, findings: list[Finding]) -> None:
    """Add each named commit's subject to its finding: `commit 1a2b3c4d5e6f ("subject")`."""
    shas = existing_commits(
        root, {f.commit for f in findings} | {a for f in findings for a in f.anchor.split(">")}
    )
    if not shas:
        return
    out = decode(
        git_real(root, "log", "--no-walk=unsorted", "--format=%H%x00%s", *sorted(shas), check=False)
    )
    subjects = dict(line.split("\x00", 1) for line in out.splitlines() if "\x00" in line)
    for f in findings:
        for sha, subject in subjects.items():
            if sha in f.detail:
                f.detail = f.detail.replace(
                    f"commit {sha}", f"commit {short(sha)} ({subject[:60]!r})"
                )


def accept_current(repo: MemoryRepo, ref: str | None = None) -> VerifyResult:
    """Trust the branch as it is now (after a sanctioned rewrite such as `autopoiesis
    forget`): record it, and remember today's findings so they are not reported again."""
    return verify(repo, ref=ref, full=True, accept=True)
