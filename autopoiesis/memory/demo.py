"""`autopoiesis demo`: the whole pipeline, offline, on bundled sessions.

Each stage prints what it did, with the command a user would type for it. The demo
spans every package (capture, lifecycle, index, watch, compiler), which is why it lives
in the Memory facade; it writes through an `echo` callable so it needs no CLI library.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path

from autopoiesis.core.paths import PACKAGE_DIR, MemoryRepo
from autopoiesis.errors import AutopoiesisError

DEMO_SESSIONS = PACKAGE_DIR / "_files" / "demo" / "sessions.ndjson"
PR_MESSAGE = "Can you review the PR that just came in? https://github.com/acme/app/pull/42"

Echo = Callable[[str], None]


class Demo:
    def __init__(self, echo: Echo = print):
        self.echo = echo

    def step(self, title: str) -> None:
        self.echo(f"\n== {title}")

    def run(self, directory: Path | None = None) -> Path:
        from autopoiesis.capture.stream import process_stream
        from autopoiesis.git.repo import MemoryGit
        from autopoiesis.memory.facade import Memory
        from autopoiesis.memory.initialize import init_memory_repo

        if directory is None:
            directory = Path(tempfile.mkdtemp(prefix="autopoiesis-demo-"))
        elif directory.exists() and any(directory.iterdir()):
            raise AutopoiesisError(
                f"{directory} is not empty; give the demo a new folder (or none for a temporary "
                "one)."
            )

        self.step(f"autopoiesis init {directory}")
        report = init_memory_repo(directory)
        repo = MemoryRepo(report.root)
        git = MemoryGit(repo)
        self.echo(
            f"created {len(report.created)} files: raw/, knowledge/, topics/, memory-config.yaml; "
            "hooks installed"
        )

        self.step("autopoiesis capture < sessions.ndjson   (3 sessions streamed as NDJSON events)")
        with DEMO_SESSIONS.open("rb") as fh:
            stream = process_stream(repo, fh, on_committed=Memory(repo).after_commit())
        for closed in stream.closed:
            self.echo(f"committed {closed.path}  ({closed.turns} turns)")
        if stream.refused:
            raise AutopoiesisError("demo sessions were refused: " + "; ".join(stream.refused))

        first = repo.root / stream.closed[0].path
        self.step(f"cat {stream.closed[0].path}   (secrets redacted at capture)")
        self.echo(first.read_text(encoding="utf-8"))

        self.lifecycle(repo)
        self.search(repo)
        self.watch_and_compile(repo)

        self.step("git log --oneline")
        self.echo(git.run("log", "--oneline", "--decorate").stdout.rstrip())

        self.step('autopoiesis recall "source of truth"   (git log -S)')
        for c in git.recall("source of truth"):
            self.echo(f"{c.date[:16].replace('T', ' ')}  {c.sha[:10]}  {c.subject}")
            for f in c.files:
                self.echo(f"    {f}")

        self.step("autopoiesis tag milestone demo")
        self.echo(git.tag_named("milestone", "demo", "end of the demo")[1])
        self.echo(
            f"\nThe memory repo is {repo.root} — an ordinary git repository: try `git -C "
            f"{repo.root} log -p`."
        )
        return repo.root

    # ── the lifecycle: what extraction derived, the weekly rollup ──
    def lifecycle(self, repo: MemoryRepo) -> None:
        from autopoiesis.core.paths import category_of
        from autopoiesis.git.repo import MemoryGit
        from autopoiesis.knowledge.extract import KnowledgeExtractor, list_transcripts
        from autopoiesis.memory.facade import Memory

        self.step(
            "autopoiesis extract --pending   (offline extractors: decisions, lessons, people, "
            "procedures, facts, journal)"
        )
        with KnowledgeExtractor(repo) as ex, ex.committing():
            report = ex.extract_pending()
            sha = ex.commit(report)
        self.echo(report.summary())
        if sha:
            self.echo(f"committed {sha[:10]}")
        paths = list(report.paths)
        if not paths:
            # capture already extracted each session as it ended (extraction_trigger:
            # on_session_end): show what those extraction commits wrote
            out = (
                MemoryGit(repo)
                .run("log", "--format=", "--name-only", "--grep=^Learned:", "--", "knowledge")
                .stdout
            )
            # memory content only: not the record of what extraction has done
            paths = sorted({p for p in out.split() if p and category_of(p) is not None})
            self.echo(
                f"(each session was extracted when it ended; {len(paths)} knowledge files were "
                "written)"
            )
        for rel in paths:
            text = (repo.root / rel).read_text(encoding="utf-8")
            self.echo(f"\n-- {rel}")
            self.echo(text.split("\n---\n", 1)[-1].strip())
        transcripts = list_transcripts(repo)
        if transcripts:
            self.step("autopoiesis condense weekly   (journals -> MEMORY.md Active Context)")
            with Memory(repo).condenser() as c:
                self.echo(c.weekly_rollup(transcripts[-1][0].date()).summary())

    # ── the search index ──
    def search(self, repo: MemoryRepo) -> None:
        from autopoiesis.index import SearchIndex

        self.step(
            "autopoiesis index rebuild   (memory.db: FTS5 + sqlite-vec, chunks by turn and by "
            "section)"
        )
        with SearchIndex(repo) as index:
            report = index.rebuild_full()
            st = index.status()
            self.echo(
                f"indexed {report.indexed} files as {st.chunks} chunks in {report.seconds:.2f} s "
                f"({st.sqlite.module} {st.sqlite.sqlite_version}, sqlite-vec "
                f"{st.sqlite.sqlite_vec_version or 'not loaded'}, "
                f"embedder {st.embedder})"
            )
            for query in ("why did the deploy fail?", "where is the source of truth kept"):
                self.step(f'autopoiesis search "{query}" --limit 3')
                results = index.search(query, limit=3)
                if not results:
                    self.echo("no results")
                for r in results:
                    self.echo(r.describe())

    # ── topics, output steering, the compiled context ──
    def watch_and_compile(self, repo: MemoryRepo) -> None:
        from autopoiesis.memory.compile_message import compile_for_message
        from autopoiesis.topics.pipeline import WatcherPipeline

        self.step(f'autopoiesis topics test "{PR_MESSAGE}"')
        pipe = WatcherPipeline(repo)
        for a in pipe.evaluate(PR_MESSAGE, "input", all_topics=True, dry_run=True):
            hits = ", ".join(f"{h.trigger_type}={h.detail!r}" for h in a.hits) or "no trigger"
            score = a.scores.get("tfidf")
            self.echo(
                f"{a.topic:<20} {'ACTIVATED' if a.activated else 'not active':<10} tier {a.tier}: "
                f"{a.reason}"
            )
            self.echo(
                f"    tier 1: {hits}"
                + (f"; tier 2 tf-idf {score:.2f}" if score is not None else "")
            )

        reply = 'Sure, here is the fix:\n    print "done"\n'
        self.step("agent output watched (direction=output)")
        for topic, hint in pipe.corrections(reply):
            self.echo(f"{topic}: correction for the next turn: {hint}")
        pipe.process(reply, "output")  # queues the hint for the next compile

        self.step(f'autopoiesis compile --explain "{PR_MESSAGE}"')
        result, _ = compile_for_message(repo, PR_MESSAGE, budget=2048)
        for s in result.sections:
            if s.included:
                self.echo(f"P{s.priority} {s.tokens:>5} tokens  {s.label}")
        self.echo(f"total {result.total_tokens} of {result.budget} tokens")


def run_demo(directory: Path | None = None, echo: Echo = print) -> Path:
    """Run the demo into DIRECTORY (a new temporary folder when None); returns the repo root."""
    return Demo(echo).run(directory)
