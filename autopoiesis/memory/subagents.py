"""Sub-agent checkouts: a sub-agent gets only the part of the memory it needs, and what it
writes comes back as a reviewable merge.

`checkout(AGENT, project=P, paths=...)` makes a linked worktree of the memory (`git worktree
add`: it shares the parent's objects, so nothing is copied or fetched) on its own branch
`subagent/AGENT`, sparse (`git sparse-checkout`, cone mode): the top-level files (the
config, .gitattributes), knowledge/identity/, knowledge/memory/, knowledge/procedures/,
topics/, the project's knowledge/projects/P/ and any further folder asked for; never
another project's notes or the transcripts unless asked, never the private notes. The parent's
hooks and settings carry over (the worktree shares its git folder: hooks, merge driver,
this machine's approvals), its search index is built from the parent's embedding cache
(nothing is embedded twice), and the worktree declares its project
(core/project.CHECKOUT_PROJECT), so a harness started in it searches and compiles for P.

`merge(AGENT)` commits what the sub-agent left uncommitted in its checkout and merges its
branch into the parent's (the knowledge merge driver, the hooks, verify), once its branch
holds only what a sub-agent may write (`may_write`): its folders, its sessions'
transcripts and what extracting them writes; anything else (the config, .gitattributes,
another project's notes, a transcript changed) is refused, naming the files, and nothing
is merged. `remove(AGENT)`
deletes the worktree and, once merged, its branch. Until then `git log main..subagent/AGENT`
shows what it did.
"""

from __future__ import annotations

import re
import shlex
import shutil
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from autopoiesis.core.paths import (
    ACTIVE_PROJECTS_FILE,
    CONVERSATIONS_DIR,
    IDENTITY_DIR,
    JOURNAL_DIR,
    PEOPLE_INDEX_FILE,
    MemoryRepo,
)
from autopoiesis.core.private import matches
from autopoiesis.core.project import CHECKOUT_PROJECT
from autopoiesis.core.text import counted, noun
from autopoiesis.errors import GitError, InvalidArgumentError
from autopoiesis.git.refs import refuse_secret_in_ref_name
from autopoiesis.git.runner import call, decode
from autopoiesis.knowledge.state import EXTRACTED_FILE

BRANCH_PREFIX = "subagent/"
BASE_FOLDERS = (IDENTITY_DIR, "knowledge/memory", "knowledge/procedures", "topics")
_AGENT_NAME = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,63}\Z")
# The folders a checkout was given, kept in its own git folder beside CHECKOUT_PROJECT:
# what `merge` holds its branch to. The sparse-checkout list is no such record: the
# sub-agent changes it with one `git sparse-checkout add`.
CHECKOUT_FOLDERS = "autopoiesis-subagent-folders"
# What the sub-agent's own sessions write outside its folders, wherever its checkout is
# (the writer files them by what they are, not by what the checkout holds): extraction's
# journal lines, the global notes it learns (people, reference facts), the indexes the
# writer keeps and the record of what was extracted. Its transcripts are new files under
# CONVERSATIONS_DIR (a transcript is never changed afterwards).
SESSION_FOLDERS = (JOURNAL_DIR, "knowledge/people", "knowledge/reference")
SESSION_FILES = (EXTRACTED_FILE, ACTIVE_PROJECTS_FILE, PEOPLE_INDEX_FILE)


def _inside(path: str, folders: Iterable[str]) -> bool:
    return any(path.startswith(folder.rstrip("/") + "/") for folder in folders)


def may_write(path: str, status: str, folders: Sequence[str], private: Sequence[str]) -> bool:
    """Whether a sub-agent given FOLDERS may make the change STATUS (git's A, M or D) to
    PATH: anything inside its folders; a new transcript; what extracting its sessions
    adds to or writes in SESSION_FOLDERS and SESSION_FILES. Never a private path (private
    notes are never given to a sub-agent), never a file at the top (the config,
    .gitattributes, .gitignore), another project's notes, a transcript changed or
    deleted, archive/ or a team's memory unless given."""
    if matches(path, private):
        return False
    if _inside(path, folders):
        return True
    if status == "A" and _inside(path, (CONVERSATIONS_DIR,)) and path.endswith(".md"):
        return True
    return status in ("A", "M") and (path in SESSION_FILES or _inside(path, SESSION_FOLDERS))


@dataclass(frozen=True)
class Checkout:
    """A sub-agent's checkout: its folder, branch, project, folders, commits not merged."""

    agent: str
    path: Path
    branch: str
    project: str | None
    folders: tuple[str, ...]
    ahead: int = 0

    def to_dict(self) -> dict[str, object]:
        return {
            "agent": self.agent,
            "path": str(self.path),
            "branch": self.branch,
            "project": self.project,
            "folders": list(self.folders),
            "ahead": self.ahead,
        }


def _git(where: Path, *args: str, check: bool = True) -> str:
    done = call(where, *args)
    if check and done.returncode != 0:
        why = decode(done.stderr).strip() or decode(done.stdout).strip()
        raise GitError(f"git {' '.join(args[:2])} failed: {why}")
    return decode(done.stdout)


