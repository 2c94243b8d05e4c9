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
* **the record** (`.autopoiesis/verify/record.json`): what the last clean run verified,
  per branch: the commit and the blob id of each transcript. A history that was replaced
  wholesale (an orphan branch renamed to main, a reset to an unrelated root, a rebase
  that edited the commit which added a transcript) has no commit that shows the change;
  comparing the branch with the record does. It also makes the walk incremental: after
  the first full walk only the commits since the recorded one are read.
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
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from autopoiesis.core.paths import CONVERSATIONS_DIR, MemoryRepo, atomic_write
from autopoiesis.errors import GitError
from autopoiesis.git.runner import GitCommandError, call, decode
from autopoiesis.git.runner import run as _run

TRANSCRIPTS = CONVERSATIONS_DIR + "/"
RECORD_VERSION = 1
MEMORY_BRANCH = "refs/heads/main"
# Set by a sanctioned rewrite (`autopoiesis forget`): the reference-transaction hook lets
# it through. verify still reports the rewrite until the record is re-based (`accept`).
ALLOW_REWRITE_ENV = "AUTOPOIESIS_ALLOW_HISTORY_REWRITE"


def _git(root: Path, *args: str, input: bytes | None = None, check: bool = True) -> bytes:
    """git with replacements off: what the history really holds."""
    try:
        return _run(root, "--no-replace-objects", *args, input=input, check=check)
    except GitCommandError as exc:
        raise GitError(
            f"Could not read the history: {exc}. Is {root} a git repository with its objects "
            "intact (`git fsck`)?"
        ) from None


def _is_zero(sha: str) -> bool:
    return not sha.strip("0")


class Finding:
    """One way the history breaks transcript immutability."""

    __slots__ = ("path", "commit", "kind", "detail", "anchor")

    def __init__(self, path: str, commit: str, kind: str, detail: str, anchor: str = ""):
        self.path, self.commit, self.kind, self.detail = path, commit, kind, detail
        self.anchor = anchor or commit  # what the finding is about, for `accept`

    @property
    def key(self) -> str:
        return f"{self.kind}:{self.anchor}:{self.path}"

    def __str__(self) -> str:
        return f"{self.path}: {self.detail}" if self.path else self.detail

    def to_dict(self) -> dict[str, str]:
        return {"path": self.path, "commit": self.commit, "kind": self.kind, "detail": self.detail}


class VerifyResult:
    """What a run found: the findings (empty when the history is clean), how many
    transcripts the branch holds and how many commits were read."""

    __slots__ = ("ref", "tip", "findings", "transcripts", "commits", "full", "since", "accepted")

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

    @property
    def ok(self) -> bool:
        return not self.findings

    def summary(self) -> str:
        if self.ok:
            return f"ok: {self.transcripts} transcripts, {self.commits} commits checked"
        n = len(self.findings)
        where = self.ref.removeprefix("refs/heads/")
        return (
            f"FAILED: {n} problem{'s' if n != 1 else ''} in the history of {where} "
            f"({self.transcripts} transcripts, {self.commits} commits checked)"
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
        }


# ── the record ──
def record_path(repo: MemoryRepo) -> Path:
    return repo.state_file("verify_record")


def load_record(repo: MemoryRepo) -> dict[str, Any]:
    """The record of the last clean run ({} when there is none or it cannot be read:
    the next run then walks the whole history)."""
    path = repo.state_dir / "verify" / "record.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if (
        not isinstance(data, dict)
        or data.get("version") != RECORD_VERSION
        or not isinstance(data.get("branches"), dict)
    ):
        return {}
    return data


def save_record(repo: MemoryRepo, record: dict[str, Any]) -> None:
    record["version"] = RECORD_VERSION
    atomic_write(record_path(repo), json.dumps(record, separators=(",", ":"), sort_keys=True))


# ── git plumbing ──
def current_ref(root: Path) -> str:
    """The branch HEAD points to (refs/heads/NAME), or "HEAD" when it is detached."""
    out = _run(root, "symbolic-ref", "-q", "HEAD", check=False)
    return decode(out).strip() or "HEAD"


def resolve(root: Path, rev: str) -> str | None:
    out = _git(root, "rev-parse", "--verify", "-q", f"{rev}^{{commit}}", check=False)
    return decode(out).strip() or None


