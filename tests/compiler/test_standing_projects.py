"""MEMORY.md's entries in a project's context: a preference said in a session of another
project stands in MEMORY.md for every project, but with a current project it ranks after
that project's own and the unattributed ones, and comes only when it shares words with the
message. The cited session's project comes from the
index (`index.projects.cited_projects`), as search knows a transcript's."""

from __future__ import annotations

from datetime import UTC, datetime

from autopoiesis.compiler import ContextCompiler
from autopoiesis.core.clock import parse_ts
from autopoiesis.core.paths import ACTIVE_PROJECTS_FILE, MEMORY_FILE, MemoryRepo
from autopoiesis.formats import knowledge as kf
from autopoiesis.formats import transcript as tf
from autopoiesis.index import SearchIndex
from autopoiesis.index.projects import cited_projects
from autopoiesis.integrations.hook_context import about

NOW = datetime(2026, 4, 1, 12, tzinfo=UTC)
UUID = "0c586697-b4e5-4b0c-8442-bd07d7e58388"  # cited by its head, 0c586697
LONG = "specstory_d6611b5c2fb37815"  # over 24 characters: cited by its first 24


def _transcript(repo: MemoryRepo, sid: str, started: str, project: str) -> str:
    t0 = parse_ts(started)
    meta = tf.TranscriptMeta(session_id=sid, started=t0, ended=t0, status="closed", project=project)
    turn = tf.Turn(time=t0, role="user", items=(tf.Text(f"Working on {project} today."),))
    rel = tf.transcript_relpath(sid, t0, f"{project} work")
    path = repo.root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(tf.render(tf.Transcript(meta=meta, title=project, turns=(turn,))))
    return rel


def _entry(day: int, text: str, source: str) -> str:
    return kf.Entry(f"202603{day:02d}-1000-{day:06x}", text, f"2026-03-{day:02d}", source).render()


def _scene(repo: MemoryRepo) -> dict[str, str]:
    paths = {
        "alpha": _transcript(repo, "ses-alpha", "2026-03-02T10:00:00Z", "alpha"),
        "beta": _transcript(repo, UUID, "2026-03-03T10:00:00Z", "beta"),
        "gamma": _transcript(repo, LONG, "2026-03-04T10:00:00Z", "gamma"),
    }
    with SearchIndex(repo) as index:
        index.catch_up()
    return paths


def test_cited_sessions_resolve_to_their_transcripts_projects(memory_repo: MemoryRepo) -> None:
    paths = _scene(memory_repo)
    refs = [kf.citation_ref(s) for s in ("ses-alpha", UUID, LONG)]
    assert refs[1] == "0c586697" and len(refs[2]) == kf.CITATION_REF_CHARS
    found = cited_projects(memory_repo.index_path, [*refs, paths["alpha"], "ses-nobody"])
    assert found == {
        "ses-alpha": "alpha",
        "0c586697": "beta",
        refs[2]: "gamma",
        paths["alpha"]: "alpha",  # an older citation names the transcript's path
    }
    assert cited_projects(memory_repo.root / "no.db", refs) == {}


def test_another_projects_preference_ranks_after_the_current_ones(
    memory_repo: MemoryRepo,
) -> None:
    _scene(memory_repo)
    ours = _entry(
        10,
        "Keep every commit small, say in its subject why it was made, and never mix a "
        "refactoring with a change of behaviour in one commit.",
        "ses-alpha",
    )
    theirs = [
        _entry(day, f"Mark a finished task as in review, not complete (board {day}).", "0c586697")
        for day in range(11, 25)
    ]
    unattributed = "- Answer in English, even when the issue is written in German."
    (memory_repo.root / MEMORY_FILE).write_text(
        "# Core Memory\n\n## Preferences\n" + "\n".join([ours, *theirs, unattributed]) + "\n",
        encoding="utf-8",
    )

    active = {
        name: kf.Entry(f"2026032{n}-1000-00000{n}", f"**{name}** — {what}", None, ref).render()
        for n, (name, ref, what) in enumerate(
            [
                ("alpha", "ses-alpha", "Splitting the importer into one module per format."),
                ("beta", "0c586697", "Moving the task board to the new review states."),
            ],
            start=1,
        )
    }
    (memory_repo.root / ACTIVE_PROJECTS_FILE).write_text(
        "# Active Projects\n" + "\n".join(active.values()) + "\n", encoding="utf-8"
    )
    shown: dict[str | None, dict[str, str]] = {}

    def memory(project: str | None, budget: int = 700) -> str:
        with ContextCompiler(memory_repo, search=lambda q, n: []) as c:
            res = c.compile("Hello there", budget=budget, now=NOW, project=project)
        shown[project] = {s.label: s.content for s in res.sections if s.included}
        return shown[project]["memory"]

    in_alpha = memory("alpha")
    assert ours in in_alpha and unattributed in in_alpha
    # another codebase's rules that share no word with the message stay out, though there
    # is room for some of them (they fill it without a project, below) ...
    roomy = memory("alpha", budget=1400)
    assert ours in roomy and not any(line in roomy for line in theirs)
    assert "left out for room: 14 of the 16 entries" in roomy
    assert sum(line in memory(None, budget=1400) for line in theirs) > 2
    # ... and those that do come, ranked against the message like the rest
    with ContextCompiler(memory_repo, search=lambda q, n: []) as c:
        res = c.compile(
            "Which state does a finished task get on the board?",
            budget=700,
            now=NOW,
            project="alpha",
        )
    asked = next(s.content for s in res.sections if s.label == "memory")
    assert 0 < sum(line in asked for line in theirs) < len(theirs)
    # ... and without a project the later entries win, as before: beta's newest (the
    # longer, older entry of alpha no longer fits)
    no_project = memory(None)
    assert theirs[-1] in no_project and ours not in no_project
    # in beta's own repository, its preferences are its own
    in_beta = memory("beta")
    assert theirs[-1] in in_beta and ours not in in_beta
    # the list of active projects puts the current one's line first as well
    assert active["alpha"] in shown["alpha"]["projects"]
    assert active["beta"] not in shown["alpha"]["projects"]


def test_the_projects_name_singles_out_none_of_its_entries(memory_repo: MemoryRepo) -> None:
    """A session's start asks about the project by its name. Ranked by it, the entries
    that happened to name the project went in before the newest ones."""
    naming = [
        f"- 2026-03-{day:02d}: The alpha build once needed a clean cache (note {day})."
        for day in range(1, 9)
    ]
    newest = [
        "- 2026-03-20: Review every migration by hand before it runs.",
        "- 2026-03-21: Answer with the diff first, then the reasons.",
    ]
    (memory_repo.root / MEMORY_FILE).write_text(
        "# Core Memory\n\n## Preferences\n" + "\n".join(naming + newest) + "\n",
        encoding="utf-8",
    )
    with ContextCompiler(memory_repo, search=lambda q, n: []) as c:
        res = c.compile(about("alpha", "/src/alpha"), budget=400, now=NOW, project="alpha")
    memory = next(s for s in res.sections if s.label == "memory").content
    assert all(line in memory for line in newest)
    assert sum(line in memory for line in naming) < len(naming)
    # outside a repository the folder's name is the hint; never the word "project"
    assert about(None, "/home/ada/notes") == "notes" and about("alpha", None) == "alpha"
