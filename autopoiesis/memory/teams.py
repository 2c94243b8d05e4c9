"""Team memory: a team's shared knowledge, a git repository of its own mounted as a
submodule at `shared/<team>/` of a personal memory.

* `add`: `git submodule add URL shared/TEAM`, committed (the personal history holds only
  the team's commit id, never its notes).
* Search and the compiler read its notes (`shared/TEAM/knowledge/**`) as the team's: the
  index holds them (core/paths.py `indexed_dirs`, index/freshness.py follows the mount's
  HEAD), a result carries `team`, a compiled section is labelled `team:TEAM:...`.
* `share`: the one way anything gets in, explicit: a whole note, or one entry
  (`PATH#ENTRY_ID`), written into the team's repository and committed there, on its
  branch (pushed) or on a new branch for a pull request. Never a transcript (raw/ stays
  personal), never a private note, never automatically.
* `sync` (memory/sync.py): each mount fetched and merged, what `share` committed pushed,
  the personal memory's record of the mount committed.
* `verify`: each mount holds notes only (no transcript, no link).
* `remove`: the mount, its checkout and its git objects (.git/modules/shared/TEAM) gone:
  a member who leaves keeps nothing of the team's but what their own notes say.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from autopoiesis.core.paths import ODD_NAME, SHARED_DIR, MemoryRepo, shared_mounts
from autopoiesis.core.text import counted
from autopoiesis.errors import GitError, InvalidArgumentError
from autopoiesis.git.history import Finding
from autopoiesis.git.runner import call, decode

_TEAM_NAME = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,63}\Z")
# How many of the team mounts .gitmodules names but this machine did not add `awaiting`
# describes one by one; the rest are counted
MAX_AWAITING_SHOWN = 10


@dataclass
class TeamSync:
    """What `sync` did with the mounts: what moved, what went wrong, the commits here."""

    moved: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    committed: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Shared:
    """What `share` did: the note in the team's repository, the commit there, the branch."""

    team: str
    path: str  # in the team's repository
    commit: str | None
    branch: str
    pushed: bool
    notice: str = ""


def _git(where: Path, *args: str, check: bool = True) -> str:
    done = call(where, *args)
    if check and done.returncode != 0:
        why = decode(done.stderr).strip() or decode(done.stdout).strip()
        raise GitError(f"git {' '.join(args[:3])} failed in {where}: {why}")
    return decode(done.stdout)


