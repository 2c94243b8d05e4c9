"""Recall through git (docs/design.md#git-recall): commits that added or removed a text (`log -S`),
what was learned since a date, a file's history and blame, a file at a tag or a date.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from autopoiesis.core.paths import category_of
from autopoiesis.errors import GitError, InvalidArgumentError
from autopoiesis.git.commits import TIME_AGO, GitCore
from autopoiesis.git.refs import TAG_PREFIX

# The longest text `log -S` is asked for. Its time grows with the square of the text's
# length (case ignored, a 2,000-character text takes 40 ms on a small memory, 8,000 take
# 0.6 s, 30,000 took 16 s and 100,000 never ended), and a text recalled is a phrase
# remembered: every caller (the CLI's recall, the MCP tool, the viewer's history) is
# bounded here.
MAX_RECALL_CHARS = 1000


def _bounded(text: str) -> str:
    """TEXT, or InvalidArgumentError when it is too long to look for."""
    if len(text) > MAX_RECALL_CHARS:
        raise InvalidArgumentError(
            f"the text to recall is {len(text):,} characters; recall looks for at most "
            f"{MAX_RECALL_CHARS:,} (git's search of the history slows with the square of "
            "its length). Give a phrase of it."
        )
    return text


@dataclass(frozen=True)
class CommitInfo:
    sha: str
    date: str
    subject: str
    files: tuple[str, ...] = ()


@dataclass(frozen=True)
class LineChange:
    """A commit that added or removed a text (`log -S`), with the lines holding the text
    that it added and removed: (path, line) each."""

    commit: CommitInfo
    added: tuple[tuple[str, str], ...]
    removed: tuple[tuple[str, str], ...]


class RecallMixin(GitCore):
    """Recall: log -S, learned, history, blame, show_at."""

    # ── recall through git (docs/design.md#git-recall) ──
    def recall(self, text: str, limit: int = 20, *, textconv: bool = True) -> list[CommitInfo]:
        """Commits that added or removed TEXT (git log -S), newest first, with files.
        TEXTCONV False: the pickaxe reads what git stores, not what a text filter shows
        (git-crypt's decrypts a private note: a model probing `-S` one character at a time
        would read it back)."""
        out = self.run(
            "log",
            "-S",
            _bounded(text),
            "--textconv" if textconv else "--no-textconv",
            "--regexp-ignore-case",
            f"-n{limit}",
            "--date=iso-strict",
            "--format=\x1e%H\x1f%ad\x1f%s",
            "--name-only",
            check=False,
        ).stdout
        return _parse_log(out)

    def changes(self, text: str, limit: int = 20, paths: tuple[str, ...] = ()) -> list[LineChange]:
        """The commits that added or removed TEXT (git log -S, case as given), newest first,
        each with the lines holding TEXT it added and removed; PATHS limit the files."""
        out = self.run(
            "log",
            "-S",
            _bounded(text),
            f"-n{limit}",
            "--date=iso-strict",
            "--format=\x1e%H\x1f%ad\x1f%s",
            "-p",
            "--no-color",
            "--no-ext-diff",
            "-U0",
            "--",
            *paths,
            check=False,
        ).stdout
        found = []
        for record in out.split("\x1e"):
            if not record.strip():
                continue
            head, _, diff = record.partition("\n")
            sha, when, subject = head.split("\x1f", 2)
            added: list[tuple[str, str]] = []
            removed: list[tuple[str, str]] = []
            files: list[str] = []
            path = ""
            for line in diff.split("\n"):
                if line.startswith("+++ "):
                    path = line[6:] if line.startswith("+++ b/") else path
                    if path and path not in files:
                        files.append(path)
                elif line.startswith("--- a/"):
                    path = line[6:]
                elif line.startswith("+") and text in line and not line.startswith("+++"):
                    added.append((path, line[1:]))
                elif line.startswith("-") and text in line and not line.startswith("---"):
                    removed.append((path, line[1:]))
            info = CommitInfo(sha, when, subject, tuple(files))
            found.append(LineChange(info, tuple(added), tuple(removed)))
        return found

    def learned(self, since: str = "yesterday") -> list[CommitInfo]:
        """The commits dated since SINCE (GitCore.commits_dated) that changed knowledge/,
        newest first."""
        dated = self.commits_dated(since)
        if not dated:
            return []
        out = self.run(
            "log",
            "--no-walk=unsorted",
            "--stdin",
            "--date=iso-strict",
            "--format=\x1e%H\x1f%ad\x1f%s",
            "--name-only",
            "--",
            "knowledge/",
            input="\n".join(dated) + "\n",
            check=False,
        ).stdout
        return _parse_log(out)

    def learned_lines(self, since: str = "yesterday") -> list[tuple[str, str]]:
        """(path, added line) of knowledge lines added since SINCE: from before the oldest
        commit dated since then (GitCore.commits_dated) to HEAD. Only memory content
        (core.paths.category_of): not the record of what extraction has done."""
        dated = self.commits_dated(since)
        if not dated:
            return []
        parent = self.run(
            "rev-parse", "-q", "--verify", f"{dated[-1]}^", check=False
        ).stdout.strip()
        base = parent or self.run("hash-object", "-t", "tree", "/dev/null").stdout.strip()
        diff = self.run("diff", "--no-color", "-U0", base, "HEAD", "--", "knowledge/").stdout
        lines: list[tuple[str, str]] = []
        path = ""
        for line in diff.splitlines():
            if line.startswith("+++ "):
                path = line[6:] if line.startswith("+++ b/") else ""
                if category_of(path) is None:
                    path = ""
            elif (
                line.startswith("+")
                and not line.startswith("+++")
                and path
                and line[1:].strip()
                and not line.startswith("+---")
            ):
                lines.append((path, line[1:]))
        return lines

    def history(self, path: str, limit: int = 20) -> list[CommitInfo]:
        """The commits that changed PATH (across renames), newest first, with their files."""
        rel = self.repo.rel(self.repo.resolve_inside(path))
        out = self.run(
            "log",
            "--follow",
            f"-n{limit}",
            "--date=iso-strict",
            "--format=\x1e%H\x1f%ad\x1f%s",
            "--name-only",
            "--",
            rel,
            check=False,
        ).stdout
        return _parse_log(out)

    def blame(self, path: str) -> str:
        resolved = self.repo.resolve_inside(path)
        rel = self.repo.rel(resolved)
        if resolved.is_dir():  # git's own "no such path in HEAD" said nothing of a folder
            names = self.run("ls-files", "--", rel, check=False).stdout.split()
            raise GitError(
                f"{rel} is a folder; blame takes one file: name a file in it"
                + (f", such as {names[0]}." if names else ".")
            )
        proc = self.run("blame", "--date=short", "--", rel, check=False)
        if proc.returncode != 0:
            raise GitError(f"cannot blame {rel}: {proc.stderr.strip()} (is the file committed?)")
        return proc.stdout

    def show_at(self, ref_or_date: str, path: str) -> tuple[str, str]:
        """(commit, content) of PATH at a tag or commit, or at the last commit before a
        date (YYYY-MM-DD, an ISO time, or 'yesterday' / 'N days ago' / 'last week').
        Anything else is refused: git's own date parser reads a mistyped tag such as
        'milestone/vone' as "now", which would show HEAD's file under the wrong name."""
        rel = self.repo.rel(self.repo.resolve_inside(path))
        if self.head() is None:  # HEAD itself names nothing yet: not a mistyped ref
            raise GitError(
                "the memory repo has no commits yet, so it has no history to show; capture "
                "a session or run `autopoiesis commit` first."
            )
        ref = self._resolve_commit(ref_or_date)
        if ref is None:
            when = _history_date(ref_or_date)
            # as Unix time (git_time): git reads a year past 2099 as one of 2012 or 2026
            stamp = None if when is None else self.git_time(when)
            if stamp is None:
                raise GitError(
                    f"{ref_or_date!r} is neither a tag, a commit nor a date. Give a tag "
                    "(daily/2026-02-16, "
                    "milestone/NAME), a commit, or a date such as 2026-02-16, yesterday or '3 "
                    "days ago' "
                    "(`git tag -l 'memory/*'` lists the tags)."
                )
            # git reads a time before 1970 (a negative one) as now: no commit is that old
            before = f"--before=@{stamp} +0000"
            ref = (
                self.run("rev-list", "-1", before, "HEAD", check=False).stdout.strip() or None
                if stamp >= 0
                else None
            )
            if ref is None:
                raise GitError(f"the memory repo has no history before {ref_or_date!r}.")
        commit = self.gitpython.commit(ref)
        try:
            blob = commit.tree / rel
        except KeyError:
            raise GitError(
                f"{rel} did not exist at {ref_or_date} ({commit.hexsha[:10]})."
            ) from None
        if blob.type != "blob":  # a folder (a tree), a team's mount (a gitlink)
            names = (
                [f"{b.path}{'/' if b.type == 'tree' else ''}" for b in blob]
                if blob.type == "tree"
                else []
            )
            raise GitError(
                f"{rel} is a folder at {ref_or_date} ({commit.hexsha[:10]}); name a file in it"
                + (
                    f": {', '.join(names[:10])}{' ...' if len(names) > 10 else ''}."
                    if names
                    else "."
                )
            )
        return commit.hexsha, blob.data_stream.read().decode("utf-8", "replace")

    def _resolve_commit(self, ref: str) -> str | None:
        """The commit REF names (a commit, a branch, a tag, or a tag under memory/), or None."""
        for candidate in (ref, f"refs/tags/{TAG_PREFIX}/{ref}"):
            if candidate.startswith("-"):
                continue
            proc = self.run("rev-parse", "-q", "--verify", f"{candidate}^{{commit}}", check=False)
            if proc.returncode == 0:
                return proc.stdout.strip()
        return None


