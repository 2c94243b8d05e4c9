"""The commit message format of docs/design.md#commit-messages, pure: `<type>: <summary>`, a body of
what
changed, and `Session: <transcript>`; the type inferred from the paths and the branch,
the summary from the staged diff, and a model's summary accepted only when it is one.
MemoryGit (git.commits) asks for messages here; nothing here touches git.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from autopoiesis.formats.knowledge import bullet_fact

COMMIT_TYPES = ("conversation", "memory", "identity", "maintenance", "explore", "extract")


def infer_commit_type(
    paths: Iterable[str], branch: str | None, statuses: Iterable[str] = ()
) -> str:
    paths = list(paths)
    if branch and branch.startswith("extract/"):
        return "extract"
    if branch and branch.startswith("explore/"):
        return "explore"
    if paths and all(p.startswith("raw/") for p in paths):
        return "conversation"
    if paths and all(p.startswith("knowledge/identity/") for p in paths):
        return "identity"
    if any(p.startswith("archive/") for p in paths) or any(
        s.startswith(("D", "R")) for s in statuses
    ):
        return "maintenance"
    return "memory"


def _short_name(path: str) -> str:
    p = Path(path)
    if p.parent.name == "journal":
        return f"journal {p.stem}"
    if p.name in ("context.md", "progress.md", "notes.md") and p.parent.parent.name == "projects":
        return f"{p.parent.name}/{p.name}"
    return p.name


# Where a learned entry is listed first: the curated memory, then topical files, then the
# index files that repeat a project's line, then the journal that repeats the day.
def _learned_rank(path: str) -> int:
    if path.endswith("/MEMORY.md"):
        return 0
    if Path(path).name.startswith("_"):
        return 2
    if "/journal/" in path:
        return 3
    return 1


_LABEL = re.compile(
    r"^(?:decided|decision|lesson|learned|fact|note|todo|procedure)\s*:\s*", re.IGNORECASE
)
_NAMED = re.compile(r"^[^—]{1,80} — ")
TITLE_MAX = 60


def entry_title(fact: str, limit: int = TITLE_MAX) -> str:
    """A learned fact as a short title: its first sentence, cut at a word to LIMIT
    characters (with an ellipsis), without a trailing period."""
    text = " ".join(fact.split())
    first = re.split(r"(?<=[.!?])\s+", text, maxsplit=1)[0]
    if len(first.split()) >= 3:
        text = first
    text = text.rstrip(".")
    if len(text) > limit:
        text = text[:limit].rsplit(" ", 1)[0].rstrip(",;:-— ") + "…"
    return text


def learned_titles(learned: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """(path, title) of each learned (path, fact), the curated memory first, each fact once
    (the journal and an index file often repeat what a topical file says)."""
    seen: set[str] = set()
    out: list[tuple[str, str]] = []
    for path, fact in sorted(learned, key=lambda pf: _learned_rank(pf[0])):
        fact = fact.replace("**", "")
        # an index line repeats its file's fact after the name: "autopoiesis — Files are ..."
        key = " ".join(re.findall(r"[a-z0-9]+", _LABEL.sub("", _NAMED.sub("", fact.lower()))))
        if not key or key in seen:
            continue
        seen.add(key)
        out.append((path, entry_title(fact)))
    return out


def learned_summary(titles: Sequence[tuple[str, str]], room: int) -> str | None:
    """As many TITLES as fit in ROOM characters, joined by '; ', and how many more."""
    if not titles:
        return None
    names = [t for _, t in titles]
    shown: list[str] = []
    for i, name in enumerate(names):
        rest = len(names) - i - 1
        candidate = "; ".join([*shown, name]) + (f" (+{rest} more)" if rest else "")
        if len(candidate) > room:
            break
        shown.append(name)
    if not shown:  # not even the first fits: cut it
        more = f" (+{len(names) - 1} more)" if len(names) > 1 else ""
        shown = [entry_title(names[0], max(12, room - len(more)))]
    rest = len(names) - len(shown)
    return "; ".join(shown) + (f" (+{rest} more)" if rest else "")


def learned_body(titles: Sequence[tuple[str, str]], limit: int = 20) -> str:
    """The `Learned:` paragraph of a commit body: one line a title, with its file."""
    if not titles:
        return ""
    lines = [f"- {title} ({_short_name(path)})" for path, title in titles[:limit]]
    if len(titles) > limit:
        lines.append(f"- ... {len(titles) - limit} more")
    return "Learned:\n" + "\n".join(lines) + "\n"


def _subject_room(ctype: str) -> int:
    return SUMMARY_MAX - len(ctype) - 2


def _diff_learned(diff: str) -> tuple[list[tuple[str, str]], int, int, list[str], list[str]]:
    """From a unified diff: (path, fact) of bullets added under knowledge/, the number of
    entries added and superseded, the file statuses, and the transcripts it cites."""
    learned: list[tuple[str, str]] = []
    statuses: list[str] = []
    sessions: list[str] = []
    entries_added = superseded = 0
    path = ""
    for line in diff.splitlines():
        if line.startswith("deleted file"):
            statuses.append("D")
        elif line.startswith("rename from"):
            statuses.append("R")
        elif line.startswith("+++ "):
            path = line[6:] if line.startswith("+++ b/") else ""
        elif line.startswith("+") and not line.startswith("+++"):
            body = line[1:].lstrip()
            if "#superseded-by:" in body:
                superseded += 1
            elif body.startswith(("- ", "* ", "## [")):
                entries_added += 1
                fact = bullet_fact(body)
                if fact and path.startswith("knowledge/"):
                    learned.append((path, fact))
            for m in re.finditer(r"raw/conversations/[\w/.-]+\.md", body):
                if m.group(0) not in sessions:
                    sessions.append(m.group(0))
    return learned, entries_added, superseded, statuses, sessions


def generate_commit_message(
    diff: str,
    numstat: str,
    *,
    branch: str | None = None,
    session: str | None = None,
    summarize: Callable[[str, str], str | None] | None = None,
) -> str:
    """A deterministic `<type>: <summary>` / body / `Session:` message from a staged diff.

    The summary names what was learned: the titles of the entries (and hand-written
    bullets) added under knowledge/, as many as fit, and how many more; the body lists
    them all with their files. Changes that add no bullet are summarised by their files.
    SUMMARIZE(diff, type) may write the summary instead (the LLM's commit_message stage,
    wired by the Memory facade); the type, the body and the Session line stay deterministic.
    """
    files: list[tuple[str, int, int]] = []
    for line in numstat.splitlines():
        parts = line.split("\t")
        if len(parts) == 3:
            added, removed, path = parts
            if " => " in path:
                path = re.sub(r"\{([^{}]*) => ([^{}]*)\}", r"\2", path).split(" => ")[-1]
            files.append(
                (
                    path,
                    int(added) if added.isdigit() else 0,
                    int(removed) if removed.isdigit() else 0,
                )
            )
    learned, entries_added, superseded, statuses, sessions = _diff_learned(diff)
    ctype = infer_commit_type([f[0] for f in files], branch, statuses)
    titles = learned_titles(learned)
    summary = (
        learned_summary(titles, _subject_room(ctype))
        if ctype in ("memory", "extract", "explore", "identity")
        else None
    )
    if summary is None:
        names = [_short_name(f[0]) for f in files]
        shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
        counts = []
        if entries_added:
            counts.append(f"+{entries_added} entr{'y' if entries_added == 1 else 'ies'}")
        if superseded:
            counts.append(f"{superseded} superseded")
        verb = {
            "maintenance": "reorganise",
            "identity": "update identity",
            "extract": "extract into",
        }.get(ctype, "update")
        summary = f"{verb} {shown}" + (f" ({', '.join(counts)})" if counts else "")
    if summarize is not None:
        summary = clean_summary(summarize(diff, ctype)) or summary
    body = learned_body(titles)
    if superseded:
        body += f"Superseded: {superseded} entr{'y' if superseded == 1 else 'ies'}\n"
    body += ("\n" if body else "") + "\n".join(f"- {path}: +{a} -{r}" for path, a, r in files[:20])
    if len(files) > 20:
        body += f"\n- ... {len(files) - 20} more files"
    session_line = session or (sessions[0] if sessions else None)
    msg = f"{ctype}: {summary}\n\n{body}\n"
    if session_line:
        msg += f"\nSession: {session_line}\n"
    return msg


def extraction_commit_message(
    learned: Iterable[tuple[str, str]],
    transcripts: Sequence[str],
    report_line: str,
    *,
    commit_type: str = "memory",
    superseded: int = 0,
    summarize: Callable[[str, str], str | None] | None = None,
) -> str:
    """The message of an extraction's commit: `<type>: <what was learned>`, the learned
    entries with their files, the run's one-line report, one `Session:` line a transcript.

    LEARNED is (path, entry text) of every entry the run added. SUMMARIZE(listing, type),
    when given (the commit_message stage), may write the subject from a diff-shaped
    listing of those entries; a reply that is no summary keeps the deterministic one."""
    learned = list(learned)
    titles = learned_titles(learned)
    names = sorted({Path(t).stem for t in transcripts})
    source = names[0] if len(names) == 1 else f"{len(names)} sessions"
    summary = learned_summary(titles, _subject_room(commit_type))
    if summary is None:
        summary = f"extract from {source}" + (f" ({superseded} superseded)" if superseded else "")
    if summarize is not None and learned:
        listing = "".join(f"+++ b/{path}\n+- {fact}\n" for path, fact in learned[:60])
        summary = clean_summary(summarize(listing, commit_type)) or summary
    body = learned_body(titles)
    body += ("\n" if body else "") + f"From {source}: {report_line}\n"
    sessions = "".join(f"Session: {t}\n" for t in transcripts[:20])
    return f"{commit_type}: {summary}\n\n{body}" + (f"\n{sessions}" if sessions else "")


_NOT_A_SUMMARY = re.compile(
    r"^(?:[+@-]|diff\b|index\b|```)|\b(?:sorry|apologi[sz]e|as an ai|language model|i "
    r"can(?:no|')t|i am unable|i'm unable)\b",
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
    line = re.sub(
        r"^(conversation|memory|identity|maintenance|explore|extract)\s*:\s*",
        "",
        line,
        flags=re.IGNORECASE,
    )
    line = " ".join(line.split()).rstrip(".")
    if (
        _NOT_A_SUMMARY.search(line)
        or not line.isprintable()
        or len(re.findall(r"[^\W\d_]{2,}", line)) < 2
    ):
        return None
    if len(line) > SUMMARY_MAX:
        line = line[: SUMMARY_MAX + 1].rsplit(" ", 1)[0].rstrip(",;:-")
    return line or None
