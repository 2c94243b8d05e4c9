"""Every kind of the secrets corpus in every field a transcript has, through the real
roads in (a live capture, an import of a harness log, MCP `remember`), then every place it
could be left: the transcript files and their names, every git object (trees hold the
names, commits the subjects), and memory.db. Used by the tests (tests/capture/
test_secrets_everywhere.py) and the secrets benchmark (bench/bench_secrets.py).

A secret leaks when it is found whole, when 16 characters of it in a row are (a secret cut
by a field's limit keeps its head), or when a run of 10 of its letters and digits is found
lowercased where names are made (a slug of the first message).
"""

from __future__ import annotations

import json
import re
import subprocess
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from autopoiesis.testing.secrets_corpus import CORPUS, SecretSample

if TYPE_CHECKING:
    from autopoiesis.core.paths import MemoryRepo

# the fields a live capture fills, each with the corpus text
CAPTURE_FIELDS = (
    "model",
    "channel",
    "topic",
    "tags",
    "cwd",
    "project",
    "first message",
    "speaker",
    "tool name",
    "tool args",
    "tool result",
    "knowledge action",
    "knowledge path",
    "knowledge summary",
    "attachment",
    "session id",
)
# the fields an import of a Claude Code log fills
IMPORT_FIELDS = ("file name", "title", "model", "first message", "tool args", "tool result", "cwd")
# a tool line is cut to 300 characters: this puts a secret across the cut
_PAD = "x" * 280 + " "


def one_per_kind() -> list[SecretSample]:
    """The first sample of each kind."""
    seen: dict[str, SecretSample] = {}
    for sample in CORPUS:
        seen.setdefault(sample.kind.split("/")[0], sample)
    return list(seen.values())


def capture_everywhere(repo: MemoryRepo, samples: list[SecretSample]) -> None:
    """One session a sample whose every field holds its text (and one more whose topic
    does, which names the file), closed and committed together."""
    from autopoiesis.capture.session import ConversationCapture, Session
    from autopoiesis.git.repo import MemoryGit

    cap = ConversationCapture(repo, auto_commit=False)
    t0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
    for i, sample in enumerate(samples):
        text = sample.text
        for with_topic in (False, True):
            s = Session(
                f"sec{i:03d}{'t' if with_topic else ''}",
                started=t0 + timedelta(minutes=i),
                model=text,
                channel=text,
                topic=text if with_topic else None,
                tags=(text,),
                # the working folder, or one of another machine named after the secret
                # (named by its path: core/project.py), and the project named outright
                cwd=_folder_named(sample) if with_topic else text,
                project=None if with_topic else text,
            )
            cap.on_session_start(s)
            cap.on_message(s, "user", text, {"name": text})
            cap.on_tool_call(s, text, _PAD + text, text)
            cap.on_knowledge_change(s, text, text, text)
            cap.on_attachment(s, text)
            cap.on_session_end(s)
    # the secret as (part of) a session's id, where an id can hold it: it names the file,
    # the commit and every citation
    for i, sid in enumerate(secret_session_ids(samples)):
        s = Session(sid, started=t0 + timedelta(minutes=i, seconds=30))
        cap.on_session_start(s)
        cap.on_message(s, "user", "a session named after a secret")
        cap.on_session_end(s)
    MemoryGit(repo).commit_finished_transcripts()


def secret_session_ids(samples: list[SecretSample]) -> list[str]:
    """The secrets of SAMPLES that can be a session id (letters, digits,
    `_-.:`, at most 128 characters) and that is a secret by its shape alone (a provider's
    key): one that only its context makes a secret (a password after `-p`, a header's
    value) is, alone in an id, a random string like any harness's id."""
    from autopoiesis.core.redact import Redactor
    from autopoiesis.formats.transcript_meta import SESSION_ID_RE

    redact = Redactor().redact
    ids = [secret for sample in samples for secret in sample.secrets if redact(secret) != secret]
    return list(dict.fromkeys(sid for sid in ids if SESSION_ID_RE.match(sid)))


