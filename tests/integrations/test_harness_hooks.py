"""`autopoiesis integrate claude-code|codex` and the hooks it installs, run as Claude Code
and Codex run them: the installed command through `sh -c`, the documented JSON payload on
stdin (Codex: as the last argument), in a temporary HOME and project folder."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import tomllib
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

import autopoiesis
from autopoiesis.core.clock import format_ts, utc_now
from autopoiesis.core.paths import MemoryRepo
from autopoiesis.core.text import count_tokens
from autopoiesis.knowledge.flush import FLUSH_BEGIN, FLUSH_END
from tests.conftest import Cli

PROJECT_ROOT = str(Path(autopoiesis.__file__).resolve().parent.parent)
EVENTS = ("SessionStart", "UserPromptSubmit", "PreCompact", "Stop", "SubagentStop", "SessionEnd")


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """The environment of a harness on this machine: its own HOME, and this checkout importable."""
    home = tmp_path / "home"
    home.mkdir()
    return {
        **os.environ,
        "HOME": str(home),
        "PYTHONPATH": PROJECT_ROOT,
        "CODEX_HOME": str(home / ".codex"),
    }


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """The project Claude Code runs in. It has a folder named autopoiesis of its own, which
    a hook (run from here) must not import in place of the installed package."""
    p = tmp_path / "billing-service"
    (p / "autopoiesis").mkdir(parents=True)
    (p / "autopoiesis" / "__init__.py").write_text(
        "raise SystemExit('the project folder was imported')\n"
    )
    return p


@pytest.fixture
def repo(memory_repo: MemoryRepo, commit_all) -> MemoryRepo:
    """A memory repo with a search index that knows something about the billing database."""
    ref = memory_repo.root / "knowledge/reference/billing.md"
    ref.write_text(
        "---\ntype: reference\n---\n\n# Billing\n\n## Facts\n"
        "- The billing database runs Postgres 17 on the host pg-billing-2.\n"
        "- Invoices are generated nightly by the invoice-runner job.\n"
    )
    commit_all(memory_repo, "memory: billing facts")
    from autopoiesis.index import SearchIndex

    with SearchIndex(memory_repo) as index:  # as `autopoiesis init` builds it
        index.rebuild_full()
    return memory_repo


def installed(settings: Path) -> dict[str, str]:
    """event -> the command of autopoiesis's hook in SETTINGS."""
    data = json.loads(settings.read_text())
    out = {}
    for event, groups in data.get("hooks", {}).items():
        for g in groups:
            for h in g["hooks"]:
                if "hook claude-code" in h.get("command", ""):
                    out[event] = h["command"]
    return out


def run_hook(
    command: str, payload: Any, *, env: dict[str, str], cwd: Path
) -> subprocess.CompletedProcess[str]:
    """As Claude Code runs a command hook: sh -c, the payload's JSON on stdin."""
    data = payload if isinstance(payload, str) else json.dumps(payload)
    return subprocess.run(
        ["sh", "-c", command],
        input=data,
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def log_rows(repo: MemoryRepo) -> list[dict[str, Any]]:
    path = repo.root / ".autopoiesis/logs/harness.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def wait_for_import(repo: MemoryRepo, session: str, timeout: float = 90) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        rows = [
            r for r in log_rows(repo) if r.get("event") == "import" and r.get("session") == session
        ]
        if rows:
            return rows[-1]
        time.sleep(0.2)
    raise AssertionError(
        f"no import of {session} logged; log: {log_rows(repo)}; "
        f"{(repo.root / '.autopoiesis/logs/harness-import.log').read_text(errors='replace') if (repo.root / '.autopoiesis/logs/harness-import.log').exists() else ''}"
    )


def base(event: str, sid: str, transcript: Path, project: Path, **more: Any) -> dict[str, Any]:
    return {
        "session_id": sid,
        "transcript_path": str(transcript),
        "cwd": str(project),
        "permission_mode": "default",
        "hook_event_name": event,
        **more,
    }


# ── settings.json: merge, idempotence, uninstall ──
USER_SETTINGS = {
    "permissions": {"allow": ["Bash(npm test)"]},
    "hooks": {
        "UserPromptSubmit": [
            {"hooks": [{"type": "command", "command": "echo mine >> /tmp/prompts.log"}]}
        ],
        "PreToolUse": [
            {
                "matcher": "Bash",
                "hooks": [{"type": "command", "command": "./check-bash.sh", "timeout": 5}],
            }
        ],
    },
    "model": "opus",
}


