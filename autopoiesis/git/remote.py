"""The remote side of MemoryGit: fetch, ls-remote, push and merge (`autopoiesis sync`).

Network commands never wait for a person at a prompt and end with a GitError after a
timeout; a merge runs git's own `merge --no-commit` (so the knowledge merge driver runs)
and commits through the hooks.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from autopoiesis.errors import GitError
from autopoiesis.git.commits import GitCore

STALL_SECONDS = 15  # a remote that sends nothing for this long is given up on (HTTP, ssh)

# What git says when a ref moved on the remote between this clone's fetch and its push:
# "fetch first" and "non-fast-forward" when git saw it before sending, "failed to update
# ref" (a bare repo: `cannot lock ref ...: is at X but expected Y`), "failed to lock" (git
# over HTTP), "stale info" and "incorrect old value" (a lease) when two pushes crossed on
# the remote. Each is a race another clone won: fetch, merge, push again.
RACE_REASONS = (
    "fetch first",
    "non-fast-forward",
    "failed to update ref",
    "failed to lock",
    "cannot lock ref",
    "stale info",
    "incorrect old value",
)


def is_race(reason: str) -> bool:
    """Whether git's REASON for refusing a push says the remote moved meanwhile."""
    return any(r in reason for r in RACE_REASONS)


@dataclass
class PushResult:
    """What `git push --porcelain` said: each ref that moved (with git's flag and summary),
    each ref the remote refused (with the reason), and git's own messages."""

    ok: bool
    updated: list[tuple[str, str]] = field(default_factory=list)
    rejected: list[tuple[str, str]] = field(default_factory=list)
    stderr: str = ""


@dataclass(frozen=True)
class MergeResult:
    """KIND: "up-to-date", "fast-forward", "merged" (a merge commit) or "conflict"; HEAD
    afterwards; the paths the merge changed, or the paths in conflict."""

    kind: str
    head: str | None
    changed: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    aborted: bool = False


@dataclass
class ForcedPush:
    """A forced push that replaces a remote's old history: LEASES (`REF:OBJECT`: force REF
    only while the remote still holds OBJECT) and REFSPECS; NEWER, (ref, object, peeled
    commit) of the remote's refs outside the old history; STALE, remote refs into the old
    history this clone has no ref for; LOCAL, this clone's {ref: object}."""

    local: dict[str, str]
    leases: list[str] = field(default_factory=list)
    refspecs: list[str] = field(default_factory=list)
    newer: list[tuple[str, str, str]] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)

    def force(self, ref: str, sha: str) -> None:
        """Overwrite REF while the remote holds SHA, or note it stale when this clone lacks REF."""
        if ref in self.local:
            self.leases.append(f"{ref}:{sha}")
            self.refspecs.append(f"{ref}:{ref}")
        else:
            self.stale.append(ref)

    def force_newer(self) -> None:
        """Lease the NEWER refs too (their work is on this clone already)."""
        for ref, sha, _ in self.newer:
            self.force(ref, sha)

    def include(self, ref: str) -> None:
        """Push REF (the branch) even where no lease forces it."""
        if ref not in {r.split(":", 1)[0] for r in self.refspecs}:
            self.refspecs.append(f"{ref}:{ref}")


