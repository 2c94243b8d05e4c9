"""Reconstruct (docs/design.md#replay, docs/design.md#flow-reconstruct): replay every transcript
onto an extract/* branch,
in its own git worktree, and compare the knowledge it derives with main's.

    autopoiesis replay --branch extract/v2 --extractors decisions,lessons
    autopoiesis replay --compare main extract/v2

Why a worktree (NAME under the state folder `worktrees_dir`, gitignored): the user's working tree
and
current branch are never touched, so the agent keeps running while a replay works, and a
dirty working tree stays exactly as it is. The replay reads committed history only and
says which uncommitted transcripts it did not include.

Resumable: the worktree keeps its own extraction state; a crashed replay, run again with
the same branch, skips the transcripts whose changes were already flushed and goes on
from there (the writer's dedup makes a re-applied chunk harmless). Only from the base's
commit it started from, with the same extractors and model, in an intact worktree; else it
starts afresh and says why. One replay onto a branch runs at a time (a lock of its own).
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import quote

from autopoiesis.core.paths import (
    CONVERSATIONS_DIR,
    INDEX_FILES,
    FileLock,
    MemoryRepo,
    atomic_write,
    category_of,
)
from autopoiesis.core.text import counted, noun
from autopoiesis.errors import GitError, ReplayError
from autopoiesis.formats import knowledge as kf
from autopoiesis.git.repo import MemoryGit
from autopoiesis.git.runner import cat_file_batch, uncommitted
from autopoiesis.knowledge.changes import template_for
from autopoiesis.knowledge.condense import MemoryCondenser
from autopoiesis.knowledge.extract import ExtractionReport, KnowledgeExtractor, list_transcripts
from autopoiesis.knowledge.extractors import content_hash, default_registry
from autopoiesis.knowledge.state import ExtractionState

DERIVED_DIRS = ("memory", "journal", "projects", "people", "procedures", "reference")

__all__ = [
    "Comparison",
    "ReplayResult",
    "clear_derived_knowledge",
    "compare_refs",
    "format_comparison",
    "format_result",
    "replay_branch",
]


@dataclass(frozen=True)
class Comparison:
    a: str
    b: str
    stat: str
    per_category: tuple[
        tuple[str, int, int], ...
    ]  # (category, only in b = added, only in a = removed)
    only_a: tuple[tuple[str, str], ...]  # (path, fact)
    only_b: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class ReplayResult:
    branch: str
    base: str
    worktree: str
    transcripts: int
    report: ExtractionReport
    commit: str | None
    tag: str
    comparison: Comparison | None
    resumed_from: int = 0
    not_included: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()


def clear_derived_knowledge(repo: MemoryRepo) -> list[str]:
    """Remove derived knowledge (everything but identity/), put the template files back."""
    removed = []
    for d in DERIVED_DIRS:
        base = repo.knowledge_dir / d
        if not base.is_dir():
            continue
        for p in sorted(base.rglob("*")):
            if p.is_file() and p.name != ".gitkeep":
                removed.append(repo.rel(p))
                p.unlink()
        for p in sorted(base.rglob("*"), reverse=True):
            if p.is_dir() and not any(p.iterdir()):
                p.rmdir()
    for rel in INDEX_FILES:
        atomic_write(repo.root / rel, kf.render(template_for(rel)))
    return removed


def _git(repo: MemoryRepo) -> MemoryGit:
    return MemoryGit(repo)


def _branch_name(branch: str) -> tuple[str, str]:
    name = branch[len("extract/") :] if branch.startswith("extract/") else branch
    if not name:
        raise ReplayError("give the branch a name: --branch extract/NAME")
    return f"extract/{name}", name


def _file_name(name: str) -> str:
    """NAME (of extract/NAME, which may hold '/') as one file's name, a different one for
    every NAME: '/' became '__', and extract/a/b and extract/a__b shared one progress record
    and one lock (the one's record overwrote the other's). A long one is cut and told apart
    by its hash: a file's name holds 255 bytes, a branch's name many parts of that."""
    quoted = quote(name, safe="")
    if len(quoted) <= 160:
        return quoted
    return f"{quoted[:100]}-{hashlib.sha256(name.encode()).hexdigest()[:20]}"


def _progress_path(repo: MemoryRepo, name: str) -> Path:
    folder = repo.state_file("replay_dir")
    folder.mkdir(exist_ok=True)
    return folder / f"{_file_name(name)}.json"


@dataclass
class _Replay:
    """A replay on its way: the branch it makes, where it works, what it says and notes."""

    repo: MemoryRepo
    git: MemoryGit
    full: str  # extract/NAME
    name: str
    base: str
    wt: Path  # its worktree
    extractors: Sequence[str] | None
    model: str | None
    say: Callable[[str], None]
    notes: list[str] = field(default_factory=list)


def replay_branch(
    repo: MemoryRepo,
    branch: str,
    *,
    extractors: Sequence[str] | None = None,
    model: str | None = None,
    force: bool = False,
    base: str = "main",
    progress: Callable[[int, int, str], None] | None = None,
    echo: Callable[[str], None] | None = None,
    llm: Any = None,
    use_llm: bool | None = None,
    stop_after: int | None = None,
) -> ReplayResult:
    """Replay every committed transcript of BASE onto the new branch extract/NAME."""
    git = _git(repo)
    full, name = _branch_name(branch)
    _check_refs(git, full, base)
    if extractors:  # an unknown one is refused before a branch, a worktree or a record exists
        default_registry().select(extractors)
    wt = repo.state_file("worktrees_dir") / name
    r = _Replay(repo, git, full, name, base, wt, extractors, model, echo or (lambda m: None))
    lock = _replay_lock(r)
    try:
        return _replay(r, force, progress, llm, use_llm, stop_after)
    finally:
        lock.release()


def _replay_lock(r: _Replay) -> FileLock:
    """The lock one replay onto R's branch holds while it runs (the kernel frees it when
    the replay dies, so a killed one is resumed, never waited for): two at once worked in
    one worktree, and one failed when the other removed it."""
    lock = r.repo.lock(f"replay-{_file_name(r.name)}")
    if not lock.acquire(timeout=0):
        pid = lock.holder()
        who = f" (pid {pid})" if pid else ""
        raise ReplayError(
            f"a replay onto {r.full} is running{who}; wait for it to finish, or stop it "
            f"({f'kill {pid}' if pid else 'end that process'}) and run this again to resume it."
        )
    lock.write_holder()
    return lock


def _replay(
    r: _Replay,
    force: bool,
    progress: Callable[[int, int, str], None] | None,
    llm: Any,
    use_llm: bool | None,
    stop_after: int | None,
) -> ReplayResult:
    """replay_branch's work, under the replay's lock."""
    repo, full, base = r.repo, r.full, r.base
    progress_file = _progress_path(repo, r.name)
    resuming, base_sha = _prepare_worktree(r, progress_file, force)
    not_included = _uncommitted_transcripts(repo)
    if not_included:
        r.notes.append(
            f"{counted(len(not_included), 'uncommitted transcript')} in your working tree "
            f"{noun(len(not_included), 'was', 'were')} not included (commit "
            f"{noun(len(not_included), 'it', 'them')} first)"
        )
    wrepo = MemoryRepo(r.wt)
    committed = _committed_transcripts(r, wrepo)
    state = ExtractionState.for_repo(wrepo)
    try:
        resumed_from = _start(r, wrepo, state, committed, resuming, progress_file)
        report, finished = _extract(
            r,
            wrepo,
            state,
            committed,
            llm=llm,
            use_llm=use_llm,
            progress=progress,
            stop_after=stop_after,
        )
    finally:
        state.close()
    if not finished:
        return ReplayResult(
            full,
            base,
            str(r.wt),
            len(committed),
            report,
            None,
            "",
            None,
            resumed_from,
            tuple(not_included),
            tuple(r.notes),
        )
    sha, tag = _commit(r, wrepo, len(committed), report, base_sha)
    atomic_write(progress_file, json.dumps({"branch": full, "status": "done", "commit": sha}))
    _remove_worktree(repo, r.wt)
    comparison = compare_refs(repo, _replayed_base(r, base_sha), full)
    return ReplayResult(
        full,
        base,
        str(r.wt),
        len(committed),
        report,
        sha,
        tag,
        comparison,
        resumed_from,
        tuple(not_included),
        tuple(r.notes),
    )


def _replayed_base(r: _Replay, base_sha: str) -> str:
    """The ref to compare the replay with: the base's name while it is still at BASE_SHA,
    the commit the replay started from, else that commit (a note says so). What was
    committed on the base meanwhile (a capture goes on during a replay) was never
    replayed, and compared with the moved base it showed as knowledge the replay lost."""
    now = r.git.run("rev-parse", "-q", "--verify", f"{r.base}^{{commit}}", check=False)
    if now.stdout.strip() == base_sha:
        return r.base
    short = r.git.run("rev-parse", "--short", base_sha).stdout.strip()
    r.notes.append(
        f"{r.base} moved during the replay ({short} -> {now.stdout.strip()[:10] or 'gone'}); "
        f"compared with {short}, the commit it replayed"
    )
    return short


def _prepare_worktree(r: _Replay, progress_file: Path, force: bool) -> tuple[bool, str]:
    """(resuming, the base's commit the worktree came from): the replay's worktree on its
    branch, kept when an interrupted replay resumes, else made anew from the base's
    commit (an old branch dropped first). The running record is written before the
    worktree is made, so a replay killed at any point after is one that can be resumed."""
    git, full, base = r.git, r.full, r.base
    current = git.current_branch()
    if current is None:
        head = (git.head() or "")[:10]
        r.notes.append(
            f"your checkout is on a detached HEAD ({head}); it was left alone, "
            f"the replay starts from {base}"
        )
    base_sha = git.run("rev-parse", f"{base}^{{commit}}").stdout.strip()
    saved = _saved_progress(progress_file)
    why_not = _why_not_resume(r, saved, base_sha, force)
    if why_not is None:  # its worktree came from BASE_SHA: a base that moved is not resumed
        return True, base_sha
    if git.branch_exists(full):
        if _interrupted(r, saved):  # its branch holds nothing of its own: no --force needed
            if current == full:
                raise ReplayError(
                    f"{full} is checked out in your working tree; switch to another "
                    "branch before replaying onto it."
                )
            r.say(f"starting the interrupted replay onto {full} afresh: {why_not}")
            r.notes.append(f"the interrupted replay was started afresh: {why_not}")
            _remove_worktree(r.repo, r.wt)
            git.run("branch", "-D", full)
        else:
            _tidy_a_finished_replay(r, saved, progress_file)
            _drop_old_branch(r, current, force)
    _mark_running(r, progress_file, base_sha)
    _remove_worktree(r.repo, r.wt)
    r.wt.parent.mkdir(parents=True, exist_ok=True)
    # from the commit recorded, not the branch's name: main may move meanwhile
    git.run("worktree", "add", "-q", "-b", full, str(r.wt), base_sha)
    return False, base_sha


def _mark_running(r: _Replay, progress_file: Path, base_sha: str) -> None:
    """The progress file of a replay under way (what a resume checks it against)."""
    atomic_write(
        progress_file,
        json.dumps(
            {
                "branch": r.full,
                "base": r.base,
                "base_sha": base_sha,
                "status": "running",
                "extractors": list(r.extractors) if r.extractors else None,
                "model": r.model,
            }
        ),
    )


def _mark_cleared(progress_file: Path) -> None:
    """Record that the replay's worktree holds only what the replay derived: its knowledge
    and extraction record cleared. Until then the worktree holds the base's knowledge and
    the base's committed record of extractions, which says every transcript is done."""
    saved = _saved_progress(progress_file) or {}
    atomic_write(progress_file, json.dumps({**saved, "cleared": True}))


def _cleared(progress_file: Path) -> bool:
    """Whether the replay of PROGRESS_FILE cleared its worktree's knowledge (_mark_cleared)."""
    saved = _saved_progress(progress_file)
    return saved is not None and saved.get("cleared") is True


def _saved_progress(progress_file: Path) -> dict[str, Any] | None:
    """The progress record of the last replay of this name; None when there is none (or
    it cannot be read: then there is nothing to resume)."""
    try:
        saved = json.loads(progress_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return saved if isinstance(saved, dict) else None


def _check_refs(git: MemoryGit, full: str, base: str) -> None:
    """FULL is a valid branch name holding no secret (refused before anything is made:
    the replay failed at its tag, and left a branch no re-run could finish) and BASE a
    branch to replay from."""
    try:
        git.check_ref_name(full, "branch")
    except GitError as exc:
        raise ReplayError(str(exc)) from None
    if not git.branch_exists(base):
        raise ReplayError(
            f"There is no branch {base!r} to replay from. Pass --base BRANCH "
            "(the branch that holds your transcripts)."
        )


def _interrupted(r: _Replay, saved: dict[str, Any] | None) -> bool:
    """Whether R's branch is the one an interrupted replay made: its record says running
    and the branch is still at the commit it was made from (a replay commits only when
    it has finished)."""
    if saved is None or saved.get("status") != "running" or not saved.get("base_sha"):
        return False
    tip = r.git.run("rev-parse", "-q", "--verify", f"refs/heads/{r.full}", check=False)
    return tip.stdout.strip() == saved["base_sha"]


def _why_not_resume(
    r: _Replay, saved: dict[str, Any] | None, base_sha: str, force: bool
) -> str | None:
    """Why the replay cannot go on from where an interrupted one stopped; None when it can:
    it was running, its branch and an intact worktree are there at the base's commit
    (a base that has moved has transcripts the resumed one would leave out), it was not
    --force, and the extractors and model are the same."""
    if not _interrupted(r, saved):
        return "there is no interrupted replay of that name"
    assert saved is not None
    if not r.wt.is_dir():
        return "its worktree is gone"
    if force:
        return "--force"
    if saved["base_sha"] != base_sha:
        return (
            f"{r.base} has moved since it started ({str(saved['base_sha'])[:10]} -> "
            f"{base_sha[:10]})"
        )
    if saved.get("extractors") != (list(r.extractors) if r.extractors else None):
        return "it ran other extractors"
    if saved.get("model") != r.model:
        return "it ran another model"
    if not _worktree_intact(r, base_sha):
        return "its worktree is incomplete (it was stopped while being made)"
    return None


def _worktree_intact(r: _Replay, base_sha: str) -> bool:
    """Whether R's worktree is a checkout of its branch at BASE_SHA with every transcript
    in place (one killed during `git worktree add` may be half made)."""
    wgit = _git(MemoryRepo(r.wt))
    top = wgit.run("rev-parse", "--show-toplevel", check=False).stdout.strip()
    if not top or Path(top).resolve() != r.wt.resolve():
        return False
    head = wgit.run("rev-parse", "-q", "--verify", "HEAD", check=False).stdout.strip()
    branch = wgit.run("symbolic-ref", "-q", "HEAD", check=False).stdout.strip()
    if head != base_sha or branch != f"refs/heads/{r.full}":
        return False
    raw = wgit.run("status", "--porcelain", "--", CONVERSATIONS_DIR, check=False)
    return raw.returncode == 0 and not raw.stdout.strip()


def _tidy_a_finished_replay(r: _Replay, saved: dict[str, Any] | None, progress_file: Path) -> None:
    """Finish the last steps of a replay killed after its commit (its record still says
    running, its branch one commit on from where it started): tag that commit, record it
    done and remove the worktree, which otherwise stayed for good, the branch checked out
    in it (`git branch -D` refused it)."""
    if saved is None or saved.get("status") != "running" or not saved.get("base_sha"):
        return
    parent = r.git.run("rev-parse", "-q", "--verify", f"refs/heads/{r.full}^", check=False)
    if parent.stdout.strip() != saved["base_sha"]:
        return
    sha = r.git.run("rev-parse", f"refs/heads/{r.full}").stdout.strip()
    created, why = r.git.tag_named("extract", r.name, f"replay onto {r.full}", target=sha)
    if not created:
        r.notes.append(why)
    atomic_write(progress_file, json.dumps({"branch": r.full, "status": "done", "commit": sha}))
    _remove_worktree(r.repo, r.wt)
    r.say(f"the replay onto {r.full} had finished ({sha[:10]}); its worktree is removed")


def _drop_old_branch(r: _Replay, current: str | None, force: bool) -> None:
    """Delete the branch of an earlier replay of the same name (and its worktree): only
    with --force, and never while it is checked out."""
    if not force:
        raise ReplayError(
            f"Branch {r.full} already exists. Pick another name, compare it with "
            f"`autopoiesis replay --compare {r.base} {r.full}`, or replace it with --force."
        )
    if current == r.full:
        raise ReplayError(
            f"{r.full} is checked out in your working tree; switch to another "
            "branch before replacing it."
        )
    _remove_worktree(r.repo, r.wt)
    r.git.run("branch", "-D", r.full)
    r.say(f"replacing the existing branch {r.full} (--force)")


def _committed_transcripts(r: _Replay, wrepo: MemoryRepo) -> list:
    """The transcripts committed on the base (in the worktree WREPO); with none, the
    worktree and branch are removed and the replay refused."""
    committed = list_transcripts(wrepo)
    if not committed:
        _remove_worktree(r.repo, r.wt)
        r.git.run("branch", "-D", r.full, check=False)
        raise ReplayError(
            f"raw/conversations/ on {r.base} has no committed transcripts; there is "
            "nothing to replay. Capture or import sessions first "
            "(`autopoiesis import FILE`)."
        )
    return committed


def _start(
    r: _Replay,
    wrepo: MemoryRepo,
    state: ExtractionState,
    committed: list,
    resuming: bool,
    progress_file: Path,
) -> int:
    """Set the worktree up for the extraction: a resumed replay counts the transcripts
    already done (returned), a new one starts from cleared knowledge and state. What is
    done counts only once the replay has cleared the worktree: before, its record is the
    base's, and a replay killed then would resume with every transcript "done" and
    present the base's knowledge as its own."""
    done = {h for h, _ in state.done_keys()} if resuming and _cleared(progress_file) else set()
    if done:
        resumed_from = sum(1 for _, p in committed if _hash_of(wrepo, p) in done)
        r.say(
            f"resuming the replay onto {r.full}: {resumed_from} of {len(committed)} "
            "transcripts were already done"
        )
        return resumed_from
    # a new replay, or one stopped before any transcript was done (maybe before its
    # knowledge was cleared): both start from cleared knowledge
    clear_derived_knowledge(wrepo)
    state.forget()
    _mark_cleared(progress_file)
    r.say(
        f"replaying {counted(len(committed), 'transcript')} from {r.base} onto {r.full} in {r.wt}"
    )
    return 0


def _extract(
    r: _Replay,
    wrepo: MemoryRepo,
    state: ExtractionState,
    committed: list,
    *,
    llm: Any,
    use_llm: bool | None,
    progress: Callable[[int, int, str], None] | None,
    stop_after: int | None,
) -> tuple[ExtractionReport, bool]:
    """Run the extractors over every transcript, then condense; whether it finished (not
    stopped after STOP_AFTER transcripts). Without an LLM given, one is opened on the
    main repo's cache (when the configuration asks for one) and closed after."""
    repo = r.repo
    own_llm = llm is None
    wanted = use_llm if use_llm is not None else repo.config.llm.provider != "offline"
    if llm is None and wanted:
        from autopoiesis.llm import LLMClient

        llm = LLMClient(repo)  # the main repo's cache: an unchanged replay asks the model nothing
    try:
        ex = KnowledgeExtractor(
            wrepo, llm=llm, model=r.model, state=state, use_llm=wanted, log_repo=repo
        )
        report = ex.replay_all(r.extractors, progress=progress, stop_after=stop_after)
        if stop_after is not None and stop_after < len(committed):
            return report, False
        _condense(wrepo, llm, committed, use_llm=ex.use_llm)
        return report, True
    finally:
        if own_llm and llm is not None:
            llm.close()


def _commit(
    r: _Replay, wrepo: MemoryRepo, transcripts: int, report: ExtractionReport, base_sha: str
) -> tuple[str | None, str]:
    """Commit the replayed knowledge on the branch and tag it; the commit and the tag."""
    ext = ",".join(r.extractors) if r.extractors else "all extractors"
    msg = (
        f"extract: replay {counted(transcripts, 'transcript')} with {ext}"
        + (f" ({r.model})" if r.model else "")
        + f"\n\n{report.summary()}\nBase: {r.base} {base_sha[:10]}\n"
    )
    wgit = _git(wrepo)
    sha = wgit.commit_pending(msg, tops=("knowledge", "archive")).sha
    tag = f"memory/extract/{r.name}"
    created, why = wgit.tag_named(
        "extract", r.name, f"replay of {counted(transcripts, 'transcript')} onto {r.full}"
    )
    if not created:
        r.notes.append(why)
    return sha, tag


def _hash_of(repo: MemoryRepo, rel: str) -> str:
    return content_hash((repo.root / rel).read_text(encoding="utf-8"))


def _condense(wrepo: MemoryRepo, llm: Any, committed: list, *, use_llm: bool) -> None:
    """Rebuild MEMORY.md's rollup from the replayed journals (docs/design.md#flow-reconstruct),
    latest week."""
    latest = committed[-1][0].date()
    with MemoryCondenser(wrepo, llm=llm, use_llm=use_llm) as c:
        c.weekly_rollup(latest, commit=False)
        c.pruner.prune_memory(commit=False)


def _remove_worktree(repo: MemoryRepo, wt: Path) -> None:
    git = _git(repo)
    if wt.exists():
        git.run("worktree", "remove", "--force", str(wt), check=False)
        if wt.exists():
            shutil.rmtree(wt, ignore_errors=True)
    git.run("worktree", "prune", check=False)


def _uncommitted_transcripts(repo: MemoryRepo) -> list[str]:
    return [p for p in uncommitted(repo.root, [CONVERSATIONS_DIR]) if p.endswith(".md")]


# ── comparison ──
def _facts_at(repo: MemoryRepo, ref: str) -> dict[str, set[str]]:
    """path -> active facts of every knowledge file at REF (read from git, not the tree)."""
    git = _git(repo)
    names = [
        n
        for n in git.run(
            "ls-tree", "-r", "--name-only", ref, "--", "knowledge/"
        ).stdout.splitlines()
        if n.endswith(".md")
    ]
    blobs = cat_file_batch(repo.root, [f"{ref}:{n}" for n in names])
    return {
        n: kf.parse((blobs[f"{ref}:{n}"] or b"").decode("utf-8", errors="replace")).facts()
        for n in names
    }


def compare_refs(repo: MemoryRepo, a: str, b: str) -> Comparison:
    """Entries added and removed per category going from A to B, and the facts only on each side."""
    git = _git(repo)
    for ref in (a, b):
        if git.run("rev-parse", "-q", "--verify", f"{ref}^{{commit}}", check=False).returncode != 0:
            raise ReplayError(
                f"{ref!r} is not a branch or commit of this repo; `git branch --list 'extract/*'` "
                "shows the replays."
            )
    fa, fb = _facts_at(repo, a), _facts_at(repo, b)
    stat = git.run("diff", "--stat", f"{a}..{b}", "--", "knowledge/").stdout.rstrip()
    by_cat: dict[str, list[int]] = {}
    only_a, only_b = [], []
    all_a = {f for s in fa.values() for f in s}
    all_b = {f for s in fb.values() for f in s}
    for path in sorted(set(fa) | set(fb)):
        cat = category_of(path) or "reference"
        sa, sb = fa.get(path, set()), fb.get(path, set())
        c = by_cat.setdefault(cat, [0, 0])
        c[0] += len(sb - sa)
        c[1] += len(sa - sb)
        only_a += [(path, f) for f in sorted(sa - sb) if f not in all_b]
        only_b += [(path, f) for f in sorted(sb - sa) if f not in all_a]
    return Comparison(
        a,
        b,
        stat,
        tuple((k, v[0], v[1]) for k, v in sorted(by_cat.items())),
        tuple(only_a),
        tuple(only_b),
    )


def format_comparison(c: Comparison, limit: int = 10) -> str:
    lines = [
        f"git diff {c.a}..{c.b} --stat -- knowledge/",
        c.stat or "(no differences)",
        "",
        f"{'category':<12} {'added':>7} {'removed':>8}",
    ]
    lines += [f"{cat:<12} {add:>7} {rem:>8}" for cat, add, rem in c.per_category]
    for label, facts in ((f"facts only on {c.a}", c.only_a), (f"facts only on {c.b}", c.only_b)):
        lines.append(f"\n{label}: {len(facts)}")
        lines += [f"  {PurePosixPath(p).name}: {f}" for p, f in facts[:limit]]
        if len(facts) > limit:
            lines.append(f"  ... and {len(facts) - limit} more")
    return "\n".join(lines)


def format_result(r: ReplayResult) -> str:
    lines = [
        f"replayed {counted(r.transcripts, 'transcript')} onto {r.branch}"
        + (f" (resumed after {r.resumed_from})" if r.resumed_from else ""),
        r.report.summary(),
    ]
    if r.commit:
        lines.append(f"committed {r.commit[:10]} on {r.branch}; tag {r.tag}")
    lines += [f"note: {n}" for n in r.notes]
    lines += [f"  not included: {p}" for p in r.not_included[:20]]
    if r.comparison is not None:
        lines += ["", format_comparison(r.comparison)]
    return "\n".join(lines)