@pytest.mark.slow
def test_integrate_merges_is_idempotent_and_uninstalls_exactly_what_it_added(
    repo, project, env, cli: Cli
) -> None:
    settings = project / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps(USER_SETTINGS, indent=4))
    original = json.loads(settings.read_text())

    out = cli(
        "integrate",
        "claude-code",
        "--project",
        str(project),
        "--shared",
        repo=repo,
        env=env,
        cwd=project,
        process=True,
        check=True,
    ).stdout
    assert (
        "added hooks SessionStart, UserPromptSubmit, PreCompact, Stop, SubagentStop, SessionEnd"
        in out
    )
    data = json.loads(settings.read_text())
    assert data["permissions"] == original["permissions"] and data["model"] == "opus"
    assert data["hooks"]["PreToolUse"] == original["hooks"]["PreToolUse"]
    # the user's own UserPromptSubmit hook is still first, ours is added beside it
    assert data["hooks"]["UserPromptSubmit"][0] == original["hooks"]["UserPromptSubmit"][0]
    commands = installed(settings)
    assert sorted(commands) == sorted(EVENTS)
    for event, command in commands.items():
        assert f"-C {repo.root} hook claude-code {event}" in command
        assert command.startswith(sys.executable)

    before = settings.read_bytes()
    again = cli(
        "integrate",
        "claude-code",
        "--project",
        str(project),
        "--shared",
        repo=repo,
        env=env,
        cwd=project,
        process=True,
        check=True,
    ).stdout
    assert "nothing to change" in again
    assert settings.read_bytes() == before

    updated = cli(
        "integrate",
        "claude-code",
        "--project",
        str(project),
        "--shared",
        "--budget",
        "3000",
        repo=repo,
        env=env,
        cwd=project,
        process=True,
        check=True,
    ).stdout
    assert "updated hooks" in updated
    data = json.loads(settings.read_text())
    assert all(
        len(installed_list) == (2 if ev == "UserPromptSubmit" else 1)
        for ev, installed_list in data["hooks"].items()
        if ev in EVENTS
    )
    commands = installed(settings)
    assert commands["UserPromptSubmit"].endswith("--budget 3000") and commands[
        "SessionStart"
    ].endswith("--budget 3000")
    assert commands["Stop"].endswith(
        "hook claude-code Stop"
    )  # the budget is for the hooks that add context

    removed = cli(
        "integrate",
        "claude-code",
        "--project",
        str(project),
        "--shared",
        "--uninstall",
        repo=repo,
        env=env,
        cwd=project,
        process=True,
        check=True,
    ).stdout
    assert "removed hooks" in removed
    assert json.loads(settings.read_text()) == original
    assert (
        "nothing to change"
        in cli(
            "integrate",
            "claude-code",
            "--project",
            str(project),
            "--shared",
            "--uninstall",
            repo=repo,
            env=env,
            cwd=project,
            process=True,
            check=True,
        ).stdout
    )


@pytest.mark.slow
def test_integrate_user_scope_and_local_file(repo, project, env, cli: Cli) -> None:
    cli(
        "integrate",
        "claude-code",
        "--user",
        repo=repo,
        env=env,
        cwd=project,
        process=True,
        check=True,
    )
    user_settings = Path(env["HOME"]) / ".claude" / "settings.json"
    assert sorted(installed(user_settings)) == sorted(EVENTS)
    cli(
        "integrate",
        "claude-code",
        "--project",
        str(project),
        "--local",
        repo=repo,
        env=env,
        cwd=project,
        process=True,
        check=True,
    )
    assert sorted(installed(project / ".claude" / "settings.local.json")) == sorted(EVENTS)
    assert not (project / ".claude" / "settings.json").exists()
    cli(
        "integrate",
        "claude-code",
        "--user",
        "--uninstall",
        repo=repo,
        env=env,
        cwd=project,
        process=True,
        check=True,
    )
    assert json.loads(user_settings.read_text()) == {}


@pytest.mark.slow
@pytest.mark.parametrize(
    "content, why",
    [
        ('{"hooks": {', "is not valid JSON"),
        ("[1, 2]", "not an object of settings"),
        ('{"hooks": [1]}', "'hooks' is a list"),
        ('{"hooks": {"Stop": {"command": "x"}}}', "hooks.Stop is not a list"),
    ],
)
def test_integrate_refuses_settings_it_cannot_merge_into_and_changes_nothing(
    repo, project, env, content, why, cli: Cli
) -> None:
    settings = project / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(content)
    proc = cli(
        "integrate",
        "claude-code",
        "--project",
        str(project),
        "--shared",
        repo=repo,
        env=env,
        cwd=project,
        process=True,
    )
    assert proc.returncode == 1
    assert (
        why in proc.stderr
        and "Nothing was changed" in proc.stderr
        and "Traceback" not in proc.stderr
    )
    assert settings.read_text() == content


