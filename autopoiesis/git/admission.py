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

import bisect
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

from autopoiesis.git.history import LINK_MODES, TRANSCRIPTS, Finding, git_real, short
from autopoiesis.git.runner import decode

# what a transcript that is not a regular file is (tree modes, as history.tree_entry keeps them)
_NOT_A_FILE = {**LINK_MODES, "040000": "a folder"}
_BATCH = 500  # blobs read per `cat-file --batch` call: a first walk reads every transcript


# The findings of a transcript added in a form no capture or import writes (an addition,
# not a rewrite: `verify --accept`, which trusts a sanctioned rewrite, is not its remedy).
ADMISSION_KINDS = frozenset({"retyped", "unreadable", "open", "misnamed", "duplicate"})


def transcript_problems(path: str, text: str) -> list[tuple[str, str]]:
    """(kind, why) for each reason TEXT cannot enter the history as the transcript PATH:
    `unreadable` (no frontmatter the format reads), `open` or `misnamed`; [] when it can."""
    return _admitted(path, text)[0]


def _admitted(path: str, text: str) -> tuple[list[tuple[str, str]], tuple[str, int] | None]:
    """transcript_problems of TEXT, and the (session id, part) its frontmatter names
    (None when it names none the format reads)."""
    from autopoiesis.errors import TranscriptFormatError
    from autopoiesis.formats.transcript import parse_meta
    from autopoiesis.formats.transcript_names import name_problem

    try:
        meta = parse_meta(text, path)
    except TranscriptFormatError as exc:
        return [("unreadable", str(exc).removeprefix(f"{path}: "))], None
    problems = []
    if meta.status == "open":
        problems.append(("open", "the session is still open (status: open)"))
    why = name_problem(path, meta.session_id, meta.started, meta.part)
    if why:
        problems.append(("misnamed", why))
    return problems, (meta.session_id, meta.part)


def session_of(path: str, data: bytes | None) -> tuple[str, int] | None:
    """The (session id, part) the transcript DATA at PATH names, if it is readable."""
    if data is None:
        return None
    try:
        return _admitted(path, data.decode("utf-8"))[1]
    except UnicodeDecodeError:
        return None


def _named_as(name: str, session: tuple[str, int]) -> bool:
    """Whether the transcript file NAME (`HHMM-{id}-{slug}[+N].md`) may hold part PART of
    the session ID of SESSION: after its time it starts with the id, then `-` or the
    part's suffix. Its frontmatter says for sure (an id may be the head of another's:
    `abc` of `abc-def`)."""
    sid, part = session
    rest = name[5:]
    if not rest.startswith(sid):
        return False
    tail = rest[len(sid) :]
    suffix = f"+{part}.md" if part > 1 else ".md"
    if not tail.endswith(suffix) or (part == 1 and re.search(r"\+\d+\.md\Z", tail)):
        return False
    return tail[:1] in "-+."


def same_session(
    path: str, session: tuple[str, int], others: Iterable[str], read: Callable[[str], bytes | None]
) -> str | None:
    """The transcript among OTHERS (paths; READ gives one's content) that holds the same
    part of the same session as PATH, SESSION: a session is one file a part, so a second
    one is a forgery of it (it would be cited as that session) or two sessions that
    shared an id. None when there is none."""
    for other in others:
        if other == path or not _named_as(other.rpartition("/")[2], session):
            continue
        if session_of(other, read(other)) == session:
            return other
    return None


def added_findings(
    root: Path,
    added: Sequence[tuple[str, str, str]],
    known: Mapping[str, str] | None = None,
    base: str = "",
) -> list[Finding]:
    """The findings of the transcripts ADDED to the history: (path, tree entry as
    history.tree_entry keeps it, the commit that added it), in the order they came. The
    same content at the same path is read once. KNOWN (path -> tree entry: the history's
    transcripts, ADDED's among them) and, when it holds only some of them, the
    transcripts of the commit BASE are what a second file of one session is looked for
    in: the later of the two is refused (`same_session`)."""
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
    sessions: dict[str, tuple[str, int]] = {}
    for (path, blob), data in _blobs(root, list(regular)):
        commit = regular[(path, blob)]
        if data is None:
            problems = [("unreadable", "its blob is missing")]
        else:
            try:
                problems, session = _admitted(path, data.decode("utf-8"))
            except UnicodeDecodeError as exc:
                problems, session = [("unreadable", _NOT_UTF8.format(exc.start))], None
            if session is not None and not problems:
                sessions.setdefault(path, session)
        for kind, why in problems:
            findings.append(
                Finding(
                    path,
                    commit,
                    kind,
                    f"added by commit {commit} but refused as a transcript: {why} "
                    f"(blob {short(blob)})",
                )
            )
    if sessions and (known or base):
        findings += _second_files(root, added, known or {}, sessions, base)
    return findings


_NOT_UTF8 = "not UTF-8 text (byte {}); a transcript is UTF-8"


def _second_files(
    root: Path,
    added: Sequence[tuple[str, str, str]],
    known: Mapping[str, str],
    sessions: dict[str, tuple[str, int]],
    base: str,
) -> list[Finding]:
    """A transcript ADDED (its session in SESSIONS) that holds the same part of a session
    as another one that came before it: one of KNOWN or of BASE's tree that ADDED does not
    hold, or one of ADDED's before it. Candidates are found by name (sorted, by the
    session id's head), then read."""
    order: dict[str, int] = {}
    for i, (path, _, _) in enumerate(added):
        order.setdefault(path, i)
    paths = set(known)
    if base:
        out = git_real(
            root, "ls-tree", "-r", "-z", "--name-only", "--full-tree", base, "--", TRANSCRIPTS
        )
        paths.update(p for p in decode(out).split("\x00") if p)
    names = sorted((p.rpartition("/")[2][5:], p) for p in paths if p.endswith(".md"))

    def read(other: str) -> bytes | None:
        entry = known.get(other, "").partition(":")[0] or f"{base}:{other}"
        return next((data for _, data in _blobs(root, [(other, entry)])), None)

    findings: list[Finding] = []
    for path, _, commit in added:
        session = sessions.get(path)
        if session is None or order.get(path) is None:
            continue
        i = bisect.bisect_left(names, (session[0],))
        earlier: list[str] = []
        while i < len(names) and names[i][0].startswith(session[0]):
            other = names[i][1]
            i += 1
            if other == path or order.get(other, -1) > order[path]:
                continue  # itself, or one that came after it (that one is the second)
            earlier.append(other)
        first = same_session(path, session, earlier, read)
        if first is not None:
            sid, part = session
            findings.append(
                Finding(
                    path,
                    commit,
                    "duplicate",
                    f"added by commit {commit} as {f'part {part} of ' if part > 1 else ''}"
                    f"session {sid}, which {first} already holds: a session is one file a "
                    "part, and a second one would be cited as that session (a forgery of it, "
                    "or two sessions that shared an id)",
                )
            )
        order.pop(path)  # a path added twice is checked once
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