# the words of a relative date git is trusted to read; "N units ago" is read exactly
# (commits.TIME_AGO)
_RELATIVE_DATE = re.compile(r"^(?:yesterday|today|now|last (?:week|month|year))$")


def _history_date(text: str) -> str | None:
    """TEXT as a date git can be trusted to read, or None when it is not one; GitError for
    a date outside the years the clock reads (core/clock.py): no commit is that old or that
    new, and "neither a tag, a commit nor a date" would say it was mistyped."""
    from datetime import datetime

    from autopoiesis.core.clock import MAX_YEAR, MIN_YEAR, parse_ts
    from autopoiesis.errors import TimestampError

    value = text.strip().lower()
    if _RELATIVE_DATE.match(value) or TIME_AGO.fullmatch(value):
        return value
    if re.fullmatch(r"\d{4}-\d\d-\d\d", value):
        value += "T23:59:59Z"
    try:
        return parse_ts(value).isoformat()
    except TimestampError:
        try:
            datetime.fromisoformat(value.replace("z", "+00:00"))
        except ValueError:
            return None
        raise GitError(
            f"{text!r} is a date outside {MIN_YEAR}-{MAX_YEAR}, the years autopoiesis reads; "
            "give one within them, such as 2026-02-16 (`git log --format=%cs` lists the days "
            "with commits)."
        ) from None


def _parse_log(out: str) -> list[CommitInfo]:
    commits = []
    for record in out.split("\x1e"):
        if not record.strip():
            continue
        head, _, files = record.partition("\n")
        sha, when, subject = head.split("\x1f", 2)
        commits.append(
            CommitInfo(sha, when, subject, tuple(f for f in files.split("\n") if f.strip()))
        )
    return commits
