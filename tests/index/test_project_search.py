"""Project scope end to end: a memory repo and two project repositories in tmp (alpha with
an origin remote; beta without one, used through a linked worktree's subfolder), Claude
Code sessions of each imported, the index built; then `projects`, `search --project` and
the default project of the current folder."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from autopoiesis.capture.importers import import_files
from autopoiesis.core.paths import MemoryRepo
from autopoiesis.formats import transcript as tf
from autopoiesis.index import SearchIndex
from autopoiesis.index.projects import (
    OTHER_PROJECT_FACTOR,
    chunk_projects,
    file_project,
    indexed_project,
)
from tests.integrations.helpers import jsonl

QUERY = "how do we install dependencies in this repo"
ALPHA_SAYS = "We use uv, not pip, in this repo: install dependencies with uv sync."
BETA_SAYS = (
    "We use pip, not uv, in this repo: install dependencies with pip install -r requirements.txt."
)


def _session(path: Path, sid: str, cwd: Path, answer: str) -> Path:
    def line(uuid: str, kind: str, when: str, content: object, parent: str | None) -> dict:
        return {
            "type": kind,
            "sessionId": sid,
            "uuid": uuid,
            "parentUuid": parent,
            "timestamp": when,
            "cwd": str(cwd),
            "message": {"id": f"m-{uuid}", "role": kind, "content": content},
        }

    return jsonl(
        path,
        [
            line(f"{sid}-1", "user", "2026-03-01T10:00:00Z", "How do we install things?", None),
            line(
                f"{sid}-2",
                "assistant",
                "2026-03-01T10:01:00Z",
                [{"type": "text", "text": answer}],
                f"{sid}-1",
            ),
        ],
    )


@pytest.fixture
def scene(memory_repo: MemoryRepo, tmp_path: Path, git, commit_all) -> dict[str, Path]:
    alpha = tmp_path / "src" / "alpha-checkout"
    alpha.mkdir(parents=True)
    git(alpha, "init", "-q")
    git(alpha, "remote", "add", "origin", "git@example.org:team/alpha.git")
    beta = tmp_path / "src" / "beta"
    beta.mkdir(parents=True)
    git(beta, "init", "-q")
    (beta / "README.md").write_text("beta\n")
    git(beta, "add", "README.md")
    git(beta, "commit", "-q", "-m", "first")
    linked = tmp_path / "wt" / "beta-feature"
    git(beta, "worktree", "add", "-q", "-b", "feature", str(linked))
    (linked / "pkg").mkdir()
    logs = tmp_path / "logs"
    logs.mkdir()
    report = import_files(
        memory_repo,
        [
            _session(logs / "a.jsonl", "ses-alpha", alpha, ALPHA_SAYS),
            _session(logs / "b.jsonl", "ses-beta", linked / "pkg", BETA_SAYS),
        ],
    )
    assert report.refused == [] and len(report.imported) == 2
    context = memory_repo.root / "knowledge" / "projects" / "alpha" / "context.md"
    context.parent.mkdir(parents=True, exist_ok=True)
    context.write_text("# Alpha\n\n## Tooling\nThe alpha build runs on uv.\n")
    commit_all(memory_repo, "alpha context")
    with SearchIndex(memory_repo) as index:
        index.rebuild_full()
    return {"alpha": alpha, "beta": beta, "linked": linked, "outside": tmp_path}


def _metas(repo: MemoryRepo) -> dict[str, tf.TranscriptMeta]:
    return {
        m.session_id: m
        for m in (tf.parse_meta(p.read_text()) for p in repo.conversations_dir.rglob("*.md"))
    }


def _first_session(results: list[dict]) -> str:
    first = next(r for r in results if r["category"] == "conversation")
    return "alpha" if "ses-alpha" in first["path"] else "beta"


def test_transcripts_name_their_project(memory_repo: MemoryRepo, scene) -> None:
    metas = _metas(memory_repo)
    assert metas["ses-alpha"].project == "alpha"  # origin's name, not the folder's
    # A linked worktree's subfolder belongs to the main repository (no remote: its name).
    assert metas["ses-beta"].project == "beta"
    assert metas["ses-beta"].cwd == str(scene["linked"] / "pkg")


def test_projects_lists_counts(memory_repo: MemoryRepo, scene, cli) -> None:
    out = cli("projects", "--json", repo=memory_repo, cwd=scene["linked"], check=True)
    # with the folder of this machine each was filed from (a worktree's: its repository's)
    alpha, beta = str(scene["alpha"].resolve()), str(scene["beta"].resolve())
    assert json.loads(out.stdout) == [
        {
            "name": "alpha",
            "transcripts": 1,
            "knowledge_files": 1,
            "checkouts": [alpha],
            "current": False,
        },
        {
            "name": "beta",
            "transcripts": 1,
            "knowledge_files": 0,
            "checkouts": [beta],
            "current": True,
        },
    ]
    text = cli("projects", repo=memory_repo, cwd=scene["linked"], check=True).stdout
    assert "* beta" in text and "  alpha" in text
    assert text.rstrip().endswith(beta), text  # which `beta` this is


def test_search_ranks_the_asked_project_first(memory_repo: MemoryRepo, scene, cli) -> None:
    def first(*args: str, cwd: Path) -> str:
        out = cli("search", QUERY, "--json", *args, repo=memory_repo, cwd=cwd, check=True)
        results = json.loads(out.stdout)
        assert {r["project"] for r in results} >= {"alpha", "beta"}
        return _first_session(results)

    outside = scene["outside"]
    assert first("--project", "alpha", cwd=outside) == "alpha"
    assert first("--project", "beta", cwd=outside) == "beta"
    # Without --project: the current folder's repository, a worktree's subfolder included.
    assert first(cwd=scene["linked"] / "pkg") == "beta"
    assert first(cwd=scene["alpha"]) == "alpha"
    assert first("--merge", "weighted", cwd=scene["beta"]) == "beta"
    assert first("--merge", "weighted", cwd=scene["alpha"]) == "alpha"


def test_other_projects_still_answer_when_nothing_better_fits(
    memory_repo: MemoryRepo, scene
) -> None:
    # Only beta's turn names requirements: asked from alpha, it is still found, marked.
    with SearchIndex(memory_repo) as index:
        results = index.search("requirements", 5, project="alpha", explain=True)
        top = results[0]
        assert "ses-beta" in top.path and top.project == "beta"
        assert top.explain is not None
        assert top.explain["other_project_factor"] == OTHER_PROJECT_FACTOR
        # Beta's turn holds every term, alpha's two of three: without a project beta's
        # comes first; asked from alpha, alpha's own partial answer does (the factor).
        query = "pip install requirements"
        assert _first_session([r.to_dict() for r in index.search(query, 5)]) == "beta"
        from_alpha = index.search(query, 5, project="alpha")
        assert _first_session([r.to_dict() for r in from_alpha]) == "alpha"


def test_a_journal_section_belongs_to_the_project_it_is_headed_by(
    memory_repo: MemoryRepo, scene, commit_all
) -> None:
    # One day's journal holds every project's sessions, each under its project's heading;
    # a heading of a tag ("standup") names no project and stays global.
    day = memory_repo.root / "knowledge" / "journal" / "2026-03-01.md"
    day.write_text(
        "---\ntype: journal\ndate: 2026-03-01\n---\n\n## 2026-03-01\n\n"
        "### alpha\n- Moved the deploy script to deploy.sh and made the deploy script idempotent\n\n"
        "### beta\n- Moved the deploy script to deploy.sh and pinned the deploy script image\n\n"
        "### standup\n- Moved the deploy script review to Friday, deploy script owners named\n"
    )
    commit_all(memory_repo, "journal")
    with SearchIndex(memory_repo) as index:
        index.catch_up()
        hits = index.search("moved the deploy script", 5, project="alpha", explain=True)
        by_heading = {r.snippet.split("\n")[0]: r for r in hits if "journal" in r.path}
    firsts = [r.path + ":" + str(r.start_line) for r in hits]
    alpha = next(r for r in hits if "idempotent" in r.snippet)
    beta = next(r for r in hits if "pinned" in r.snippet)
    standup = next(r for r in hits if "Friday" in r.snippet)
    assert alpha.explain and alpha.explain.get("other_project_factor") is None, firsts
    assert standup.explain and standup.explain.get("other_project_factor") is None
    assert beta.explain and beta.explain["other_project_factor"] == OTHER_PROJECT_FACTOR
    assert hits.index(alpha) < hits.index(beta), by_heading


def test_outside_any_repository_no_project_is_preferred(
    memory_repo: MemoryRepo, scene, cli
) -> None:
    out = cli("search", QUERY, "--json", repo=memory_repo, cwd=scene["outside"], check=True)
    plain = json.loads(out.stdout)
    out = cli("search", QUERY, "--json", "--all-projects", repo=memory_repo, cwd=scene["alpha"])
    assert [r["path"] for r in json.loads(out.stdout)] == [r["path"] for r in plain]
    # Inside the memory repo itself: no project either.
    inside = cli("search", QUERY, "--json", repo=memory_repo, cwd=memory_repo.root, check=True)
    assert [r["path"] for r in json.loads(inside.stdout)] == [r["path"] for r in plain]


def test_unknown_project_is_refused_with_the_known_ones(
    memory_repo: MemoryRepo, scene, cli
) -> None:
    out = cli("search", QUERY, "--project", "gamma", repo=memory_repo, cwd=scene["outside"])
    assert out.returncode == 2
    assert "no project 'gamma'" in out.stderr and "alpha, beta" in out.stderr
    assert "Traceback" not in out.stderr


def test_file_project() -> None:
    assert file_project("knowledge/projects/alpha/context.md", "project", "") == "alpha"
    assert file_project("archive/knowledge/projects/alpha/old.md", "archive", "") == "alpha"
    assert file_project("knowledge/preferences.md", "reference", "project: alpha\n") is None
    head = "---\nsession_id: s\nproject: '123'\n---\n\nproject: nope\n"
    assert file_project("raw/conversations/2026/01/01/x.md", "conversation", head) == "123"
    body_only = "---\nsession_id: s\n---\n\nproject: nope\n"
    assert file_project("raw/conversations/2026/01/01/x.md", "conversation", body_only) is None


def test_indexed_project(memory_repo: MemoryRepo, scene, tmp_path: Path) -> None:
    assert indexed_project(memory_repo.index_path, "beta")
    assert not indexed_project(memory_repo.index_path, "gamma")
    assert not indexed_project(tmp_path / "no-such.db", "beta")
    # asked on every search from a project that meets a journal: by an index, not a scan
    # of every file's row (10,000 rows of chunk texts: 6 ms)
    from autopoiesis.core.sqlite import connect

    conn, _ = connect(memory_repo.index_path)
    plan = conn.execute(
        "EXPLAIN QUERY PLAN SELECT 1 FROM files WHERE project = ? LIMIT 1", ("beta",)
    ).fetchall()
    conn.close()
    assert "idx_files_project" in " ".join(str(row) for row in plan)


def test_an_index_from_before_projects_is_rebuilt(memory_repo: MemoryRepo, scene) -> None:
    # A memory.db of schema 2 (no files.project): opened, it gains the column; the next
    # search sees the schema changed, rebuilds, and every file has its project again.
    from autopoiesis.core.sqlite import connect

    conn, _ = connect(memory_repo.index_path)
    conn.execute("DROP INDEX idx_files_project")  # an index of then had neither
    conn.execute("ALTER TABLE files DROP COLUMN project")
    conn.execute("UPDATE index_meta SET value = '2' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()
    with SearchIndex(memory_repo) as index:
        assert index.needs_rebuild()
        results = index.search(QUERY, 5, project="beta")
        assert not index.needs_rebuild()
        assert _first_session([r.to_dict() for r in results]) == "beta"
        assert index.projects() == {
            "alpha": {"conversation": 1, "project": 1},
            "beta": {"conversation": 1},
        }


def test_compile_puts_the_current_projects_turn_first(memory_repo: MemoryRepo, scene, cli) -> None:
    def p3_sessions(*args: str, cwd: Path) -> list[str]:
        out = cli(
            "compile", QUERY, "--json", "--dry-run", *args, repo=memory_repo, cwd=cwd, check=True
        )
        sections = json.loads(out.stdout)["sections"]
        paths = [s["path"] for s in sections if s["priority"] == 3 and s["included"]]
        return ["alpha" if "ses-alpha" in p else "beta" for p in paths if "ses-" in p]

    # the prompt hook and `compile` take the project of the folder they run in
    assert p3_sessions(cwd=scene["alpha"])[0] == "alpha"
    assert p3_sessions(cwd=scene["linked"] / "pkg")[0] == "beta"
    assert p3_sessions("--project", "beta", cwd=scene["outside"])[0] == "beta"
    assert p3_sessions("--project", "alpha", cwd=scene["beta"])[0] == "alpha"
    out = cli("compile", QUERY, "--project", "gamma", repo=memory_repo, cwd=scene["outside"])
    assert out.returncode == 2 and "no project 'gamma'" in out.stderr


def _said_by_user(path: Path, sid: str, cwd: Path, says: str) -> Path:
    """A Claude Code log in CWD where the user says SAYS and the agent agrees."""
    return jsonl(
        path,
        [
            {
                "type": kind,
                "sessionId": sid,
                "uuid": f"{sid}-{n}",
                "parentUuid": f"{sid}-{n - 1}" if n > 1 else None,
                "timestamp": f"2026-03-02T10:0{n}:00Z",
                "cwd": str(cwd),
                "message": {"id": f"m-{sid}-{n}", "role": kind, "content": content},
            }
            for n, kind, content in (
                (1, "user", says),
                (2, "assistant", [{"type": "text", "text": "Understood."}]),
            )
        ],
    )


def test_a_repository_s_convention_reaches_its_own_prompts_only(
    memory_repo: MemoryRepo, scene, cli, tmp_path: Path
) -> None:
    """The user's "We use uv, not pip, in this repo" is alpha's convention: offline
    extraction files it under projects/alpha/, and the context compiled in alpha's folder
    holds it though the message shares no word with it; one compiled in beta's folder does
    not, and a rule said of no repository stays the user's everywhere (MEMORY.md)."""
    logs = tmp_path / "more-logs"
    logs.mkdir()
    report = import_files(
        memory_repo,
        [
            _said_by_user(
                logs / "c.jsonl", "ses-alpha-2", scene["alpha"], "We use uv, not pip, in this repo."
            ),
            _said_by_user(
                logs / "d.jsonl",
                "ses-beta-2",
                scene["linked"],
                "Never use emojis in commit messages.",
            ),
        ],
    )
    assert len(report.imported) == 2
    cli("extract", "--pending", "-q", repo=memory_repo, check=True)
    alpha_file = memory_repo.root / "knowledge" / "projects" / "alpha" / "context.md"
    memory = (memory_repo.root / "knowledge" / "memory" / "MEMORY.md").read_text()
    assert "We use uv, not pip, in this repo." in alpha_file.read_text()
    assert "uv, not pip" not in memory and "Never use emojis in commit messages." in memory

    def context(cwd: Path) -> dict[str, str]:
        """The sections of the prompt compiled in CWD, by label."""
        out = cli(
            "compile",
            "add the requests library",
            "--json",
            "--dry-run",
            cwd=cwd,
            repo=memory_repo,
            check=True,
        )
        parts = re.split(r"^<!-- (\S+) -->$", json.loads(out.stdout)["prompt"], flags=re.M)
        return dict(zip(parts[1::2], parts[2::2], strict=True))

    in_alpha = context(scene["alpha"])
    assert "We use uv, not pip, in this repo." in in_alpha["project:alpha"]
    # the session-start context a Claude Code session in alpha's folder is given
    start = {
        "session_id": "s-start",
        "transcript_path": str(tmp_path / "s-start.jsonl"),
        "cwd": str(scene["alpha"]),
        "hook_event_name": "SessionStart",
        "source": "startup",
    }
    out = cli(
        "hook",
        "claude-code",
        "SessionStart",
        input=json.dumps(start),
        cwd=scene["alpha"],
        repo=memory_repo,
        check=True,
    )
    given = json.loads(out.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "<!-- project:alpha -->" in given and "We use uv, not pip, in this repo." in given
    in_beta = context(scene["linked"] / "pkg")
    assert "Never use emojis in commit messages." in in_beta["memory"]
    # another project's turn may still come as evidence when nothing better fits (P3), but
    # never as a standing rule of this folder
    assert not any(
        "uv, not pip" in text
        for label, text in in_beta.items()
        if not label.startswith("knowledge:")
    )


def test_a_deleted_current_folder_is_no_project(memory_repo: MemoryRepo, scene) -> None:
    """From a folder deleted under the shell, `projects`, `search` and `compile` failed
    with "No such file or directory", naming no path: the current folder is asked for
    its project first. A folder that is gone is in no project."""
    import subprocess
    import sys

    gone = scene["outside"] / "gone"
    gone.mkdir()
    for args in (["projects"], ["search", "uv sync"], ["compile", "uv sync"]):
        out = subprocess.run(
            ["sh", "-c", 'cd "$1" && rmdir "$1" && shift && exec "$@"', "sh", str(gone),
             sys.executable, "-m", "autopoiesis", "-C", str(memory_repo.root), *args],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert out.returncode == 0, (args, out.stderr)
        assert "Traceback" not in out.stderr and "No such file" not in out.stderr
        gone.mkdir()
    assert "alpha" in out.stdout or "uv" in out.stdout


def test_a_session_in_the_memory_itself_files_no_project(
    memory_repo: MemoryRepo, scene, cli
) -> None:
    """A session captured with its `cwd` in the memory repo was filed as project
    `<memory folder>` (knowledge/projects/<it>/ made), while the hooks and the CLI run
    there treat the memory as global: its knowledge was never "this project's"."""
    events = [
        {"event": "session_start", "session_id": "ses-mem", "started": "2026-03-03T10:00:00Z",
         "cwd": str(memory_repo.root)},
        {"event": "message", "role": "user", "timestamp": "2026-03-03T10:00:10Z",
         "content": "We decided to tag memory snapshots weekly."},
        {"event": "session_end", "ended": "2026-03-03T10:05:00Z"},
    ]  # fmt: skip
    cli("capture", repo=memory_repo, input="\n".join(json.dumps(e) for e in events), check=True)
    metas = _metas(memory_repo)
    assert metas["ses-mem"].cwd == str(memory_repo.root)
    assert metas["ses-mem"].project is None
    names = [p["name"] for p in json.loads(cli("projects", "--json", repo=memory_repo).stdout)]
    assert names == ["alpha", "beta"]


def test_projects_counts_a_transcript_whose_frontmatter_is_long(
    memory_repo: MemoryRepo, scene, cli
) -> None:
    """`projects` read a transcript's first 4 KB for its `project:`: three hundred tags
    pushed it further, and the project went uncounted while search knew it."""
    events = [
        {"event": "session_start", "session_id": "ses-tags", "started": "2026-03-04T10:00:00Z",
         "cwd": str(scene["alpha"]), "tags": [f"tag{i:03d}-abcdefghijklmnop" for i in range(300)]},
        {"event": "message", "role": "user", "timestamp": "2026-03-04T10:00:10Z",
         "content": "Billing invoices use ISO 4217 currency codes."},
        {"event": "session_end", "ended": "2026-03-04T10:05:00Z"},
    ]  # fmt: skip
    cli("capture", repo=memory_repo, input="\n".join(json.dumps(e) for e in events), check=True)
    path = next(memory_repo.conversations_dir.rglob("*ses-tags*.md"), None) or next(
        p for p in memory_repo.conversations_dir.rglob("*.md") if "ses-tags" in p.read_text()
    )
    assert path.read_text().index("project: alpha") > 4096
    counts = {
        p["name"]: p["transcripts"]
        for p in json.loads(cli("projects", "--json", repo=memory_repo).stdout)
    }
    assert counts["alpha"] == 2


def test_another_projects_turn_is_labelled_with_its_project(
    memory_repo: MemoryRepo, scene, cli
) -> None:
    """Beta's prompt held alpha's "We use uv, not pip, in this repo" with nothing but a
    file name to say it was said in another repository: its label names the project."""
    out = cli("compile", QUERY, "--dry-run", repo=memory_repo, cwd=scene["beta"], check=True)
    labels = re.findall(r"<!-- (knowledge:raw/[^\n]*?) -->", out.stdout)
    alpha = [lab for lab in labels if "ses-alpha" in lab]
    beta = [lab for lab in labels if "ses-beta" in lab]
    assert alpha and all(lab.endswith("(project alpha)") for lab in alpha), labels
    assert beta and not any("(project" in lab for lab in beta), labels
    # with no project of its own, every project's file says whose it is
    out = cli("compile", QUERY, "--dry-run", repo=memory_repo, cwd=scene["outside"], check=True)
    labels = re.findall(r"<!-- (knowledge:raw/[^\n]*?) -->", out.stdout)
    assert any(lab.endswith("(project beta)") for lab in labels), labels


def test_a_reference_file_named_after_a_project_is_that_projects(
    memory_repo: MemoryRepo, scene, cli, commit_all
) -> None:
    """The facts extractor files a session's facts under reference/<its project>.md. The
    index took that file as global, so in another repository "Your scripts are located in
    assets/scripts/" came first and unlabelled, read as a fact of the repository the agent
    was in. It is the project's: labelled as such elsewhere, ranked after the current
    project's; a reference file named after no project stays global, and so does one in a
    folder of its own under reference/ (a user's notes/alpha.md is no extractor's file)."""
    reference = memory_repo.root / "knowledge" / "reference"
    reference.mkdir(parents=True, exist_ok=True)
    (reference / "alpha.md").write_text(
        "---\ntype: reference\n---\n\n# Alpha\n\n## Facts\n"
        "- 2026-03-01: Your deploy scripts are located in `ops/scripts/`. (via ses-alpha)"
        " {id: 20260301-1000-aaaaaa}\n"
    )
    (reference / "general.md").write_text(
        "---\ntype: reference\n---\n\n# General\n\n## Facts\n"
        "- 2026-03-01: The deploy scripts mirror is located in `/srv/mirror`. (via ses-x)"
        " {id: 20260301-1000-bbbbbb}\n"
    )
    (reference / "notes").mkdir()
    (reference / "notes" / "alpha.md").write_text(
        "# Alpha notes\n\nThe deploy scripts of the alpha band are located in the van.\n"
    )
    commit_all(memory_repo, "reference facts")
    with SearchIndex(memory_repo) as index:
        index.rebuild_full()
    query = "where are the deploy scripts located?"
    out = cli("compile", query, "--dry-run", repo=memory_repo, cwd=scene["beta"], check=True)
    labels = re.findall(r"<!-- (knowledge:knowledge/reference/[^\n]*?) -->", out.stdout)
    assert any(lab.endswith("(project alpha)") for lab in labels if "alpha.md" in lab), labels
    assert [lab for lab in labels if "general.md" in lab and "(project" in lab] == [], labels
    out = cli("compile", query, "--dry-run", repo=memory_repo, cwd=scene["alpha"], check=True)
    labels = re.findall(r"<!-- (knowledge:knowledge/reference/alpha[^\n]*?) -->", out.stdout)
    assert labels and not any("(project" in lab for lab in labels), labels
    found = json.loads(
        cli("search", query, "--json", repo=memory_repo, cwd=scene["beta"], check=True).stdout
    )
    projects = {r["path"]: r["project"] for r in found if "reference/" in r["path"]}
    assert projects == {
        "knowledge/reference/alpha.md": "alpha",
        "knowledge/reference/general.md": None,
        "knowledge/reference/notes/alpha.md": None,
    }, projects
    # what a process keeps between its searches (which names are projects') gives each
    # chunk the project a first search looks up
    with SearchIndex(memory_repo) as index:
        conn = index.store.conn
        every = [cid for (cid,) in conn.execute("SELECT id FROM chunks ORDER BY id")]
        looked_up = chunk_projects(conn, every)
        kept = index.store.reusable()
        assert chunk_projects(conn, every[:5], kept) == {c: looked_up[c] for c in every[:5]}
        assert chunk_projects(conn, every, kept) == looked_up
        assert "alpha" in looked_up.values() and "known_projects" in kept


def test_projects_lists_a_folder_with_a_line_break_on_its_line(
    memory_repo: MemoryRepo, tmp_path: Path, git, cli
) -> None:
    """A checkout's folder named `ev\\nil`: `projects` printed the rest of its path on a
    line of its own, as if it were another row."""
    from autopoiesis.core.project import project_name

    repo = tmp_path / "ev\nil\x1b[31m" / "app"
    repo.mkdir(parents=True)
    git(repo, "init", "-q")
    assert project_name(str(repo), memory_repo.root) == "app"
    (memory_repo.root / "knowledge/projects/app").mkdir(parents=True)
    (memory_repo.root / "knowledge/projects/app/context.md").write_text("# app\n")
    text = cli("projects", repo=memory_repo, check=True).stdout
    assert text.count("\n") == 1 and "\x1b" not in text, text
    assert text.rstrip().endswith("ev\\nil\\x1b[31m/app"), text
    listed = json.loads(cli("projects", "--json", repo=memory_repo, check=True).stdout)
    assert listed[0]["checkouts"] == [str(repo.resolve())]  # as it is, in JSON
