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
5. each team mount this machine made (`team add`) fetched, merged and pushed
   (memory/teams.py); then pull: `git fetch`, checks of what came in (a remote
   rewritten since the last fetch, a forget on either side, unrelated histories,
   incoming commits that alter transcripts, a link where autopoiesis reads, anything
   under shared/ but a team's gitlink, `.gitattributes` rules autopoiesis does not
   write, files its .gitignore template ignores: memory.db, .autopoiesis/), then
   `git merge`:
   knowledge files entry by entry (app/merge_driver.py),
   raw/ never conflicts (a transcript's path holds its session id). Caps are re-applied
   to the merged files before the merge is committed: MEMORY.md over the writer's line cap
   has its overflow moved to archive/ by the pruner, as `autopoiesis prune` does;
6. push: `git push --follow-tags` (the pre-push hook verifies the history); refused
   because the remote moved meanwhile (another clone's push won the race: "fetch first",
   or "failed to update ref" when two pushes crossed on the remote), the round backs off
   and pulls, merges and pushes again (six tries, `push_backoff`). A team mount the
   merged .gitmodules names that this machine did not add is named, never checked out.

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

The round is here; the push half (step 4's forced push and step 6) is sync_push.py, the
report and the messages a round stops with are sync_report.py.
"""

from __future__ import annotations

import random
import time
import warnings
from collections.abc import Sequence

from autopoiesis.core.paths import (
    CONVERSATIONS_DIR,
    IDENTITY_DIR,
    MEMORY_FILE,
    FileLock,
    MemoryRepo,
)
from autopoiesis.core.private import readable_text
from autopoiesis.errors import (
    AutopoiesisError,
    GitError,
    KnowledgeFileError,
    SyncConflictError,
    SyncError,
)
from autopoiesis.git.repo import MemoryGit, MergeResult
from autopoiesis.git.rewrite import rewrite_under_way, stopped_forget
from autopoiesis.memory.sync_push import (
    pending_rewrites,
    push_branch,
    push_rewrite,
    unpushed_forget_message,
)
from autopoiesis.memory.sync_report import (
    SyncReport,
    conflict_message,
    count_of,
    record_health,
    unreachable_message,
)

DEFAULT_REMOTE = "origin"
NETWORK_TIMEOUT = 120.0  # seconds for one fetch, ls-remote or push
PUSH_TRIES = 6  # a push another clone's push beat is fetched, merged and pushed again
PUSH_BACKOFF = 0.5  # seconds before the first retry; doubled each time, with jitter


def push_backoff(attempt: int) -> float:
    """Seconds to wait before push retry ATTEMPT (1, 2, ...): 0.5, 1, 2, 4, 8 s, each
    between half and all of it at random, so that clones that raced do not race again
    in step."""
    ceiling = PUSH_BACKOFF * 2 ** (attempt - 1)
    return ceiling * (0.5 + random.random() / 2)


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
    # first: a rebase detaches HEAD, and what ends it is `git rebase --continue` or
    # `--abort`, not a checkout of the branch (which the detached-HEAD advice would say)
    git.refuse_during_operation(allow_merge=True)
    under_way = rewrite_under_way(repo)
    if under_way is not None:  # its old history is in the reflogs, and no record says it is old
        raise SyncError(stopped_forget(under_way) + "; then sync.")
    branch = git.current_branch()
    if not branch:
        raise SyncError(
            "HEAD is not on a branch (detached), so there is nothing to sync; check out the "
            "memory branch "
            "first (`git checkout main`)."
        )
    name = remote or git.upstream_remote(branch) or DEFAULT_REMOTE
    url = git.remote_url(name)
    if url is None and remote is None and pull and not git.remote_names():
        teams = _teams_alone(repo, name, branch, timeout)
        if teams is not None:
            return teams
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
    lock = _sync_lock(repo, timeout)
    try:
        _round(repo, git, report, pull, push, force_after_forget, abort_on_conflict, timeout)
    except AutopoiesisError as exc:  # git's own messages may quote the URL
        exc.args = tuple(redact(a) if isinstance(a, str) else a for a in exc.args)
        record_health(repo, exc)
        raise
    finally:
        lock.release()
    record_health(repo, None)
    if report.incoming and repo.index_path.exists():
        _index_in_background(repo, report)
    report.warnings = [redact(w) for w in report.warnings]
    return report


def _index_in_background(repo: MemoryRepo, report: SyncReport) -> None:
    """Bring memory.db up to date with what the pull brought, in the background, as a
    commit's post-commit hook does (a fast-forward runs no post-commit): the next search
    finds the index fresh instead of paying the catch-up."""
    from autopoiesis.index.background import spawn_background

    try:
        spawn_background(repo)
    except OSError as exc:  # the sync is done; the next search catches up instead
        report.warnings.append(f"the search index was not updated in the background ({exc})")


def _round(
    repo: MemoryRepo,
    git: MemoryGit,
    report: SyncReport,
    pull: bool,
    push: bool,
    force_after_forget: bool,
    abort_on_conflict: bool,
    timeout: float,
) -> None:
    """The steps of one round (the module doc's 1 to 6), under the sync lock."""
    name, branch = report.remote, report.branch
    git.refuse_during_operation(allow_merge=True)  # again, under the sync lock
    if git.merge_in_progress():
        _finish_merge(repo, git, report, name)
    _setup(repo, git, report)
    _commit_pending(repo, git, report)
    pending = pending_rewrites(repo, report.url)
    if pending and not force_after_forget and _holds_nothing(git, name, timeout):
        # a remote added after the forget, still empty: there is no old history on it to
        # replace, and the ordinary push below gives it the rewritten one
        from autopoiesis.git.rewrite import mark_rewrite_pushed

        mark_rewrite_pushed(repo, [str(r.get("commit")) for r in pending], report.url)
        pending = []
    if force_after_forget:
        push_rewrite(repo, git, report, pending, timeout)
    elif pending:
        raise SyncError(unpushed_forget_message(name, report.url, branch, pending))
    if pull:
        _sync_teams(repo, report)
    for attempt in range(PUSH_TRIES):
        if attempt:  # another clone pushed between our fetch and our push: back off
            report.push_retries += 1
            time.sleep(push_backoff(attempt))
        if pull:
            _pull(repo, git, report, timeout, abort_on_conflict)
        if not push or push_branch(git, report, timeout, retry=pull and attempt + 1 < PUSH_TRIES):
            break
    if pull and (repo.root / ".gitmodules").exists():
        from autopoiesis.memory.teams import TeamMemory

        # after the pull: a mount that came with it is named by the sync that brought it
        report.warnings += TeamMemory(repo).awaiting()


def _holds_nothing(git: MemoryGit, name: str, timeout: float) -> bool:
    """Whether the remote NAME holds no branch and no tag (an unreachable one is not known
    to: the round says what is wrong with it)."""
    try:
        refs = git.ls_remote(name, timeout=timeout)
    except GitError:
        return False
    return not any(r.startswith(("refs/heads/", "refs/tags/")) for r in refs)


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
def _finish_merge(repo: MemoryRepo, git: MemoryGit, report: SyncReport, name: str) -> None:
    """A merge left in progress (by an earlier sync that hit a conflict, or by hand):
    commit it once every conflict is resolved, else stop and say what is left."""
    left = git.unmerged_paths()
    if left:
        raise SyncConflictError(
            conflict_message(name, report.branch, left, aborted=False, resumed=True), left
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
        raise SyncError(unreachable_message(name, report.url, "fetch from", exc)) from None
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
        f"maintenance: merge {name}/{branch} ({count_of(n_transcripts, 'transcript')}, "
        f"{count_of(len(incoming) - n_transcripts, 'other file')})"
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
            conflict_message(name, branch, result.conflicts, aborted=result.aborted),
            result.conflicts,
        )
    report.merge = result.kind
    report.merge_commit = result.head
    report.incoming = sorted(result.changed)
    _tell_steering_changes(report, ours)
    if result.kind == "fast-forward":
        _enforce_caps(
            repo, report, commit=True
        )  # a remote merged by plain git may hold an over-cap MEMORY.md
    _check_merged(repo, report)


# What the agent reads as its instructions, not as quoted records: the identity files (P0
# of every context) and the topics' playbooks (placed when their triggers fire).
_STEERING = (IDENTITY_DIR + "/", "topics/")


def _tell_steering_changes(report: SyncReport, ours: str) -> None:
    """A warning naming the files of _STEERING the merge changed: a collaborator's line in
    AGENTS.md is an instruction to this machine's agent from its next prompt on, merged
    like any note; the person should know and can read it."""
    steering = [p for p in report.incoming if p.startswith(_STEERING) and p.endswith(".md")]
    if steering:
        report.warnings.append(
            "the merge changed what your agent takes as instructions, from its next prompt "
            f"on:\n{_listed(steering, 5)}\nRead the change with `git diff {ours[:12]} HEAD -- "
            f"{IDENTITY_DIR} topics`; undo what you do not want with an edit and a commit."
        )


def _check_incoming(
    repo: MemoryRepo, git: MemoryGit, report: SyncReport, before: str | None, theirs: str, ours: str
) -> None:
    """Refuse to merge what would lose or resurrect something; see the module doc."""
    from autopoiesis.git.history import link_findings, transcripts_at
    from autopoiesis.git.rewrite import resurrected
    from autopoiesis.git.verify import walk
    from autopoiesis.memory.initialize import foreign_attribute_changes, ignored_arrivals

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
    back = resurrected(repo, theirs, ours)
    if back:
        raise SyncError(
            f"{name}/{branch} brings back history `autopoiesis forget` removed (commit "
            f"{back[0][:12]}{f' and {len(back) - 1} more' if len(back) > 1 else ''}): a clone "
            "that still had the old history merged it, and a merge would put what was "
            "forgotten back here. Nothing was merged or pushed. Have that clone re-clone the "
            f"memory (`git clone {url} NEW && autopoiesis init NEW`) and carry over its new "
            "transcripts; then restore the remote from this clone with `git push "
            f"--force-with-lease {name} {branch}`."
        )
    here = {f.path for f in link_findings(repo.root, ours)}
    odd = [f for f in link_findings(repo.root, theirs) if f.path not in here]
    if odd:
        shown = _listed(odd)
        raise SyncError(
            f"{name}/{branch} holds what a memory never holds where autopoiesis reads it (a "
            "symbolic link or a gitlink in the memory folders or at memory-config.yaml, "
            ".gitignore, .gitattributes or .gitmodules, which nothing reads through; under "
            "shared/ anything but a team's mount; a file under a folder named .git; a name "
            "with a control character or a secret):\n"
            f"{shown}\nNothing was merged or pushed. Have it removed on the clone that made "
            f"it (`git log --stat {ours[:12]}..{name}/{branch}` shows the commit), then sync "
            "again."
        )
    rules = foreign_attribute_changes(git, ours, theirs)
    if rules:
        shown = _listed(rules)
        raise SyncError(
            f"{name}/{branch} changes how git treats the memory's files (.gitattributes rules "
            f"autopoiesis does not write, or its own taken away):\n{shown}\nNothing was "
            "merged or pushed: such a rule can switch the knowledge merge driver off, merge "
            "transcripts line by line or stop encrypting private files. Read the change, "
            f"every folder's (`git log -p {ours[:12]}..{name}/{branch} -- '*.gitattributes'`); "
            f"if you trust it, merge it yourself (`git merge {name}/{branch}`), then sync "
            "again. A newer autopoiesis on the other clone may have written it: update this "
            "one first."
        )
    ignored = ignored_arrivals(git, ours, theirs)
    if ignored:
        raise SyncError(
            f"{name}/{branch} brings files a memory never tracks (its .gitignore ignores "
            f"them: the search index, the state folder, secrets):\n{_listed(ignored)}\n"
            "Nothing was merged or pushed: the merge would write them over this clone's own "
            "(memory.db is this clone's search index). Have them removed on the clone that "
            f"committed them (`git rm --cached PATH` and a commit; `git log --stat "
            f"{ours[:12]}..{name}/{branch}` shows the commit), then sync again."
        )
    findings = walk(repo.root, theirs, [ours], transcripts_at(repo.root, ours)).findings
    if findings:
        shown = _listed(findings)
        raise SyncError(
            f"{name}/{branch} holds commits that change transcripts this clone has, or add "
            "transcripts no commit may add (transcripts are immutable, and enter the history "
            f"closed, readable and named after their frontmatter):\n{shown}\n"
            "Nothing was merged or pushed. A transcript both sides added with different content "
            "means two sessions "
            "shared one id; inspect with `git log --stat "
            + f"{ours[:12]}..{name}/{branch} -- raw/` and fix it on the "
            "clone that made it."
        )


def _listed(items: Sequence[object], most: int = 10) -> str:
    """ITEMS one an indented line, the first MOST of them, and how many more."""
    more = f"\n  … and {len(items) - most} more" if len(items) > most else ""
    return "\n".join(f"  {x}" for x in items[:most]) + more


def _sync_lock(repo: MemoryRepo, timeout: float) -> FileLock:
    """The repo's sync lock, taken (one sync at a time), or SyncError after TIMEOUT."""
    lock = repo.lock("sync")
    if not lock.acquire(timeout=timeout):
        raise SyncError(
            f"another sync of {repo.root} has been running for {timeout:g} s; wait for it, then "
            "retry."
        )
    return lock


def _teams_alone(repo: MemoryRepo, name: str, branch: str, timeout: float) -> SyncReport | None:
    """A memory of no remote that mounts teams: its teams synced alone (each has its own
    remote), and a word on the memory's own; None when it mounts none (then the missing
    remote is the error). A personal memory kept on one machine took no team's notes."""
    from autopoiesis.core.paths import shared_mounts

    if not shared_mounts(repo.root):
        return None
    report = SyncReport(name, "no remote: its teams alone", branch)
    lock = _sync_lock(repo, timeout)
    try:
        _sync_teams(repo, report)
    finally:
        lock.release()
    report.warnings.append(
        f"the memory itself has no remote, so only its teams were synced; `git remote add "
        f"{name} URL` syncs it too."
    )
    return report


def _sync_teams(repo: MemoryRepo, report: SyncReport) -> None:
    """Each team's mount fetched, merged and pushed (memory/teams.py): its notes come and
    go with its own remote, and only the mount's commit is recorded here."""
    from autopoiesis.core.paths import shared_mounts

    if not shared_mounts(repo.root):
        return
    from autopoiesis.memory.teams import TeamMemory

    done = TeamMemory(repo).sync()
    report.setup += done.moved
    report.warnings += done.problems
    report.committed += done.committed


def _forget_commits(git: MemoryGit, tip: str, exclude: str) -> list[str]:
    """`sha (subject)` of the forget records in TIP's history that EXCLUDE lacks."""
    from autopoiesis.git.rewrite import FORGET_RECORD

    found = git.commits_matching(FORGET_RECORD, tip, exclude)
    return [f"commit {sha[:12]} ({subject!r})" for sha, subject in found]


def _enforce_caps(repo: MemoryRepo, report: SyncReport, *, commit: bool) -> list[str]:
    """Re-apply the writer's rules to merged knowledge: one live value per subject (the
    later statement supersedes what another clone said earlier without seeing it);
    MEMORY.md over its line cap has its overflow moved to archive/ by the pruner (no
    entry is lost); a file over the byte cap is reported (condensing it is a person's or
    the condenser's call). Returns the paths it changed (COMMIT: committed, as after a
    fast-forward)."""
    from autopoiesis.knowledge.writer import KnowledgeWriter

    writer = KnowledgeWriter(repo)
    # written and committed under one hold of the writer's lock (a merge's, when it runs
    # before the merge's commit): no other writer's lines in between
    with writer.batch():
        settled = writer.settle_subjects()
        changed: list[str] = sorted({path for path, _ in settled.superseded})
        if changed:
            report.settled.append(
                f"{count_of(len(settled.superseded), 'earlier value')} superseded by a later "
                "statement of the same subject"
            )
            if commit:
                done = writer.commit(
                    changed, "maintenance: one live value per subject after the merge\n"
                )
                if done.sha:
                    report.committed.append(f"{done.sha} {done.message.splitlines()[0]}")
        doc = writer.read(MEMORY_FILE)
        if doc is not None and writer.cap_violation(MEMORY_FILE, doc, bytes_too=False):
            from autopoiesis.knowledge.prune import MemoryPruner

            result = MemoryPruner(repo, writer=writer).prune_memory(commit=commit)
            report.capped += list(result.actions)
            changed += list(result.paths)
            if result.commit:
                report.committed.append(
                    f"{result.commit} maintenance: cap MEMORY.md after the merge"
                )
    for rel in report.incoming:
        path = repo.root / rel
        # a private file this clone cannot read (git-crypt) is checked where it is unlocked
        if rel.startswith("knowledge/") and rel.endswith(".md") and readable_text(path):
            try:
                found = writer.read(rel)
            except KnowledgeFileError as exc:
                report.warnings.append(str(exc))
                continue
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


__all__ = ["push_after_commit", "sync_once"]