def test_integrate_needs_a_memory_repo(project, env) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-P",
            "-m",
            "autopoiesis",
            "integrate",
            "claude-code",
            "--project",
            str(project),
        ],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
    )
    assert proc.returncode != 0 and "not inside a git repository" in proc.stderr
    assert not (project / ".claude").exists()


# ── the installed hooks, with Claude Code's payloads ──
@pytest.fixture
def hooks(repo, project, env, cli: Cli) -> dict[str, str]:
    cli(
        "integrate",
        "claude-code",
        "--project",
        str(project),
        repo=repo,
        env=env,
        cwd=project,
        process=True,
        check=True,
    )
    return installed(project / ".claude" / "settings.local.json")


@pytest.mark.slow
def test_prompt_and_session_start_hooks_return_compiled_context_within_budget(
    repo, project, env, hooks, tmp_path
) -> None:
    transcript = tmp_path / "s1.jsonl"
    prompt = base(
        "UserPromptSubmit",
        "s1",
        transcript,
        project,
        prompt="Which host runs the billing database?",
    )
    proc = run_hook(hooks["UserPromptSubmit"], prompt, env=env, cwd=project)
    assert proc.returncode == 0, proc.stderr
    answer = json.loads(proc.stdout)["hookSpecificOutput"]
    assert answer["hookEventName"] == "UserPromptSubmit"
    context = answer["additionalContext"]
    assert "pg-billing-2" in context and "knowledge/reference/billing.md" in context
    assert "identity:SOUL.md" not in context  # session-level memory came with SessionStart
    assert count_tokens(context) <= repo.config.integrations.hook_token_budget

    start = base("SessionStart", "s1", transcript, project, source="startup")
    proc = run_hook(hooks["SessionStart"], start, env=env, cwd=project)
    context = json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "<!-- identity:SOUL.md -->" in context and "<!-- memory -->" in context
    assert (
        "knowledge/reference/billing.md" in context
    )  # what the memory holds about the billing-service project

    # a smaller budget is kept, set per hook with --budget
    small = hooks["UserPromptSubmit"] + " --budget 300"
    proc = run_hook(small, prompt, env=env, cwd=project)
    assert count_tokens(json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]) <= 300

    # a budget past what Claude Code keeps inline (10,000 characters) is cut to it, lowest priority first
    (repo.root / "knowledge/identity/USER.md").write_text(
        "# User\n\n" + "- prefers long, careful answers\n" * 400
    )
    proc = run_hook(hooks["SessionStart"] + " --budget 50000", start, env=env, cwd=project)
    context = json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]
    assert len(context) <= 10_000 and context.startswith("<!-- system -->")

    rows = log_rows(repo)[:3]
    assert [r["event"] for r in rows] == ["UserPromptSubmit", "SessionStart", "UserPromptSubmit"]
    assert all(r["ok"] and r["ms"] > 0 and r["tokens"] > 0 for r in rows)


@pytest.mark.slow
def test_a_prompt_the_memory_knows_nothing_of_gets_no_context(
    repo, project, env, hooks, tmp_path
) -> None:
    proc = run_hook(
        hooks["UserPromptSubmit"],
        base("UserPromptSubmit", "s1", tmp_path / "t.jsonl", project, prompt="zyxxy quorble"),
        env=env,
        cwd=project,
    )
    assert proc.returncode == 0 and proc.stdout == ""
    assert log_rows(repo)[-1]["ok"] is True and log_rows(repo)[-1]["sections"] == 0


@pytest.mark.slow
@pytest.mark.parametrize(
    "payload, reason",
    [
        ("not json at all", "not JSON"),
        ("[1, 2]", "not an object"),
        ({"session_id": "s1", "hook_event_name": "UserPromptSubmit"}, "'prompt' is None"),
        (
            {"session_id": "s1", "hook_event_name": "UserPromptSubmit", "prompt": ["a"]},
            "'prompt' is ['a']",
        ),
        (
            {"session_id": "s1", "hook_event_name": "Stop", "prompt": "hi"},
            "installed for UserPromptSubmit but was called for 'Stop'",
        ),
        ("\udcff\x00" * 3, "not JSON"),
    ],
)
def test_a_failing_hook_exits_0_prints_nothing_and_logs_why(
    repo, project, env, hooks, payload, reason
) -> None:
    data = payload if isinstance(payload, str) else json.dumps(payload)
    proc = subprocess.run(
        ["sh", "-c", hooks["UserPromptSubmit"]],
        input=data.encode("utf-8", "surrogateescape"),
        cwd=project,
        env=env,
        capture_output=True,
        timeout=60,
    )
    assert proc.returncode == 0 and proc.stdout == b""
    row = log_rows(repo)[-1]
    assert row["ok"] is False and reason in row["error"], row


