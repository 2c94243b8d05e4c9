"""What a transcript must be to enter the history, checked wherever one can enter: the
pre-commit hook on a staged transcript, and verify's walk (so `autopoiesis verify`,
`sync` before it merges, the reference-transaction and pre-push hooks) on every
transcript a commit added. One list, so a transcript the hook refuses cannot come in by a
road that skips the hook: a commit made without hooks, a merge, a collaborator's push.

A transcript enters as a regular file (not a symbolic link or a gitlink), UTF-8, with a
frontmatter the format reads (session_id and started among it), closed (not `status:
open`), under the name its frontmatter gives it (formats.transcript_names.name_problem:
the day folder and `HHMM` of `started`, the session id, `+N` of a continuation), so a
path cannot claim another day than the transcript inside it.

Light path: the hooks import this; the transcript format (and its YAML) is imported only
when there is a transcript to read.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from autopoiesis.git.history import LINK_MODES, Finding, git_real, short

# what a transcript that is not a regular file is (tree modes, as history.tree_entry keeps them)
_NOT_A_FILE = {**LINK_MODES, "040000": "a folder"}
_BATCH = 500  # blobs read per `cat-file --batch` call: a first walk reads every transcript


def transcript_problems(path: str, text: str) -> list[tuple[str, str]]:
    """(kind, why) for each reason TEXT cannot enter the history as the transcript PATH:
    `unreadable` (no frontmatter the format reads), `open` or `misnamed`; [] when it can."""
    from autopoiesis.errors import TranscriptFormatError
    from autopoiesis.formats.transcript import parse_meta
    from autopoiesis.formats.transcript_names import name_problem

    try:
        meta = parse_meta(text, path)
    except TranscriptFormatError as exc:
        return [("unreadable", str(exc).removeprefix(f"{path}: "))]
    problems = []
    if meta.status == "open":
        problems.append(("open", "the session is still open (status: open)"))
    why = name_problem(path, meta.session_id, meta.started, meta.part)
    if why:
        problems.append(("misnamed", why))
    return problems


def blob_problems(path: str, data: bytes) -> list[tuple[str, str]]:
    """transcript_problems of a blob's bytes (not UTF-8 is a problem of its own)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return [("unreadable", f"not UTF-8 text (byte {exc.start}); a transcript is UTF-8")]
    return transcript_problems(path, text)


def added_findings(root: Path, added: Sequence[tuple[str, str, str]]) -> list[Finding]:
    """The findings of the transcripts ADDED to the history: (path, tree entry as
    history.tree_entry keeps it, the commit that added it). The same content at the same
    path is read once."""
    findings: list[Finding] = []
    regular: dict[tuple[str, str], str] = {}
    for path, entry, commit in added:
        if not path.endswith(".md"):
            continue  # what readers take for a transcript (the pre-commit hook's rule too)
        blob, _, mode = entry.partition(":")
        if mode and mode in _NOT_A_FILE:
            findings.append(
                Finding(
                    path,
                    commit,
                    "link" if mode in LINK_MODES else "retyped",
                    f"added as {_NOT_A_FILE[mode]} by commit {commit}, not as a transcript "
                    f"file (nothing reads through it; remove it with `git rm {path}`)",
                )
            )
        else:
            regular.setdefault((path, blob), commit)
    for (path, blob), data in _blobs(root, list(regular)):
        commit = regular[(path, blob)]
        for kind, why in (
            [("unreadable", "its blob is missing")] if data is None else (blob_problems(path, data))
        ):
            findings.append(
                Finding(
                    path,
                    commit,
                    kind,
                    f"added by commit {commit} but refused as a transcript: {why} "
                    f"(blob {short(blob)})",
                )
            )
    return findings


def _blobs(
    root: Path, wanted: list[tuple[str, str]]
) -> Iterable[tuple[tuple[str, str], bytes | None]]:
    """((path, blob), content or None) for each of WANTED, read with replacements off."""
    for i in range(0, len(wanted), _BATCH):
        part = wanted[i : i + _BATCH]
        out = git_real(
            root, "cat-file", "--batch", input="".join(f"{b}\n" for _, b in part).encode()
        )
        pos = 0
        for key in part:
            nl = out.index(b"\n", pos)
            header = out[pos:nl].split()
            pos = nl + 1
            if len(header) < 3 or not header[2].isdigit():
                yield key, None  # `<sha> missing`
                continue
            size = int(header[2])
            yield key, out[pos : pos + size] if header[1] == b"blob" else None
            pos += size + 1
