"""The commit message format of design §3.2, pure: `<type>: <summary>`, a body of what
changed, and `Session: <transcript>`; the type inferred from the paths and the branch,
the summary from the staged diff, and a model's summary accepted only when it is one.
MemoryGit (gitops) asks for messages here; nothing here touches git.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from pathlib import Path

COMMIT_TYPES = ("conversation", "memory", "identity", "maintenance", "explore", "extract")


def infer_commit_type(paths: Iterable[str], branch: str | None, statuses: Iterable[str] = ()) -> str:
    paths = list(paths)
    if branch and branch.startswith("extract/"):
        return "extract"
    if branch and branch.startswith("explore/"):
        return "explore"
    if paths and all(p.startswith("raw/") for p in paths):
        return "conversation"
    if paths and all(p.startswith("knowledge/identity/") for p in paths):
        return "identity"
    if any(p.startswith("archive/") for p in paths) or any(s.startswith(("D", "R")) for s in statuses):
        return "maintenance"
    return "memory"


def _short_name(path: str) -> str:
    p = Path(path)
    if p.parent.name == "journal":
        return f"journal {p.stem}"
    if p.name in ("context.md", "progress.md", "notes.md") and p.parent.parent.name == "projects":
        return f"{p.parent.name}/{p.name}"
    return p.name


def generate_commit_message(
    diff: str, numstat: str, *, branch: str | None = None, session: str | None = None,
    summarize: Callable[[str, str], str | None] | None = None,
) -> str:
    """A deterministic `<type>: <summary>` / body / `Session:` message from a staged diff.

    SUMMARIZE(diff, type) may write the summary instead (the LLM's commit_message stage,
    wired by the app layer); the type and the Session line stay deterministic.
    """
    files: list[tuple[str, int, int]] = []
    for line in numstat.splitlines():
        parts = line.split("\t")
        if len(parts) == 3:
            added, removed, path = parts
            if " => " in path:
                path = re.sub(r"\{([^{}]*) => ([^{}]*)\}", r"\2", path).split(" => ")[-1]
            files.append((path, int(added) if added.isdigit() else 0, int(removed) if removed.isdigit() else 0))
    statuses: list[str] = []
    entries_added = superseded = 0
    sessions: list[str] = []
    for line in diff.splitlines():
        if line.startswith("deleted file"):
            statuses.append("D")
        elif line.startswith("rename from"):
            statuses.append("R")
        elif line.startswith("+") and not line.startswith("+++"):
            body = line[1:].lstrip()
            if "#superseded-by:" in body:
                superseded += 1
            elif body.startswith(("- ", "* ", "## [")):
                entries_added += 1
            for m in re.finditer(r"raw/conversations/[\w/.-]+\.md", body):
                if m.group(0) not in sessions:
                    sessions.append(m.group(0))
    ctype = infer_commit_type([f[0] for f in files], branch, statuses)
    names = [_short_name(f[0]) for f in files]
    shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    counts = []
    if entries_added:
        counts.append(f"+{entries_added} entr{'y' if entries_added == 1 else 'ies'}")
    if superseded:
        counts.append(f"{superseded} superseded")
    verb = {"maintenance": "reorganise", "identity": "update identity", "extract": "extract into"}.get(ctype, "update")
    summary = f"{verb} {shown}" + (f" ({', '.join(counts)})" if counts else "")
    if summarize is not None:
        summary = clean_summary(summarize(diff, ctype)) or summary
    body = "\n".join(f"- {path}: +{a} -{r}" for path, a, r in files[:20])
    if len(files) > 20:
        body += f"\n- ... {len(files) - 20} more files"
    session_line = session or (sessions[0] if sessions else None)
    msg = f"{ctype}: {summary}\n\n{body}\n"
    if session_line:
        msg += f"\nSession: {session_line}\n"
    return msg


_NOT_A_SUMMARY = re.compile(
    r"^(?:[+@-]|diff\b|index\b|```)|\b(?:sorry|apologi[sz]e|as an ai|language model|i can(?:no|')t|i am unable|i'm unable)\b",
    re.IGNORECASE,
)
SUMMARY_MAX = 72


def clean_summary(text: str | None) -> str | None:
    """A model's summary as a commit subject, or None when it is not one.

    Takes the first non-empty line, drops a type prefix and wrapping quotes, and refuses
    what a model writes instead of a summary: an apology or a refusal, a raw diff line, a
    code fence, or too little to say anything. A long line is cut at a word to 72
    characters. The caller then keeps its deterministic summary."""
    lines = [l.strip() for l in (text or "").splitlines() if l.strip()]
    if not lines:
        return None
    line = lines[0].strip("`\"' ")
    line = re.sub(r"^(conversation|memory|identity|maintenance|explore|extract)\s*:\s*", "", line, flags=re.IGNORECASE)
    line = " ".join(line.split()).rstrip(".")
    if _NOT_A_SUMMARY.search(line) or not line.isprintable() or len(re.findall(r"[^\W\d_]{2,}", line)) < 2:
        return None
    if len(line) > SUMMARY_MAX:
        line = line[: SUMMARY_MAX + 1].rsplit(" ", 1)[0].rstrip(",;:-")
    return line or None