class RemoteMixin(GitCore):
    """Remotes: fetch, ls-remote, push, merge."""

    # ── remotes: fetch, merge, push (autopoiesis sync) ──
    def remote_url(self, name: str) -> str | None:
        """The URL of the remote NAME, or None when there is no such remote."""
        if not name or name.startswith("-"):
            return None
        proc = self.run("remote", "get-url", "--", name, check=False)
        return (proc.stdout.strip() or None) if proc.returncode == 0 else None

    def remote_names(self) -> list[str]:
        return self.run("remote", check=False).stdout.split()

    def upstream_remote(self, branch: str) -> str | None:
        """The remote BRANCH tracks (`branch.BRANCH.remote`), or None."""
        return (
            self.run("config", "--get", f"branch.{branch}.remote", check=False).stdout.strip()
            or None
        )

    def _network_env(self) -> None:
        """Never wait for a person at a prompt: no terminal credential prompt, and ssh in
        batch mode (unless the user configured their own ssh command). Never wait long for
        a remote that stopped answering: over HTTP, a transfer under 1 byte a second for
        STALL_SECONDS ends (git's low-speed limit; a server busy packing sends keep-alives
        meanwhile), and ssh gives up on a connection that has not answered for as long;
        the caller's timeout bounds the rest (git://, a hung file system)."""
        env = self._environment()
        env["GIT_TERMINAL_PROMPT"] = "0"
        env.setdefault("GIT_HTTP_LOW_SPEED_LIMIT", "1")
        env.setdefault("GIT_HTTP_LOW_SPEED_TIME", str(STALL_SECONDS))
        if (
            not any(k in env for k in ("GIT_SSH_COMMAND", "GIT_SSH"))
            and not self.run("config", "--get", "core.sshCommand", check=False).stdout.strip()
        ):
            env["GIT_SSH_COMMAND"] = (
                f"ssh -o BatchMode=yes -o ConnectTimeout={STALL_SECONDS} "
                f"-o ServerAliveInterval=5 -o ServerAliveCountMax={STALL_SECONDS // 5}"
            )

    def fetch(self, remote: str, *, timeout: float = 120) -> None:
        """`git fetch REMOTE` (its branches into refs/remotes/REMOTE/, and the tags that
        point into them; a tag this repo already has under the same name is kept). Never
        into submodules: a team is mounted only by `team add`, and git reads the work
        tree's `.gitmodules` to recurse, where a pulled entry git cannot parse (`update =
        !cmd`) stopped every later fetch."""
        self._network_env()
        proc = self.run(
            "fetch", "--quiet", "--no-recurse-submodules", remote, check=False, timeout=timeout
        )
        if proc.returncode != 0:
            raise GitError(_last_lines(proc.stderr or proc.stdout))

    def ls_remote(self, remote: str, *, timeout: float = 120) -> dict[str, str]:
        """{ref: object} of the branches and tags REMOTE holds (peeled tags as `REF^{}`),
        read without fetching any object."""
        self._network_env()
        proc = self.run("ls-remote", "--heads", "--tags", remote, check=False, timeout=timeout)
        if proc.returncode != 0:
            raise GitError(_last_lines(proc.stderr or proc.stdout))
        refs = {}
        for line in proc.stdout.splitlines():
            sha, _, ref = line.partition("\t")
            if ref:
                refs[ref] = sha
        return refs

    def push(
        self,
        remote: str,
        refspecs: Sequence[str],
        *,
        follow_tags: bool = True,
        set_upstream: bool = False,
        force_with_lease: Sequence[str] = (),
        timeout: float = 120,
    ) -> PushResult:
        """`git push --porcelain REMOTE REFSPECS...`: what each ref did. The pre-push hook
        runs (it refuses a history that fails verify). A refspec starting with `+` forces
        that ref; FORCE_WITH_LEASE (`REF:EXPECTED`) forces a ref only while the remote
        still holds EXPECTED."""
        self._network_env()
        args = (
            ["push", "--porcelain"]
            + (["--follow-tags"] if follow_tags else [])
            + (["-u"] if set_upstream else [])
        )
        args += [f"--force-with-lease={lease}" for lease in force_with_lease]
        proc = self.run(*args, "--", remote, *refspecs, check=False, timeout=timeout)
        result = PushResult(ok=proc.returncode == 0, stderr=proc.stderr.strip())
        for line in proc.stdout.splitlines():
            parts = line.split("\t")
            if len(parts) >= 3 and len(parts[0]) == 1:
                flag, (_, _, dst), summary = parts[0], parts[1].partition(":"), parts[2]
                (result.rejected if flag == "!" else result.updated).append(
                    (dst, summary if flag == "!" else flag + summary)
                )
        return result

    def merge_in_progress(self) -> bool:
        return (self.index_lock_path().parent / "MERGE_HEAD").exists()

    def unmerged_paths(self) -> list[str]:
        """Paths with unresolved conflicts (of a merge in progress)."""
        out = self.run("diff", "--name-only", "--diff-filter=U", "-z", check=False).stdout
        return sorted({p for p in out.split("\x00") if p})

    def merge(
        self,
        ref: str,
        message: str,
        *,
        before_commit: Callable[[], Sequence[str]] | None = None,
        abort_on_conflict: bool = False,
    ) -> MergeResult:
        """Merge REF into the current branch (`git merge --no-commit`, so the custom merge
        driver of knowledge files runs, then `git commit`, so the pre-commit hook checks
        the merged files). BEFORE_COMMIT runs once the merge is clean and not committed
        yet; it may change files (caps) and returns the paths to stage with it.

        Conflicts leave the merge in progress for a person (or, with ABORT_ON_CONFLICT, are
        undone with `git merge --abort`); the result lists them. A merge git refuses to
        start (local changes it would overwrite, unrelated histories) raises GitError and
        changes nothing. Holds the git lock (captures' commits wait) and the knowledge
        writer's lock (no entry is written into a file git is rewriting)."""
        with self.repo.writer_lock(), self.repo.lock("git"):
            self.clear_stale_index_lock()
            before = self.head()
            proc = self.run("merge", "--no-commit", "--ff", "-m", message, ref, check=False)
            if not self.merge_in_progress():
                if proc.returncode != 0:
                    raise GitError(_last_lines(proc.stderr or proc.stdout, 12))
                after = self.head()
                kind = "up-to-date" if after == before else "fast-forward"
                return MergeResult(kind, after, changed=self._changed_between(before, after))
            conflicts = self.unmerged_paths()
            if conflicts:
                if abort_on_conflict:
                    self.run("merge", "--abort", check=False)
                return MergeResult(
                    "conflict", before, conflicts=conflicts, aborted=abort_on_conflict
                )
            extra = list(before_commit()) if before_commit else []
            if extra:
                self.run("add", "-A", "--", *extra)
            done = self.run("commit", "--no-edit", "-q", check=False)
            if done.returncode != 0:
                self.run("merge", "--abort", check=False)
                raise GitError(
                    "the merge was refused, so it was undone (nothing changed):\n"
                    + _last_lines(done.stderr or done.stdout, 20)
                )
            after = self.head()
            return MergeResult("merged", after, changed=self._changed_between(before, after))

    def conclude_merge(
        self, *, before_commit: Callable[[], Sequence[str]] | None = None
    ) -> MergeResult:
        """Commit a merge in progress whose conflicts a person resolved (and staged)."""
        with self.repo.writer_lock(), self.repo.lock("git"):
            before = self.head()
            conflicts = self.unmerged_paths()
            if conflicts:
                return MergeResult("conflict", before, conflicts=conflicts)
            extra = list(before_commit()) if before_commit else []
            if extra:
                self.run("add", "-A", "--", *extra)
            done = self.run("commit", "--no-edit", "-q", check=False)
            if done.returncode != 0:
                raise GitError(
                    "the commit of the merge was refused (the merge is still in progress; fix "
                    "what the "
                    "hook names, `git add` it, and run `autopoiesis sync` again, or give up the "
                    "merge with "
                    "`git merge --abort`):\n" + _last_lines(done.stderr or done.stdout, 20)
                )
            after = self.head()
            return MergeResult("merged", after, changed=self._changed_between(before, after))

    def _changed_between(self, old: str | None, new: str | None) -> list[str]:
        if not old or not new or old == new:
            return []
        out = self.run("diff", "--name-only", "--no-renames", "-z", old, new, check=False).stdout
        return [p for p in out.split("\x00") if p]

    def incoming_paths(self, ours: str, theirs: str) -> list[str]:
        """The paths THEIRS changed since its common base with OURS and that OURS does not
        hold as THEIRS does yet: what a merge of THEIRS brings in."""
        diff = ("diff", "--name-only", "--no-renames", "-z")
        changed_there = self.run(*diff, f"{ours}...{theirs}").stdout.split("\x00")
        differs = set(self.run(*diff, ours, theirs).stdout.split("\x00"))
        return sorted(p for p in changed_there if p and p in differs)

    def share_history(self, a: str, b: str) -> bool:
        """Whether commits A and B have a common ancestor."""
        return self.run("merge-base", a, b, check=False).returncode == 0

    def commits_matching(self, pattern: str, tip: str, exclude: str) -> list[tuple[str, str]]:
        """(commit, subject) of the commits of TIP's history that EXCLUDE lacks and whose
        message matches PATTERN (`git log --grep`), newest first."""
        out = self.run(
            "log", "--format=%H %s", f"--grep={pattern}", tip, "--not", exclude, check=False
        ).stdout
        found = (line.partition(" ") for line in out.splitlines() if line.strip())
        return [(sha, subject) for sha, _, subject in found]

    def annotated_tags_in_head(self) -> list[str]:
        """The annotated tags (refs/tags/...) on commits of HEAD's history: what
        `push --follow-tags` sends along."""
        out = self.run(
            "for-each-ref", "--merged", "HEAD", "--format=%(objecttype) %(refname)", "refs/tags/"
        ).stdout
        return [line.split(" ", 1)[1] for line in out.splitlines() if line.startswith("tag ")]

    # ── replacing a remote's history after a rewrite (`sync --force-after-forget`) ──
    def local_tips(self) -> dict[str, str]:
        """{ref: object} of every local branch and tag."""
        out = self.run(
            "for-each-ref", "--format=%(objectname) %(refname)", "refs/heads/", "refs/tags/"
        ).stdout
        return dict(line.split(" ", 1)[::-1] for line in out.splitlines())

    def plan_forced_push(
        self, remote_refs: dict[str, str], old_commits: set[str], old_objects: set[str]
    ) -> ForcedPush:
        """How to replace the old history on a remote holding REMOTE_REFS (from
        ls_remote): each ref at an object of the old history (OLD_OBJECTS, OLD_COMMITS when
        peeled) is forced with a lease on that object, or is stale when this clone has no
        such ref; a ref at anything else that this clone's ref does not contain is newer."""
        plan = ForcedPush(local=self.local_tips())
        for ref, sha in sorted(remote_refs.items()):
            if ref.endswith("^{}") or plan.local.get(ref) == sha:
                continue
            peeled = remote_refs.get(ref + "^{}", sha)
            if sha in old_objects or peeled in old_commits:
                plan.force(ref, sha)
            elif not (
                ref in plan.local and self.rev(sha) and self.is_ancestor(sha, plan.local[ref])
            ):
                plan.newer.append((ref, sha, peeled))
        return plan

    def commits_not_carried(
        self,
        newer: Sequence[tuple[str, str, str]],
        local_tip: str,
        old_commits: set[str],
        old_objects: set[str],
    ) -> list[str]:
        """The commits of NEWER remote refs ((ref, object, peeled commit), fetched) outside
        the old history that LOCAL_TIP has no equivalent of (same change, by `git cherry`'s
        patch ids): the work a forced push would drop. A commit this clone lacks counts."""
        carry: list[str] = []
        for _, _sha, peeled in newer:
            if self.rev(peeled) is None:
                carry.append(peeled)
                continue
            known_old = sorted(o for o in old_objects if self.rev(o))
            walked = self.run(
                "rev-list",
                "--no-merges",
                "--reverse",
                "--ignore-missing",
                peeled,
                "--not",
                *known_old,
                check=False,
            ).stdout.split()
            new = [c for c in walked if c not in old_commits]
            if not new:
                continue
            cherry = self.run("cherry", local_tip, peeled, check=False).stdout.splitlines()
            missing = {line[2:] for line in cherry if line.startswith("+ ")}
            carry += [c for c in new if c in missing and c not in carry]
        return carry

    def drop_unreachable_objects(self) -> None:
        """Expire every reflog and prune what nothing refers to (old objects a fetch
        brought back after a rewrite). Raises GitError when git could not: the objects
        are still there, and the caller must say so."""
        self.run("reflog", "expire", "--expire=now", "--expire-unreachable=now", "--all")
        self.run("gc", "--prune=now", "--quiet")


def _last_lines(text: str, n: int = 4) -> str:
    """The last N non-empty lines of git's message (the reason is at the end)."""
    lines = [l for l in text.strip().splitlines() if l.strip()]
    return "\n".join(lines[-n:]) or "git gave no reason"