class Subagents:
    """The sub-agent checkouts of one memory (`Memory.subagents`)."""

    def __init__(self, repo: MemoryRepo):
        self.repo = repo

    @property
    def root(self) -> Path:
        return self.repo.root

    def folder(self, agent: str) -> Path:
        return self.repo.state_dir / "subagents" / agent

    def checkout(
        self,
        agent: str,
        *,
        project: str | None = None,
        paths: tuple[str, ...] | list[str] = (),
        into: str | None = None,
    ) -> Checkout:
        """Make AGENT's sparse worktree (see the module doc); InvalidArgumentError for a
        bad name, a PROJECT the memory does not know, a folder outside the memory folders,
        or an agent that has one already."""
        if not _AGENT_NAME.match(agent):
            raise InvalidArgumentError(
                f"{agent!r} is no agent name: lower-case letters, digits, '.', '_' and '-'."
            )
        if project:
            from autopoiesis.memory.facade import Memory

            # as the memory names it (`Billing` is `billing`); `../../etc` had been taken
            # as written, into the sparse checkout's folders and the project it declares
            project = Memory(self.repo).known_project(project)
        branch = BRANCH_PREFIX + agent
        refuse_secret_in_ref_name(self.repo, branch, "branch")
        if _git(self.root, "rev-parse", "-q", "--verify", f"refs/heads/{branch}", check=False):
            raise InvalidArgumentError(
                f"{agent} has a checkout already (branch {branch}): merge or remove it first "
                f"(`autopoiesis subagent merge {agent}` / `remove {agent}`)."
            )
        folders = list(BASE_FOLDERS)
        if project:
            folders.append(f"knowledge/projects/{project}")
        for extra in paths:
            folders.append(self._folder_of(extra))
        folders = list(dict.fromkeys(folders))
        self._refuse_private_inside(folders)
        where = Path(into).expanduser().resolve() if into else self.folder(agent)
        if where.exists():
            raise InvalidArgumentError(f"{where} exists already; pick another folder (--into).")
        where.parent.mkdir(parents=True, exist_ok=True)
        _git(self.root, "worktree", "add", "-q", "--no-checkout", "-b", branch, str(where))
        gitdir = Path(_git(where, "rev-parse", "--absolute-git-dir").strip())
        if project:
            (gitdir / CHECKOUT_PROJECT).write_text(project + "\n", encoding="utf-8")
        (gitdir / CHECKOUT_FOLDERS).write_text("".join(f + "\n" for f in folders), "utf-8")
        _git(where, "sparse-checkout", "set", "--cone", *folders)
        _git(where, "checkout", "-q", branch)
        self._carry_over_index(where)
        return Checkout(agent, where, branch, project, tuple(folders))

    def _folder_of(self, path: str) -> str:
        rel = self.repo.rel(self.repo.resolve_inside(path)).rstrip("/")
        if (self.root / rel).is_file():
            rel = rel.rsplit("/", 1)[0] if "/" in rel else ""
        top = rel.split("/", 1)[0]
        if top not in ("knowledge", "topics", "archive", "raw", "shared") or not rel:
            raise InvalidArgumentError(
                f"{path}: a sub-agent's checkout holds folders of the memory (knowledge/, "
                "topics/, archive/, raw/, shared/)."
            )
        patterns = self.repo.private_patterns()
        if matches(rel + "/x.md", patterns) or matches(rel, patterns):
            raise InvalidArgumentError(
                f"{path}: private notes are not given to a sub-agent (git-crypt decrypts them "
                "in the memory's own checkout only)."
            )
        return rel

    def _refuse_private_inside(self, folders: list[str]) -> None:
        """Refuse, before anything is made, FOLDERS that hold a committed private note (a
        `private.paths` pattern inside one, `knowledge/procedures/hr/**`): a checkout
        takes whole folders, and the worktree has no git-crypt key, so its checkout
        failed half-way with git-crypt's error, leaving a branch and a worktree behind."""
        patterns = self.repo.private_patterns()
        listed = call(self.root, "ls-tree", "-r", "-z", "--name-only", "HEAD", "--", *folders)
        inside = [p for p in decode(listed.stdout).split("\x00") if p and matches(p, patterns)]
        if inside:
            more = f" and {len(inside) - 3} more" if len(inside) > 3 else ""
            raise InvalidArgumentError(
                f"{', '.join(inside[:3])}{more} is private and lies in a folder the "
                "sub-agent would get, and private notes are never given to a sub-agent: "
                "move them under knowledge/private/ (`autopoiesis mv`), then check out "
                "again; nothing was made."
            )

    def _carry_over_index(self, where: Path) -> None:
        """The checkout's memory.db, built from its files with the parent's embedding cache."""
        from autopoiesis.core.paths import STATE_FILES

        cache = self.repo.state_dir.joinpath(*STATE_FILES["embed_cache"])
        child = MemoryRepo(where)
        if cache.is_file():
            target = child.state_file("embed_cache")
            shutil.copy2(cache, target)
        if self.repo.index_path.exists():
            from autopoiesis.index import SearchIndex

            with SearchIndex(child) as index:
                index.rebuild_full()

    def list(self) -> list[Checkout]:
        """The sub-agents' checkouts, each with its commits not yet in the parent's branch."""
        out: list[Checkout] = []
        listing = _git(self.root, "worktree", "list", "--porcelain")
        for block in listing.split("\n\n"):
            fields = dict(line.split(" ", 1) for line in block.splitlines() if " " in line)
            branch = fields.get("branch", "").removeprefix("refs/heads/")
            if not branch.startswith(BRANCH_PREFIX):
                continue
            path = Path(fields["worktree"])
            agent = branch[len(BRANCH_PREFIX) :]
            ahead = _git(self.root, "rev-list", "--count", f"HEAD..{branch}", check=False)
            folders = _git(path, "sparse-checkout", "list", check=False).split()
            from autopoiesis.core.project import project_of

            found = project_of(path)
            project = found.name if found is not None and found.declared else None
            out.append(Checkout(agent, path, branch, project, tuple(folders), int(ahead or 0)))
        return out

    def get(self, agent: str) -> Checkout:
        for c in self.list():
            if c.agent == agent:
                return c
        raise InvalidArgumentError(
            f"no sub-agent checkout {agent!r}; `autopoiesis subagent list` shows them."
        )

    def merge(self, agent: str) -> tuple[str, str | None]:
        """Commit what AGENT left in its checkout, then merge its branch into the parent's
        current branch. Returns (how it merged, the resulting commit)."""
        from autopoiesis.git.repo import MemoryGit
        from autopoiesis.memory.facade import Memory

        c = self.get(agent)
        Memory(c.path).commit(f"memory: {agent}'s work, left uncommitted in its checkout")
        self._refuse_beyond_its_bounds(c)
        result = MemoryGit(self.repo).merge(
            c.branch, f"maintenance: merge {c.branch} (the sub-agent {agent}'s work)"
        )
        if result.kind == "conflict":
            raise GitError(
                f"merging {c.branch} conflicts in {', '.join(result.conflicts)}: resolve them "
                "and `git commit`, or `git merge --abort`."
            )
        return result.kind, result.head

    def granted(self, c: Checkout) -> tuple[str, ...]:
        """The folders C's checkout was given (its record; a checkout made before there
        was one: its sparse-checkout list)."""
        gitdir = Path(_git(c.path, "rev-parse", "--absolute-git-dir").strip())
        try:
            text = (gitdir / CHECKOUT_FOLDERS).read_text(encoding="utf-8")
        except OSError:
            return c.folders
        return tuple(line for line in text.splitlines() if line.strip())

    def _refuse_beyond_its_bounds(self, c: Checkout) -> None:
        """InvalidArgumentError, before anything is merged, when C's branch changes what a
        sub-agent may not (may_write) since it left the memory's branch: its checkout is
        a worktree, where any git command commits anything, and a merge brought all of it
        into the memory (the config, .gitattributes, another project's notes)."""
        base = _git(self.root, "merge-base", "HEAD", c.branch, check=False).strip()
        if not base:
            return  # no history in common: git's merge refuses it itself
        listed = _git(
            self.root, "diff", "--name-status", "-z", "--no-renames", base, c.branch, "--"
        ).split("\x00")
        folders, private = self.granted(c), self.repo.private_patterns()
        beyond = [
            path
            for status, path in zip(listed[0::2], listed[1::2], strict=False)
            if path and not may_write(path, status[:1], folders, private)
        ]
        if not beyond:
            return
        named = ", ".join(beyond[:5]) + (f" and {len(beyond) - 5} more" if len(beyond) > 5 else "")
        undo = shlex.join(
            [
                "git",
                "-C",
                str(c.path),
                "restore",
                f"--source={base[:12]}",
                "--staged",
                "--worktree",
                "--ignore-skip-worktree-bits",
                "--",
                *beyond,
            ]
        )
        raise InvalidArgumentError(
            f"{c.branch} changes what a sub-agent may not: {named}. A sub-agent writes its "
            f"folders ({', '.join(folders)}), its sessions' transcripts and what extracting "
            "them writes (the journal, people and reference notes); nothing was merged. "
            f"To merge the rest, undo those changes on its branch (`{undo}`, then `git -C "
            f"{shlex.quote(str(c.path))} commit -m 'leave out what is not mine'`) and merge "
            f"again; or drop all its work: `autopoiesis subagent remove {c.agent} --force`."
        )

    def remove(self, agent: str, *, force: bool = False) -> None:
        """Delete AGENT's checkout, and its branch when merged (or FORCE)."""
        c = self.get(agent)
        if c.ahead and not force:
            raise InvalidArgumentError(
                f"{c.branch} has {counted(c.ahead, 'commit')} the memory lacks: merge "
                f"{noun(c.ahead, 'it', 'them')} "
                f"(`autopoiesis subagent merge {agent}`) or give --force to drop them."
            )
        _git(self.root, "worktree", "remove", "--force", str(c.path))
        _git(self.root, "branch", "-D", c.branch)


__all__ = ["BASE_FOLDERS", "BRANCH_PREFIX", "Checkout", "Subagents", "may_write"]