def import_everywhere(repo: MemoryRepo, samples: list[SecretSample], folder: Path) -> None:
    """One Claude Code log a sample, its file named after the secret where a file name can
    hold it, its title, model, first message, tool call and result the sample's text; all
    imported in one batch."""
    from autopoiesis.capture.importers import import_files

    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i, sample in enumerate(samples):
        text, secret = sample.text, sample.secrets[0]
        named = secret if _alone(secret) and re.fullmatch(r"[A-Za-z0-9._-]{1,180}", secret) else ""
        path = folder / f"session {i:03d} {named}.jsonl"
        sid = f"imp{i:03d}"
        when = f"2026-03-02T10:{i % 60:02d}:00Z"
        lines = [
            {"type": "summary", "summary": text, "leafUuid": f"u{i}a"},
            {
                "type": "user",
                "uuid": f"u{i}a",
                "sessionId": sid,
                "timestamp": when,
                "cwd": _folder_named(sample) if i % 2 else text,
                "message": {"role": "user", "content": text},
            },
            {
                "type": "assistant",
                "uuid": f"u{i}b",
                "parentUuid": f"u{i}a",
                "sessionId": sid,
                "timestamp": when,
                "message": {
                    "role": "assistant",
                    "model": text,
                    "content": [
                        {"type": "text", "text": "let me look"},
                        {
                            "type": "tool_use",
                            "id": f"t{i}",
                            "name": "Bash",
                            "input": {"command": _PAD + text},
                        },
                    ],
                },
            },
            {
                "type": "user",
                "uuid": f"u{i}c",
                "parentUuid": f"u{i}b",
                "sessionId": sid,
                "timestamp": when,
                "message": {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": f"t{i}", "content": text}],
                },
            },
        ]
        path.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
        paths.append(path)
    report = import_files(repo, paths, "claude-code")
    if report.refused:
        raise AssertionError(f"the import refused {len(report.refused)}: {report.refused[:3]}")


def remember_everywhere(repo: MemoryRepo, samples: list[SecretSample]) -> None:
    """MCP `remember` of each sample's text, its secret as the `source` where it is one
    word a redactor knows without the text around it."""
    from autopoiesis.mcp.tools import MemoryTools
    from autopoiesis.memory.facade import Memory

    tools = MemoryTools(Memory(repo.root))
    for i, sample in enumerate(samples):
        secret = sample.secrets[0]
        source = secret if _alone(secret) and re.fullmatch(r"[^\s()]{1,200}", secret) else None
        tools.remember(f"knowledge/reference/secrets-{i:03d}.md", sample.text, source=source)


def _folder_named(sample: SecretSample) -> str:
    """A working folder of another machine named after SAMPLE's secret (its path names the
    project, core/project.py), where a folder's name can hold it and the redactor knows it
    there; else SAMPLE's text. (A rule may leave a token alone after a `/`: mailgun's
    `key-HEX` is a file's name as often as a key.)"""
    from autopoiesis.core.redact import Redactor

    secret = sample.secrets[0]
    folder = f"/Users/someone/Projects/{secret}/src"
    if re.fullmatch(r"[A-Za-z0-9._-]{1,180}", secret) and secret not in Redactor().redact(folder):
        return folder
    return sample.text


def _alone(secret: str) -> bool:
    """Whether SECRET is known for one without the text around it (a provider's key is; a
    password, a keyword's value, is only known by its keyword): such a secret may stand in
    a field of its own (a file name, a `source`)."""
    from autopoiesis.core.redact import Redactor

    return secret not in Redactor().redact(secret)


@dataclass(frozen=True)
class Leak:
    kind: str
    where: str  # "transcript: FIELD", "file name", "git objects", "memory.db", "knowledge"


