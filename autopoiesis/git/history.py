"""The transcript history as git really holds it: the plumbing verify (verify.py) and the
reference-transaction check (ref_updates.py) read it with, and the Finding each check
reports.

Every read runs with `--no-replace-objects`, so `git replace` cannot show other content
than the objects hold. Light path, like verify: the standard library and git.runner only.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from autopoiesis.core.paths import (
    CONTENT_DIRS,
    CONVERSATIONS_DIR,
    ODD_NAME,
    SHARED_DIR,
    is_git_name,
)
from autopoiesis.errors import GitError
from autopoiesis.git.runner import GitCommandError, call, decode
from autopoiesis.git.runner import run as _run

TRANSCRIPTS = CONVERSATIONS_DIR + "/"


def git_real(root: Path, *args: str, input: bytes | None = None, check: bool = True) -> bytes:
    """git with replacements off: what the history really holds."""
    try:
        return _run(root, "--no-replace-objects", *args, input=input, check=check)
    except GitCommandError as exc:
        raise GitError(
            f"Could not read the history: {exc}. Is {root} a git repository with its objects "
            "intact (`git fsck`)?"
        ) from None


def is_zero(sha: str) -> bool:
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


def current_ref(root: Path) -> str:
    """The branch HEAD points to (refs/heads/NAME), or "HEAD" when it is detached."""
    out = _run(root, "symbolic-ref", "-q", "HEAD", check=False)
    return decode(out).strip() or "HEAD"


def resolve(root: Path, rev: str) -> str | None:
    out = git_real(root, "rev-parse", "--verify", "-q", f"{rev}^{{commit}}", check=False)
    return decode(out).strip() or None


def existing_commits(root: Path, shas: Iterable[str]) -> set[str]:
    """Those of SHAS that name a commit in the object store (one cat-file call)."""
    wanted = sorted({s for s in shas if s and not is_zero(s)})
    if not wanted:
        return set()
    out = decode(
        git_real(
            root, "cat-file", "--batch-check", input="".join(f"{s}\n" for s in wanted).encode()
        )
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
    out = git_real(root, "ls-tree", "-r", "-z", "--full-tree", commit, "--", TRANSCRIPTS)
    tree: dict[str, str] = {}
    for entry in decode(out).split("\x00"):
        if not entry:
            continue
        meta, _, path = entry.partition("\t")
        parts = meta.split()
        if len(parts) == 3:
            tree[path] = tree_entry(parts[2], parts[0])
    return tree


# Tree-entry modes that are no regular file: a symbolic link, a gitlink (submodule).
LINK_MODES = {"120000": "a symbolic link", "160000": "a gitlink (submodule)"}

# What autopoiesis and git read of a memory beyond its folders: the files at the top that
# steer how both treat the rest (read through a link, `memory-config.yaml -> /dev/zero`
# would be read on every command), and shared/, where the teams are mounted.
READ_FILES = (".gitignore", ".gitattributes", ".gitmodules", "memory-config.yaml")
READ_SCOPE = (*CONTENT_DIRS, SHARED_DIR, *READ_FILES)


def secrets_in_names(root: Path, paths: list[str]) -> dict[str, str]:
    """Each of PATHS whose name holds what looks like a secret, shown with it redacted. A
    file's name is committed, pushed and listed as it is, where its text's secrets are
    redacted, and a name cannot be redacted in place: the file is renamed, by whoever
    named it. (A transcript's name is made of its redacted session id and first message,
    formats/transcript_meta.) The names are read as one text, a name a line (a tree's ten
    thousand names cost one pass, not ten thousand calls)."""
    names = [p for p in paths if not ODD_NAME.search(p)]  # a line break would shift them
    if not names:
        return {}
    from autopoiesis.core.paths import MemoryRepo

    redact = MemoryRepo(root).redactor().redact
    joined = "\n".join(names)
    masked = redact(joined)
    if masked == joined:
        return {}
    lines = masked.split("\n")
    if len(lines) != len(names):  # a marker across names: each name on its own
        lines = [redact(name) for name in names]
    return {name: shown for name, shown in zip(names, lines, strict=True) if shown != name}


def in_read_scope(path: str) -> bool:
    """Whether PATH (repo-relative) lies where autopoiesis reads (READ_SCOPE)."""
    return path in READ_FILES or path.split("/", 1)[0] in (*CONTENT_DIRS, SHARED_DIR)


def misplaced(path: str, mode: str) -> str | None:
    """What the tree entry PATH of MODE is where nothing of its kind belongs, or None: a
    symbolic link or a gitlink in the memory folders or at a file autopoiesis reads
    (nothing reads through one: core.paths.MemoryRepo.is_link), or under shared/ anything
    but a team's mount, a gitlink `shared/<team>` (sync fetches, merges and pushes in
    each mount: a link there could name any repository of this machine)."""
    if path.split("/", 1)[0] == SHARED_DIR:
        if mode == "160000" and path.count("/") == 1:
            return None
        return (
            f"{LINK_MODES.get(mode, 'a file')} under {SHARED_DIR}/, where only a team's mount "
            "belongs (a gitlink `autopoiesis team add` makes)"
        )
    if mode in LINK_MODES and in_read_scope(path):
        where = "at a file autopoiesis reads" if path in READ_FILES else "in the memory folders"
        return f"{LINK_MODES[mode]} {where}"
    if any(is_git_name(part) for part in path.split("/")[:-1]):
        # a repository's hooks or config planted inside the tree: git refuses to check it
        # out ("invalid path"), and a merge of it stopped half way
        return "a file under a folder named .git, which git never checks out"
    return None


def link_findings(root: Path, commit: str) -> list[Finding]:
    """What `misplaced` names in COMMIT's tree, or a file of the memory folders whose name
    holds a control character or a secret (`secrets_in_names`, shown without it): the
    pre-commit hook refuses them all, so one that is there came by a commit made without
    the hooks, or from a collaborator."""
    out = git_real(root, "ls-tree", "-r", "-z", "--full-tree", commit, "--", *READ_SCOPE)
    findings: list[Finding] = []
    entries = decode(out).split("\x00")
    named = [e.partition("\t")[2] for e in entries]
    for shown in secrets_in_names(root, [p for p in named if p]).values():
        findings.append(
            Finding(
                shown,
                commit,
                "name",
                "a name that holds what looks like a secret, shown without it (rename the "
                "file without it with `git mv` and commit; `autopoiesis forget` takes the "
                "name out of the history)",
            )
        )
    for entry in entries:
        meta, _, path = entry.partition("\t")
        mode = meta.split(" ", 1)[0]
        if path and ODD_NAME.search(path):
            shown = ascii(path)[1:-1]
            findings.append(
                Finding(
                    shown,
                    commit,
                    "name",
                    "a name with a control character in the memory folders (remove it with "
                    "`git rm` of it, quoted as `git ls-files` shows it, and commit)",
                )
            )
        elif path and (why := misplaced(path, mode)):
            findings.append(
                Finding(
                    path,
                    commit,
                    "link",
                    f"{why} (not read; remove it with `git rm {path}` and commit)",
                )
            )
    return findings


def tree_entry(blob: str, mode: str) -> str:
    """What the record keeps of a tree entry: the blob id, and the mode when it is not a
    plain file (an executable bit or a symbolic link is a change too)."""
    return blob if mode == "100644" else f"{blob}:{mode}"


def diff_lines(
    root: Path, lines: Sequence[str], *, root_commits: bool = True
) -> list[tuple[str, str, str, str, str, str]]:
    """Feed `diff-tree --stdin` LINES ("<commit> <parent>..." or "<new> <old>") and return
    (commit, status, path, old blob, new blob, modes) for each transcript change, in order."""
    if not lines:
        return []
    args = ["diff-tree", "--stdin", "-r", "-m", "--no-renames", "--no-abbrev", "-z"]
    if root_commits:
        args.append("--root")
    out = git_real(root, *args, "--", TRANSCRIPTS, input=("\n".join(lines) + "\n").encode())
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


def rev_list(root: Path, tip: str, exclude: Iterable[str]) -> list[str]:
    """`rev-list --parents` lines of TIP's history minus what EXCLUDE reaches, parents first."""
    args = ["rev-list", "--ignore-missing", "--reverse", "--topo-order", "--parents", tip]
    ex = [e for e in exclude if e and not is_zero(e)]
    if ex:
        args += ["--not", *ex]
    return decode(git_real(root, *args)).splitlines()


def short(sha: str) -> str:
    return sha[:12]


def branch_name(ref: str) -> str:
    return ref.removeprefix("refs/heads/")


def git_common_dir(root: Path) -> Path:
    out = decode(git_real(root, "rev-parse", "--git-common-dir")).strip()
    p = Path(out)
    return p if p.is_absolute() else (root / p)


def rev_list_all(root: Path, tip: str) -> list[str]:
    return decode(git_real(root, "rev-list", tip)).split()


def reflog_entries(root: Path, ref: str) -> list[tuple[str, str]]:
    """(old, new) of each entry of REF's reflog, oldest first ([] when there is none)."""
    path = git_common_dir(root) / "logs" / ref
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


def lost_since(root: Path, tip: str, olds: Iterable[str]) -> list[tuple[str, str, str]]:
    """(old commit, "vanished" | "changed", path) for each transcript of an OLDS commit that
    TIP lacks or holds with other content. One diff-tree call: each line diffs an old
    commit against TIP as if TIP were its parent, so the line's commit names the old one."""
    lines = [f"{o} {tip}" for o in olds]
    return [
        (c[0], "vanished" if c[1] == "A" else "changed", c[2])
        for c in diff_lines(root, lines, root_commits=False)
        if c[1] in "AMT"
    ]
