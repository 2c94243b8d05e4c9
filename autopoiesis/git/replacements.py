"""Replacements as findings: `refs/replace/*` objects (and a grafts file) make git show
other content than the history holds (verify.py's fourth source of findings; the
reference-transaction check refuses a replacement with them too). Light path: the
standard library and git.runner only.
"""

from __future__ import annotations

from pathlib import Path

from autopoiesis.git.history import (
    Finding,
    diff_lines,
    git_common_dir,
    git_real,
    transcripts_at,
)
from autopoiesis.git.runner import decode


def replacement_findings(
    root: Path, known: dict[str, str] | None = None, tip: str | None = None
) -> list[Finding]:
    """A finding per transcript that a `refs/replace/*` object alters (one finding per
    replacement that alters none), and one for a grafts file."""
    out = decode(
        git_real(root, "for-each-ref", "--format=%(refname) %(objectname)", "refs/replace/")
    )
    findings: list[Finding] = []
    for line in out.splitlines():
        ref, _, replacement = line.partition(" ")
        original = ref.rsplit("/", 1)[-1]
        findings.extend(replaced_object_findings(root, original, replacement, known, tip))
    grafts = git_common_dir(root) / "info" / "grafts"
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


def replaced_object_findings(
    root: Path, original: str, replacement: str, known: dict[str, str] | None, tip: str | None
) -> list[Finding]:
    fix = f"Remove it with `git replace -d {original}`."
    kinds = decode(
        git_real(root, "cat-file", "--batch-check", input=f"{original}\n{replacement}\n".encode())
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
                git_real(
                    root,
                    "rev-parse",
                    f"{original}^{{tree}}",
                    f"{replacement}^{{tree}}",
                    check=False,
                )
            ).split()
            lines = [f"{trees[1]} {trees[0]}"] if len(trees) == 2 else []
        paths = sorted({c[2] for c in diff_lines(root, lines, root_commits=False)}) if lines else []
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
