"""Tags and branches of MemoryGit: the memory/* tags (daily, weekly, milestone, before,
extract; never moved) and the explore/* branches (docs/design.md#branches, docs/design.md#tags),
through GitPython.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

from autopoiesis.core.clock import iso_week, today, utc_now
from autopoiesis.core.paths import MemoryRepo
from autopoiesis.errors import GitError
from autopoiesis.git.commits import GitCore

TAG_PREFIX = "memory"
REF_PART_BYTES = 240  # a file's name holds 255 bytes; git adds '.lock' while it writes one
HAND_MADE_TAGS = ("milestone", "before")  # named by a person (docs/design.md#tags)


def refuse_secret_in_ref_name(repo: MemoryRepo, name: str, kind: str) -> None:
    """GitError when NAME, a tag's or a branch's, holds what looks like a secret: a ref's
    name is pushed and shown as it is, and forget cannot take one out of it."""
    shown = repo.redactor().redact(name)
    if shown != name:
        raise GitError(
            f"the {kind} name holds what looks like a secret ({shown}); name it without it."
        )


class RefsMixin(GitCore):
    """Tags and explore/* branches."""

    # ── tags (docs/design.md#tags) ──
    def tag_exists(self, name: str) -> bool:
        return f"refs/tags/{name}" in {t.path for t in self.gitpython.tags}

    def check_ref_name(self, name: str, kind: str = "tag") -> None:
        """NAME as a tag's (or a branch's) name: valid for git, and holding no secret (a ref's
        name is pushed and shown as it is, and forget cannot take one out of it)."""
        ref = f"refs/tags/{name}" if kind == "tag" else f"refs/heads/{name}"
        if self.run("check-ref-format", ref, check=False).returncode != 0:
            raise GitError(
                f"{name!r} is not a valid {kind} name; use letters, digits, '-', '_' and '.'."
            )
        if any(len(part.encode()) > REF_PART_BYTES for part in name.split("/")):
            raise GitError(
                f"the {kind} name {name[:40]!r}... is too long: git keeps it as a file, so each "
                f"part of it between '/' holds at most {REF_PART_BYTES} bytes."
            )
        refuse_secret_in_ref_name(self.repo, name, kind)
        clash = self._ref_in_the_way(ref)
        if clash:
            raise GitError(
                f"{name!r} cannot be made: the {kind} {clash} exists, and git cannot keep "
                f"both a {kind} and one under it (A and A/B); pick another name."
            )

    def _ref_in_the_way(self, ref: str) -> str | None:
        """The name of an existing ref (tag or branch, as REF) that keeps REF from being
        made: git keeps refs as paths, so refs/tags/a and refs/tags/a/b cannot both exist.
        REF itself is not in the way (whether it may be replaced is its caller's rule)."""
        parts = ref.split("/")
        ancestors = ["/".join(parts[:i]) for i in range(3, len(parts))]
        found = self.run(
            "for-each-ref", "--format=%(refname)", ref, *ancestors, check=False
        ).stdout.splitlines()
        for other in found:
            if other.startswith(ref + "/") or other in ancestors:
                return other.split("/", 2)[2]
        return None

    def create_tag(
        self,
        name: str,
        message: str | None = None,
        target: str = "HEAD",
        *,
        refuse_elsewhere: bool = False,
    ) -> tuple[bool, str]:
        """(created?, explanation). An existing tag is never moved: on TARGET's commit it
        is nothing to do; on another commit it is said where it is, and, with
        REFUSE_ELSEWHERE (a person asked for this tag on TARGET, or it is one a person
        names), a GitError, so a script never takes the tag for made on a commit it never
        was. (An automatic tag elsewhere is no error: the day was tagged already, before a
        sync brought an earlier commit of that day.)"""
        self.check_ref_name(name)
        if self.head() is None:
            raise GitError("The memory repo has no commits yet; nothing to tag.")
        if self.tag_exists(name):
            return self._existing_tag(name, target, refuse_elsewhere)
        # through the one runner: its environment gives git an identity when the machine has
        # none configured (an annotated tag needs a tagger, as a commit needs a committer)
        if message:  # redacted as every message written to git (git/commits.py)
            message = self.repo.redactor().redact(message)
        self.run("tag", *(["-m", message] if message else []), "--", name, target)
        return True, f"tagged {name}"

    def _existing_tag(self, name: str, target: str, refuse_elsewhere: bool) -> tuple[bool, str]:
        """What create_tag says of NAME, a tag that exists, asked for on TARGET."""
        there = self.run("rev-parse", "-q", "--verify", f"refs/tags/{name}^{{commit}}").stdout
        here = self.run("rev-parse", "-q", "--verify", f"{target}^{{commit}}", check=False)
        sha = there.strip()
        subject = self.run("log", "-1", "--format=%s", sha, check=False).stdout.strip()
        if sha == here.stdout.strip():
            return False, (
                f"tag {name} already exists on {sha[:10]} ({subject}); nothing to do (tags are "
                "never moved)"
            )
        asked = here.stdout.strip()[:10] or target
        elsewhere = (
            f"tag {name} is on {sha[:10]} ({subject}), not on {asked} as asked; tags are never "
            "moved: give this one another name, or delete that tag first (`git tag -d "
            f"{name}`) if it marks the wrong commit."
        )
        if refuse_elsewhere:
            raise GitError(elsewhere)
        return False, elsewhere

    def commits_between(self, since: datetime, until: datetime) -> list[str]:
        """The commits dated from SINCE to UNTIL, newest first (GitCore.commits_dated)."""
        return self.commits_dated(since.isoformat(), until.isoformat())

    def tag_daily(
        self, day: date | None = None, *, refuse_elsewhere: bool = False
    ) -> tuple[bool, str]:
        """memory/daily/DAY on the day's last commit, when the day had any (never moved;
        REFUSE_ELSEWHERE as create_tag)."""
        day = day or today()
        return self._tag_period(
            "daily", day.isoformat(), day, 1, f"on {day.isoformat()}", refuse_elsewhere
        )

    def tag_weekly(
        self, day: date | None = None, *, refuse_elsewhere: bool = False
    ) -> tuple[bool, str]:
        """memory/weekly/YYYY-Www on the week's last commit, when the week had any."""
        day = day or today()
        week = iso_week(day)
        first_day = day - timedelta(days=day.isoweekday() - 1)
        return self._tag_period("weekly", week, first_day, 7, f"in {week}", refuse_elsewhere)

    def _tag_period(
        self, kind: str, label: str, first_day: date, days: int, when: str, refuse_elsewhere: bool
    ) -> tuple[bool, str]:
        start = datetime(first_day.year, first_day.month, first_day.day, tzinfo=UTC)
        commits = self.commits_between(start, start + timedelta(days=days))
        if not commits:
            return False, f"no changes {when}; no {kind} tag"
        return self.create_tag(
            f"{TAG_PREFIX}/{kind}/{label}",
            f"{kind.capitalize()} snapshot {label}",
            commits[0],
            refuse_elsewhere=refuse_elsewhere,
        )

    def tag_named(
        self,
        kind: str,
        name: str,
        message: str | None = None,
        target: str = "HEAD",
        *,
        refuse_elsewhere: bool = False,
    ) -> tuple[bool, str]:
        """memory/KIND/NAME on TARGET. A tag a person names (milestone, before) already on
        another commit is always refused (create_tag's REFUSE_ELSEWHERE)."""
        if kind not in ("milestone", "before", "extract"):
            raise GitError(
                f"unknown tag kind {kind!r}; use daily, weekly, milestone, before or extract."
            )
        return self.create_tag(
            f"{TAG_PREFIX}/{kind}/{name}",
            message or f"{kind}: {name}",
            target,
            refuse_elsewhere=refuse_elsewhere or kind in HAND_MADE_TAGS,
        )

    # ── explore/* branches (docs/design.md#branches) ──
    def branch_exists(self, name: str) -> bool:
        return name in {h.name for h in self.gitpython.heads}

    def create_explore(self, name: str, *, checkout: bool = False) -> str:
        branch = name if name.startswith("explore/") else f"explore/{name}"
        self.check_ref_name(branch, "branch")
        if self.branch_exists(branch):
            raise GitError(f"branch {branch} already exists; pick another name or delete it first.")
        if self.head() is None:
            raise GitError("The memory repo has no commits yet; nothing to branch from.")
        self.run("checkout", "-q", "-b", branch) if checkout else self.run("branch", branch)
        return branch

    def explore_branches(self) -> list[tuple[str, datetime]]:
        """explore/* branches with the time they were created (reflog) or last committed to."""
        result = []
        for head in self.gitpython.heads:
            if not head.name.startswith("explore/"):
                continue
            when = head.commit.committed_date
            try:
                log = head.log()
            except (OSError, ValueError):
                log = []
            if log:
                when = max(when, log[0].time[0])
            result.append((head.name, datetime.fromtimestamp(when, tz=UTC)))
        return sorted(result)

    def prune_explore(self, max_age_days: int = 7, now: datetime | None = None) -> list[str]:
        now = now or utc_now()
        current = self.current_branch()
        pruned = []
        for name, when in self.explore_branches():
            if name != current and now - when > timedelta(days=max_age_days):
                self.run("branch", "-D", name)
                pruned.append(name)
        return pruned