@pytest.mark.slow
def test_a_broken_config_or_a_missing_repo_never_blocks_the_prompt(
    repo, project, env, hooks, tmp_path
) -> None:
    (repo.root / "memory-config.yaml").write_text("integrations:\n  hook_token_budget: lots\n")
    prompt = base(
        "UserPromptSubmit", "s1", tmp_path / "t.jsonl", project, prompt="billing database host?"
    )
    proc = run_hook(hooks["UserPromptSubmit"], prompt, env=env, cwd=project)
    # the shared file cannot be read: its last valid settings serve the prompt, and the
    # warning says what to fix
    assert proc.returncode == 0 and "pg-billing-2" in proc.stdout
    assert "hook_token_budget' must be a whole number" in proc.stderr

    shutil.rmtree(
        repo.root / "knowledge"
    )  # no longer a memory repo: nowhere to log, so stderr says it
    proc = run_hook(hooks["UserPromptSubmit"], prompt, env=env, cwd=project)
    assert proc.returncode == 0 and proc.stdout == ""
    assert "not a memory repository" in proc.stderr


@pytest.mark.slow
def test_session_end_imports_the_transcript_in_the_background(
    repo, project, env, hooks, tmp_path, shared_data, git
) -> None:
    transcript = Path(env["HOME"]) / ".claude/projects/-billing-service/test-session-id.jsonl"
    transcript.parent.mkdir(parents=True)
    shutil.copy(
        shared_data / "claude-code/claude-code-transcripts__sample_session.jsonl", transcript
    )
    run_hook(
        hooks["SessionStart"],
        base("SessionStart", "test-session-id", transcript, project, source="startup"),
        env=env,
        cwd=project,
    )
    assert "claude-code:test-session-id" in json.loads(
        (repo.root / ".autopoiesis/harness/sessions.json").read_text()
    )

    # the import waits for the memory's import lock, held here: a hook that imported
    # in place would wait for it too and never return (run_hook's hang guard ends it)
    import_lock = repo.lock("harness-import")
    assert import_lock.acquire(timeout=0)
    try:
        proc = run_hook(
            hooks["SessionEnd"],
            base("SessionEnd", "test-session-id", transcript, project, reason="prompt_input_exit"),
            env=env,
            cwd=project,
        )
        assert proc.returncode == 0 and proc.stdout == ""
        # the hook has returned, and its import is still running, waiting for the lock
        hook_row = log_rows(repo)[-1]
        assert hook_row["event"] == "SessionEnd" and hook_row["ok"] is True, hook_row
        os.kill(hook_row["import_pid"], 0)  # ProcessLookupError: the import is not running
        assert not [r for r in log_rows(repo) if r.get("event") == "import"]
    finally:
        import_lock.release()
    row = wait_for_import(repo, "test-session-id")
    assert row["ok"] is True and row["imported"] == [
        "raw/conversations/2025/12/24/1000-test-session-id-create-a-hello-world-function-now-add-a.md"
    ]
    assert (repo.root / row["imported"][0]).exists()
    # committed, then the session-end extraction ran on it (lifecycle.extraction_trigger: on_session_end)
    subjects = git(repo, "log", "-2", "--format=%s").stdout.splitlines()
    assert subjects[0].startswith("memory: ") and subjects[1].startswith(
        "conversation: test-session-id"
    )
    assert f"Session: {row['imported'][0]}" in git(repo, "log", "-1", "--format=%B").stdout
    assert "claude-code:test-session-id" not in json.loads(
        (repo.root / ".autopoiesis/harness/sessions.json").read_text()
    )


