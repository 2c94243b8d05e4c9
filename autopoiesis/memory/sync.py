"""`autopoiesis sync`: pull from and push to a git remote (a bare repo, GitHub, Gitea).

Git is the distributed engine; this module only decides the order and refuses what would
lose or resurrect something. One round (`sync_once`):

1. a merge a person left resolved is committed (caps re-applied first);
2. the merge driver is registered (`.git/config`, and `.gitattributes` for a repo made
   before it existed: committed as a `maintenance:` commit);
3. pending work is committed, so nothing uncommitted can be lost or block the merge:
   finished transcripts (`conversation:`), then knowledge/, topics/, archive/ (`memory:`);
4. a history `autopoiesis forget` rewrote and did not push yet stops the round (a pull
   would bring the forgotten text back) unless `force_after_forget` is given; then the
   rewritten branches and tags are force-pushed, only where the remote holds nothing but
   the old history (verify's record of the rewrite lists its commits);
5. pull: `git fetch`, checks of what came in (a remote rewritten since the last fetch,
   a forget on either side, unrelated histories, incoming commits that alter
   transcripts), then `git merge`: knowledge files entry by entry (app/merge_driver.py),
   raw/ never conflicts (a transcript's path holds its session id). Caps are re-applied
   to the merged files before the merge is committed: MEMORY.md over the writer's line cap
   has its overflow moved to archive/ by the pruner, as `autopoiesis prune` does;
6. push: `git push --follow-tags` (the pre-push hook verifies the history); refused
   because the remote moved meanwhile, the round pulls again (three tries).

A conflict in text (not entries) stops the round with the files and the commands to
finish; nothing is resolved silently. Every stop raises a SyncError whose message says
what happened and what to run; the repo is left as it was or in git's ordinary
merge-in-progress state, never half-written.

`git.auto_push` is kept here (`push_after_commit`): `autopoiesis commit` syncs after it
commits. Capture does not push inline: a push is a network round trip (and a timeout
against an unreachable remote) on the path that closes a session, and 32 sessions
closing at once would race each other into rejected pushes. The daemon's sync job pushes
after commits; without the daemon, `autopoiesis commit` or `autopoiesis sync` (from cron)
push.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from autopoiesis.core.paths import CONVERSATIONS_DIR, MEMORY_FILE, MemoryRepo
from autopoiesis.errors import AutopoiesisError, GitError, SyncConflictError, SyncError
from autopoiesis.git.remote import ForcedPush
from autopoiesis.git.repo import MemoryGit, MergeResult

DEFAULT_REMOTE = "origin"
NETWORK_TIMEOUT = 120.0  # seconds for one fetch, ls-remote or push
PUSH_TRIES = 3
FORGET_SUBJECT = "^maintenance: forget "  # app/forget.py's record commit


@dataclass
class SyncReport:
    """What one sync round did."""

    remote: str
    url: str
    branch: str
    committed: list[str] = field(
        default_factory=list
    )  # "sha subject" of commits made before pulling
    setup: list[str] = field(default_factory=list)  # what registering the merge driver changed
    fetched: bool = False
    merge: str = "skipped"  # skipped | no remote branch | up-to-date | fast-forward | merged
    merge_commit: str | None = None
    incoming: list[str] = field(default_factory=list)  # files the pull changed
    capped: list[str] = field(default_factory=list)  # what re-applying the caps did
    pushed: list[str] = field(default_factory=list)  # refs the push moved
    forced: list[str] = field(default_factory=list)  # refs force-pushed after a forget
    warnings: list[str] = field(default_factory=list)

    @property
    def incoming_transcripts(self) -> int:
        return sum(
            p.startswith(CONVERSATIONS_DIR + "/") and p.endswith(".md") for p in self.incoming
        )

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "incoming_transcripts": self.incoming_transcripts}

    def lines(self) -> list[str]:
        out = [f"sync {self.branch} with {self.remote} ({self.url})"]
        out += [f"  {s}" for s in self.setup]
        out += [f"  committed {c[:10]} {c[41:]}" for c in self.committed]
        out += [f"  force-pushed after forget: {r}" for r in self.forced]
        if self.merge == "skipped":
            pass
        elif self.merge in ("fast-forward", "merged"):
            others = len(self.incoming) - self.incoming_transcripts
            what = (
                f"{_count(self.incoming_transcripts, 'transcript')}, {_count(others, 'other file')}"
            )
            how = "fast-forwarded" if self.merge == "fast-forward" else "merged"
            out.append(
                f"  pulled: {how} {what}"
                + (f" -> {self.merge_commit[:10]}" if self.merge_commit else "")
            )
        else:
            out.append(f"  pulled: {self.merge}")
        out += [f"  cap: {c}" for c in self.capped]
        if self.pushed:
            out.append(f"  pushed: {', '.join(self.pushed)}")
        elif self.merge != "skipped" or self.fetched:
            out.append("  pushed: nothing new")
        return out


def _count(n: int, what: str) -> str:
    return f"{n} {what}{'' if n == 1 else 's'}"


def sync_once(
    repo: MemoryRepo,
    *,
    pull: bool = True,
    push: bool = True,
    remote: str | None = None,
    force_after_forget: bool = False,
    abort_on_conflict: bool = False,
    timeout: float = NETWORK_TIMEOUT,
) -> SyncReport:
    """One sync round with REMOTE (default: the branch's upstream, else origin); see the
    module doc. ABORT_ON_CONFLICT undoes a conflicting merge instead of leaving it for a
    person (what unattended callers want: the daemon, `autopoiesis commit`'s auto_push).
    Raises SyncError (SyncConflictError for conflicts) with what to do."""
    git = MemoryGit(repo)
    branch = git.current_branch()
    if not branch:
        raise SyncError(
            "HEAD is not on a branch (detached), so there is nothing to sync; check out the "
            "memory branch "
            "first (`git checkout main`)."
        )
    name = remote or git.upstream_remote(branch) or DEFAULT_REMOTE
    url = git.remote_url(name)
    if url is None:
        have = git.remote_names()
        others = f" (this repo has: {', '.join(have)}; pick one with --remote NAME)" if have else ""
        raise SyncError(
            f"no remote named {name!r}{others}. Add one with `git remote add {name} URL` (a bare "
            "repo, "
            "GitHub or Gitea; e.g. `git remote add origin git@github.com:me/memory.git`), then run "
            "`autopoiesis sync`."
        )
    redact = (
        repo.redactor().redact
    )  # a URL may hold a token (https://user:TOKEN@host/...): never shown, never logged
    report = SyncReport(name, redact(url), branch)
    lock = repo.lock("sync")
    if not lock.acquire(timeout=timeout):
        raise SyncError(
            f"another sync of {repo.root} has been running for {timeout:g} s; wait for it, then "
            "retry."
        )
    try:
        _refuse_other_operations(git)
        if git.merge_in_progress():
            _finish_merge(repo, git, report, name)
        _setup(repo, git, report)
        _commit_pending(repo, git, report)
        pending = _pending_rewrites(repo, report.url)
        if force_after_forget:
            _push_rewrite(repo, git, report, pending, timeout)
        elif pending:
            raise SyncError(_unpushed_forget(name, report.url, branch, pending))
        for attempt in range(PUSH_TRIES):
            if pull:
                _pull(repo, git, report, timeout, abort_on_conflict)
            if not push or _push(git, report, timeout, retry=pull and attempt + 1 < PUSH_TRIES):
                break
    except SyncError as exc:  # git's own messages may quote the URL
        exc.args = tuple(redact(a) if isinstance(a, str) else a for a in exc.args)
        raise
    finally:
        lock.release()
    report.warnings = [redact(w) for w in report.warnings]
    return report


def push_after_commit(repo: MemoryRepo) -> tuple[SyncReport | None, str | None]:
    """What `git.auto_push` promises, after a commit: a sync round with the remote, with
    conflicts undone rather than left for a person. (report, None) after a sync; (None,
    warning) when it could not sync (the commit stands either way); (None, None) when
    auto_push is off."""
    if not repo.config.git.auto_push:
        return None, None
    try:
        return sync_once(repo, abort_on_conflict=True), None
    except AutopoiesisError as exc:
        return None, f"git.auto_push: the commit stands, but it was not pushed: {exc}"


# ── the steps ──
def _refuse_other_operations(git: MemoryGit) -> None:
    gitdir = git.index_lock_path().parent
    for marker, what, abort in (
        ("rebase-merge", "a rebase", "git rebase --abort"),
        ("rebase-apply", "a rebase or `git am`", "git rebase --abort"),
        ("CHERRY_PICK_HEAD", "a cherry-pick", "git cherry-pick --abort"),
        ("REVERT_HEAD", "a revert", "git revert --abort"),
    ):
        if (gitdir / marker).exists():
            raise SyncError(
                f"{what} is in progress in {git.root}; finish it, or undo it with `{abort}`, then "
                "run "
                "`autopoiesis sync` again."
            )


def _finish_merge(repo: MemoryRepo, git: MemoryGit, report: SyncReport, name: str) -> None:
    """A merge left in progress (by an earlier sync that hit a conflict, or by hand):
    commit it once every conflict is resolved, else stop and say what is left."""
    left = git.unmerged_paths()
    if left:
        raise SyncConflictError(
            _conflict_message(name, report.branch, left, aborted=False, resumed=True), left
        )
    result = git.conclude_merge(before_commit=lambda: _enforce_caps(repo, report, commit=False))
    report.merge, report.merge_commit = result.kind, result.head
    report.incoming = sorted(result.changed)
    _check_merged(repo, report)


def _setup(repo: MemoryRepo, git: MemoryGit, report: SyncReport) -> None:
    """The merge driver, registered; and its .gitattributes lines in a repo made before it."""
    from autopoiesis.git.merge_driver import install
    from autopoiesis.memory.initialize import InitReport, merge_gitattributes

    report.setup += install(repo.root)
    added = InitReport(repo.root)
    merge_gitattributes(repo.root, added)
    if added.changed:
        done = git.commit_paths(
            [".gitattributes"],
            "maintenance: merge knowledge files entry by entry\n\n"
            "Knowledge and archive files use the autopoiesis merge driver (union by entry id); "
            "transcripts are never merged line by line.\n",
        )
        if done.sha:
            report.committed.append(f"{done.sha} {done.message.splitlines()[0]}")


def _commit_pending(repo: MemoryRepo, git: MemoryGit, report: SyncReport) -> None:
    from autopoiesis.memory.commit import commit_knowledge

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for done in (git.commit_finished_transcripts(), commit_knowledge(repo)):
            if done.sha:
                report.committed.append(f"{done.sha} {done.message.splitlines()[0]}")
    report.warnings += [str(w.message) for w in caught]


def _pull(
    repo: MemoryRepo, git: MemoryGit, report: SyncReport, timeout: float, abort_on_conflict: bool
) -> None:
    name, branch = report.remote, report.branch
    tracking = f"refs/remotes/{name}/{branch}"
    before = git.rev(tracking)
    try:
        git.fetch(name, timeout=timeout)
    except GitError as exc:
        raise SyncError(_unreachable(name, report.url, "fetch from", exc)) from None
    report.fetched = True
    theirs = git.rev(tracking)
    if theirs is None:
        report.merge = "no remote branch"  # an empty remote: the push creates it
        return
    ours = git.head() or ""
    if git.is_ancestor(theirs, ours):
        report.merge = "up-to-date" if report.merge == "skipped" else report.merge
        return
    _check_incoming(repo, git, report, before, theirs, ours)
    incoming = git.incoming_paths(ours, theirs)
    report.incoming = incoming  # what the caps are re-checked on
    n_transcripts = sum(p.startswith(CONVERSATIONS_DIR + "/") for p in incoming)
    message = (
        f"maintenance: merge {name}/{branch} ({_count(n_transcripts, 'transcript')}, "
        f"{_count(len(incoming) - n_transcripts, 'other file')})"
        "\n\nautopoiesis sync: knowledge files merged entry by entry (union by id, supersede "
        "chains kept), caps "
        "re-applied.\n"
    )

    def merge() -> MergeResult:
        return git.merge(
            f"{tracking}",
            message,
            abort_on_conflict=abort_on_conflict,
            before_commit=lambda: _enforce_caps(repo, report, commit=False),
        )

    try:
        result = merge()
    except GitError as exc:
        if "would be overwritten" not in str(exc):
            raise SyncError(
                f"git refused to merge {name}/{branch}; nothing was merged or pushed:\n{exc}\n"
                "Commit or stash the files it names (`git status` shows them), then run "
                "`autopoiesis sync` "
                "again."
            ) from None
        _commit_pending(
            repo, git, report
        )  # something wrote knowledge since: commit it, then merge once more
        try:
            result = merge()
        except GitError as again:
            raise SyncError(
                f"git refused to merge {name}/{branch}; nothing was merged or pushed:\n{again}\n"
                "Commit or stash the files it names (`git status` shows them), then run "
                "`autopoiesis sync` "
                "again."
            ) from None
    if result.kind == "conflict":
        raise SyncConflictError(
            _conflict_message(name, branch, result.conflicts, aborted=result.aborted),
            result.conflicts,
        )
    report.merge = result.kind
    report.merge_commit = result.head
    report.incoming = sorted(result.changed)
    if result.kind == "fast-forward":
        _enforce_caps(
            repo, report, commit=True
        )  # a remote merged by plain git may hold an over-cap MEMORY.md
    _check_merged(repo, report)


def _check_incoming(
    repo: MemoryRepo, git: MemoryGit, report: SyncReport, before: str | None, theirs: str, ours: str
) -> None:
    """Refuse to merge what would lose or resurrect something; see the module doc."""
    from autopoiesis.git.verify import transcripts_at, walk

    name, branch, url = report.remote, report.branch, report.url
    remote_forgets = _forget_commits(git, theirs, ours)
    if remote_forgets:
        since = (
            f"`git log --oneline {before}..{branch}`"
            if before
            else f"`git log --oneline {name}/{branch}..{branch}`"
        )
        raise SyncError(
            f"{name}/{branch} was rewritten by `autopoiesis forget` on another clone "
            f"({remote_forgets[0]}), and this clone "
            "still holds the old history: a merge would bring back what was forgotten, and a push "
            "would put it on the "
            "remote again. Nothing was merged or pushed. Re-clone the memory (`git clone "
            f"{url} NEW && autopoiesis init NEW`) and carry over what this clone has that the "
            f"remote lacks ({since} "
            "lists it): copy new transcripts under raw/ into the new clone as they are and run "
            "`autopoiesis commit` "
            "there; extraction rebuilds their knowledge."
        )
    if before and before != theirs and not git.is_ancestor(before, theirs):
        raise SyncError(
            f"{name}/{branch} was rewritten (force-pushed): it no longer contains {before[:12]}, "
            "the commit this clone "
            "fetched last time. Sync does not merge a rewritten history (it could bring back what "
            "the rewrite removed). "
            "Nothing was merged or pushed. Compare with `git log --oneline --left-right "
            f"{before[:12]}...{name}/{branch}`; "
            f"if the rewrite is right, re-clone (`git clone {url} NEW && autopoiesis init NEW`); "
            "if it is wrong, restore "
            f"the remote from this clone with `git push --force-with-lease {name} {branch}`."
        )
    if not git.share_history(ours, theirs):
        raise SyncError(
            f"{name}/{branch} shares no history with this clone's {branch}: it is another "
            "repository (was this clone made "
            "with `autopoiesis init` instead of `git clone`?). Nothing was merged or pushed. "
            "Clone the remote instead "
            f"(`git clone {url} NEW && autopoiesis init NEW`) and copy this clone's transcripts "
            "under raw/ into it, or "
            "point the remote elsewhere (`git remote set-url`)."
        )
    local_forgets = _forget_commits(git, ours, theirs)
    if local_forgets:
        raise SyncError(
            f"this clone's history was rewritten by `autopoiesis forget` ({local_forgets[0]}) and "
            f"{name}/{branch} does not "
            "have the rewrite: it still holds the old history, which a merge would bring back. "
            "Nothing was merged or "
            "pushed. This clone has no record of a sanctioned forget to push "
            "(.autopoiesis/verify/rewrites.json), so "
            "sync will not force-push. If the remote must hold this clone's history: `git push "
            "--force-with-lease "
            f"{name} {branch}`, then have every collaborator re-clone."
        )
    findings = walk(repo.root, theirs, [ours], transcripts_at(repo.root, ours)).findings
    if findings:
        shown = "\n".join(f"  {f}" for f in findings[:10]) + (
            f"\n  … and {len(findings) - 10} more" if len(findings) > 10 else ""
        )
        raise SyncError(
            f"{name}/{branch} holds commits that change transcripts this clone has (transcripts "
            f"are immutable):\n{shown}\n"
            "Nothing was merged or pushed. A transcript both sides added with different content "
            "means two sessions "
            "shared one id; inspect with `git log --stat "
            + f"{ours[:12]}..{name}/{branch} -- raw/` and fix it on the "
            "clone that made it."
        )


def _forget_commits(git: MemoryGit, tip: str, exclude: str) -> list[str]:
    """`sha (subject)` of the forget records in TIP's history that EXCLUDE lacks."""
    found = git.commits_matching(FORGET_SUBJECT, tip, exclude)
    return [f"commit {sha[:12]} ({subject!r})" for sha, subject in found]


def _enforce_caps(repo: MemoryRepo, report: SyncReport, *, commit: bool) -> list[str]:
    """Re-apply the writer's caps to merged knowledge: MEMORY.md over its line cap has its
    overflow moved to archive/ by the pruner (no entry is lost); a file over the byte cap
    is reported (condensing it is a person's or the condenser's call). Returns the paths
    it changed."""
    from autopoiesis.knowledge.writer import KnowledgeWriter

    writer = KnowledgeWriter(repo)
    changed: list[str] = []
    doc = writer.read(MEMORY_FILE)
    if doc is not None and writer.cap_violation(MEMORY_FILE, doc, bytes_too=False):
        from autopoiesis.knowledge.prune import MemoryPruner

        result = MemoryPruner(repo, writer=writer).prune_memory(commit=commit)
        report.capped += list(result.actions)
        changed += list(result.paths)
        if result.commit:
            report.committed.append(f"{result.commit} maintenance: cap MEMORY.md after the merge")
    for rel in report.incoming:
        if rel.startswith("knowledge/") and rel.endswith(".md") and (repo.root / rel).is_file():
            found = writer.read(rel)
            why = (
                writer.cap_violation(rel, found, bytes_too=True)
                if found is not None and rel != MEMORY_FILE
                else None
            )
            if why:
                report.warnings.append(f"{rel}: {why}")
    return changed


def _check_merged(repo: MemoryRepo, report: SyncReport) -> None:
    """What the post-merge hook does, also where hooks are off: verify the branch."""
    from autopoiesis.git.verify import verify

    result = verify(repo)
    if not result.ok:
        report.warnings.append(
            f"after the merge, {result.summary()}: "
            + "; ".join(str(f) for f in result.findings[:5])
            + ". `autopoiesis verify` shows it all; the pre-push hook will refuse to push it."
        )


def _push(git: MemoryGit, report: SyncReport, timeout: float, *, retry: bool) -> bool:
    """Push the branch (and its annotated tags). False when the remote moved since the
    fetch and RETRY allows another round; raises SyncError otherwise."""
    from autopoiesis.git.verify import verify

    name, branch = report.remote, report.branch
    checked = verify(git.repo)  # what the pre-push hook checks, also in a clone without hooks
    if not checked.ok:
        shown = "\n".join(f"  {f}" for f in checked.findings[:10])
        raise SyncError(
            f"sync does not push a history that fails verification: {checked.summary()}\n{shown}\n"
            "Nothing was pushed. `autopoiesis verify` shows the details; `git reflog` shows where "
            "the branch "
            "was before the change."
        )
    if _nothing_to_push(git, report, timeout):
        return True
    try:
        result = git.push(
            name,
            [f"refs/heads/{branch}:refs/heads/{branch}"],
            follow_tags=True,
            set_upstream=git.upstream_remote(branch) is None,
            timeout=timeout,
        )
    except GitError as exc:
        raise SyncError(_unreachable(name, report.url, "push to", exc)) from None
    report.pushed += [ref for ref, summary in result.updated if not summary.startswith("=")]
    behind = False
    for ref, reason in result.rejected:
        if ref.startswith("refs/tags/"):
            report.warnings.append(
                f"{ref} exists on {name} with another commit ({reason}); each side keeps its own "
                "(tags never move)."
            )
        elif "fetch first" in reason or "non-fast-forward" in reason:
            behind = True
        else:
            raise SyncError(
                f"{name} refused {ref} ({reason}). Nothing else changed; check the remote's rules "
                "for this "
                "branch (a protected branch, a server-side hook)."
            )
    if behind:
        if retry:
            return False
        raise SyncError(
            f"{name}/{branch} has commits this clone lacks, so the push was refused (not forced). "
            "Run "
            "`autopoiesis sync` (without --push-only) to merge them first."
        )
    if not result.ok and not result.rejected:
        if "pre-push" in result.stderr:
            raise SyncError(
                "the pre-push hook refused to push: the history fails `autopoiesis "
                f"verify`.\n{result.stderr}"
            )
        raise SyncError(_unreachable(name, report.url, "push to", GitError(result.stderr)))
    return True


def _nothing_to_push(git: MemoryGit, report: SyncReport, timeout: float) -> bool:
    """True when the remote, as just fetched, has the branch's tip and every annotated tag
    of its history: then the push (and the pre-push hook's start-up) is skipped."""
    if not report.fetched or git.rev(f"refs/remotes/{report.remote}/{report.branch}") != git.head():
        return False
    tags = git.annotated_tags_in_head()
    if not tags:
        return True
    try:
        remote = git.ls_remote(report.remote, timeout=timeout)
    except GitError:
        return False  # the push says what is wrong
    return all(t in remote for t in tags)


# ── after `autopoiesis forget` ──
def _pending_rewrites(repo: MemoryRepo, url: str) -> list[dict[str, Any]]:
    from autopoiesis.git.rewrite import sanctioned_rewrites

    return [r for r in sanctioned_rewrites(repo) if url not in (r.get("pushed") or {})]


def _unpushed_forget(name: str, url: str, branch: str, pending: Sequence[dict[str, Any]]) -> str:
    last = pending[-1]
    return (
        f"this clone rewrote its history with `autopoiesis forget` on {last.get('when', '?')} "
        "(commit "
        f"{str(last.get('commit', ''))[:12]}: {last.get('what', 'something')}) and has not pushed "
        "the rewrite to "
        f"{name} ({url}), which still holds the old history. Sync does not pull it (a merge would "
        "bring back what "
        "was forgotten), and a plain push is refused (the histories diverged). Nothing was pulled "
        "or pushed. Replace "
        f"the remote's history with `autopoiesis sync --remote {name} --force-after-forget` (it "
        "force-pushes the "
        "rewritten branches and tags, only where the remote holds nothing newer than the old "
        "history), then have "
        "every collaborator re-clone: a pull from an old clone would bring the text back."
    )


def _push_rewrite(
    repo: MemoryRepo,
    git: MemoryGit,
    report: SyncReport,
    pending: Sequence[dict[str, Any]],
    timeout: float,
) -> None:
    """Force-push the rewritten refs, each only while the remote holds it at a commit of
    the old history (a lease on exactly that commit)."""
    from autopoiesis.git.rewrite import mark_rewrite_pushed

    name, url = report.remote, report.url
    if not pending:
        raise SyncError(
            f"--force-after-forget: no sanctioned forget waits to be pushed to {name} ({url}); "
            "this clone's "
            "record (.autopoiesis/verify/rewrites.json) has none, and sync never force-pushes "
            "otherwise."
        )
    old_commits = {c for r in pending for c in r.get("old_commits", [])}
    old_objects = old_commits | {sha for r in pending for sha in (r.get("old_tips") or {}).values()}
    try:
        remote_refs = git.ls_remote(name, timeout=timeout)
    except GitError as exc:
        raise SyncError(_unreachable(name, url, "reach", exc)) from None
    plan = git.plan_forced_push(remote_refs, old_commits, old_objects)
    branch_ref = f"refs/heads/{report.branch}"
    if plan.newer:
        _refuse_to_drop_newer_work(git, report, plan, old_commits, old_objects, timeout)
        plan.force_newer()  # their work is on this clone already (cherry-picked): leased too
    plan.include(branch_ref)
    try:
        result = git.push(
            name, plan.refspecs, follow_tags=True, force_with_lease=plan.leases, timeout=timeout
        )
    except GitError as exc:
        raise SyncError(_unreachable(name, url, "push to", exc)) from None
    if result.rejected or not result.ok:
        why = "; ".join(f"{r}: {reason}" for r, reason in result.rejected) or result.stderr
        raise SyncError(
            f"the forced push to {name} was refused ({why}); the remote changed since it was "
            "read. Run "
            "`autopoiesis sync --force-after-forget` again."
        )
    report.forced += [ref for ref, summary in result.updated if summary.startswith("+")]
    report.pushed += [ref for ref, summary in result.updated if not summary.startswith(("=", "+"))]
    mark_rewrite_pushed(
        repo, [str(r.get("commit")) for r in pending], url
    )  # (the URL as shown: no token on disk)
    if plan.newer:  # the fetch brought old objects back: drop the unreferenced, as forget did
        git.drop_unreachable_objects()
    if plan.stale:
        report.warnings.append(
            f"{name} still has refs that point into the old history and that this clone does not "
            f"have: {', '.join(plan.stale)}. They hold what was forgotten; delete them with "
            f"`git push {name} --delete REF` once their owners have re-cloned."
        )


def _refuse_to_drop_newer_work(
    git: MemoryGit,
    report: SyncReport,
    plan: ForcedPush,
    old_commits: set[str],
    old_objects: set[str],
    timeout: float,
) -> None:
    """Stop when the remote's refs outside the old history hold commits this clone has no
    equivalent of: a forced push would drop another clone's work. Fetches them first (a
    person needs them to carry them over anyway)."""
    try:
        git.fetch(report.remote, timeout=timeout)
    except GitError as exc:
        raise SyncError(_unreachable(report.remote, report.url, "fetch from", exc)) from None
    local_tip = plan.local.get(f"refs/heads/{report.branch}", "HEAD")
    carry = git.commits_not_carried(plan.newer, local_tip, old_commits, old_objects)
    if carry:
        shown = " ".join(c[:12] for c in carry[:30]) + (" ..." if len(carry) > 30 else "")
        raise SyncError(
            f"{report.remote} holds {len(carry)} commit(s) another clone made on the old history "
            f"after (or without seeing) the forget: {shown}. Forcing would drop them, so nothing "
            f"was pushed. Carry them over: `git cherry-pick {' '.join(carry)}` (they are fetched; "
            "look at them with `git show` first: none may bring back the forgotten text), then run "
            "`autopoiesis sync --force-after-forget` again."
        )


# ── messages ──
def _unreachable(name: str, url: str, verb: str, exc: Exception) -> str:
    return (
        f"could not {verb} {name} ({url}): {exc}\nCheck the address (`git remote -v`; change it "
        "with `git remote "
        f"set-url {name} URL`), the network and your credentials (a key or token git can use "
        "without asking). "
        "Nothing was lost: your commits stay here and go out with the next `autopoiesis sync`."
    )


def _conflict_message(
    name: str, branch: str, paths: Sequence[str], *, aborted: bool, resumed: bool = False
) -> str:
    shown = "\n".join(f"  {p}" for p in paths)
    if aborted:
        return (
            f"merging {name}/{branch} gives conflicts in text both sides changed (not entries, "
            "which merge by id):\n"
            f"{shown}\nThe merge was undone: this clone is as it was, and nothing was pushed. Run "
            "`autopoiesis sync` "
            "yourself to merge and resolve them."
        )
    lead = (
        "the merge in progress still has conflicts in:"
        if resumed
        else f"merging {name}/{branch} left conflicts that need a person, in text both sides "
        "changed (entries merged by id):"
    )
    return (
        f"{lead}\n{shown}\nTo finish:\n"
        "  1. edit each file: keep the right text between <<<<<<< ours (this clone) and >>>>>>> "
        "theirs "
        f"({name}/{branch}), and delete the markers\n"
        f"  2. git add {' '.join(paths)}\n"
        "  3. autopoiesis sync     (commits the merge, re-applies the caps, pushes)\n"
        "Or give this merge up for now: git merge --abort (nothing is lost; the next sync merges "
        "again). Until the "
        "merge is finished or aborted, git allows no other commit: finished transcripts wait and "
        "are committed by "
        "the next sync or `autopoiesis commit`."
    )


__all__ = ["SyncReport", "push_after_commit", "sync_once"]
