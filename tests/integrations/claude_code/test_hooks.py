"""The Claude Code hooks' own rules: the context fits Claude Code's inline limit."""

from __future__ import annotations

from pathlib import Path

import pytest


def test_hook_context_fits_claude_codes_inline_limit() -> None:
    from autopoiesis.integrations.claude_code.hooks import fit_inline

    sections = ["<!-- system -->\nhead"] + [
        f"<!-- knowledge:k{i}.md -->\n" + "x" * 3000 for i in range(5)
    ]
    prompt = "\n\n".join(sections)
    text, dropped = fit_inline(prompt)
    # the sections left out are named at the end: the model knows what it was not shown
    # (they were left out silently: the context just stopped)
    assert len(text) <= 10_000 and dropped == 2
    assert text == "\n\n".join(sections[:4]) + (
        "\n\n[… left out to fit the hook's 10,000 characters: 2 sections "
        "(knowledge:k3.md, knowledge:k4.md); read them there]"
    )
    one, dropped = fit_inline(
        "\n\n".join([*sections[:4], "<!-- knowledge:k9.md -->\n" + "y" * 999])
    )
    assert dropped == 1 and one.endswith("a section (knowledge:k9.md); read them there]")
    assert fit_inline("short") == ("short", 0)
    huge, dropped = fit_inline("<!-- identity:SOUL.md -->\n" + "line\n" * 5000)
    assert (
        len(huge) <= 10_000
        and huge.endswith("cut to fit the hook's 10,000 characters]")
        and dropped == 0
    )
    huge, dropped = fit_inline("<!-- identity:SOUL.md -->\n" + "line\n" * 5000 + "\n" + sections[1])
    assert len(huge) <= 10_000 and dropped == 1
    assert huge.endswith("characters]\n\n[… left out to fit the hook's 10,000 characters: a "
                         "section (knowledge:k0.md); read them there]")  # fmt: skip
    # hundreds of small sections: the closing line names a few, not all of them
    many = "\n\n".join(
        ["<!-- system -->\nhead"] + [f"<!-- knowledge:n{i}.md -->\n" + "z" * 90 for i in range(400)]
    )
    text, dropped = fit_inline(many)
    assert len(text) <= 10_000 and dropped > 300
    assert text.endswith(
        f"knowledge:n{400 - dropped + 7}.md, and {dropped - 8} more); read them there]"
    )


def _line(sid: str, uuid: str, role: str, text: str, **more: object) -> str:
    import json

    return (
        json.dumps(
            {
                "type": role,
                "sessionId": sid,
                "uuid": uuid,
                "timestamp": "2026-04-02T10:00:00Z",
                "message": {"role": role, "content": text},
                **more,
            }
        )
        + "\n"
    )


def test_session_end_imports_the_subagents_with_the_session(memory_repo, tmp_path) -> None:
    """The live path files what a backfill would: the main log, its `<session>/subagents/`
    (2.1), a 2.0 agent log beside it naming the session, and the log SubagentStop named."""
    from pathlib import Path

    from autopoiesis.integrations.claude_code import hooks
    from autopoiesis.integrations.sessions import import_sessions

    sid = "5df05d31-3836-4a1d-a638-a46b7c8b8888"
    project = tmp_path / ".claude" / "projects" / "-home-me-code"
    (project / sid / "subagents").mkdir(parents=True)
    main = project / f"{sid}.jsonl"
    main.write_text(
        _line(sid, "u1", "user", "Audit the licences") + _line(sid, "a1", "assistant", "On it.")
    )
    (project / sid / "subagents" / "agent-a1.jsonl").write_text(
        _line(sid, "x1", "user", "List the licences", isSidechain=True, agentId="a1")
        + _line(sid, "x2", "assistant", "MIT and BSD.", isSidechain=True, agentId="a1")
    )
    (project / "agent-b2.jsonl").write_text(  # Claude Code 2.0: beside the session
        _line(sid, "y1", "user", "Check NOTICE files", isSidechain=True)
        + _line(sid, "y2", "assistant", "None.", isSidechain=True)
    )
    (project / "agent-c3.jsonl").write_text(  # another session's agent: not ours
        _line("other", "z1", "user", "Unrelated", isSidechain=True)
    )
    elsewhere = tmp_path / "elsewhere" / "agent-d4.jsonl"  # named by the hook only
    elsewhere.parent.mkdir()
    elsewhere.write_text(_line(sid, "w1", "user", "Read the SBOM", isSidechain=True))
    payload = {"session_id": sid, "transcript_path": str(main), "cwd": str(tmp_path)}
    hooks.handle(
        memory_repo,
        "SubagentStop",
        {
            **payload,
            "hook_event_name": "SubagentStop",
            "agent_id": "d4",
            "agent_transcript_path": str(elsewhere),
        },
        budget=500,
    )
    outcome = import_sessions(memory_repo, [f"claude-code:{sid}"])[0]
    assert outcome.refused == ()
    names = sorted(Path(rel).name.split("-", 1)[1] for rel in outcome.imported)
    assert names == [
        f"{sid}-audit-the-licences.md",
        "agent-a1-list-the-licences.md",
        "agent-b2-check-notice-files.md",
        "agent-d4-read-the-sbom.md",
    ]