@pytest.mark.slow
def test_a_session_that_never_ended_is_imported_once_idle(
    repo, project, env, hooks, tmp_path, shared_data
) -> None:
    transcript = tmp_path / "abandoned.jsonl"
    shutil.copy(
        shared_data / "claude-code/claude-code-transcripts__sample_session.jsonl", transcript
    )
    run_hook(
        hooks["Stop"],
        base("Stop", "abandoned", transcript, project, stop_hook_active=False),
        env=env,
        cwd=project,
    )
    sessions = repo.root / ".autopoiesis/harness/sessions.json"
    assert json.loads(sessions.read_text())["claude-code:abandoned"]["path"] == str(transcript)
    # another session's turn, while the first is still recent: nothing to import yet
    run_hook(
        hooks["Stop"],
        base("Stop", "other", tmp_path / "other.jsonl", project),
        env=env,
        cwd=project,
    )
    assert log_rows(repo)[-1]["import_started"] is False

    # the terminal was closed 45 minutes ago (import_idle_minutes is 30): no SessionEnd came
    data = json.loads(sessions.read_text())
    data["claude-code:abandoned"]["seen"] = format_ts(utc_now() - timedelta(minutes=45))
    sessions.write_text(json.dumps(data))
    run_hook(
        hooks["Stop"],
        base("Stop", "other", tmp_path / "other.jsonl", project),
        env=env,
        cwd=project,
    )
    assert log_rows(repo)[-1]["import_started"] is True
    row = wait_for_import(repo, "abandoned")
    assert row["ok"] and row["imported"][0].endswith("create-a-hello-world-function-now-add-a.md")
    assert "claude-code:other" in json.loads(sessions.read_text())


@pytest.mark.slow
def test_pre_compact_flush_round_trip(repo, project, env, hooks, tmp_path, git) -> None:
    transcript = tmp_path / "long.jsonl"
    transcript.write_text(
        json.dumps(
            {
                "type": "user",
                "sessionId": "long",
                "timestamp": "2026-03-01T09:00:00Z",
                "message": {"role": "user", "content": "let's settle the billing host"},
            }
        )
        + "\n"
    )
    proc = run_hook(
        hooks["PreCompact"],
        base("PreCompact", "long", transcript, project, trigger="auto", custom_instructions=""),
        env=env,
        cwd=project,
    )
    assert proc.returncode == 0
    assert FLUSH_BEGIN in proc.stdout and FLUSH_END in proc.stdout and "## memory" in proc.stdout

    # Claude Code compacts: the summary (shaped by those instructions) lands in the transcript
    summary = (
        "This session is being continued from a previous conversation. Summary: the billing host moved.\n"
        f"{FLUSH_BEGIN}\n## memory\n- Decided to move the billing database to pg-billing-3\n"
        f"## project: billing-service\n- Cut-over is planned for Friday\n{FLUSH_END}\n"
    )
    with transcript.open("a") as fh:
        fh.write(
            json.dumps(
                {
                    "type": "system",
                    "subtype": "compact_boundary",
                    "content": "Conversation compacted",
                }
            )
            + "\n"
        )
        fh.write(
            json.dumps(
                {
                    "type": "user",
                    "isCompactSummary": True,
                    "sessionId": "long",
                    "message": {"role": "user", "content": summary},
                }
            )
            + "\n"
        )
    proc = run_hook(
        hooks["SessionStart"],
        base("SessionStart", "long", transcript, project, source="compact"),
        env=env,
        cwd=project,
    )
    assert proc.returncode == 0
    flush = log_rows(repo)[-1]["flush"]
    assert flush["status"] == "flushed", flush
    memory = (repo.root / "knowledge/memory/MEMORY.md").read_text()
    assert "Decided to move the billing database to pg-billing-3 (via claude-code:long)" in memory
    assert (
        "Cut-over is planned for Friday"
        in (repo.root / "knowledge/projects/billing-service/context.md").read_text()
    )
    assert git(repo, "log", "-1", "--format=%s").stdout.startswith(
        "memory: pre-compaction flush of claude-code session long"
    )
    # and the new context already holds it
    assert "pg-billing-3" in json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]
    # the same summary is not applied twice
    run_hook(hooks["Stop"], base("Stop", "long", transcript, project), env=env, cwd=project)
    assert "flush" not in log_rows(repo)[-1]


@pytest.mark.slow
def test_compaction_summary_without_a_flush_block_is_logged(
    repo, project, env, hooks, tmp_path
) -> None:
    transcript = tmp_path / "c.jsonl"
    transcript.write_text("")
    run_hook(
        hooks["PreCompact"],
        base("PreCompact", "c", transcript, project, trigger="manual"),
        env=env,
        cwd=project,
    )
    run_hook(
        hooks["SessionStart"],
        base("SessionStart", "c", transcript, project, source="compact"),
        env=env,
        cwd=project,
    )
    assert log_rows(repo)[-1]["flush"]["status"] == "no compaction summary in the transcript yet"
    with transcript.open("a") as fh:
        fh.write(
            json.dumps(
                {
                    "type": "user",
                    "isCompactSummary": True,
                    "message": {
                        "role": "user",
                        "content": [{"type": "text", "text": "Summary: nothing kept."}],
                    },
                }
            )
            + "\n"
        )
    run_hook(
        hooks["Stop"], base("Stop", "c", transcript, project), env=env, cwd=project
    )  # the pending flush is retried
    assert (
        log_rows(repo)[-1]["flush"]["status"]
        == "the compaction summary holds no memory-flush block"
    )


