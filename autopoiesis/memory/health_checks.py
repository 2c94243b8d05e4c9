"""The memory's own checks of `autopoiesis doctor` (core.health.Check): the search
machinery (SQLite, sqlite-vec, the embedder), the index, links in the memory folders, the
transcript history (`verify`), the git hooks, the remote, whether sync has stopped, and
whether memory-config.yaml can be used as written. The harness integrations'
check is the integrations package's, the daemon's the daemon package's.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from autopoiesis.core.health import Check, Finding, note, ok, problem
from autopoiesis.core.text import counted, noun
from autopoiesis.errors import AutopoiesisError
from autopoiesis.plugins import hookimpl

REMOTE_TIMEOUT = 20  # seconds doctor waits for a remote to answer


def check_search(memory: Any) -> Iterator[Finding]:
    """The SQLite module in use, sqlite-vec loaded, the configured embedder available."""
    from autopoiesis.core.sqlite import probe_info

    info = probe_info()
    base = {
        "sqlite_module": info.module,
        "sqlite_version": info.sqlite_version,
        "sqlite_vec_loaded": info.sqlite_vec_loaded,
        "sqlite_vec_version": info.sqlite_vec_version,
    }
    yield ok("sqlite", f"{info.module} {info.sqlite_version}", **base)
    if info.sqlite_vec_loaded:
        yield ok("sqlite-vec", f"loaded {info.sqlite_vec_version}")
    else:
        yield problem(
            "sqlite-vec",
            f"not loaded ({info.error}); vector search uses a bounded in-memory scan",
            "reinstall autopoiesis so that its sqlite-vec (or pysqlite3-binary) is installed",
        )
    cfg = memory.config.search
    embedder: dict[str, Any] = {
        "name": cfg.embedder,
        "model": cfg.embedding_model if cfg.embedder != "offline" else None,
    }
    try:
        from autopoiesis.index.embedders import embedder_from_config

        e = embedder_from_config(memory.config)
        embedder.update(fingerprint=e.fingerprint, dimensions=e.dimensions, ok=True)
        yield ok("embedder", e.fingerprint, embedder=embedder)
    except AutopoiesisError as exc:
        embedder.update(ok=False, error=str(exc))
        yield problem("embedder", f"{cfg.embedder} unavailable: {exc}", embedder=embedder)


def check_index(memory: Any) -> Iterator[Finding]:
    """memory.db there, sound (SQLite's quick_check) and how far behind the files it is."""
    from autopoiesis.memory.health_parts import index_facts

    facts = index_facts(memory.repo, integrity=True)
    data = {
        "index": facts,
        "files_in_repo": facts.get("files_in_repo"),
        "rows_in_index": facts.get("files_indexed"),
    }
    if not facts["exists"]:
        yield problem("index", "no search index yet", "run `autopoiesis index rebuild`", **data)
        return
    if facts.get("integrity", "ok") != "ok":
        yield problem(
            "index",
            f"memory.db is corrupt (quick_check: {facts['integrity']})",
            "run `autopoiesis index rebuild`",
            **data,
        )
        return
    fresh = (
        "fresh"
        if facts["fresh"]
        else f"not fresh ({counted(facts['stale_count'], 'file')} behind; the next search "
        "catches up)"
    )
    yield ok(
        "index",
        f"{facts['files_indexed']} files indexed / {facts['files_in_repo']} in the repo; {fresh}",
        **data,
    )


def check_links(memory: Any) -> Iterator[Finding]:
    links = memory.repo.links()
    if links:
        more = f" and {len(links) - 5} more" if len(links) > 5 else ""
        yield problem(
            "links",
            f"symbolic links in the memory folders, never read: {', '.join(links[:5])}{more}",
            "remove them with `git rm`",
        )


# a file of each kind the memory commits, as .gitignore rules would be asked about it
_MEMORY_SAMPLES = (
    "raw/conversations/2026/01/01/0000-session-title.md",
    "knowledge/memory/MEMORY.md",
    "knowledge/journal/2026-01-01.md",
    "knowledge/projects/project/context.md",
    "knowledge/reference/note.md",
    "topics/topic.md",
    "archive/memory/MEMORY.md",
)


def check_ignored(memory: Any) -> Iterator[Finding]:
    """A .gitignore rule (a collaborator's, pulled with a sync) that ignores the memory's
    own files: `git add -A` and `git status` no longer see a note made there, so it is
    never committed and nothing says so."""
    from autopoiesis.git.runner import call

    proc = call(
        memory.repo.root,
        "check-ignore",
        "--no-index",
        "-v",
        "-z",
        "--stdin",
        input="".join(f"{p}\x00" for p in _MEMORY_SAMPLES).encode(),
    )
    fields = proc.stdout.decode("utf-8", "replace").split("\x00") if proc.returncode == 0 else []
    hits = [(fields[i + 3], fields[i], fields[i + 2]) for i in range(0, len(fields) - 3, 4)]
    if hits:
        shown = "; ".join(f"{path} by `{rule}` ({source})" for path, source, rule in hits[:3])
        yield problem(
            "ignored",
            f"the memory's own files are ignored by git: {shown}",
            "remove the rule from that .gitignore and commit it (`git check-ignore -v PATH` "
            "names it); notes made there are not committed until then",
        )


def check_uncommitted(memory: Any) -> Iterator[Finding]:
    """Transcripts under raw/ that no commit holds and no live capture is writing: a
    capture killed before its end, a commit that failed, or a file recovery could not
    read (its frontmatter damaged), which stays untracked with only a warning."""
    from autopoiesis.capture.closing import session_lock, transcript_meta, uncommitted_transcripts
    from autopoiesis.errors import TranscriptFormatError

    left: list[str] = []
    unreadable: list[str] = []
    for path in uncommitted_transcripts(memory.repo):
        rel = memory.repo.rel(path)
        try:
            meta = transcript_meta(path, rel)
        except (OSError, TranscriptFormatError):
            unreadable.append(rel)
            continue
        lock = session_lock(memory.repo, meta.session_id)
        if lock.acquire(timeout=0):
            lock.release()
            left.append(rel)  # nobody writes it: a capture died, or a commit failed
    if unreadable:
        yield problem(
            "transcripts",
            f"not readable as a transcript, so never committed: {', '.join(unreadable[:3])}"
            + (f" and {len(unreadable) - 3} more" if len(unreadable) > 3 else ""),
            "fix its frontmatter (`autopoiesis capture --recover` then commits it), or move "
            "it out of raw/",
        )
    if left:
        yield problem(
            "transcripts",
            f"{counted(len(left), 'finished or abandoned transcript')} not committed: "
            + ", ".join(left[:3])
            + (" ..." if len(left) > 3 else ""),
            "`autopoiesis capture --recover` closes and commits them",
        )
    from autopoiesis.knowledge.documents import written_not_committed

    written = written_not_committed(memory.repo)
    if written:
        yield problem(
            "knowledge",
            f"{counted(len(written), 'knowledge file')} autopoiesis wrote or moved "
            f"{noun(len(written), 'is', 'are')} not committed (a run was stopped before its "
            "commit): " + ", ".join(written[:3]) + (" ..." if len(written) > 3 else ""),
            "the next `autopoiesis extract --pending`, `prune` or `condense` commits them (or "
            "`autopoiesis commit`)",
        )


def check_history(memory: Any) -> Iterator[Finding]:
    """`autopoiesis verify`: no transcript modified, renamed or deleted in history; and no
    forget stopped before its record (git.rewrite.begin_rewrite)."""
    from autopoiesis.git.rewrite import rewrite_under_way, stopped_forget

    under_way = rewrite_under_way(memory.repo)
    if under_way is not None:
        summary, _, fix = stopped_forget(under_way).partition(". ")
        yield problem("history", summary, fix + "; `autopoiesis sync` waits for it")
    try:
        result = memory.verify()
    except AutopoiesisError as exc:
        summary = f"not verified ({exc})"
        yield problem(
            "history", summary, history={"ok": False, "error": str(exc), "summary": summary}
        )
        return
    history = {**result.to_dict(), "summary": result.summary()}
    if result.unsaved:  # the check ran; only its bookmark is missing
        yield note(
            "history",
            f"checked, but its bookmark could not be saved ({result.unsaved}); the next "
            "check reads these commits again",
        )
    if result.ok:
        yield ok("history", result.summary(), history=history)
    else:
        yield problem(
            "history",
            result.summary(),
            "the history fails verify: `autopoiesis verify` lists what changed",
            history=history,
        )


_SHIM_PYTHON = re.compile(r'(?:PY="|-x ")(?P<python>[^"$]+)"')


def check_git_hooks(memory: Any) -> Iterator[Finding]:
    """The git hooks that keep raw/ immutable and the index fresh: installed, ours, and
    their Python still there."""
    from autopoiesis.core.paths import template_dir
    from autopoiesis.git.hooks import HOOK_NAMES, hooks_dir, is_ours

    folder = hooks_dir(memory.root)
    missing, foreign, gone, older = [], [], [], []
    for name in HOOK_NAMES:
        path = folder / name
        if not path.is_file():
            missing.append(name)
            continue
        if not is_ours(path):
            foreign.append(name)
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        m = _SHIM_PYTHON.search(text)
        python = m["python"] if m else None
        if python and not Path(python).exists():
            gone.append(f"{name} ({python})")
            continue
        template = (template_dir("hooks") / name).read_text(encoding="utf-8")
        if text != template.replace("@PYTHON@", python or sys.executable):
            older.append(name)
    data = {"git_hooks": {"dir": str(folder), "missing": missing, "foreign": foreign,
                          "python_gone": gone, "outdated": older}}  # fmt: skip
    fix = "run `autopoiesis git-hooks install`"
    if missing:
        yield problem(
            "git hooks", f"not installed: {', '.join(missing)} (in {folder})", fix, **data
        )
    if foreign:
        yield problem(
            "git hooks",
            f"another tool's hook in place of ours: {', '.join(foreign)}",
            "run `autopoiesis git-hooks install --chain` (keeps theirs, runs it first)",
            **data,
        )
    if gone:
        yield problem(
            "git hooks",
            f"their Python is gone, so they do nothing: {', '.join(gone)}",
            fix,
            **data,
        )
    if older:
        yield note(
            "git hooks",
            f"from another version of autopoiesis: {', '.join(older)}",
            fix,
            **data,
        )
    if not (missing or foreign or gone or older):
        yield ok("git hooks", f"{len(HOOK_NAMES)} installed in {folder}", **data)


def check_remote(memory: Any) -> Iterator[Finding]:
    """Each remote answers (git ls-remote, no objects fetched); where the branch stands."""
    from subprocess import TimeoutExpired

    from autopoiesis.errors import GitError
    from autopoiesis.git.repo import MemoryGit
    from autopoiesis.memory.health_parts import read_remote

    facts = read_remote(memory)
    if not facts["remotes"]:
        yield note("remote", "none: this memory lives on this machine only", remote=facts)
        return
    git = MemoryGit(memory.repo)
    for name, url in facts["remotes"].items():
        try:
            git.ls_remote(name, timeout=REMOTE_TIMEOUT)
        except TimeoutExpired:
            yield problem(
                "remote",
                f"{name} ({url}) did not answer in {REMOTE_TIMEOUT} s",
                "check the network, or the URL with `git remote -v`",
                remote=facts,
            )
            continue
        except GitError as exc:
            yield problem(
                "remote",
                f"{name} ({url}) cannot be reached: {exc}",
                "check the URL (`git remote -v`) and your credentials",
                remote=facts,
            )
            continue
        where = (
            f"; {facts['ahead']} ahead, {facts['behind']} behind {facts['upstream']}"
            if facts["upstream"] and name == facts["upstream"].split("/", 1)[0]
            else ""
        )
        yield ok("remote", f"{name} answers ({url}){where}", remote=facts)


def check_sync(memory: Any) -> Iterator[Finding]:
    """Whether this clone's syncs work (memory/sync_report.py's health record): a round
    stopped by a conflict that needs a person, or by a remote that refuses, is a problem
    until a round works again. Nothing to say before the first sync."""
    from autopoiesis.memory.sync_report import health_problem, sync_health

    health = sync_health(memory.repo)
    stopped = health_problem(health)
    if stopped:
        yield problem(
            "sync", stopped, "`autopoiesis sync` shows what stops it and what to run", sync=health
        )
    elif health["last_ok"]:
        yield ok("sync", f"the last round worked ({health['last_ok']})", sync=health)


def check_operation(memory: Any) -> Iterator[Finding]:
    """A git operation left half-done (a merge with conflicts, a rebase, a cherry-pick):
    every command that writes refuses to until it ends (GitCore.refuse_during_operation),
    a rebase leaves HEAD detached, and the daemon's syncs stop. And conflict markers in
    changes not committed yet (`git diff --check`), which a resolved-looking merge can
    leave in a note."""
    from autopoiesis.git.commits import how_to_end
    from autopoiesis.git.repo import MemoryGit

    git = MemoryGit(memory.repo)
    what = git.operation_in_progress()
    conflicted = git.unmerged_paths() if what is not None else []
    if what is not None:
        left = f": {counted(len(conflicted), 'file')} in conflict ({', '.join(conflicted[:3])}" + (
            " ...)" if len(conflicted) > 3 else ")"
        )
        yield problem(
            "operation",
            f"{what} is in progress" + (left if conflicted else ""),
            how_to_end(what)
            + (
                "; `autopoiesis sync` concludes a merge once its conflicts are added"
                if what == "a merge"
                else "; until then nothing is committed and sync refuses to run"
            ),
            operation=what,
        )
    proc = git.run("diff", "--check", "HEAD", "--", ".", check=False)
    marked = sorted(
        {
            line.split(":", 1)[0]
            for line in proc.stdout.splitlines()
            if line.endswith("leftover conflict marker")
        }
        - set(conflicted)  # those are said above
    )
    if marked:
        yield problem(
            "conflicts",
            f"conflict markers (<<<<<<< ... >>>>>>>) left in {', '.join(marked[:3])}"
            + (f" and {len(marked) - 3} more" if len(marked) > 3 else ""),
            "edit them out, then `git add` the files (`git diff --check` lists the lines)",
        )


def check_config(memory: Any) -> Iterator[Finding]:
    """memory-config.yaml can be used as written (a conflict or a typo never stops capture:
    its last valid settings are used meanwhile, core/config_layers.py)."""
    from autopoiesis.core.config import check_tracked_config

    unusable = check_tracked_config(memory.root)
    if unusable:
        yield problem(
            "config",
            f"{unusable} (its last valid settings are used meanwhile)",
            "fix memory-config.yaml as the message says, then commit it",
        )
    else:
        yield ok("config", "memory-config.yaml is valid")


CHECKS = (
    Check("search", check_search, ("sqlite", "sqlite-vec", "embedder")),
    Check("index", check_index),
    Check("links", check_links),
    Check("ignored", check_ignored),
    Check("transcripts", check_uncommitted, ("knowledge",)),
    Check("history", check_history),
    Check("git hooks", check_git_hooks),
    Check("remote", check_remote),
    Check("sync", check_sync),
    Check("operation", check_operation, ("conflicts",)),
    Check("config", check_config),
)


@hookimpl
def register_checks(register: Any) -> None:
    for check in CHECKS:
        register(check)