def existing_commits(root: Path, shas: Iterable[str]) -> set[str]:
    """Those of SHAS that name a commit in the object store (one cat-file call)."""
    wanted = sorted({s for s in shas if s and not _is_zero(s)})
    if not wanted:
        return set()
    out = decode(
        _git(root, "cat-file", "--batch-check", input="".join(f"{s}\n" for s in wanted).encode())
    )
    found = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[1] == "commit":
            found.add(parts[0])
    return found


def is_ancestor(root: Path, a: str, b: str) -> bool:
    return call(root, "--no-replace-objects", "merge-base", "--is-ancestor", a, b).returncode == 0


def transcripts_at(root: Path, commit: str) -> dict[str, str]:
    """Path → blob id of every transcript in COMMIT's tree."""
    out = _git(root, "ls-tree", "-r", "-z", "--full-tree", commit, "--", TRANSCRIPTS)
    tree: dict[str, str] = {}
    for entry in decode(out).split("\x00"):
        if not entry:
            continue
        meta, _, path = entry.partition("\t")
        parts = meta.split()
        if len(parts) == 3:
            tree[path] = _entry(parts[2], parts[0])
    return tree


def _entry(blob: str, mode: str) -> str:
    """What the record keeps of a tree entry: the blob id, and the mode when it is not a
    plain file (an executable bit or a symbolic link is a change too)."""
    return blob if mode == "100644" else f"{blob}:{mode}"


def _diff_lines(
    root: Path, lines: Sequence[str], *, root_commits: bool = True
) -> list[tuple[str, str, str, str, str, str]]:
    """Feed `diff-tree --stdin` LINES ("<commit> <parent>..." or "<new> <old>") and return
    (commit, status, path, old blob, new blob, modes) for each transcript change, in order."""
    if not lines:
        return []
    args = ["diff-tree", "--stdin", "-r", "-m", "--no-renames", "--no-abbrev", "-z"]
    if root_commits:
        args.append("--root")
    out = _git(root, *args, "--", TRANSCRIPTS, input=("\n".join(lines) + "\n").encode())
    tokens = out.split(b"\x00")
    changes: list[tuple[str, str, str, str, str, str]] = []
    commit = ""
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if not tok:
            i += 1
            continue
        if tok[:1] == b":":
            meta = tok[1:].decode("ascii", "replace").split(" ")
            path = decode(tokens[i + 1]) if i + 1 < len(tokens) else ""
            i += 2
            if len(meta) >= 5:
                changes.append(
                    (commit, meta[4][:1], path, meta[2], meta[3], f"{meta[0]} {meta[1]}")
                )
        else:
            commit = tok.decode("ascii", "replace").split()[0]
            i += 1
    return changes


def _rev_list(root: Path, tip: str, exclude: Iterable[str]) -> list[str]:
    """`rev-list --parents` lines of TIP's history minus what EXCLUDE reaches, parents first."""
    args = ["rev-list", "--ignore-missing", "--reverse", "--topo-order", "--parents", tip]
    ex = [e for e in exclude if e and not _is_zero(e)]
    if ex:
        args += ["--not", *ex]
    return decode(_git(root, *args)).splitlines()


# ── the walk ──
class Walk:
    """The outcome of walking commits: findings, the first blob of each transcript, and
    which commit brought each (path, blob) into the history."""

    __slots__ = ("findings", "known", "adders", "commits")

    def __init__(self, known: dict[str, str]):
        self.findings: list[Finding] = []
        self.known = known
        self.adders: dict[tuple[str, str], str] = {}
        self.commits: list[str] = []


_TYPES = {"120000": "a symbolic link", "160000": "a submodule", "040000": "a folder"}