# ── Codex ──
CODEX_CONFIG = 'model = "gpt-5-codex"\n\n[mcp_servers.docs]\ncommand = "docs-mcp"\n\n[profiles.fast]\nmodel = "o4-mini"\n'


CODEX_EVENTS = ("SessionStart", "UserPromptSubmit", "Stop", "SessionEnd")


def codex_hooks(config: Path) -> dict[str, str]:
    """event -> the command of autopoiesis's hook in Codex's CONFIG."""
    tables = tomllib.loads(config.read_text()).get("hooks", {})
    return {
        event: h["command"]
        for event, groups in tables.items()
        for g in groups
        for h in g["hooks"]
        if "hook codex" in h["command"]
    }


@pytest.mark.slow
def test_integrate_codex_sets_hooks_and_notify_and_uninstalls_them(
    repo, project, env, cli: Cli
) -> None:
    config = Path(env["CODEX_HOME"]) / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(CODEX_CONFIG)
    cli("integrate", "codex", repo=repo, env=env, cwd=project, process=True, check=True)
    hooks = codex_hooks(config)
    assert sorted(hooks) == sorted(CODEX_EVENTS)
    for event, command in hooks.items():
        assert command.startswith(sys.executable) and command.endswith(
            f"-C {repo.root} hook codex {event}"
        )
    data = tomllib.loads(config.read_text())
    assert data["notify"] == [
        sys.executable,
        "-P",
        "-m",
        "autopoiesis",
        "-C",
        str(repo.root),
        "hook",
        "codex",
        "notify",
    ]
    assert (
        data["mcp_servers"]["docs"]["command"] == "docs-mcp"
        and data["profiles"]["fast"]["model"] == "o4-mini"
    )
    assert (
        "nothing to change"
        in cli(
            "integrate", "codex", repo=repo, env=env, cwd=project, process=True, check=True
        ).stdout
    )
    cli(
        "integrate",
        "codex",
        "--uninstall",
        repo=repo,
        env=env,
        cwd=project,
        process=True,
        check=True,
    )
    assert config.read_text() == CODEX_CONFIG

    # a notify of the user's own stays (Codex runs one): the hooks do without it
    config.write_text('notify = ["notify-send", "Codex"]\n' + CODEX_CONFIG)
    cli("integrate", "codex", repo=repo, env=env, cwd=project, process=True, check=True)
    assert tomllib.loads(config.read_text())["notify"] == ["notify-send", "Codex"]
    assert sorted(codex_hooks(config)) == sorted(CODEX_EVENTS)


