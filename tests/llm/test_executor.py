"""The one LLM executor against the loopback OpenAI server: failed calls put every process
of the repo in a global backoff, the daily and the per-job token budgets stop paid
calls, the concurrency limit holds across processes, and the ledger's day totals are
what `daemon status` shows."""

from __future__ import annotations

import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta

import pytest

from autopoiesis.core.paths import MemoryRepo
from autopoiesis.errors import LLMUnavailableError
from autopoiesis.llm import LLMClient
from autopoiesis.testing.openai_server import OpenAIServer, write_llm_config
from tests.conftest import Cli


def _repo(memory_repo: MemoryRepo, server: OpenAIServer, **llm) -> MemoryRepo:
    write_llm_config(memory_repo.root, server.base_url, **llm)
    return MemoryRepo(memory_repo.root)


def test_failures_put_every_client_in_a_global_backoff(
    memory_repo: MemoryRepo, openai_server: OpenAIServer
) -> None:
    repo = _repo(memory_repo, openai_server, max_retries=0)
    clock = [datetime(2026, 3, 2, 12, 0, tzinfo=UTC)]
    openai_server.enqueue({"status": 500, "message": "down"})
    a = LLMClient(repo, clock=lambda: clock[0], job="extract")
    with pytest.raises(LLMUnavailableError, match="HTTP 500"):
        a.complete("extract", "hello")
    assert len(openai_server.chat_bodies()) == 1
    # another client (another process would read the same file) does not call at all
    b = LLMClient(repo, clock=lambda: clock[0], job="condense")
    with pytest.raises(
        LLMUnavailableError,
        match=r"failed 1 call in a row .* waits until 2026-03-02T12:00:30Z",
    ):
        b.complete("condense", "hello again")
    assert len(openai_server.chat_bodies()) == 1
    # a second failure doubles the wait
    clock[0] += timedelta(seconds=31)
    openai_server.enqueue({"status": 503, "message": "still down"})
    with pytest.raises(LLMUnavailableError, match="HTTP 503"):
        b.complete("condense", "third")
    assert b.backoff is not None and b.backoff.state().until == clock[0] + timedelta(seconds=60)
    clock[0] += timedelta(seconds=61)
    assert (
        a.complete("extract", "back?").text == "OK"
    )  # the endpoint is back: the backoff is cleared
    assert b.backoff.state().failures == 0
    assert b.complete("condense", "and for everyone").text == "OK"
    assert len(openai_server.chat_bodies()) == 4
    rows = list(a.ledger.rows()) if a.ledger else []
    assert [r.get("error") for r in rows if not r["ok"]].count("global backoff") == 1
    assert {r.get("job") for r in rows} == {"extract", "condense"}


# prompts long enough for the counts the server claims (they are bounded by what was sent)
SAY = {w: f"{w} " * 10 for w in ("one", "two", "three", "four", "five")}


def test_the_daily_budget_and_the_job_budget_stop_paid_calls(
    memory_repo: MemoryRepo, openai_server: OpenAIServer
) -> None:
    repo = _repo(memory_repo, openai_server, daily_token_budget=100)
    openai_server.default_chat = lambda body: {
        "content": "fine",
        "prompt_tokens": 30,
        "completion_tokens": 10,
    }
    job = LLMClient(repo, job="condense", job_token_budget=50)
    assert job.complete("condense", SAY["one"], cache=False).provider == "openai"
    # 40 spent, under 50
    assert job.complete("condense", SAY["two"], cache=False).provider == "openai"
    third = job.complete("condense", SAY["three"], cache=False)  # 80 spent: over the job's 50
    assert third.provider == "offline" and third.fell_back
    assert job.notice is not None and "daemon.job_token_budget" in job.notice
    other = LLMClient(repo, job="extract")  # another job still may: 80 of the day's 100
    assert other.complete("extract", SAY["four"], cache=False).provider == "openai"  # 120 today
    # the daily budget
    assert other.complete("extract", SAY["five"], cache=False).provider == "offline"
    assert other.notice is not None and "daily LLM token budget" in other.notice
    assert len(openai_server.chat_bodies()) == 3
    from autopoiesis.daemon.status import llm_today

    today = llm_today(repo)
    assert today["tokens"] == 120 and today["calls"] == 5
    assert today["jobs"] == {
        "condense": {"calls": 3, "tokens": 80},
        "extract": {"calls": 2, "tokens": 40},
    }


@pytest.mark.slow
def test_the_concurrency_limit_holds_across_processes(
    memory_repo: MemoryRepo, openai_server: OpenAIServer
) -> None:
    repo = _repo(memory_repo, openai_server, concurrency=1, timeout_seconds=20)
    openai_server.default_chat = lambda body: {"content": "slow", "delay": 0.4}
    code = (
        "import sys; from autopoiesis.core.paths import MemoryRepo; from autopoiesis.llm import LLMClient\n"
        "c = LLMClient(MemoryRepo(sys.argv[1]))\n"
        "for i in range(3): c.complete('extract', f'{sys.argv[2]} {i}', cache=False)\n"
    )
    t0 = time.monotonic()
    procs = [
        subprocess.Popen([sys.executable, "-c", code, str(repo.root), name])
        for name in ("a", "b", "c")
    ]
    assert [p.wait(timeout=60) for p in procs] == [0, 0, 0]
    assert len(openai_server.chat_bodies()) == 9
    assert openai_server.max_in_flight == 1  # three processes, one slot
    assert time.monotonic() - t0 >= 9 * 0.4


def test_a_daemon_job_labels_its_calls_and_status_shows_them(
    memory_repo: MemoryRepo, openai_server: OpenAIServer, cli: Cli
) -> None:
    """JobContext.llm() is the executor a job passes to its stages: its calls carry the
    job's name, and `daemon status --json` counts them."""
    from autopoiesis.daemon.jobs import JobContext

    repo = _repo(memory_repo, openai_server)
    ctx = JobContext(
        repo, "commit", "test", datetime(2026, 3, 2, tzinfo=UTC), None, token_budget=1000
    )
    with ctx.llm() as client:
        assert client.job == "commit" and client.job_token_budget == 1000
        client.complete("commit_message", "summarize", cache=False)
    out = cli("daemon", "status", "--json", repo=repo, check=True).stdout
    import json

    data = json.loads(out)
    assert data["llm_today"]["calls"] == 1 and data["llm_today"]["jobs"]["commit"]["calls"] == 1


def test_an_endpoint_error_within_a_callers_shorter_deadline_still_backs_off(
    memory_repo: MemoryRepo, openai_server: OpenAIServer
) -> None:
    """A caller's own deadline ending a call is not the endpoint's failure, but an error
    the endpoint gave before it is: the shared backoff counts that call."""
    repo = _repo(memory_repo, openai_server, timeout_seconds=30, max_retries=3)
    # the caller's 60 s (a hang guard, not a race with the endpoint's answer) is shorter
    # than the call's own deadline, and the wait the endpoint asks for does not fit in it
    openai_server.enqueue({"status": 500, "message": "down", "headers": {"Retry-After": "60"}})
    with LLMClient(repo) as llm:
        assert llm.deadline > 60
        with pytest.raises(LLMUnavailableError, match="HTTP 500"):
            llm.complete("gate", "hello", deadline=60)
        assert llm.backoff is not None and llm.backoff.state().failures == 1