def walk(
    root: Path, tip: str, exclude: Iterable[str] = (), known: dict[str, str] | None = None
) -> Walk:
    """Check every commit of TIP's history that EXCLUDE does not reach. KNOWN (path →
    blob) is what the history already holds; it is extended with what the commits add."""
    w = Walk(dict(known or {}))
    revs = _rev_list(root, tip, exclude)
    w.commits = [line.split(" ", 1)[0] for line in revs]
    seen: set[tuple[str, str]] = set()
    for commit, status, path, old, new, modes in _diff_lines(root, revs):
        blob = _entry(new, modes.split()[1])
        if status == "A":
            w.adders.setdefault((path, blob), commit)
            first = w.known.setdefault(path, blob)
            if first != blob and (commit, path) not in seen:
                seen.add((commit, path))
                w.findings.append(
                    Finding(
                        path,
                        commit,
                        "readded",
                        f"added again with other content (blob {_short(new)}, it was "
                        f"{_short(first)}) by commit {commit}",
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
    return w


def _short(sha: str) -> str:
    return sha[:12]


# ── replacements ──
def replacement_findings(
    root: Path, known: dict[str, str] | None = None, tip: str | None = None
) -> list[Finding]:
    """A finding per transcript that a `refs/replace/*` object alters (one finding per
    replacement that alters none), and one for a grafts file."""
    out = decode(_git(root, "for-each-ref", "--format=%(refname) %(objectname)", "refs/replace/"))
    findings: list[Finding] = []
    for line in out.splitlines():
        ref, _, replacement = line.partition(" ")
        original = ref.rsplit("/", 1)[-1]
        findings.extend(_replacement(root, original, replacement, known, tip))
    grafts = _git_common_dir(root) / "info" / "grafts"
    if grafts.is_file() and grafts.stat().st_size:
        findings.append(
            Finding(
                "",
                "",
                "grafts",
                f"{grafts} rewrites the parents of commits, so git shows another "
                "history than the one recorded; remove the file.",
            )
        )
    return findings


def _replacement(
    root: Path, original: str, replacement: str, known: dict[str, str] | None, tip: str | None
) -> list[Finding]:
    fix = f"Remove it with `git replace -d {original}`."
    kinds = decode(
        _git(root, "cat-file", "--batch-check", input=f"{original}\n{replacement}\n".encode())
    ).split("\n")
    kind = kinds[0].split()[1] if len(kinds[0].split()) > 1 else "missing"
    paths: list[str] = []
    if kind == "blob":
        if known is None and tip:
            known = transcripts_at(root, tip)
        paths = sorted(p for p, b in (known or {}).items() if b.split(":")[0] == original)
    elif kind in ("commit", "tree"):
        lines = [f"{replacement} {original}"] if kind == "tree" else []
        if kind == "commit":
            # compare the trees: what the replacement commit shows instead of the real one
            trees = decode(
                _git(
                    root,
                    "rev-parse",
                    f"{original}^{{tree}}",
                    f"{replacement}^{{tree}}",
                    check=False,
                )
            ).split()
            lines = [f"{trees[1]} {trees[0]}"] if len(trees) == 2 else []
        paths = (
            sorted({c[2] for c in _diff_lines(root, lines, root_commits=False)}) if lines else []
        )
    what = (
        f"`git replace` substitutes {kind} {original} with {replacement}, so git shows other "
        "content than the history holds"
    )
    if not paths:
        return [Finding("", original, "replaced", f"{what}. {fix}")]
    return [
        Finding(p, original, "replaced", f"{what}: this transcript would read differently. {fix}")
        for p in paths
    ]


def _git_common_dir(root: Path) -> Path:
    out = decode(_git(root, "rev-parse", "--git-common-dir")).strip()
    p = Path(out)
    return p if p.is_absolute() else (root / p)


# ── the reflog ──
def _reflog(root: Path, ref: str) -> list[tuple[str, str]]:
    """(old, new) of each entry of REF's reflog, oldest first ([] when there is none)."""
    path = _git_common_dir(root) / "logs" / ref
    try:
        data = path.read_bytes()
    except OSError:
        return []
    entries = []
    for line in data.split(b"\n"):
        parts = line.split(b" ", 2)
        if len(parts) >= 2:
            entries.append(
                (parts[0].decode("ascii", "replace"), parts[1].decode("ascii", "replace"))
            )
    return entries


def _lost_since(root: Path, tip: str, olds: Iterable[str]) -> list[tuple[str, str, str]]:
    """(old commit, "vanished" | "changed", path) for each transcript of an OLDS commit that
    TIP lacks or holds with other content. One diff-tree call: each line diffs an old
    commit against TIP as if TIP were its parent, so the line's commit names the old one."""
    lines = [f"{o} {tip}" for o in olds]
    return [
        (c[0], "vanished" if c[1] == "A" else "changed", c[2])
        for c in _diff_lines(root, lines, root_commits=False)
        if c[1] in "AMT"
    ]


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


def _walk_branch(
    root: Path, ref: str, tip: str, branch: dict[str, Any] | None, full: bool
) -> _Walked:
    """The walk of TIP's history: since the recorded commit when it is an ancestor of TIP
    (unless FULL), else the whole of it."""
    base = branch.get("commit", "") if branch else ""
    recorded: dict[str, str] = dict(branch.get("transcripts", {})) if branch else {}
    base_ok = bool(base) and base in existing_commits(root, [base])
    incremental = not full and base_ok and is_ancestor(root, base, tip)
    if incremental:
        w = walk(root, tip, [base], recorded)
        return _Walked(ref, tip, base, True, w, w.known, recorded)
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
                    f"was in the verified history of {_name(ref)} (commit {base}) but is not in "
                    f"commit {tip} any more: the history was replaced (orphan branch, reset or "
                    "rebase)",
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
                    f"differs from the verified record (blob {_short(blob.split(':')[0])}): "
                    f"commit {by} added it with other content (blob {_short(now.split(':')[0])}), "
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
    ref, tip, recorded, tree = walked.ref, walked.tip, walked.recorded, walked.tree
    olds = {sha for entry in reflog[start:] for sha in entry}
    olds -= {tip, walked.base, *walked.walk.commits}
    olds = existing_commits(root, olds)
    if walked.incremental and olds:  # the walk read only what is new: an old tip may be an ancestor
        ancestors = (
            set(_rev_list_all(root, tip))
            if len(olds) > 16
            else {o for o in olds if is_ancestor(root, o, tip)}
        )
        olds -= ancestors
    findings: list[Finding] = []
    for old, status, path in _lost_since(root, tip, sorted(olds)) if olds else []:
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
                    f"was in {_name(ref)} at commit {old} (see `git reflog {_name(ref)}`) but is "
                    "gone from "
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
                    f"was in {_name(ref)} at commit {old} (see `git reflog {_name(ref)}`) with "
                    "other content; "
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
    reflog = _reflog(root, ref) if ref.startswith("refs/heads/") else []
    start = int(branch.get("reflog", 0)) if branch and walked.incremental else 0
    findings += reflog_findings(root, walked, reflog, start if start <= len(reflog) else 0)
    findings += replacement_findings(root, walked.tree)

    kept, n_accepted = _not_accepted(record, findings, accept)
    _subjects(root, kept)
    n_transcripts = sum(p.endswith(".md") for p in walked.tree)
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
    if save and ref.startswith("refs/heads/") and (not kept or accept):
        clean_tree = transcripts_at(root, tip) if accept and walked.incremental else walked.tree
        branches[ref] = {"commit": tip, "reflog": len(reflog), "transcripts": clean_tree}
        if not (
            branch
            and branch.get("commit") == tip
            and branch.get("reflog") == len(reflog)
            and not accept
        ):
            save_record(repo, record)
    return result


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


def _rev_list_all(root: Path, tip: str) -> list[str]:
    return decode(_git(root, "rev-list", tip)).split()


def _name(ref: str) -> str:
    return ref.removeprefix("refs/heads/")


def _subjects(root: Path, findings: list[Finding]) -> None:
    """Add each named commit's subject to its finding: `commit 1a2b3c4d5e6f ("subject")`."""
    shas = existing_commits(
        root, {f.commit for f in findings} | {a for f in findings for a in f.anchor.split(">")}
    )
    if not shas:
        return
    out = decode(
        _git(root, "log", "--no-walk=unsorted", "--format=%H%x00%s", *sorted(shas), check=False)
    )
    subjects = dict(line.split("\x00", 1) for line in out.splitlines() if "\x00" in line)
    for f in findings:
        for sha, subject in subjects.items():
            if sha in f.detail:
                f.detail = f.detail.replace(
                    f"commit {sha}", f"commit {_short(sha)} ({subject[:60]!r})"
                )


def accept_current(repo: MemoryRepo, ref: str | None = None) -> VerifyResult:
    """Trust the branch as it is now (after a sanctioned rewrite such as `autopoiesis
    forget`): record it, and remember today's findings so they are not reported again."""
    return verify(repo, ref=ref, full=True, accept=True)
