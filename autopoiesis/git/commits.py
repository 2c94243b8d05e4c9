"""The core of MemoryGit: running git in the memory repo, recovering from a stale
`.git/index.lock`, and commits with their messages.

Commits run `git commit` itself (so the repo's hooks run on every commit) and are
serialised by one lock per memory repo (`repo.lock("git")`), retried with backoff when a
foreign git process holds `.git/index.lock`, so no change is lost and the index is never
left broken.

A commit of given paths (`commit_paths`, and a transcript commit that git/transcripts.py
cannot make through plumbing) marks new files
intent-to-add and commits with `--only`: a commit killed half-way (say, during a slow
pre-commit hook) leaves the files intent-to-add, which no later plain `git commit` sweeps
into an unrelated commit, and which `git.runner.uncommitted` still lists for recovery.

While a git command that writes the index runs, `.autopoiesis/locks/git-index.PID.json`
records who runs it (this process and its git child, with their start times). A stale
`.git/index.lock` whose recorded processes are all dead is removed with a warning; one
that no record explains belongs to another program and is only reported, with the
command that clears it. A process that is stopped while its git runs (SIGTERM: a job's
timeout, `daemon stop`, `systemctl stop`) stops git with SIGTERM too, which removes its
own lock, and keeps the record while a lock is left, so the next commit can prove the
lock is a dead one of its own. GitPython is loaded on first use (`gitpython`): capture's commit
path and the hooks never import it (it costs ~100 ms).
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import shutil
import subprocess
import time
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autopoiesis.core.paths import (
    CONTENT_DIRS,
    CONVERSATIONS_DIR,
    KNOWLEDGE_COMMIT_DIRS,
    MemoryRepo,
    atomic_write,
)
from autopoiesis.errors import GitError, ProgramNotFoundError
from autopoiesis.formats.commit_message import generate_commit_message
from autopoiesis.git import runner
from autopoiesis.git.processes import alive as _alive
from autopoiesis.git.processes import process_start, stop_git
from autopoiesis.git.runner import status as git_status

TRANSCRIPTS = CONVERSATIONS_DIR + "/"
_FALLBACK_IDENTITY = {
    "GIT_AUTHOR_NAME": "autopoiesis",
    "GIT_AUTHOR_EMAIL": "autopoiesis@localhost",
    "GIT_COMMITTER_NAME": "autopoiesis",
    "GIT_COMMITTER_EMAIL": "autopoiesis@localhost",
}


# git commands that write .git/index, and so take .git/index.lock
_INDEX_WRITERS = frozenset(
    {
        "add",
        "am",
        "checkout",
        "cherry-pick",
        "commit",
        "merge",
        "mv",
        "pull",
        "read-tree",
        "rebase",
        "reset",
        "restore",
        "revert",
        "rm",
        "stash",
        "switch",
        "update-index",
    }
)


@dataclass(frozen=True)
class CommitResult:
    sha: str | None
    message: str
    files: tuple[str, ...]


def how_to_end(operation: str) -> str:
    """What ends OPERATION (operation_in_progress's "a merge", "a rebase", ...) one way or
    the other: what every command that meets one says (commit, extract, sync, doctor)."""
    verb = {"a merge": "merge", "a rebase": "rebase"}.get(operation, operation.split()[-1])
    return (
        f"finish it (resolve the conflicts, `git add` them, `git {verb} --continue` or "
        f"`git commit`) or abort it (`git {verb} --abort`)"
    )


class GitCore:
    """Running git in one memory repository, and committing to it."""

    def __init__(self, repo: MemoryRepo):
        self.repo = repo
        self.root = repo.root
        self._env: dict[str, str] | None = None
        self._gitpython: Any = None
        self._git_dir: Path | None = None

    # ── plumbing ──
    def _environment(self) -> dict[str, str]:
        if self._env is None:
            env = dict(os.environ)
            # one git for both keys: "user.name Alice" per key set, none for a key unset
            probe = runner.call(
                self.root, "config", "--get-regexp", r"^user\.(name|email)$", text=True
            )
            named = {
                key
                for key, _, value in (line.partition(" ") for line in probe.stdout.splitlines())
                if value.strip()
            }
            if not {"user.name", "user.email"} <= named:
                for k, v in _FALLBACK_IDENTITY.items():
                    env.setdefault(k, v)
            self._env = env
        return self._env

    def run(
        self,
        *args: str,
        check: bool = True,
        input: str | None = None,
        retries: int = 8,
        timeout: float | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Run git in the memory repo. While `.git/index.lock` is held, retry with backoff;
        a lock left by a dead autopoiesis process is removed (with a warning), one held by
        another program ends in a GitError saying how to clear it. A non-zero exit for any
        other reason raises GitError, or is returned when CHECK is False. TIMEOUT (seconds,
        for commands that do not write the index: fetch, push, ls-remote) ends a git that
        hangs with a GitError. `git worktree` commands run one at a time (the repo's
        "worktrees" lock): a `prune` that ran while another thread's `add` had made the new
        worktree's folder under .git/worktrees/ but not yet its gitdir file removed it, and
        the add failed ("could not open .../locked": two evals of the viewer at once)."""
        if args[:1] == ("worktree",):
            with self.repo.lock("worktrees"):
                return self._run(args, check, input, retries, timeout)
        return self._run(args, check, input, retries, timeout)

    def _run(
        self,
        args: tuple[str, ...],
        check: bool,
        input: str | None,
        retries: int,
        timeout: float | None,
    ) -> subprocess.CompletedProcess[str]:
        writes_index = bool(args) and args[0] in _INDEX_WRITERS
        delay = 0.02
        for attempt in range(retries + 1):
            proc = self._spawn(args, input, record=writes_index, timeout=timeout)
            if proc.returncode == 0:
                return proc
            err = proc.stderr
            if "index.lock" in err and ("File exists" in err or "exists" in err):
                if attempt == retries:
                    raise GitError(self._foreign_lock_message())
                if not self.clear_stale_index_lock():
                    time.sleep(delay + random.random() * delay)
                    delay = min(delay * 2, 1.0)
                continue
            if not check:
                return proc
            locked = _OTHER_LOCK.search(err)
            if locked is not None:
                # a ref's or a config's lock: git's own message says only that another git
                # process may be running; a command killed midway leaves one as well
                raise GitError(
                    f"git {' '.join(args[:3])} failed: its lock {locked.group(1)} exists. "
                    "Another git command is running in this repository, or one was stopped "
                    "midway (killed) and left it: if no git runs now, remove that file and "
                    "run the command again."
                )
            raise GitError(f"git {' '.join(args[:3])} failed: {err.strip() or proc.stdout.strip()}")
        raise AssertionError("unreachable")

    # ── who holds .git/index.lock ──
    def index_lock_path(self) -> Path:
        if self._git_dir is None:
            self._git_dir = self.git_dir()
        return self._git_dir / "index.lock"

    def _records(self) -> list[tuple[Path, dict[str, Any]]]:
        folder = self.repo.state_path("locks", "git-index")
        folder = folder.parent
        out = []
        for path in folder.glob("git-index.*.json"):
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            if isinstance(data, dict):
                out.append((path, data))
        return out

    def _spawn(
        self, args: Sequence[str], input: str | None, *, record: bool, timeout: float | None = None
    ) -> subprocess.CompletedProcess[str]:
        if not record:
            try:
                return runner.call(
                    self.root,
                    *args,
                    input=input,
                    text=True,
                    env=self._environment(),
                    timeout=timeout,
                    stdin_devnull=True,
                )
            except subprocess.TimeoutExpired:
                raise GitError(
                    f"git {' '.join(args[:2])} did not finish within {timeout:g} s and was stopped "
                    "(a remote that does not answer?). Check the network and "
                    "the remote's address (`git remote -v`), then retry."
                ) from None
        if not self.index_lock_path().exists():
            for path, data in self._records():  # records of the dead explain no future lock
                if not (
                    _alive(data.get("pid"), data.get("start"))
                    or _alive(data.get("git_pid"), data.get("git_start"))
                ):
                    path.unlink(missing_ok=True)
        record_path = self.repo.state_path("locks", f"git-index.{os.getpid()}.json")
        pid = os.getpid()
        entry = {"pid": pid, "start": process_start(pid), "time": time.time(), "command": args[0]}
        # written before git starts: a git that could not be recorded (a full disk) would
        # leave an index.lock that no record explains, blocking every later command
        try:
            record_path.write_text(json.dumps(entry), encoding="utf-8")
        except OSError as exc:
            record_path.unlink(missing_ok=True)
            raise GitError(
                f"cannot write {record_path} ({exc.strerror or exc}), so git {args[0]} was not "
                "run and nothing changed. Free disk space and retry."
            ) from None
        child = runner.start(
            self.root, *args, env=self._environment(), stdin_pipe=input is not None
        )
        try:
            entry.update(git_pid=child.pid, git_start=process_start(child.pid))
            with contextlib.suppress(OSError):  # the first record still names this process
                record_path.write_text(json.dumps(entry), encoding="utf-8")
            out, err = child.communicate(input)
        except BaseException:  # stopped (SIGTERM: a timeout, `daemon stop`), or a bug
            stop_git(child)
            if not self.index_lock_path().exists():
                record_path.unlink(missing_ok=True)
            # else the record stays: it proves the lock is a dead git's of ours, and the
            # next index writer removes both (clear_stale_index_lock)
            raise
        record_path.unlink(missing_ok=True)
        return subprocess.CompletedProcess(["git", *args], child.returncode, out, err)

    def clear_stale_index_lock(self) -> bool:
        """Remove `.git/index.lock` when an autopoiesis process that died while running git
        left it (warning which one); True when there is no lock any more. A lock that a
        live autopoiesis process holds, or that no record explains, is left alone."""
        lock = self.index_lock_path()
        try:
            mtime = lock.stat().st_mtime
        except FileNotFoundError:
            return True
        records = self._records()
        alive = [
            d
            for _, d in records
            if _alive(d.get("pid"), d.get("start")) or _alive(d.get("git_pid"), d.get("git_start"))
        ]
        if alive:
            return False  # one of ours is working: wait for it
        dead = [
            (p, d)
            for p, d in records
            if isinstance(d.get("time"), (int, float)) and mtime >= d["time"] - 2
        ]
        if not dead:
            return False
        lock.unlink(missing_ok=True)
        for path, data in records:
            if isinstance(data.get("git_pid"), int):
                (lock.parent / f"next-index-{data['git_pid']}.lock").unlink(missing_ok=True)
            path.unlink(missing_ok=True)
        who = ", ".join(f"{d.get('pid')} (git {d.get('command')})" for _, d in dead)
        warnings.warn(
            f"removed a stale {lock} left by autopoiesis process {who}, which died while git ran; "
            "no process held it any more.",
            stacklevel=2,
        )
        self.repair_interrupted_commits()
        return True

    def _foreign_lock_message(self) -> str:
        lock = self.index_lock_path()
        return (
            f"{lock} exists and no live autopoiesis process holds it: another git program is "
            "running in "
            f"{self.root}, or one crashed. Wait for it to finish; if no git command is running "
            "(check with "
            f"`ps aux | grep git`), remove the lock with `rm {lock}` and retry."
        )

    def repair_interrupted_commits(self) -> list[str]:
        """Put back the index entries a commit killed after it moved HEAD but before it
        wrote the index left wrong: a file committed in HEAD but marked intent-to-add in the
        index, or (a plumbing commit, git/direct_commit.py) a transcript committed in HEAD
        and missing from the index, would read as staged for deletion, so the next plain
        commit would delete it. Returns the repaired paths."""
        entries = git_status(self.root, CONTENT_DIRS).entries
        untracked = {e.path for e in entries if e.untracked}
        broken = [
            e.path
            for e in entries
            if e.index == "D"
            and (e.worktree == "A" or (e.path in untracked and e.path.startswith(TRANSCRIPTS)))
        ]
        if broken:
            self.run("reset", "-q", "--", *broken, check=False)
        return broken

    @property
    def gitpython(self) -> Any:
        """The GitPython Repo (git.Repo), opened on first use. Its git processes take this
        process's environment whole, so the repository variables of a git that started
        this process are pinned to this repo's own (runner.pinned_repository_vars)."""
        if self._gitpython is None:
            try:
                import git
            except ImportError as exc:  # GitPython looks for the git program as it loads
                if shutil.which("git") is None:
                    raise ProgramNotFoundError("git") from exc
                raise

            repo = git.Repo(self.root)
            repo.git.update_environment(**runner.pinned_repository_vars(self.root))
            self._gitpython = repo
        return self._gitpython

    def is_repo(self) -> bool:
        return (self.root / ".git").exists() and self.run(
            "rev-parse", "--git-dir", check=False
        ).returncode == 0

    def init(self) -> None:
        if not self.is_repo():
            self.run("init", "-q", "-b", "main")

    def head(self) -> str | None:
        proc = self.run("rev-parse", "--verify", "-q", "HEAD", check=False)
        return proc.stdout.strip() or None

    def current_branch(self) -> str | None:
        proc = self.run("symbolic-ref", "--short", "-q", "HEAD", check=False)
        return proc.stdout.strip() or None

    def git_dir(self) -> Path:
        return Path(self.run("rev-parse", "--absolute-git-dir").stdout.strip())

    def operation_in_progress(self) -> str | None:
        """The git operation a person left half-done in this repository (a merge with
        conflicts, a rebase, a cherry-pick, a revert), or None."""
        names = {
            "MERGE_HEAD": "a merge",
            "CHERRY_PICK_HEAD": "a cherry-pick",
            "REVERT_HEAD": "a revert",
            "rebase-merge": "a rebase",
            "rebase-apply": "a rebase",
        }
        if self._git_dir is None:
            self._git_dir = self.git_dir()
        return next((what for f, what in names.items() if (self._git_dir / f).exists()), None)

    def refuse_during_operation(self, *, allow_merge: bool = False) -> None:
        """GitError when a git operation is half-done: a commit then would touch its index
        (a path reset in a conflicted index is taken as resolved with this side's text,
        and the other side's change is lost at the merge's commit). Asked before a command
        writes anything and before every commit. ALLOW_MERGE: a merge may be in progress
        (`sync` concludes one, its own left for a person to resolve), not anything else;
        a rebase's HEAD is detached, and only its own `--continue` or `--abort` ends it."""
        what = self.operation_in_progress()
        if what is not None and not (allow_merge and what == "a merge"):
            end = how_to_end(what)
            raise GitError(
                f"{what} is in progress in {self.root}; nothing was changed. "
                f"{end[0].upper()}{end[1:]}, then run this again."
            )

    def rev(self, ref: str) -> str | None:
        """The commit REF names, or None."""
        if ref.startswith("-"):
            return None
        return (
            self.run("rev-parse", "-q", "--verify", f"{ref}^{{commit}}", check=False).stdout.strip()
            or None
        )

    def is_ancestor(self, ancestor: str, descendant: str) -> bool:
        return (
            self.run("merge-base", "--is-ancestor", ancestor, descendant, check=False).returncode
            == 0
        )

    # ── commits by date ──
    def git_time(self, when: str) -> int | None:
        """WHEN, a date as a user gives it (YYYY-MM-DD, an ISO time, "2 hours ago"), as Unix
        time; None when it holds no date. A day or an ISO time is read here, a bare day as
        its 00:00 UTC (the day every tag and journal is counted in): git reads a day as that
        day at the current time of day, so `--since DAY` left out what the day held before
        then, and a year past 2099 or before 1970 as some day of 2012 or 2026. Only what
        git alone reads ("yesterday", "2 hours ago") is asked of git."""
        value = when.strip()
        exact = _iso_time(value)
        if exact is None:
            exact = _time_ago(value)
        if exact is not None:
            return exact
        if not re.search(r"[^\W\d_]", value):
            # numbers alone: git reads what it cannot place as some day of this month or
            # year ("-5" as the 5th, "2026-11" as the 11th, "99999-01-01" as 1 January of
            # this year); only a calendar day or month is taken
            return _numeric_day(value)
        read = self.run("rev-parse", f"--since={value}", check=False).stdout.strip()
        try:
            stamp = int(read.removeprefix("--max-age="))
        except ValueError:
            return None
        # a word git reads ("yesterday", "last week") names a time past, never one to
        # come; one later than now is git's misreading, no date
        return stamp if stamp <= time.time() + 60 else None

    def commits_dated(self, since: str, until: str | None = None) -> list[str]:
        """The commits of HEAD whose commit date is from SINCE to UNTIL (git_time's dates),
        newest first, however their dates are ordered: git's own --since stops its walk at
        the first older commit, so one commit made with a clock behind (pulled from another
        machine) hid every commit before it."""
        start, end = self.git_time(since), self.git_time(until) if until else None
        if start is None or (until and end is None):
            raise GitError(
                f"{since if start is None else until!r} is no date git understands; give "
                "YYYY-MM-DD or one such as yesterday or '1 week ago'."
            )
        found = []
        for line in self.run(
            "log", "--topo-order", "--format=%H %ct", "HEAD", check=False
        ).stdout.splitlines():
            sha, _, stamp = line.partition(" ")
            if start <= int(stamp) and (end is None or int(stamp) <= end):
                found.append(sha)
        return found

    # ── committing ──
    def held_out(self, paths: Iterable[str]) -> list[str]:
        """The PATHS (repo-relative) no commit of this clone may take: private files it
        cannot encrypt. In a locked clone (git-crypt set up, no key here) git-crypt's
        filter does not run, so a new private note, or one written over its ciphertext,
        was committed in clear, and every push then refused. Each is left as it is on
        disk, with a warning: once the clone is unlocked, the next commit takes it,
        encrypted. A deletion is no file to hold out (it leaks nothing)."""
        from autopoiesis.core.private import file_is_ciphertext, is_locked, is_private

        if not is_locked(self.root):
            return []
        private = self.repo.private_patterns()
        held = [
            rel
            for rel in dict.fromkeys(paths)
            if is_private(rel, private)
            and (self.root / rel).is_file()
            and not file_is_ciphertext(self.root / rel)
        ]
        if held:
            more = f" and {len(held) - 5} more" if len(held) > 5 else ""
            warnings.warn(
                f"{', '.join(held[:5])}{more} is private and this clone is locked (git-crypt "
                "holds no key here), so it cannot be encrypted: it was left out of the commit "
                "and is kept on disk as it is. Unlock this clone (`autopoiesis private unlock "
                "KEYFILE`); the next commit then takes it, encrypted.",
                stacklevel=3,
            )
        return held

    def commit_paths(
        self, paths: Sequence[str], message: str, *, allow_empty: bool = False
    ) -> CommitResult:
        """Commit exactly PATHS (repo-relative), nothing else that happens to be staged:
        through plumbing when every path is a file on disk (git/direct_commit.py), else
        with `git commit --only`. MESSAGE goes through the repo's redactor, as every
        commit message does."""
        message = self.repo.redactor().redact(message)
        return self._on_a_branch(self._commit_paths(paths, message, allow_empty=allow_empty))

    def _on_a_branch(self, result: CommitResult) -> CommitResult:
        """RESULT, with a warning when its commit went to a detached HEAD: no branch holds
        it, and checking a branch out leaves it behind (only the reflog finds it)."""
        if result.sha and self.detached():
            warnings.warn(
                f"commit {result.sha[:10]} was made on a detached HEAD, so no branch holds it; "
                f"keep it with `git branch NAME {result.sha[:10]}` (or `git switch -c NAME`).",
                stacklevel=3,
            )
        return result

    def detached(self) -> bool:
        """Whether HEAD names a commit rather than a branch (read from the git folder)."""
        if self._git_dir is None:
            self._git_dir = self.git_dir()
        try:
            head = (self._git_dir / "HEAD").read_text(encoding="utf-8", errors="replace")
        except OSError:
            return False
        return not head.startswith("ref:")

    def _commit_paths(
        self, paths: Sequence[str], message: str, *, allow_empty: bool = False
    ) -> CommitResult:
        from autopoiesis.git.direct_commit import commit_new_files

        with self.repo.lock("git"):
            rel = [self.repo.rel(p) if os.path.isabs(p) else p for p in paths]
            held = self.held_out(rel)
            if held:
                rel = [p for p in rel if p not in held]
                if not rel and not allow_empty:
                    return CommitResult(None, message, ())
                paths = rel
            if rel and not allow_empty and all((self.root / p).is_file() for p in rel):
                done = commit_new_files(self, rel, message)
                if done is not None:
                    return CommitResult(done[0] or None, message, tuple(done[1]))
            return self._commit_paths_locked(paths, message, allow_empty=allow_empty)

    def _commit_paths_locked(
        self, paths: Sequence[str], message: str, *, allow_empty: bool = False
    ) -> CommitResult:
        self.refuse_during_operation()
        rel = [self.repo.rel(p) if os.path.isabs(p) else p for p in paths]
        present = [p for p in rel if (self.root / p).exists()]
        if present:
            # intent-to-add, not staged: a commit killed half-way leaves nothing that a
            # later plain `git commit` would sweep in (--force for the memory's own notes
            # and transcripts, which no .gitignore rule keeps out: a pulled `raw/` rule
            # kept every transcript out; another file, a key, stays ignored; --sparse: a
            # new file of a sparse
            # checkout, such as a sub-agent's transcript, outside its folders)
            own = [p for p in present if _memorys_own(p)]
            if own:
                self.run("add", "-N", "--sparse", "--force", "--", *own)
            if len(own) < len(present):
                self.run("add", "-N", "--sparse", "--", *[p for p in present if p not in own])
        changed = self._changed(rel)
        if not changed and not allow_empty:
            return CommitResult(None, message, ())
        extra = ["--allow-empty"] if allow_empty else []
        proc = self.run(
            "commit",
            "-q",
            *extra,
            "-F",
            "-",
            "--only",
            "--",
            *(changed or rel),
            input=message,
            check=False,
        )
        if proc.returncode != 0:
            # the hook refused: leave the index as it was (new files untracked again)
            self.run("reset", "-q", "--", *changed, check=False)
            raise GitError(
                "The commit was refused:\n" + (proc.stderr.strip() or proc.stdout.strip())
            )
        return CommitResult(self.head(), message, tuple(changed))

    def _changed(self, rel: Sequence[str]) -> list[str]:
        """The paths of REL whose work-tree state differs from HEAD (added, changed, deleted)."""
        if not rel:
            return []
        # a mounted team memory (a submodule) changes for a commit when its commit does:
        # a file left in its work tree is no change of ours, and `commit --only` of it
        # failed ("no changes added") and stopped every sync
        out = self.run(
            "--no-optional-locks",
            "status",
            "--porcelain=v1",
            "-z",
            "--untracked-files=all",
            "--ignore-submodules=dirty",
            "--no-renames",
            "--",
            *rel,
        ).stdout
        return sorted({entry[3:] for entry in out.split("\x00") if len(entry) > 3})

    def last_commit_of(self, relpath: str) -> str | None:
        return (
            self.run("log", "-1", "--format=%H", "--", relpath, check=False).stdout.strip() or None
        )

    def pending_changes(self, tops: Iterable[str] = KNOWLEDGE_COMMIT_DIRS) -> list[tuple[str, str]]:
        """(status, path) of uncommitted changes under TOPS."""
        out = self.run(
            "--no-optional-locks",
            "status",
            "--porcelain=v1",
            "-z",
            "--untracked-files=all",
            "--",
            *tops,
        ).stdout
        entries: list[tuple[str, str]] = []
        parts = out.split("\x00")
        i = 0
        while i < len(parts):
            entry = parts[i]
            i += 1
            if not entry:
                continue
            status, path = entry[:2], entry[3:]
            if status.startswith("R") or status.startswith("C"):
                i += 1  # the source path of a rename follows
            entries.append((status.strip() or "M", path))
        return entries

    def commit_pending(
        self,
        message: str | None = None,
        *,
        session: str | None = None,
        tops: Sequence[str] = KNOWLEDGE_COMMIT_DIRS,
        summarize: Callable[[str, str], str | None] | None = None,
    ) -> CommitResult:
        """Commit pending changes under TOPS (knowledge/, topics/, archive/) with a generated
        message, and nothing else that happens to be staged (nothing if none).

        SUMMARIZE(diff, commit_type), when given, writes the summary line (the Memory facade
        passes the LLM's commit_message stage); None or a failure keeps the deterministic
        one. It is asked OUTSIDE the git lock, from the diff a private copy of the index
        shows, so a slow model never holds the lock a capture's transcript commit needs.
        The lock is then taken and the changes staged; the model's message is used only if
        the staged diff is still the one it described, else the deterministic one is.
        The message goes through the repo's redactor like everything else written to git."""
        self.refuse_during_operation()
        proposed: tuple[str, str, str] | None = None
        if message is None and summarize is not None:
            preview = self._preview_diff(tops)
            if preview is not None and preview[0]:
                diff, numstat = preview
                msg = generate_commit_message(
                    diff,
                    numstat,
                    branch=self.current_branch(),
                    session=session,
                    summarize=summarize,
                )
                proposed = (diff, numstat, msg)
        with self.repo.lock("git"):
            self.refuse_during_operation()
            changes = self.pending_changes(tops)
            held = self.held_out(p for s, p in changes if not s.startswith("D"))
            changes = [(s, p) for s, p in changes if p not in held]
            if not changes:
                return CommitResult(None, "", ())
            self._redact_pending(changes)
            left_out = _excluded(held)
            # the folders that changed: a sparse checkout's missing folder is no pathspec
            self.run(
                "add",
                "-A",
                "--sparse",
                "--",
                *_top_pathspecs(tops, [p for _, p in changes]),
                *left_out,
            )
            diff = self.run("diff", *MESSAGE_DIFF, "--", *tops).stdout
            numstat = self.run("diff", *MESSAGE_NUMSTAT, "--", *tops).stdout
            if message:
                msg = message
            elif proposed is not None and proposed[:2] == (diff, numstat):
                msg = proposed[2]
            else:
                msg = generate_commit_message(
                    diff, numstat, branch=self.current_branch(), session=session
                )
            msg = self.repo.redactor().redact(msg)
            # exactly the staged paths under TOPS (a rename's old and new path both), so a
            # transcript or anything else staged meanwhile is never swept into this commit
            paths = self.run(
                "diff", "--cached", "--name-only", "--no-renames", "-z", "--", *tops, *left_out
            ).stdout.split("\x00")
            paths = [p for p in paths if p]
            if not paths:
                return CommitResult(None, "", ())
            proc = self.run(
                "commit",
                "-q",
                "-F",
                "-",
                "--",
                *_top_pathspecs(tops, paths),
                *left_out,
                input=msg,
                check=False,
            )
            if proc.returncode != 0:
                self.run("reset", "-q", "--", *tops, check=False)
                raise GitError(
                    "The commit was refused:\n" + (proc.stderr.strip() or proc.stdout.strip())
                )
            files = tuple(p for _, p in changes)
            return self._on_a_branch(CommitResult(self.head(), msg, files))

    def _redact_pending(self, changes: Sequence[tuple[str, str]]) -> None:
        """Redact, in place, the secrets of the notes about to be committed (CHANGES: status,
        path), with a warning naming each file: a note a person wrote by hand never went
        through capture or the knowledge writer, which redact everything else before it
        reaches git. A private note (git-crypt: encrypted in git) is left as written, with a
        warning when no git-crypt rule encrypts it. A note written to meanwhile is read
        again: its new lines are not replaced by the redacted copy of its old ones."""
        from autopoiesis.core.private import attribute_patterns, is_private, matches

        redactor = self.repo.redactor()
        private = self.repo.private_patterns()
        encrypted = attribute_patterns(self.root)
        for status, rel in changes:
            if status.startswith("D") or not rel.endswith(".md"):
                continue
            if is_private(rel, private):
                if not matches(rel, encrypted):
                    warnings.warn(
                        f"{rel} is private, but no git-crypt rule encrypts it: it is committed "
                        "in clear here, and no push will take it. Run `autopoiesis private "
                        "init` to encrypt it (docs/private.md).",
                        stacklevel=3,
                    )
                continue
            path = self.root / rel
            for _ in range(5):
                try:
                    if path.is_symlink() or not path.is_file():
                        break
                    with path.open("rb") as before:
                        text = before.read().decode("utf-8")
                        redactor.counts.clear()
                        clean = _markers_quoted(redactor.redact(text))
                        if clean == text:
                            break
                        if not _unchanged(path, text):
                            continue  # written to while it was read: read it again
                        atomic_write(path, clean)
                        # what was appended to the note between that check and the swap went
                        # to the file this one replaced: read from it, redacted, and kept
                        late = before.read().decode("utf-8", "replace")
                        if late:
                            with path.open("a", encoding="utf-8") as now:
                                now.write(redactor.redact(late))
                except (OSError, UnicodeDecodeError):
                    break  # the hook says what is wrong with it
                kinds = ", ".join(sorted(redactor.counts))
                warnings.warn(
                    f"{rel}: redacted what looks like a secret ({kinds}) before committing "
                    "it; the note holds [redacted:KIND] in its place.",
                    stacklevel=3,
                )
                break

    def _preview_diff(self, tops: Sequence[str]) -> tuple[str, str] | None:
        """(diff, numstat) of what `git add -A -- TOPS` would stage, computed in a private
        copy of the index: no lock taken, the real index untouched. None when git fails."""
        import shutil
        import tempfile

        with tempfile.TemporaryDirectory(prefix="autopoiesis-index-") as tmp:
            private = os.path.join(tmp, "index")
            env = {**self._environment(), "GIT_INDEX_FILE": private}

            def git(*args: str) -> subprocess.CompletedProcess[str]:
                return runner.call(self.root, *args, text=True, env=env)

            try:
                shutil.copyfile(
                    self.git_dir() / "index", private
                )  # its stat cache spares re-hashing
            except (OSError, GitError):
                if self.head() is not None and git("read-tree", "HEAD").returncode != 0:
                    return None
            if git("add", "-A", "--sparse", "--", *tops).returncode != 0:
                return None
            diff = git("diff", *MESSAGE_DIFF, "--", *tops)
            numstat = git("diff", *MESSAGE_NUMSTAT, "--", *tops)
            if diff.returncode != 0 or numstat.returncode != 0:
                return None
            return diff.stdout, numstat.stdout


# The staged diff a commit message (and the model that may write its summary) is made from:
# what git stores, not what a text filter shows. git-crypt's filter decrypts a private
# note for `git diff`; its lines became the message's "Learned:" list, in clear in every
# clone and remote, and the summary model's prompt.
MESSAGE_DIFF = ("--cached", "--no-color", "--no-textconv", "-M")
MESSAGE_NUMSTAT = ("--cached", "--numstat", "--no-textconv", "-M")


# a redaction marker where a YAML value begins (after `key: `, a list's `- `, `[` or `, `):
# bare, `title: [redacted:github_token]` reads as a list
_BARE_MARKER = re.compile(r"(?m)(^\s*-\s+|:\s+|\[\s*|,\s*)(\[redacted:[^\]\s]{1,40}\])")


def _markers_quoted(text: str) -> str:
    """TEXT with each redaction marker that begins a value of its frontmatter quoted, so
    the value stays a string."""
    if not text.startswith("---") or "[redacted:" not in text:
        return text
    end = text.find("\n---", 3)
    if end < 0:
        return text
    head = _BARE_MARKER.sub(lambda m: f'{m.group(1)}"{m.group(2)}"', text[:end])
    return head + text[end:]


# git's refusal to take a lock other than the index's (a ref's, a config's, packed-refs')
_OTHER_LOCK = re.compile(r"Unable to create '([^'\n]{1,4000}\.lock)': File exists")


def _unchanged(path: Path, text: str) -> bool:
    """Whether PATH still holds TEXT (a note a person may be writing to meanwhile)."""
    try:
        return path.read_text(encoding="utf-8") == text
    except (OSError, UnicodeDecodeError):
        return False


def _excluded(paths: Sequence[str]) -> list[str]:
    """Pathspecs that leave PATHS out of a command over whole folders (a file's name taken
    as it is, not as a pattern)."""
    return [f":(exclude,literal){p}" for p in paths]


def _top_pathspecs(tops: Sequence[str], paths: Sequence[str]) -> list[str]:
    """The folders of TOPS that hold one of PATHS (a pathspec git knows: a folder with
    nothing in it, on disk or in history, would make `git commit -- DIR` fail)."""
    return [t for t in tops if any(p == t or p.startswith(t.rstrip("/") + "/") for p in paths)]


def _memorys_own(relpath: str) -> bool:
    """Whether RELPATH is one of the memory's own Markdown files (a transcript, a note, a
    topic), which it commits whatever a .gitignore says."""
    return relpath.endswith(".md") and relpath.split("/", 1)[0] in CONTENT_DIRS


# "N units ago", read here and not by git: git's reading of a large N wraps around or
# overflows ("60 years ago" it read as a time past 2^63, "5000 weeks ago" as 2067, "2300
# months ago" as March of this year), so `show-at` showed today's note as one of long ago
# and `learned --since` said nothing had been learned
TIME_AGO = re.compile(r"(\d{1,9}) +(second|minute|hour|day|week|month|year)s? +ago", re.IGNORECASE)
_UNIT_SECONDS = {"second": 1, "minute": 60, "hour": 3600, "day": 86_400, "week": 604_800}


def _time_ago(value: str) -> int | None:
    """VALUE, "N units ago", as Unix time counted back from now (months and years by the
    calendar, as git counts them; before the year 1, the year 1); None when it is not one."""
    import calendar
    from datetime import UTC, datetime

    found = TIME_AGO.fullmatch(value)
    if found is None:
        return None
    count, unit = int(found[1]), found[2].lower()
    now = datetime.now(UTC)
    if unit in _UNIT_SECONDS:
        back = count * _UNIT_SECONDS[unit]
        return int(now.timestamp()) - back
    months = now.year * 12 + now.month - 1 - count * (12 if unit == "year" else 1)
    year, month = divmod(months, 12)
    if year < 1:
        return int(datetime(1, 1, 1, tzinfo=UTC).timestamp())
    day = min(now.day, calendar.monthrange(year, month + 1)[1])
    return int(now.replace(year=year, month=month + 1, day=day).timestamp())


def _numeric_day(value: str) -> int | None:
    """VALUE, a day or a month in numbers, year first ("2026-1-5", "2026/01/05",
    "2026.1.5"; "2026-11" for its first day), as the Unix time of its 00:00 UTC; None for
    any other numbers (a day before its month is read one way in one country and the
    other way in the next) and for a day the calendar has not."""
    from datetime import UTC, datetime

    found = re.fullmatch(r"(\d{4})[-/.](\d{1,2})(?:[-/.](\d{1,2}))?", value)
    if found is None:
        return None
    try:
        day = datetime(int(found[1]), int(found[2]), int(found[3] or 1), tzinfo=UTC)
    except ValueError:
        return None
    return int(day.timestamp())


def _iso_time(value: str) -> int | None:
    """VALUE, a YYYY-MM-DD day (its 00:00 UTC) or an ISO time (naive: UTC), as Unix time;
    None when it is neither."""
    from datetime import UTC, datetime

    if not re.match(r"\d{4}-\d\d-\d\d", value):
        return None
    try:
        read = datetime.fromisoformat(value)
    except ValueError:
        return None
    return int((read if read.tzinfo else read.replace(tzinfo=UTC)).timestamp())