class TeamMemory:
    """The teams' mounts of one personal memory (`Memory.teams`)."""

    def __init__(self, repo: MemoryRepo):
        self.repo = repo

    @property
    def root(self) -> Path:
        return self.repo.root

    def mounts(self) -> list[str]:
        """The teams mounted and checked out, by name."""
        return [m.split("/", 1)[1] for m in shared_mounts(self.root)]

    def mount_of(self, team: str) -> Path:
        if team not in self.mounts():
            have = ", ".join(self.mounts()) or "none"
            raise InvalidArgumentError(
                f"no team {team!r} is mounted here (mounted: {have}); `autopoiesis team add "
                f"{team} URL` mounts one."
            )
        return self.root / SHARED_DIR / team

    # ── mounting ──
    def add(self, team: str, url: str) -> str | None:
        """Mount the team repository at URL as shared/TEAM and commit it. Returns the commit."""
        if not _TEAM_NAME.match(team):
            raise InvalidArgumentError(
                f"{team!r} is no team name: lower-case letters, digits, '.', '_' and '-'."
            )
        where = f"{SHARED_DIR}/{team}"
        self._in_the_checkout()
        named = call(self.root, "config", "-f", ".gitmodules", f"submodule.{where}.url")
        if named.returncode == 0 and team not in self.mounts():
            # mounted in the history but not checked out here (a fresh clone, where git
            # clones no local path a repository's .gitmodules names): this URL, which the
            # user gives, checks it out
            if decode(named.stdout).strip() != url:
                raise InvalidArgumentError(
                    f"{where} is mounted from {decode(named.stdout).strip()}, not {url}; "
                    f"give that URL, or `autopoiesis team remove {team}` first."
                )
            _git(
                self.root,
                "-c",
                "protocol.file.allow=always",
                "submodule",
                "update",
                "--init",
                "-q",
                "--",
                where,
            )
            return None
        if (self.root / where).exists():
            raise InvalidArgumentError(f"{where} exists already.")
        # file:// and local paths are what tests and one-machine teams use
        try:
            _git(
                self.root, "-c", "protocol.file.allow=always", "submodule", "add", "-q", url, where
            )
        except GitError:
            # what the failed add made (its clone, its git folder) would block the next try
            # with "exists already"
            shutil.rmtree(self.root / where, ignore_errors=True)
            shutil.rmtree(self.root / ".git" / "modules" / where, ignore_errors=True)
            call(self.root, "config", "--remove-section", f"submodule.{where}")
            raise
        from autopoiesis.git.repo import MemoryGit

        done = MemoryGit(self.repo).commit_paths(
            [".gitmodules", where], f"maintenance: mount team memory {team} at {where}\n"
        )
        return done.sha

    def _in_the_checkout(self) -> None:
        """shared/ in a sparse checkout's folders: a memory made by `autopoiesis clone`
        checks out the top-level folders it had (git/scale.py), so a team mounted later
        lay outside them, and git refused to add it."""
        from autopoiesis.core.gitdirs import is_sparse_checkout

        if is_sparse_checkout(self.root) and (
            SHARED_DIR not in _git(self.root, "sparse-checkout", "list").split()
        ):
            _git(self.root, "sparse-checkout", "add", "--", SHARED_DIR)

    def _recorded(self, team: str) -> bool:
        """Whether the memory records TEAM's mount (its gitlink under shared/) though this
        machine has no checkout of it: a fresh clone that never ran `team add`, or a mount
        whose folder was deleted."""
        return bool(_TEAM_NAME.match(team)) and f"{SHARED_DIR}/{team}" in self._gitlinks()

    def _gitlinks(self) -> set[str]:
        """The mounts the memory records: its gitlinks under shared/, in one read."""
        staged = call(self.root, "ls-files", "-s", "-z", "--", SHARED_DIR)
        return {
            item.partition("\t")[2]
            for item in decode(staged.stdout).split("\x00")
            if item.startswith("160000 ")
        }

    def remove(self, team: str) -> str | None:
        """Unmount TEAM: its checkout, its objects and its record here gone; committed. A
        mount the memory records but this machine lacks (never checked out, its folder
        deleted, its remote gone) is removed too: `team add` with another URL says to
        remove it first."""
        if team in self.mounts() or not self._recorded(team):
            mount = self.mount_of(team)
        else:
            mount = self.root / SHARED_DIR / team
        where = f"{SHARED_DIR}/{team}"
        _git(self.root, "submodule", "deinit", "-q", "-f", "--", where, check=False)
        _git(self.root, "rm", "-q", "-f", "--", where)
        gitdir = Path(_git(self.root, "rev-parse", "--git-common-dir").strip())
        modules = (gitdir if gitdir.is_absolute() else self.root / gitdir) / "modules" / where
        shutil.rmtree(modules, ignore_errors=True)
        shutil.rmtree(mount, ignore_errors=True)
        _git(self.root, "config", "--remove-section", f"submodule.{where}", check=False)
        from autopoiesis.git.repo import MemoryGit

        done = MemoryGit(self.repo).commit_paths(
            [".gitmodules", where], f"maintenance: unmount team memory {team}\n"
        )
        self._forget_in_index()
        return done.sha

    def _forget_in_index(self) -> None:
        """memory.db started over without the team's notes: deleted rows leave their text
        in the file's free pages, a new file holds none of it (the embedding cache holds
        vectors by content hash, no text)."""
        if not self.repo.index_path.exists():
            return
        from autopoiesis.index import SearchIndex
        from autopoiesis.index.db import remove_db

        remove_db(self.repo.index_path)
        with SearchIndex(self.repo) as index:
            index.rebuild_full()

    # ── sharing ──
    def share(
        self, entry: str, team: str, *, branch: str | None = None, push: bool = True
    ) -> Shared:
        """Write ENTRY (a note's path, or PATH#ENTRY_ID for one entry) into TEAM's
        repository at the same path, commit it there (on BRANCH, made from the team's
        branch, when given: a pull request's) and push it when PUSH."""
        path, _, entry_id = entry.partition("#")
        rel = self.repo.rel(self.repo.resolve_inside(path))
        self._check_shareable(rel)
        mount = self.mount_of(team)
        before = self._branch(team, mount)
        if branch:
            _git(mount, "switch", "-q", "-c", branch)
        try:
            what = self._write(mount, rel, entry_id)
            _git(mount, "add", "--", rel)
            if not _git(mount, "diff", "--cached", "--name-only", "--", rel).strip():
                return Shared(team, rel, None, branch or before, False, "the team has it already")
            # --only the note: whatever else is staged in the team's checkout (a person's
            # own work there) is no part of what was shared, and is left staged
            _git(
                mount,
                "commit",
                "-q",
                "--no-verify",
                "-m",
                f"share: {what}\n\nfrom {rel}\n",
                "--only",
                "--",
                rel,
            )
            sha = _git(mount, "rev-parse", "HEAD").strip()
            pushed, notice = self._push(mount, branch or before) if push else (False, "")
        finally:
            if branch:
                _git(mount, "switch", "-q", before, check=False)
        if not branch:
            from autopoiesis.git.repo import MemoryGit

            MemoryGit(self.repo).commit_paths(
                [f"{SHARED_DIR}/{team}"], f"maintenance: team memory {team} at {sha[:12]}\n"
            )
        return Shared(team, rel, sha, branch or before, pushed, notice)

    def _check_shareable(self, rel: str) -> None:
        if not rel.startswith("knowledge/") or not rel.endswith(".md"):
            raise InvalidArgumentError(
                f"{rel}: only notes under knowledge/ are shared (raw transcripts stay personal)."
            )
        if rel.startswith("knowledge/identity/"):
            raise InvalidArgumentError(f"{rel}: identity files are yours alone; not shared.")
        from autopoiesis.core.private import matches

        if matches(rel, self.repo.private_patterns()):
            raise InvalidArgumentError(
                f"{rel} is private (git-crypt); private notes are not shared."
            )
        if not (self.root / rel).is_file() or self.repo.is_link(rel):
            raise InvalidArgumentError(f"there is no note {rel}.")

    def _write(self, mount: Path, rel: str, entry_id: str) -> str:
        """Write the note or its entry ENTRY_ID into MOUNT; what was shared, for the message."""
        from autopoiesis.formats import knowledge as kf
        from autopoiesis.knowledge.changes import template_for
        from autopoiesis.knowledge.writer import KnowledgeWriter

        mine = KnowledgeWriter(self.repo)
        theirs_repo = MemoryRepo(mount)
        self._exclude_state(mount, theirs_repo)
        theirs = KnowledgeWriter(theirs_repo)
        doc = mine.read(rel)
        assert doc is not None  # _check_shareable saw the file
        if not entry_id:
            theirs.write_doc(rel, doc)
            return rel
        found = doc.find_entry(entry_id)
        if found is None:
            raise InvalidArgumentError(f"{rel} has no entry {entry_id!r}; its ids end each line.")
        section = doc.sections[found[0]]
        line = section.lines[found[1]]
        target = theirs.read(rel) or template_for(rel)
        if target.find_entry(entry_id) is None:
            target, si = target.with_section(section.title, section.level)
            theirs.write_doc(rel, target.append_line(si, line))
        text = line.text if isinstance(line, kf.Entry) else line
        return f"{text[:60]} ({rel})"

    @staticmethod
    def _exclude_state(mount: Path, theirs: MemoryRepo) -> None:
        """Keep the writer's state folder (its locks) in MOUNT out of git: left untracked,
        it showed as the team's change in `git status`, and a member's `git add -A`
        there would commit it to the team."""
        where = Path(_git(mount, "rev-parse", "--git-path", "info/exclude").strip())
        where = where if where.is_absolute() else mount / where
        rule = f"/{theirs.state_dir.relative_to(mount).as_posix()}/"
        try:
            have = where.read_text(encoding="utf-8").splitlines()
        except OSError:
            have = []
        if rule not in have:
            where.parent.mkdir(parents=True, exist_ok=True)
            with where.open("a", encoding="utf-8") as fh:
                fh.write(f"{rule}\n")

    def _push(self, mount: Path, branch: str) -> tuple[bool, str]:
        done = call(mount, "push", "-q", "-u", "origin", f"HEAD:refs/heads/{branch}")
        if done.returncode != 0:
            why = decode(done.stderr).strip().splitlines()[-1:] or ["?"]
            return False, f"not pushed ({why[0]}); `autopoiesis sync` pushes it later"
        return True, ""

    # ── sync and verify ──
    def sync(self) -> TeamSync:
        """Each mount this machine made (`team add`): fetched, merged, what `share`
        committed pushed; the personal record of the mounts committed. A mount the
        memory's history names and this machine lacks is not checked out (`awaiting`)."""
        out = TeamSync()
        for team in self.mounts():
            self._sync_one(team, out)
        from autopoiesis.git.repo import MemoryGit

        done = MemoryGit(self.repo).commit_paths(
            [f"{SHARED_DIR}/{t}" for t in self.mounts()], "maintenance: team memory updated\n"
        )
        if done.sha:
            out.committed.append(f"{done.sha} maintenance: team memory updated")
        return out

    def awaiting(self) -> list[str]:
        """What to say of each team the memory's .gitmodules names under shared/ that is
        not mounted on this machine: a mount committed on another clone, or a
        collaborator's entry. Nothing checks one out but `team add` here: the URL came
        with a pull, so it is whoever could push's, and its notes would enter search and
        every compiled context."""
        # one read of every entry's path and url: a pulled .gitmodules of 2,000 entries
        # ran a git process for each url (10 s a sync) and printed 2,000 warnings
        named = call(
            self.root,
            "config",
            "-z",
            "-f",
            ".gitmodules",
            "--get-regexp",
            r"^submodule\..*\.(path|url)$",
        )
        paths: dict[str, str] = {}
        urls: dict[str, str] = {}
        for item in decode(named.stdout).split("\x00") if named.returncode == 0 else []:
            key, _, value = item.partition("\n")
            name, dot, kind = key.removeprefix("submodule.").rpartition(".")
            if dot:
                (paths if kind == "path" else urls)[name] = value
        mounted = set(shared_mounts(self.root))
        gitlinks = self._gitlinks()
        out: list[str] = []
        for name, where in paths.items():
            team = where.removeprefix(f"{SHARED_DIR}/")
            if where == team or where in mounted or not _TEAM_NAME.match(team):
                continue
            shown = urls.get(name, "").strip()
            if where not in gitlinks:  # an entry alone: no mount was ever committed there
                section = "NAME" if ODD_NAME.search(name) or "'" in name else f"'submodule.{name}'"
                out.append(
                    f".gitmodules names {where}, but the memory mounts nothing there, so "
                    "nothing is checked out; if no team of yours is meant, remove the entry "
                    f"(`git config -f .gitmodules --remove-section {section}`, then commit)"
                )
                continue
            if not shown or ODD_NAME.search(shown) or " " in shown:
                out.append(
                    f"{where} is mounted in this memory's history, with no usable URL, but "
                    "not on this machine: sync checks out no team memory this machine did not "
                    f"add; `autopoiesis team add {team} URL` with the team's URL mounts it"
                )
                continue
            out.append(
                f"{where} is mounted in this memory's history (from {shown}) but not on "
                "this machine: sync checks out no team memory this machine did not add (the "
                "URL came with a pull). If you trust it, `autopoiesis team add "
                f"{team} {shown}` mounts it"
            )
        if len(out) > MAX_AWAITING_SHOWN:
            more = len(out) - MAX_AWAITING_SHOWN
            out = out[:MAX_AWAITING_SHOWN] + [
                f"and {more} more team mounts .gitmodules names that this machine did not add "
                "(`git config -f .gitmodules --get-regexp path` lists them; a memory has a "
                "few teams, so look at who committed them)"
            ]
        return out

    def _branch(self, team: str, mount: Path) -> str:
        """The team's branch MOUNT is on; a detached checkout (what `git submodule update`
        leaves in a fresh clone) is put on the branch the team's remote names first: a
        commit made detached was pushed to a branch named `HEAD` on the team's remote, and
        the next sync's switch left it behind."""
        branch = _git(mount, "rev-parse", "--abbrev-ref", "HEAD", check=False).strip()
        if branch and branch != "HEAD":
            return branch
        head = _git(mount, "symbolic-ref", "-q", "refs/remotes/origin/HEAD", check=False)
        branch = head.strip().removeprefix("refs/remotes/origin/") or "main"
        tip = next(
            (
                ref
                for ref in (f"refs/heads/{branch}", f"refs/remotes/origin/{branch}")
                if call(mount, "rev-parse", "-q", "--verify", ref).returncode == 0
            ),
            None,
        )
        if tip is None or call(mount, "merge-base", "--is-ancestor", "HEAD", tip).returncode:
            raise GitError(
                f"the team memory {team} ({mount}) is on no branch, and its commit is not on "
                f"the team's branch {branch}: put it on one (`git -C {mount} switch -c NAME`), "
                "then run the command again; nothing was changed."
            )
        _git(mount, "switch", "-q", branch)
        return branch

    def _sync_one(self, team: str, out: TeamSync) -> None:
        mount = self.root / SHARED_DIR / team
        try:
            branch = self._branch(team, mount)
        except GitError as exc:
            out.problems.append(f"team {team}: {exc}")
            return
        # never into the team's submodules (see MemoryGit.fetch)
        if call(mount, "fetch", "-q", "--no-recurse-submodules", "origin").returncode != 0:
            out.problems.append(f"team {team}: its remote could not be reached; kept as it was")
            return
        before = _git(mount, "rev-parse", "HEAD", check=False).strip()
        if call(mount, "merge", "-q", "--no-edit", f"origin/{branch}").returncode != 0:
            call(mount, "merge", "--abort")
            out.problems.append(
                f"team {team}: its changes conflict with what you shared; resolve it in "
                f"{mount} (`git merge origin/{branch}`)"
            )
            return
        if _git(mount, "rev-parse", "HEAD", check=False).strip() != before:
            out.moved.append(f"team {team}: took the team's new notes")
        ahead = _git(mount, "rev-list", "--count", f"origin/{branch}..HEAD").strip()
        if ahead not in ("", "0"):
            ok, notice = self._push(mount, branch)
            out.moved.append(f"team {team}: pushed {counted(int(ahead), 'commit')}" if ok else "")
            if not ok:
                out.problems.append(f"team {team}: {notice}")
        out.moved[:] = [m for m in out.moved if m]

    def findings(self) -> list[Finding]:
        """What `verify` reports of the mounts: a transcript, a link or a name with a
        control character in a team's memory."""
        found: list[Finding] = []
        for team in self.mounts():
            mount = self.root / SHARED_DIR / team
            head = _git(mount, "rev-parse", "HEAD", check=False).strip()
            listing = _git(mount, "ls-tree", "-r", "-z", "HEAD", check=False)
            for item in listing.split("\x00"):
                meta, _, path = item.partition("\t")
                mode = meta.split(" ", 1)[0]
                where = f"{SHARED_DIR}/{team}/{path}"
                if path.startswith("raw/"):
                    found.append(
                        Finding(
                            where,
                            head,
                            "team-transcript",
                            "a transcript in team memory (transcripts stay "
                            "personal): remove it from the team's repository",
                        )
                    )
                elif mode in ("120000", "160000"):
                    found.append(
                        Finding(
                            where,
                            head,
                            "team-link",
                            "a link or submodule in team memory (never read): "
                            "remove it from the team's repository",
                        )
                    )
                elif ODD_NAME.search(path):
                    found.append(
                        Finding(
                            ascii(where)[1:-1],
                            head,
                            "team-name",
                            "a name with a control character in team memory (never "
                            "indexed): remove it from the team's repository",
                        )
                    )
        return found


__all__ = ["Shared", "TeamMemory", "TeamSync"]