def test_a_codex_config_of_crlf_lines_keeps_them_installed_and_removed_again(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    """config.toml was read with its CRLF turned into LF and written back so: a Windows
    user's file changed on every line after `integrate codex` and `--uninstall`."""
    from autopoiesis.integrations.codex.install import install_codex, uninstall_codex

    config = tmp_path / "config.toml"
    crlf = CODEX_CONFIG.replace("\n", "\r\n").encode()
    config.write_bytes(crlf)
    assert install_codex(memory_repo, config).added
    written = config.read_bytes()
    assert b"\r\n" in written and b"\n" not in written.replace(b"\r\n", b"")
    assert sorted(codex_hooks(config)) == sorted(CODEX_EVENTS)
    assert not install_codex(memory_repo, config).changed  # and a second run changes nothing
    uninstall_codex(config)
    assert config.read_bytes() == crlf


def test_a_read_only_codex_config_is_refused_and_kept(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    """A config.toml its owner made read-only was replaced by `integrate codex`; it is
    refused now with what to do, and the file is as it was."""
    from autopoiesis.errors import HookInstallError
    from autopoiesis.integrations.codex.install import install_codex

    config = tmp_path / "config.toml"
    config.write_text(CODEX_CONFIG)
    config.chmod(0o444)
    with pytest.raises(HookInstallError, match=r"read-only .*chmod u\+w"):
        install_codex(memory_repo, config)
    assert config.read_text() == CODEX_CONFIG


@pytest.mark.slow
def test_codex_hooks_give_context_and_import_the_rollout_at_session_end(
    repo, project, env, shared_data, cli: Cli
) -> None:
    """The hooks as Codex runs them: the command through sh -c, the documented payload on
    stdin (codex-rs/hooks/schema: session_id, transcript_path, cwd, model, ...)."""
    thread = "019fc8be-3658-7ca3-9e29-000000000000"
    rollout = (
        Path(env["CODEX_HOME"]) / f"sessions/2026/08/03/rollout-2026-08-03T10-48-00-{thread}.jsonl"
    )
    rollout.parent.mkdir(parents=True)
    shutil.copy(shared_data / "harness-logs/codex/agent-sessions__small.jsonl", rollout)
    cli("integrate", "codex", repo=repo, env=env, cwd=project, process=True, check=True)
    hooks = codex_hooks(Path(env["CODEX_HOME"]) / "config.toml")
    common = {
        "session_id": thread,
        "transcript_path": str(rollout),
        "cwd": str(project),
        "model": "gpt-5-codex",
        "permission_mode": "default",
    }
    prompt = {
        **common,
        "hook_event_name": "UserPromptSubmit",
        "turn_id": "1",
        "prompt": "Which Postgres version does the billing database run?",
    }
    out = run_hook(hooks["UserPromptSubmit"], prompt, env=env, cwd=project)
    answer = json.loads(out.stdout)["hookSpecificOutput"]
    assert answer["hookEventName"] == "UserPromptSubmit"
    assert "Postgres 17" in answer["additionalContext"]
    stop = {
        **common,
        "hook_event_name": "Stop",
        "turn_id": "1",
        "stop_hook_active": False,
        "last_assistant_message": "Postgres 17.",
    }
    assert run_hook(hooks["Stop"], stop, env=env, cwd=project).stdout == ""
    sessions = json.loads((repo.root / ".autopoiesis/harness/sessions.json").read_text())
    assert sessions[f"codex:{thread}"]["path"] == str(rollout)
    end = {**common, "hook_event_name": "SessionEnd", "reason": "other"}
    assert run_hook(hooks["SessionEnd"], end, env=env, cwd=project).returncode == 0
    row = wait_for_import(repo, thread)
    assert row["ok"] and row["imported"][0].startswith("raw/conversations/2026/08/03/")


@pytest.mark.slow
def test_codex_notify_records_the_thread_and_imports_it_once_idle(
    repo, project, env, shared_data, cli: Cli
) -> None:
    thread = "0199a213-81c0-7800-8aa1-bbab2a035a53"
    rollout = (
        Path(env["CODEX_HOME"]) / f"sessions/2025/10/30/rollout-2025-10-30T10-00-00-{thread}.jsonl"
    )
    rollout.parent.mkdir(parents=True)
    shutil.copy(shared_data / "harness-logs/codex/agent-sessions__small.jsonl", rollout)
    cli("integrate", "codex", repo=repo, env=env, cwd=project, process=True, check=True)
    notify = tomllib.loads((Path(env["CODEX_HOME"]) / "config.toml").read_text())["notify"]
    event = {
        "type": "agent-turn-complete",
        "thread-id": thread,
        "turn-id": "12345",
        "cwd": str(project),
        "client": "codex-tui",
        "input-messages": ["rename foo"],
        "last-assistant-message": "Done.",
    }
    proc = subprocess.run(
        [*notify, json.dumps(event)],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0 and proc.stdout == ""
    row = log_rows(repo)[-1]
    assert row["ok"] and row["rollout"] == str(rollout) and row["import_started"] is False

    sessions = repo.root / ".autopoiesis/harness/sessions.json"
    data = json.loads(sessions.read_text())
    data[f"codex:{thread}"]["seen"] = format_ts(utc_now() - timedelta(hours=2))
    sessions.write_text(json.dumps(data))
    other = {**event, "thread-id": "another-thread"}
    subprocess.run(
        [*notify, json.dumps(other)], cwd=project, env=env, capture_output=True, timeout=60
    )
    assert log_rows(repo)[-1]["import_started"] is True
    row = wait_for_import(repo, thread)
    assert row["path"] == str(
        rollout
    )  # imported (or refused with the importer's reason) exactly once
    assert f"codex:{thread}" not in json.loads(sessions.read_text())

    for bad in (
        "{",
        json.dumps({**event, "thread-id": "../../etc"}),
        json.dumps({"type": "approval-requested"}),
    ):
        proc = subprocess.run(
            [*notify, bad], cwd=project, env=env, capture_output=True, text=True, timeout=60
        )
        assert proc.returncode == 0 and proc.stdout == ""
    assert [r["ok"] for r in log_rows(repo)[-3:]] == [False, False, True]
    assert log_rows(repo)[-1]["ignored"] == "notification type 'approval-requested'"


@pytest.mark.slow
def test_hook_import_command_files_idle_sessions_from_cron(
    repo, project, env, hooks, tmp_path, shared_data, cli: Cli
) -> None:
    transcript = tmp_path / "cron.jsonl"
    shutil.copy(
        shared_data / "claude-code/claude-code-transcripts__sample_session.jsonl", transcript
    )
    run_hook(hooks["Stop"], base("Stop", "cron", transcript, project), env=env, cwd=project)
    assert (
        "no harness session to import"
        in cli(
            "hook", "import", "--idle", repo=repo, env=env, cwd=project, process=True, check=True
        ).stdout
    )
    out = cli(
        "hook", "import", "--all", repo=repo, env=env, cwd=project, process=True, check=True
    ).stdout
    assert "claude-code:cron: imported raw/conversations/2025/12/24/" in out


def test_context_hooks_take_the_project_of_cwd(repo, project, git) -> None:
    # The payload's cwd, a subfolder of a git repository with an origin remote: the hook
    # compiles for that repository's project and logs it; outside a repository, none.
    from autopoiesis.integrations.claude_code import hooks as claude_code

    def ask(event: str, cwd: Path, **more: Any) -> tuple[str | None, dict[str, Any]]:
        payload = base(event, "s-proj", cwd / "s.jsonl", cwd, **more)
        return claude_code.handle(repo, event, payload, budget=2000)

    prompt = {"prompt": "Which host runs the billing database?"}
    answer, info = ask("UserPromptSubmit", project, **prompt)
    assert info["project"] is None and answer and "pg-billing-2" in answer
    git(project, "init", "-q")
    git(project, "remote", "add", "origin", "https://example.org/acme/billing-api.git")
    answer, info = ask("UserPromptSubmit", project / "autopoiesis", **prompt)
    assert info["project"] == "billing-api" and answer and "pg-billing-2" in answer
    answer, info = ask("SessionStart", project, source="startup")
    assert info["project"] == "billing-api" and answer
    # The memory repo itself is no project.
    assert ask("UserPromptSubmit", repo.root, **prompt)[1]["project"] is None


# ── what a hostile payload names: redacted where it is kept ──
TOKEN = "ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"


def test_a_session_id_holding_a_secret_is_kept_redacted(repo, tmp_path, git) -> None:
    """The session id names the session in the flush's commit message, the registry and
    the log: a secret in it (or in cwd, transcript_path) reaches none of them in clear."""
    from autopoiesis.integrations.claude_code.hooks import handle
    from autopoiesis.integrations.sessions import harness_log

    where = tmp_path / TOKEN
    where.mkdir()
    transcript = where / "t.jsonl"
    transcript.write_text("")
    payload = base("PreCompact", TOKEN, transcript, where, trigger="auto")
    _, info = handle(repo, "PreCompact", payload, budget=500)
    summary = f"{FLUSH_BEGIN}\n## memory\n- Use lz4 for the logs\n{FLUSH_END}\n"
    row = {"type": "user", "isCompactSummary": True, "message": {"content": summary}}
    transcript.write_text(json.dumps(row) + "\n")
    _, info = handle(
        repo, "SessionStart", base("SessionStart", TOKEN, transcript, where, source="compact"),
        budget=500,
    )  # fmt: skip
    assert info["flush"]["status"] == "flushed", info
    harness_log(repo).append(info | {"cwd": str(where)})
    message = git(repo, "log", "-1", "--format=%B").stdout
    assert "pre-compaction flush" in message and TOKEN not in message
    for kept in (repo.root / ".autopoiesis").rglob("*.json*"):
        assert TOKEN not in kept.read_text(errors="replace"), kept


def test_a_session_id_that_is_no_id_is_refused(repo, tmp_path) -> None:
    """A line break in the session id would forge lines (a `Signed-off-by:`) of the
    commit message that names it."""
    from autopoiesis.errors import HookPayloadError
    from autopoiesis.integrations.claude_code.hooks import handle

    sid = "abc\nSigned-off-by: Mallory <m@evil>"
    with pytest.raises(HookPayloadError, match="session_id"):
        handle(repo, "Stop", base("Stop", sid, tmp_path / "t.jsonl", tmp_path), budget=500)


def test_commit_paths_redacts_its_message(repo, git) -> None:
    from autopoiesis.git.repo import MemoryGit

    (repo.root / "knowledge/reference/x.md").write_text("# x\n")
    MemoryGit(repo).commit_paths(["knowledge/reference/x.md"], f"note of {TOKEN}")
    assert TOKEN not in git(repo, "log", "-1", "--format=%B").stdout
