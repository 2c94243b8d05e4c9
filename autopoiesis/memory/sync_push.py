"""The push half of a sync round (memory/sync.py): the branch and its tags pushed after the
history is verified, and, after `autopoiesis forget`, the rewritten history force-pushed only
where the remote holds nothing but the old history."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from autopoiesis.core.paths import MemoryRepo
from autopoiesis.core.text import counted
from autopoiesis.errors import GitError, SyncError
from autopoiesis.git.remote import ForcedPush, is_race
from autopoiesis.git.repo import MemoryGit
from autopoiesis.memory.sync_report import SyncReport, unreachable_message


def push_branch(git: MemoryGit, report: SyncReport, timeout: float, *, retry: bool) -> bool:
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
    from autopoiesis.git.crypt import push_refusal

    refusal = push_refusal(git.root, git.repo.private_patterns(), f"refs/heads/{branch}")
    if refusal:  # what the pre-push hook refuses, also in a clone without hooks
        raise SyncError(refusal)
    _refuse_a_second_memory(git, report, timeout)
    try:
        result = git.push(
            name,
            [f"refs/heads/{branch}:refs/heads/{branch}"],
            follow_tags=True,
            set_upstream=git.upstream_remote(branch) is None,
            timeout=timeout,
        )
    except GitError as exc:
        raise SyncError(unreachable_message(name, report.url, "push to", exc)) from None
    report.pushed += [ref for ref, summary in result.updated if not summary.startswith("=")]
    behind = False
    for ref, reason in result.rejected:
        if ref.startswith("refs/tags/"):
            report.warnings.append(
                f"{ref} exists on {name} with another commit ({reason}); each side keeps its own "
                "(tags never move)."
            )
        elif is_race(reason):
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
        if report.push_retries:
            raise SyncError(
                f"{name}/{branch} moved again each time this clone merged it and pushed "
                f"({report.push_retries + 1} tries): other clones are pushing as fast. Nothing "
                "was lost; your commits go out with the next `autopoiesis sync`."
            )
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
        raise SyncError(unreachable_message(name, report.url, "push to", GitError(result.stderr)))
    return True


def remote_memory_branches(git: MemoryGit, remote: str) -> list[str]:
    """The branches of REMOTE, as last fetched, whose tip holds a memory (its
    memory-config.yaml), by name."""
    from autopoiesis.core.config import CONFIG_FILENAME
    from autopoiesis.git.runner import ls_tree

    prefix = f"refs/remotes/{remote}/"
    refs = git.run("for-each-ref", "--format=%(refname)", prefix, check=False).stdout.split()
    return [
        ref.removeprefix(prefix)
        for ref in refs
        if ref != prefix + "HEAD" and ls_tree(git.root, ref, [CONFIG_FILENAME])
    ]


def _refuse_a_second_memory(git: MemoryGit, report: SyncReport, timeout: float) -> None:
    """Before a push that would create the branch on the remote: refuse when the remote holds a
    memory on other branches. A clone of a remote whose HEAD names a branch it lacks (a
    plain `git init --bare` says master) is empty; `init` there used to start a second
    memory, and both clones synced without ever exchanging anything."""
    name, branch = report.remote, report.branch
    if git.rev(f"refs/remotes/{name}/{branch}") is not None:
        return  # the remote had the branch when this clone last fetched
    try:
        heads = [
            ref for ref in git.ls_remote(name, timeout=timeout) if ref.startswith("refs/heads/")
        ]
        if not heads or f"refs/heads/{branch}" in heads:
            return
        if not report.fetched:
            git.fetch(name, timeout=timeout)
    except GitError:
        return  # the push says what is wrong with the remote
    theirs = remote_memory_branches(git, name)
    if theirs:
        raise SyncError(
            f"{name} holds a memory on {', '.join(theirs)} but has no branch {branch}: pushing "
            f"{branch} would start a second memory beside it, and neither would ever see the "
            f"other's. Nothing was pushed. Use the remote's: `git switch {theirs[0]}` (what this "
            f"clone has on {branch} stays there: copy its transcripts under raw/ into "
            f"{theirs[0]} and run `autopoiesis commit`), then `autopoiesis sync`. Pointing the "
            f"remote's HEAD at {theirs[0]} keeps fresh clones from starting on another branch "
            f"(`git symbolic-ref HEAD refs/heads/{theirs[0]}` in the bare repository)."
        )


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
def pending_rewrites(repo: MemoryRepo, url: str) -> list[dict[str, Any]]:
    from autopoiesis.git.rewrite import sanctioned_rewrites

    return [r for r in sanctioned_rewrites(repo) if url not in (r.get("pushed") or {})]


def unpushed_forget_message(
    name: str, url: str, branch: str, pending: Sequence[dict[str, Any]]
) -> str:
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


def push_rewrite(
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
        raise SyncError(unreachable_message(name, url, "reach", exc)) from None
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
        raise SyncError(unreachable_message(name, url, "push to", exc)) from None
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
        try:
            git.drop_unreachable_objects()
        except GitError as exc:
            report.warnings.append(
                f"the old history's objects the fetch brought back are still in this clone "
                f"({exc}); "
                "drop them with `git reflog expire --expire=now --all && git gc --prune=now`."
            )
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
        raise SyncError(unreachable_message(report.remote, report.url, "fetch from", exc)) from None
    local_tip = plan.local.get(f"refs/heads/{report.branch}", "HEAD")
    carry = git.commits_not_carried(plan.newer, local_tip, old_commits, old_objects)
    if carry:
        shown = " ".join(c[:12] for c in carry[:30]) + (" ..." if len(carry) > 30 else "")
        raise SyncError(
            f"{report.remote} holds {counted(len(carry), 'commit')} another clone made on the old "
            f"history after (or without seeing) the forget: {shown}. Forcing would drop them, so "
            "nothing was pushed. Carry them over: "
            f"`git cherry-pick {' '.join(carry)}` (they are fetched; "
            "look at them with `git show` first: none may bring back the forgotten text), then run "
            "`autopoiesis sync --force-after-forget` again."
        )