def test_a_session_start_gives_the_session_level_memory_half_the_budget(memory_repo) -> None:
    """A message's compile keeps MEMORY.md within a quarter of the budget, for the evidence;
    a session starts with no message, and its context gives it up to half (START_SHARE)."""
    from autopoiesis.compiler import ContextCompiler
    from autopoiesis.core.paths import MEMORY_FILE
    from autopoiesis.core.text import count_tokens
    from autopoiesis.integrations.hook_context import START_SHARE, compile_context

    lines = [
        f"- 2026-03-{1 + i % 28:02d}: Keep release note {i} to one line in the past tense."
        for i in range(60)
    ]
    (memory_repo.root / MEMORY_FILE).write_text(
        "# Core Memory\n\n## Preferences\n" + "\n".join(lines) + "\n", encoding="utf-8"
    )
    (memory_repo.root / "memory-config.yaml").write_text(
        (memory_repo.root / "memory-config.yaml")
        .read_text(encoding="utf-8")
        .replace("memory_budget_kb: 3", "memory_budget_kb: 12"),
        encoding="utf-8",
    )
    budget = 2000
    start, _ = compile_context(
        memory_repo, "alpha", budget=budget, session_context=True, preamble="Memory."
    )
    assert start is not None
    shown = start.split("<!-- memory -->", 1)[1].split("\n\n<!-- ", 1)[0]
    with ContextCompiler(memory_repo, search=lambda q, n: []) as c:
        res = c.compile("alpha", budget=budget)
    message = next(s for s in res.sections if s.label == "memory").content
    assert count_tokens(message) <= budget * 0.25 + 60  # + the line naming what is out
    assert budget * 0.25 + 60 < count_tokens(shown) <= budget * START_SHARE + 60


def test_a_hook_past_its_deadline_does_not_wait_for_its_worker_threads(memory_repo) -> None:
    """A hook past its deadline logged "gave up after 10 s", yet its process lived until
    the model it was waiting on (in a worker thread) gave up too: 26 s, past Claude
    Code's own 15 s. Once the hook has answered, the process leaves without them."""
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent(
        f"""
        import sys, threading
        import autopoiesis.__main__ as entry
        from autopoiesis.integrations import runner

        def slow_hook(argv, call):
            def worker():  # a call to a model that never answers
                threading.Event().wait()
            threading.Thread(target=worker).start()  # not a daemon: exit would wait for it
            runner.expired = True  # what the hook's deadline sets when it passes
            return 0

        entry._hook = slow_hook
        sys.argv = ["autopoiesis", "-C", {str(memory_repo.root)!r}, "hook", "claude-code",
                    "UserPromptSubmit"]
        entry.main()
        """
    )
    # the worker never ends: a process that waited for it would be stopped by this hang
    # guard (TimeoutExpired); that it exited at all shows it left while its worker waited
    done = subprocess.run(
        [sys.executable, "-c", script], input="{}", capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr


def test_a_log_line_past_the_cap_is_passed_over_unread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Stop hook read a whole log line to find the compaction summary: a 2 GB line
    took it to 4 GB and past its deadline. A line past the cap is skipped a piece at a
    time; the summary on the lines around it is still found."""
    import json as _json

    from autopoiesis.integrations.claude_code import hooks as cc

    monkeypatch.setattr(cc, "SUMMARY_LINE_CAP", 1000)
    log = tmp_path / "session.jsonl"

    def summary(text: str) -> str:
        row = {"type": "user", "isCompactSummary": True, "message": {"content": text}}
        return _json.dumps(row) + "\n"

    read: list[int] = []
    loads = cc.json.loads
    monkeypatch.setattr(cc.json, "loads", lambda raw, *a, **k: read.append(len(raw)) or loads(raw))
    huge = _json.dumps({"isCompactSummary": True, "message": {"content": "x" * 5000}})
    log.write_text(summary("first") + huge + "\n" + summary("second"), encoding="utf-8")
    assert cc.last_compact_summary(log) == "second"
    log.write_text(summary("only") + huge, encoding="utf-8")  # cut off at the end too
    assert cc.last_compact_summary(log) == "only"
    assert read and max(read) <= 1000  # the long line was never taken whole


@pytest.mark.parametrize(
    "cwd",
    [
        "/tmp/a\x00b",
        "/tmp/a\ud800b",  # JSON's "\\ud800": no file name can be written with it
        "/tmp/" + "a" * 5000,  # past the system's length for a path
    ],
    ids=["nul", "lone-surrogate", "too-long"],
)
def test_a_cwd_no_folder_can_have_is_in_no_project_and_the_prompt_still_gets_its_context(
    memory_repo, cwd: str
) -> None:
    """A broken harness's `cwd` holding a NUL byte raised "ValueError: embedded null byte"
    where the hook asked which repository it is in: the prompt went without any memory,
    and the log named no payload field; one holding a lone surrogate raised
    UnicodeEncodeError and one too long for a path "OSError: File name too long", alike.
    It is no folder, so in no project."""
    import io
    import json

    from autopoiesis.integrations.runner import run_hook
    from autopoiesis.integrations.sessions import harness_log

    payload = {"session_id": "s1", "cwd": cwd, "source": "startup"}
    out = io.StringIO()
    code = run_hook(
        str(memory_repo.root),
        "claude-code",
        "SessionStart",
        stdin=io.BytesIO(json.dumps(payload).encode()),
        stdout=out,
    )
    assert code == 0
    row = harness_log(memory_repo).rows()[-1]
    assert row["ok"] is True and row["project"] is None, row
    assert json.loads(out.getvalue())["hookSpecificOutput"]["additionalContext"]
