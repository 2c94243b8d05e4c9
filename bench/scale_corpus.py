"""Realistic transcripts in bulk, for the scale benchmark (bench_scale.py): a team's
sessions as the capture path writes them (frontmatter, `## HH:MM — role` turns, tool
lines, code blocks), words drawn from corpus.py's Zipf vocabulary, sizes spread as agent
sessions are (most a few KB, a tail of long coding sessions), started at a team's rate
(AGENTS agents, SESSIONS_PER_DAY each) from START on.

`fast_import_stream` writes them as git fast-import input, one `conversation:` commit
per session as the capture path makes them: growing a repository to 100,000 transcripts
takes a minute this way, where capturing them one by one would take hours (growing is
the set-up, not what is measured).
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

from corpus import VOCABULARY, zipf_words

AGENTS = 20
SESSIONS_PER_DAY = 50
START = datetime(2026, 1, 5, 8, 0, tzinfo=UTC)
MODELS = ("claude-sonnet-4", "gpt-5", "gemini-2.5-pro", "qwen3-coder")
CHANNELS = ("claude-code", "codex", "cursor", "cli")
TOOLS = ("exec", "read", "edit", "grep", "web_fetch")
PROJECTS = ("billing", "search", "infra", "mobile", "website", "data", None)


def _sentence(rng: random.Random, subject: list[str], lo: int, hi: int) -> str:
    words = [
        rng.choice(subject) if rng.random() < 0.25 else w
        for w in zipf_words(rng, rng.randint(lo, hi))
    ]
    return " ".join(words).capitalize() + rng.choice((".", ".", ".", "?", "!"))


def _paragraph(rng: random.Random, subject: list[str]) -> str:
    return " ".join(_sentence(rng, subject, 6, 18) for _ in range(rng.randint(1, 5)))


def _agent_items(rng: random.Random, subject: list[str]) -> list[str]:
    items: list[str] = []
    for _ in range(rng.randint(0, 3)):
        tool = rng.choice(TOOLS)
        arg = f"{rng.choice(subject)}/{rng.choice(VOCABULARY[:400])}.py"
        items.append(f"> [tool:{tool}] {arg} → {rng.randint(1, 400)} lines")
    parts = [_paragraph(rng, subject) for _ in range(rng.choice((1, 1, 2, 2, 3, 5)))]
    if rng.random() < 0.2:
        code = "\n".join(
            f"    {rng.choice(subject)}_{i} = {rng.choice(VOCABULARY[:200])}({i})"
            for i in range(rng.randint(2, 12))
        )
        parts.insert(rng.randint(0, len(parts)), f"```python\n{code}\n```")
    if items:
        return ["\n".join(items), "\n\n".join(parts)]
    return ["\n\n".join(parts)]


def session_id(i: int) -> str:
    return f"ses_{i:08x}scale"


def started_at(i: int) -> datetime:
    """When session I started: AGENTS * SESSIONS_PER_DAY a day, in working hours."""
    per_day = AGENTS * SESSIONS_PER_DAY
    day, k = divmod(i, per_day)
    return START + timedelta(days=day, seconds=int(k * 10 * 3600 / per_day))


def transcript(i: int, seed: int = 3) -> tuple[str, str, str]:
    """(repo-relative path, text, slug) of session I, the same for the same I and SEED."""
    rng = random.Random(i * 7919 + seed)
    subject = zipf_words(rng, 1) + rng.sample(VOCABULARY[100:], 3)
    started = started_at(i)
    turns = min(60, 2 + int(rng.expovariate(1 / 4)))
    slug = "-".join(dict.fromkeys(subject[:3]))[:60]
    day = started.strftime("%Y/%m/%d")
    path = f"raw/conversations/{day}/{started.strftime('%H%M')}-{session_id(i)}-{slug}.md"
    project = rng.choice(PROJECTS)
    lines = [
        "---",
        f"session_id: {session_id(i)}",
        f"started: {started.strftime('%Y-%m-%dT%H:%M:%SZ')}",
        f"ended: {(started + timedelta(minutes=turns * 2)).strftime('%Y-%m-%dT%H:%M:%SZ')}",
        f"model: {rng.choice(MODELS)}",
        f"channel: {rng.choice(CHANNELS)}",
        "topic: null",
        "tags: []",
        f"tokens_in: {rng.randint(1000, 90000)}",
        f"tokens_out: {rng.randint(200, 20000)}",
        "status: closed",
        *([f"project: {project}"] if project else []),
        "redactions: {}",
        "knowledge_changes: []",
        "---",
        "",
        f"# {' '.join(w.title() for w in slug.split('-'))}",
        "",
    ]
    when = started
    for t in range(turns):
        role = "user" if t % 2 == 0 else "agent"
        lines.append(f"## {when.strftime('%H:%M')} — {role}")
        if role == "user":
            lines.append(" ".join(_sentence(rng, subject, 5, 20) for _ in range(rng.randint(1, 3))))
        else:
            lines.append("\n\n".join(_agent_items(rng, subject)))
        lines.append("")
        when += timedelta(minutes=2)
    return path, "\n".join(lines), slug


def fast_import_stream(first: int, last: int, parent: str | None, branch: str) -> Iterator[bytes]:
    """git fast-import commands adding sessions FIRST..LAST-1 to BRANCH, one commit each
    (`conversation: SLUG` / Session: PATH), on top of PARENT (None: BRANCH's tip)."""
    for i in range(first, last):
        path, text, slug = transcript(i)
        data = text.encode("utf-8")
        message = f"conversation: {slug}\n\nSession: {path}\n".encode()
        when = int(started_at(i).timestamp()) + 600
        head = (
            f"commit {branch}\n"
            f"committer scale-bench <bench@localhost> {when} +0000\n"
            f"data {len(message)}\n"
        ).encode()
        chunk = [head, message, b"\n"]
        if i == first and parent:
            chunk.append(f"from {parent}\n".encode())
        chunk.append(f"M 100644 inline {path}\ndata {len(data)}\n".encode())
        chunk += [data, b"\n\n"]
        yield b"".join(chunk)