def leaks(repo: MemoryRepo, samples: list[SecretSample]) -> list[Leak]:
    """Where each sample's secrets are left: the transcripts (by the field of the line),
    the file names under raw/, every git object, memory.db (built here) and knowledge/."""
    from autopoiesis.index.searchindex import SearchIndex

    with SearchIndex(repo) as index:
        index.rebuild_full()
    transcripts = [p.read_text(encoding="utf-8") for p in sorted((repo.root / "raw").rglob("*.md"))]
    names = "\n".join(repo.rel(p) for p in sorted((repo.root / "raw").rglob("*.md"))).lower()
    objects = subprocess.run(
        ["git", "cat-file", "--batch-all-objects", "--batch"],
        cwd=repo.root,
        capture_output=True,
        check=True,
    ).stdout.decode("utf-8", "replace")
    places = {
        "transcripts": _Haystack("\x00".join(transcripts)),
        "knowledge": _Haystack(
            "\x00".join(
                p.read_text(encoding="utf-8") for p in (repo.root / "knowledge").rglob("*.md")
            )
        ),
        "git objects": _Haystack(objects),
        "memory.db": _Haystack(
            b"".join(
                p.read_bytes() for p in repo.root.glob(".autopoiesis/memory.db*") if p.is_file()
            ).decode("utf-8", "replace")
        ),
    }
    found: set[Leak] = set()
    for sample in samples:
        kind = sample.kind.split("/")[0]
        for secret in sample.secrets:
            pieces = _pieces(secret)
            runs = [  # a slug's words: 10 letters and digits, both in it (no mere number)
                r
                for r in re.findall(r"[a-z0-9]{10,}", secret.lower())
                if not r.isdigit() and not r.isalpha()
            ]
            if any(r in names for r in runs) or any(p in names for p in pieces):
                found.add(Leak(kind, "file name"))
            for where, hay in places.items():
                if not hay.holds(pieces, runs if where in ("git objects", "memory.db") else []):
                    continue
                if where != "transcripts":
                    found.add(Leak(kind, where))
                    continue
                for text in transcripts:
                    for at in (text.find(p) for p in pieces):
                        if at >= 0:
                            found.add(Leak(kind, f"transcript: {_field_of(text, at)}"))
    return sorted(found, key=lambda leak: (leak.kind, leak.where))


_TOKEN = re.compile(r"[A-Za-z0-9+/=_\-.~:@!#$%^&*?]{16,}")


class _Haystack:
    """A text to look for many 16-character pieces in: each run of token characters long
    enough is cut into its 16-grams once (a set), a piece of other characters is searched."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.lower = text.lower()
        self.grams = {
            token[i : i + 16] for token in _TOKEN.findall(text) for i in range(len(token) - 15)
        }

    def holds(self, pieces: list[str], runs: list[str]) -> bool:
        for piece in pieces:
            if len(piece) == 16 and _TOKEN.fullmatch(piece):
                if piece in self.grams:
                    return True
            elif piece in self.text:
                return True
        return any(r in self.lower for r in runs)


def _pieces(secret: str) -> list[str]:
    """What of SECRET must not be found: itself, and every 16 characters of it in a row."""
    if len(secret) <= 16:
        return [secret]
    return [secret, *(secret[i : i + 16] for i in range(len(secret) - 15))]


_FIELD_OF_LINE = (
    (re.compile(r"^([a-z_]+):"), None),
    (re.compile(r"^  (?:- )?([a-z_]+):"), "frontmatter"),
    (re.compile(r"^# "), "title"),
    (re.compile(r"^## .*\("), "speaker"),
    (re.compile(r"^> \[tool:"), "tool line"),
    (re.compile(r"^> \[knowledge:"), "knowledge line"),
    (re.compile(r"^> \[attachment:"), "attachment"),
)


def _field_of(text: str, at: int) -> str:
    """The field of a transcript the line holding offset AT is: a frontmatter key, the
    title, a speaker, a tool, knowledge or attachment line, else content."""
    start = text.rfind("\n", 0, at) + 1
    line = text[start : text.find("\n", at) if "\n" in text[at:] else len(text)]
    in_frontmatter = text.startswith("---\n") and at < text.find("\n---\n", 4)
    for rx, name in _FIELD_OF_LINE:
        m = rx.match(line)
        if m and (name is not None or in_frontmatter):
            return name or m.group(1)
    return "content"
