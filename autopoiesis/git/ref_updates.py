"""The reference-transaction hook's check: refuse a ref update that would change the
transcript history, before git makes it (verify only finds such a change afterwards).

A branch moved onto commits that alter a transcript, or to a tip that lost or changed
one; the memory branch deleted while no other branch holds its transcripts; a `git
replace` object. A sanctioned rewrite (`autopoiesis forget`) sets verify.ALLOW_REWRITE_ENV.
Packing refs (`git pack-refs`, so `git gc` and `git maintenance`) deletes the loose file
of a ref packed-refs already holds at the same commit: that deletes nothing (`packed_at`).

Light path, like verify: the hook runs on every ref update, so the standard library and
git.runner only (no GitPython).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from autopoiesis.core.paths import MemoryRepo
from autopoiesis.git.history import (
    Finding,
    branch_name,
    diff_lines,
    existing_commits,
    git_real,
    is_zero,
    lost_since,
    resolve,
    short,
    transcripts_at,
)
from autopoiesis.git.replacements import replaced_object_findings
from autopoiesis.git.runner import decode
from autopoiesis.git.verify import (
    ALLOW_REWRITE_ENV,
    MEMORY_BRANCH,
    _subjects,
    load_record,
    recorded_transcripts,
    walk,
)


def check_ref_updates(repo: MemoryRepo, lines: Iterable[str]) -> list[str]:
    """The errors that refuse a ref transaction (`<old> <new> <ref>` lines): a branch moved
    onto commits that alter a transcript, or to a tip that lost or changed one; the memory
    branch deleted while no other branch holds its commit; a `git replace` object."""
    if os.environ.get(ALLOW_REWRITE_ENV):
        return []
    root = repo.root
    branches: dict[str, Any] = load_record(repo).get("branches", {})
    known: dict[str, str] = {}
    for b in branches.values():
        for path, blob in recorded_transcripts(root, b).items():
            known.setdefault(path, blob)
    verified = [b.get("commit", "") for b in branches.values()]
    errors: list[str] = []
    for line in lines:
        parts = line.split()
        if len(parts) != 3:
            continue
        old, new, ref = parts
        if ref.startswith("refs/replace/") and not is_zero(new):
            original = ref.rsplit("/", 1)[-1]
            found = replaced_object_findings(root, original, new, None, resolve(root, "HEAD"))
            errors.append(f"refused to create {ref}: " + "; ".join(str(f) for f in found))
        elif not ref.startswith("refs/heads/"):
            continue
        elif is_zero(new):
            errors += _deletion_errors(root, ref, old)
        elif existing_commits(root, [new]):
            recorded = branches.get(ref, {})
            if is_zero(old):
                findings = _created_branch_findings(root, ref, new, recorded, verified, known)
            else:
                findings = _moved_branch_findings(root, ref, old, new, recorded, verified, known)
            if findings:
                errors.append(_refused_move(root, ref, new, findings))
    return errors


def _created_branch_findings(
    root: Path,
    ref: str,
    new: str,
    recorded: dict[str, Any],
    verified: list[str],
    known: dict[str, str],
) -> list[Finding]:
    """A branch created at NEW (or re-created: RECORDED is what the record holds of it):
    the commits no verified branch reaches, and what its verified tip had that NEW lacks."""
    heads = decode(git_real(root, "for-each-ref", "--format=%(objectname)", "refs/heads/"))
    others = [r for r in heads.split() if r]
    findings = walk(root, new, verified + others, known).findings
    if recorded.get("commit") and existing_commits(root, [recorded["commit"]]):
        findings += _as_findings(root, new, recorded["commit"], ref)
    elif recorded.get("transcripts"):  # a record made before the checkpoint refs
        tree = transcripts_at(root, new)
        for p, b in sorted(recorded["transcripts"].items()):
            if tree.get(p) != b:
                how = "missing from" if p not in tree else "different in"
                findings.append(
                    Finding(
                        p,
                        new,
                        "vanished" if p not in tree else "changed",
                        f"is {how} commit {new}, unlike the verified record of {branch_name(ref)}",
                    )
                )
    return findings


def _moved_branch_findings(
    root: Path,
    ref: str,
    old: str,
    new: str,
    recorded: dict[str, Any],
    verified: list[str],
    known: dict[str, str],
) -> list[Finding]:
    """A branch moved from OLD to NEW: the new commits, and what OLD had that NEW lost or
    changed, unless the move goes back from a forged tip to the verified content."""
    findings = walk(root, new, [old, *verified], known).findings
    reported = {f.path for f in findings}
    moved = [f for f in _as_findings(root, new, old, ref) if f.path not in reported]
    if moved:  # moving away from a forged tip, back to the verified content, is allowed
        forged = {f.path for f in walk(root, old, verified, known).findings}
        transcripts = recorded_transcripts(root, recorded)
        now = transcripts_at(root, new) if transcripts else {}
        moved = [
            f
            for f in moved
            if f.path not in forged
            and not (
                f.kind == "changed"
                and f.path in transcripts
                and now.get(f.path) == transcripts[f.path]
            )
        ]
    return findings + moved


def _refused_move(root: Path, ref: str, new: str, findings: list[Finding]) -> str:
    _subjects(root, findings)
    shown = findings[:20]
    more = f"\n  … and {len(findings) - 20} more" if len(findings) > 20 else ""
    return (
        f"refused to move {ref} to {short(new)}; the transcript history would change:\n"
        + "\n".join(f"  {f}" for f in shown)
        + more
    )


def _as_findings(root: Path, new: str, old: str, ref: str) -> list[Finding]:
    return [
        Finding(
            path,
            new,
            status,
            f"{'deleted' if status == 'vanished' else 'changed'} by moving {branch_name(ref)} "
            f"from commit {old} to commit {new}",
            anchor=f"{old}>{new}",
        )
        for _, status, path in lost_since(root, new, [old])
    ]


def packed_at(root: Path, ref: str, old: str) -> bool:
    """Whether deleting REF at OLD only prunes its loose file: `git pack-refs` (and so
    `git gc`, `git maintenance`, `gc --auto`) packs every ref, then deletes each loose ref
    in a transaction of its own, while packed-refs already holds REF at OLD and nothing
    locks packed-refs. A real deletion of a packed ref rewrites packed-refs in the same
    transaction and holds `packed-refs.lock` while the hook runs; one of a loose-only ref
    finds no such line."""
    from autopoiesis.core.gitdirs import common_git_dir

    gitdir = common_git_dir(root / ".git")
    if gitdir is None or is_zero(old) or (gitdir / "packed-refs.lock").exists():
        return False
    try:
        with open(gitdir / "packed-refs", "rb") as fh:
            want = f"{old} {ref}\n".encode()
            return any(line == want for line in fh)
    except OSError:
        return False


def _deletion_errors(root: Path, ref: str, old: str) -> list[str]:
    """Deleting the memory branch (or `branch -M` onto it, which deletes it first) is
    refused while some transcript of its tip is on no other branch with the same content.
    Pruning its loose file once packed (pack-refs, gc) deletes nothing."""
    if ref != MEMORY_BRANCH or packed_at(root, ref, old):
        return []
    current = old if not is_zero(old) else (resolve(root, ref) or "")
    if not current:
        return []
    others = [
        line.split(" ", 1)[1]
        for line in decode(
            git_real(root, "for-each-ref", "--format=%(refname) %(objectname)", "refs/heads/")
        ).splitlines()
        if " " in line and line.split(" ", 1)[0] != ref
    ]
    lost = {p for p in transcripts_at(root, current) if p.endswith(".md")}
    if others and lost:
        # each line diffs another branch against the deleted tip as its parent: D/M/T are
        # the tip's transcripts that branch lacks; what every branch lacks would be lost
        missing: dict[str, set[str]] = {o: set() for o in others}
        for commit, status, path, *_ in diff_lines(
            root, [f"{o} {current}" for o in others], root_commits=False
        ):
            if status in "DMT" and commit in missing:
                missing[commit].add(path)
        for paths in missing.values():
            lost &= paths
    if not lost:
        return []
    names = sorted(lost)
    shown = "\n".join(f"  {n}" for n in names[:10]) + (
        f"\n  … and {len(names) - 10} more" if len(names) > 10 else ""
    )
    return [
        f"refused to delete or replace {ref} (commit {short(current)}): {len(names)} "
        "transcript(s) of it are on no "
        f"other branch and would leave the history:\n{shown}"
    ]
