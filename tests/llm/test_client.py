"""autopoiesis.llm against a real loopback OpenAI-compatible server, with the real
`openai` client: no monkeypatched internals."""

from __future__ import annotations

import datetime as dt
import json
import logging
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import autopoiesis.topics.gate  # noqa: F401  (registers the gate's offline answer to its prompt, stage "gate")
from autopoiesis.core import clock
from autopoiesis.core.config import LLMConfig
from autopoiesis.core.paths import MemoryRepo
from autopoiesis.core.text import count_tokens
from autopoiesis.errors import AutopoiesisError, LLMResponseError, LLMUnavailableError
from autopoiesis.llm import (
    CallFailure,
    Completion,
    LLMClient,
    OfflineProvider,
    estimate_cost,
    register_provider,
)
from autopoiesis.testing.openai_server import write_llm_config

GATE = """Given this message and topic, should the topic activate?

Message: {message}

Topic: {name}
Description: {description}

Answer with exactly one word: YES or NO."""

PERSON = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "role": {"type": "string"}},
    "required": ["name"],
    "additionalProperties": False,
}


@pytest.fixture
def make_client(tmp_path, openai_server):
    """LLMClient(repo) for a repo in tmp_path whose config points at the loopback server.
    Short timeouts and a tiny backoff base keep the retry tests fast."""
    clients: list[LLMClient] = []

    def make(**llm) -> LLMClient:
        settings = {"timeout_seconds": 2, "max_retries": 2, **llm}
        write_llm_config(tmp_path, openai_server.base_url, **settings)
        client = LLMClient(MemoryRepo(tmp_path), backoff_base=0.01)
        clients.append(client)
        return client

    yield make
    for c in clients:
        c.close()


def ledger_rows(tmp_path: Path) -> list[dict]:
    path = tmp_path / ".autopoiesis" / "llm" / "ledger.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


# ── plain completions ──
def test_complete_uses_stage_model_and_reports_usage(make_client, openai_server):
    llm = make_client(models={"extract": "model-x", "gate": "model-g"})
    openai_server.enqueue({"content": "hello there", "prompt_tokens": 11, "completion_tokens": 3})
    res = llm.complete("extract", "Say hello", system="Be brief.", max_tokens=20, temperature=0.5)
    assert (res.text, res.model, res.provider) == ("hello there", "model-x", "openai")
    assert (res.tokens_in, res.tokens_out, res.cached, res.fell_back) == (11, 3, False, False)
    (body,) = openai_server.chat_bodies()
    assert body["model"] == "model-x"
    assert body["max_tokens"] == 20
    assert body["temperature"] == 0.5
    assert body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Say hello"},
    ]
    assert "response_format" not in body


def test_model_override_and_unknown_stage(make_client, openai_server):
    llm = make_client()
    assert llm.complete("condense", "x", model="other-model").model == "other-model"
    assert openai_server.chat_bodies()[0]["model"] == "other-model"
    with pytest.raises(ValueError, match="Unknown LLM stage"):
        llm.complete("nonsense", "x")


def test_tokens_estimated_when_server_sends_no_usage(make_client, openai_server):
    llm = make_client()
    openai_server.enqueue({"content": "abcdefghi", "usage": None})
    res = llm.complete("extract", "p" * 41)
    # the one offline estimator (core.text.count_tokens): words cut at 8 letters, as BPE does
    assert res.tokens_out == count_tokens("abcdefghi") == 2
    assert res.tokens_in == count_tokens("p" * 41) == 6


# ── JSON ──
def test_complete_json_valid(make_client, openai_server):
    llm = make_client()
    openai_server.enqueue('{"name": "Ada", "role": "engineer"}')
    res = llm.complete_json("extract", "Who is mentioned?", schema=PERSON)
    assert res.data == {"name": "Ada", "role": "engineer"}
    (body,) = openai_server.chat_bodies()
    assert body["response_format"] == {"type": "json_object"}
    assert "JSON" in body["messages"][0]["content"]  # OpenAI's JSON mode requires the word
    assert '"required": ["name"]' in body["messages"][0]["content"]


def test_complete_json_malformed_then_repaired(make_client, openai_server):
    llm = make_client()
    openai_server.enqueue('{"name": "Ada",', '{"name": "Ada"}')
    res = llm.complete_json("extract", "Who?", schema=PERSON)
    assert res.data == {"name": "Ada"}
    first, second = openai_server.chat_bodies()
    assert second["messages"][: len(first["messages"])] == first["messages"]
    assert second["messages"][-2] == {"role": "assistant", "content": '{"name": "Ada",'}
    assert "not JSON" in second["messages"][-1]["content"]
    assert second["response_format"] == {"type": "json_object"}


def test_complete_json_code_fence_is_accepted(make_client, openai_server):
    llm = make_client()
    openai_server.enqueue('```json\n{"name": "Bo"}\n```')
    assert llm.complete_json("extract", "Who?", schema=PERSON).data == {"name": "Bo"}
    assert len(openai_server.chat_bodies()) == 1


def test_complete_json_wrong_schema_twice_raises(make_client, openai_server):
    llm = make_client()
    openai_server.enqueue('{"role": "x"}', '{"name": 3}')
    with pytest.raises(LLMResponseError, match="schema") as info:
        llm.complete_json("extract", "Who?", schema=PERSON)
    assert isinstance(info.value, AutopoiesisError)
    bodies = openai_server.chat_bodies()
    assert len(bodies) == 2
    assert "'name' is a required property" in bodies[1]["messages"][-1]["content"]
    # a rejected answer is not cached: asking again goes to the server again
    openai_server.enqueue('{"name": "Cy"}')
    assert llm.complete_json("extract", "Who?", schema=PERSON).data == {"name": "Cy"}
    assert len(openai_server.chat_bodies()) == 3


def test_complete_json_callable_validator(make_client, openai_server):
    llm = make_client()
    openai_server.enqueue('{"n": -1}', '{"n": 2}')

    def positive(data):
        if data["n"] <= 0:
            raise ValueError("n must be positive")

    assert llm.complete_json("extract", "n?", schema=positive).data == {"n": 2}
    assert "n must be positive" in openai_server.chat_bodies()[1]["messages"][-1]["content"]


def test_complete_json_is_cached_after_validation(make_client, openai_server):
    llm = make_client()
    openai_server.enqueue('{"name": "Ada"}')
    a = llm.complete_json("extract", "Who?", schema=PERSON)
    b = llm.complete_json("extract", "Who?", schema=PERSON)
    assert (a.cached, b.cached) == (False, True)
    assert b.data == {"name": "Ada"}
    assert len(openai_server.chat_bodies()) == 1


# ── retries ──
def test_429_then_success_is_retried_honouring_retry_after(make_client, openai_server):
    llm = make_client()
    openai_server.enqueue({"status": 429, "headers": {"Retry-After": "0.4"}}, "fine")
    t0 = time.monotonic()
    res = llm.complete("extract", "x")
    elapsed = time.monotonic() - t0
    assert res.text == "fine"
    assert len(openai_server.chat_bodies()) == 2
    assert elapsed >= 0.4  # backoff_base is 0.01: only Retry-After explains the wait


def test_retry_after_is_capped(tmp_path, openai_server):
    """The 30 s asked for does not fit in the call's 20 s deadline: uncapped, the client
    would give up without a second attempt; capped, it waits 0.05 s and asks again."""
    write_llm_config(tmp_path, openai_server.base_url, max_retries=1, deadline_seconds=20)
    llm = LLMClient(MemoryRepo(tmp_path), backoff_base=0.01, retry_after_cap=0.05)
    openai_server.enqueue({"status": 429, "headers": {"Retry-After": "30"}}, "fine")
    assert llm.complete("extract", "x").text == "fine"
    assert len(openai_server.chat_bodies()) == 2
    llm.close()


def test_500_then_success(make_client, openai_server, tmp_path):
    llm = make_client()
    openai_server.enqueue({"status": 500}, {"status": 503}, "recovered")
    assert llm.complete("extract", "x").text == "recovered"
    assert len(openai_server.chat_bodies()) == 3
    (row,) = ledger_rows(tmp_path)
    assert row["ok"]
    assert row["attempts"] == 3


def test_connection_drop_then_success(make_client, openai_server):
    llm = make_client()
    openai_server.enqueue({"disconnect": True}, "back")
    assert llm.complete("extract", "x").text == "back"
    assert len(openai_server.chat_bodies()) == 2


@pytest.mark.slow
def test_hang_times_out_retries_then_unavailable(make_client, openai_server, tmp_path):
    # each attempt would hang a minute (until the server stops): only the 0.3 s timeout
    # ends it, which the error says ("timed out"), not a clock the test reads
    llm = make_client(timeout_seconds=0.3, max_retries=2)
    openai_server.enqueue({"hang": 60.0}, {"hang": 60.0}, {"hang": 60.0})
    with pytest.raises(LLMUnavailableError, match="after 3 attempts") as info:
        llm.complete("extract", "x")
    assert "timed out" in str(info.value)
    assert len(openai_server.chat_bodies()) == 3
    (row,) = ledger_rows(tmp_path)
    assert row["ok"] is False
    assert "timed out" in row["error"]


def test_a_tls_failure_says_its_cause(tmp_path, openai_server):
    """An https:// endpoint that speaks no TLS (or a certificate of another name): the
    client's own words were "connection failed: Connection error.", no cause to act on."""
    https = openai_server.base_url.replace("http://", "https://", 1)
    write_llm_config(tmp_path, https, timeout_seconds=2, max_retries=0)
    llm = LLMClient(MemoryRepo(tmp_path), backoff_base=0.01)
    try:
        with pytest.raises(LLMUnavailableError, match="after 1 attempt ") as info:
            llm.complete("extract", "x")
    finally:
        llm.close()
    assert "connection failed: Connection error. (" in str(info.value)
    assert "SSL" in str(info.value), str(info.value)


def test_client_error_is_not_retried(make_client, openai_server):
    llm = make_client()
    openai_server.enqueue({"status": 400, "message": "bad model"})
    with pytest.raises(LLMUnavailableError, match="HTTP 400"):
        llm.complete("extract", "x")
    assert len(openai_server.chat_bodies()) == 1


def test_a_redirect_to_another_host_is_not_followed(make_client, openai_server):
    """The endpoint is what this machine approved: a 307 to another host would resend the
    prompt, so the memory's content, there. It is an error naming where it pointed."""
    from autopoiesis.testing.openai_server import OpenAIServer

    with OpenAIServer() as elsewhere:
        llm = make_client(max_retries=0)
        target = elsewhere.base_url + "/chat/completions"
        openai_server.enqueue({"status": 307, "raw": "", "headers": {"Location": target}})
        with pytest.raises(LLMUnavailableError, match=f"redirects to {target}, which was not"):
            llm.complete("extract", "what the memory holds")
        assert elsewhere.chat_bodies() == []
    assert len(openai_server.chat_bodies()) == 1


# ── cache ──
def test_cache_second_identical_call_makes_no_request(make_client, openai_server, tmp_path):
    llm = make_client()
    openai_server.enqueue({"content": "first", "prompt_tokens": 5, "completion_tokens": 1})
    a = llm.complete("extract", "same prompt", system="s")
    b = llm.complete("extract", "same prompt", system="s")
    assert (a.text, b.text, a.cached, b.cached) == ("first", "first", False, True)
    assert len(openai_server.chat_bodies()) == 1
    # the cache is a file: a new client (another process) hits it too
    again = LLMClient(MemoryRepo(tmp_path)).complete("extract", "same prompt", system="s")
    assert again.cached
    assert len(openai_server.chat_bodies()) == 1
    # anything that shapes the answer is part of the key
    llm.complete("extract", "same prompt", system="s", max_tokens=7)
    llm.complete("extract", "same prompt", system="other")
    llm.complete("condense", "same prompt", system="s")
    llm.complete("extract", "same prompt", system="s", cache=False)
    assert len(openai_server.chat_bodies()) == 5
    assert (tmp_path / ".autopoiesis" / "llm" / "cache.sqlite").is_file()


# ── ledger, usage, budget ──
def test_ledger_and_usage(make_client, openai_server, tmp_path):
    llm = make_client()
    openai_server.default_chat = lambda body: {
        "content": "ok",
        "prompt_tokens": 1000,
        "completion_tokens": 200,  # within the max_tokens asked for (256)
    }
    a, b = "a " * 600, "b " * 600  # a server's counts are bounded by what was sent
    llm.complete("extract", a)
    llm.complete("extract", b)
    llm.complete("extract", a)  # cached
    llm.complete("gate", "c", max_tokens=1)
    rows = ledger_rows(tmp_path)
    assert [r["stage"] for r in rows] == ["extract", "extract", "extract", "gate"]
    assert [r["cached"] for r in rows] == [False, False, True, False]
    today = clock.today().isoformat()  # the ledger counts UTC days
    for r in rows:
        assert r["day"] == today
        assert r["provider"] == "openai"
        assert r["model"] == "gpt-4o-mini"
        assert r["ok"]
        assert dt.datetime.fromisoformat(r["ts"]).date().isoformat() == today
    one_call = (1000 * 0.15 + 200 * 0.60) / 1e6
    assert rows[0]["cost"] == pytest.approx(one_call)
    assert rows[2]["cost"] == 0  # a cached answer costs nothing

    usage = {u.stage: u for u in llm.usage()}
    assert set(usage) == {"extract", "gate"}
    ex = usage["extract"]
    assert (ex.day, ex.calls, ex.cached, ex.errors) == (today, 3, 1, 0)
    assert (ex.tokens_in, ex.tokens_out) == (3000, 600)
    assert ex.cost == pytest.approx(2 * one_call)
    assert llm.usage(since=clock.today() + dt.timedelta(days=1)) == []
    assert len(llm.usage(since=clock.today())) == 2


@pytest.fixture
def local_zone(monkeypatch):
    """Set the process's local time zone (TZ + tzset); restored after the test."""

    def set_zone(zone: str) -> None:
        monkeypatch.setenv("TZ", zone)
        time.tzset()

    yield set_zone
    monkeypatch.undo()
    time.tzset()


# UTC-12 and UTC+14: at any hour, the local day differs from the UTC day in one of them.
@pytest.mark.parametrize("zone", ["Etc/GMT+12", "Etc/GMT-14"])
def test_ledger_day_is_the_utc_day_whatever_the_local_zone(tmp_path, local_zone, zone):
    local_zone(zone)
    llm = LLMClient(MemoryRepo(tmp_path))  # offline: the ledger records the call all the same
    llm.complete("condense", "Notes:\nOne.")
    (row,) = ledger_rows(tmp_path)
    ts = dt.datetime.fromisoformat(row["ts"])
    assert ts.utcoffset() == dt.timedelta(0)
    assert row["day"] == ts.date().isoformat() == clock.today().isoformat()
    assert [u.day for u in llm.usage()] == [clock.today().isoformat()]
    llm.close()


def test_daily_budget_falls_back_to_offline(make_client, openai_server, tmp_path, caplog):
    llm = make_client(daily_token_budget=100)
    openai_server.default_chat = lambda body: {
        "content": "remote",
        "prompt_tokens": 80,
        "completion_tokens": 30,
    }
    first = llm.complete("extract", "Payload:\nThe budget is small. Second sentence here.")
    assert first.provider == "openai"
    assert not first.fell_back
    assert llm.notice is None
    with caplog.at_level(logging.WARNING, logger="autopoiesis.llm"):
        second = llm.complete(
            "extract", "Payload:\nThe budget is small. Second sentence here.", cache=False
        )
        third = llm.complete("condense", "Notes:\nAnother one.")
    assert second.provider == "offline"
    assert second.fell_back
    assert not second.cached
    assert second.text.startswith("The budget is small.")
    assert third.fell_back
    assert len(openai_server.chat_bodies()) == 1
    assert llm.notice
    assert "daily LLM token budget" in llm.notice
    assert sum("token budget" in r.getMessage() for r in caplog.records) == 1  # warned once
    # the budget is counted from the ledger, so a fresh client (another process) sees it too
    other = LLMClient(MemoryRepo(tmp_path))
    assert other.complete("extract", "new").fell_back
    assert [r["provider"] for r in ledger_rows(tmp_path)] == [
        "openai",
        "offline",
        "offline",
        "offline",
    ]
    assert [r["fell_back"] for r in ledger_rows(tmp_path)] == [False, True, True, True]
    usage = {u.stage: u for u in other.usage()}
    assert usage["extract"].offline == 2


# ── the gate ──
def test_yes_no_sends_one_token_at_temperature_zero(make_client, openai_server):
    llm = make_client(models={"gate": "tiny-gate"})
    openai_server.enqueue(" YES", "no.", "Maybe")
    prompt = GATE.format(message="m", name="t", description="d")
    assert llm.yes_no("gate", prompt) is True
    assert llm.yes_no("gate", prompt + " ") is False
    assert llm.yes_no("gate", prompt + "  ") is None
    for body in openai_server.chat_bodies():
        assert body["max_tokens"] == 1
        assert body["temperature"] == 0
        assert body["model"] == "tiny-gate"


NULL_CONTENT = {"raw": json.dumps({"choices": [{"index": 0, "message": {"content": None}}]})}
NO_CHOICES = {"raw": json.dumps({"choices": []})}


def test_a_reply_without_an_answer_is_retried_and_never_cached(make_client, openai_server):
    """`content: null` or an empty `choices` list was an answer of '': cached for good (the
    gate then fell back to the offline rule for that message forever, asking no model)
    and recorded as a success, clearing the backoff."""
    llm = make_client(max_retries=1)
    prompt = GATE.format(message="m", name="t", description="d")
    openai_server.enqueue(NULL_CONTENT, "YES")
    assert llm.yes_no("gate", prompt) is True  # the empty reply was a failed attempt
    assert len(openai_server.chat_bodies()) == 2
    assert llm.yes_no("gate", prompt) is True  # the answer, cached
    assert len(openai_server.chat_bodies()) == 2
    openai_server.enqueue(NO_CHOICES, NULL_CONTENT)
    with pytest.raises(LLMUnavailableError, match="no content"):
        llm.yes_no("gate", prompt + " again")
    assert llm.backoff is not None and llm.backoff.state().failures == 1
    assert llm.cache is not None
    assert llm.cache.get("gate", llm.model_for("gate"), request_key_of(prompt + " again")) is None


def test_a_gate_answer_neither_yes_nor_no_is_not_cached(make_client, openai_server, tmp_path):
    llm = make_client()
    prompt = GATE.format(message="m", name="t", description="d")
    openai_server.enqueue("Maybe", "NO")
    assert llm.yes_no("gate", prompt) is None
    assert llm.yes_no("gate", prompt) is False  # asked again, not "Maybe" from the cache
    assert llm.yes_no("gate", prompt) is False
    assert len(openai_server.chat_bodies()) == 2
    # an empty answer an older version cached is no answer either: the model is asked
    assert llm.cache is not None
    llm.cache.put("extract", llm.model_for("extract"), request_key_of("x", 256), "", 1, 0)
    assert llm.complete("extract", "x").text == "OK"
    assert len(openai_server.chat_bodies()) == 3


def request_key_of(prompt: str, max_tokens: int = 1) -> str:
    """The cache key of a plain completion of PROMPT (no system prompt, temperature 0)."""
    from autopoiesis.llm.cache import request_key

    return request_key(
        [{"role": "user", "content": prompt}], {"max_tokens": max_tokens, "temperature": 0.0}
    )


# ── concurrency ──
@pytest.mark.slow
def test_a_gate_answer_that_only_begins_with_the_letters_is_no_answer(make_client, openai_server):
    """A hedge that starts with N-O or Y-E-S ("Not sure", "Yesterday") answers nothing: it
    was taken as NO or YES and cached for good, so the model was never asked again."""
    llm = make_client()
    prompt = GATE.format(message="m", name="t", description="d")
    openai_server.enqueue("Not sure", "Yesterday", "**Yes.**", "no")
    assert llm.yes_no("gate", prompt) is None
    assert llm.yes_no("gate", prompt) is None
    assert llm.yes_no("gate", prompt) is True  # asked again: neither hedge was cached
    assert llm.yes_no("gate", prompt + " ") is False
    assert len(openai_server.chat_bodies()) == 4


def test_the_concurrency_limit_is_how_many_requests_run_at_once(make_client, openai_server):
    """llm.concurrency N sends N requests at once, never more: the server answers only once
    N are in flight together, so a client that sent fewer at a time would be answered only
    by the server's hang guard and show a smaller maximum; one that sent more, a larger.
    (Counted, not timed: a busy machine slows the threads, not how many run together. The
    throughput it buys is bench/bench_llm.py's.)"""
    for n in (1, 4, 8):
        llm = make_client(concurrency=n)
        openai_server.reset()
        openai_server.answer_in_groups_of(n)
        results = llm.map_concurrent(
            lambda i, llm=llm: llm.complete("extract", f"prompt {i}", cache=False), range(8)
        )
        assert [r.text for r in results] == ["OK"] * 8
        assert len(openai_server.chat_bodies()) == 8
        assert openai_server.max_in_flight == n


def test_semaphore_is_shared_by_plain_threads(make_client, openai_server):
    from concurrent.futures import ThreadPoolExecutor

    llm = make_client(concurrency=2)
    openai_server.answer_in_groups_of(2)
    with ThreadPoolExecutor(max_workers=6) as pool:
        list(pool.map(lambda i: llm.complete("extract", f"q{i}", cache=False), range(6)))
    assert len(openai_server.chat_bodies()) == 6
    assert openai_server.max_in_flight == 2


# ── offline provider ──
def test_offline_provider_is_deterministic_and_makes_no_requests(tmp_path, openai_server):
    (tmp_path / "raw").mkdir()
    (tmp_path / "knowledge").mkdir()
    # provider offline is the default; a base_url is set only to prove nothing is called
    (tmp_path / "memory-config.yaml").write_text(f"llm:\n  base_url: {openai_server.base_url}\n")
    llm = LLMClient(MemoryRepo(tmp_path))
    prompt = (
        "Summarize this git diff.\n\nDiff:\nAdded the gate. Then the cache! And more text here?"
    )
    a = llm.complete("commit_message", prompt)
    b = llm.complete("commit_message", prompt)
    assert a.text == b.text == "Added the gate. Then the cache! And more text here?"
    assert a.provider == "offline"
    assert not a.fell_back
    assert not a.cached
    short = llm.complete("commit_message", prompt, max_tokens=5)  # ~20 characters
    assert short.text == "Added the gate."

    yes = GATE.format(
        message="Please triage my email inbox today",
        name="Email Triage",
        description="Sort incoming email",
    )
    no = GATE.format(
        message="What is the weather in Vienna?",
        name="Email Triage",
        description="Sort incoming email",
    )
    assert llm.yes_no("gate", yes) is True
    assert llm.yes_no("gate", yes) is True
    assert llm.yes_no("gate", no) is False
    assert llm.yes_no("gate", "Is this a question? YES or NO") is False  # not the gate's shape: NO

    with pytest.raises(LLMUnavailableError, match="register_offline_handler"):
        llm.complete_json("extract", "x", schema=PERSON)
    llm.register_offline_handler("extract", lambda prompt, system: {"name": prompt.split()[0]})
    assert llm.complete_json("extract", "Ada said hi", schema=PERSON).data == {"name": "Ada"}
    llm.register_offline_handler("extract", lambda prompt, system: {"nom": "x"})
    with pytest.raises(LLMResponseError):
        llm.complete_json("extract", "Ada", schema=PERSON)

    assert openai_server.requests == []
    rows = ledger_rows(tmp_path)
    assert rows
    assert all(r["provider"] == "offline" and r["cost"] == 0 and not r["cached"] for r in rows)


def test_offline_client_without_state_folder():
    llm = LLMClient(config=LLMConfig())
    assert llm.complete("condense", "Notes:\nOne. Two.").text == "One. Two."
    assert llm.usage() == []


def test_module_level_offline_handler_registry():
    from autopoiesis.llm import register_offline_handler, unregister_offline_handler

    register_offline_handler("compact", lambda prompt, system: "compacted")
    try:
        assert LLMClient(config=LLMConfig()).complete("compact", "whatever").text == "compacted"
    finally:
        unregister_offline_handler("compact")
    assert LLMClient(config=LLMConfig()).complete("compact", "whatever").text == "whatever"


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=400), st.integers(min_value=1, max_value=64))
def test_offline_complete_is_deterministic_and_bounded(prompt, max_tokens):
    p = OfflineProvider()
    a = p.complete("condense", prompt, max_tokens=max_tokens)
    assert a == OfflineProvider().complete("condense", prompt, max_tokens=max_tokens)
    if max_tokens > 3 and "yes" not in prompt.lower():
        assert len(a) <= max(16, 4 * max_tokens)
    else:
        assert a in ("YES", "NO") or len(a) <= max(16, 4 * max_tokens)


# ── a provider of one's own ──
class EchoProvider:
    """A ChatProvider without a network: echoes the prompt, fails as scripted first."""

    name = "echo"

    def __init__(self, config: LLMConfig, failures: list[CallFailure]):
        self.failures = failures
        self.closed = False

    def chat(self, model, messages, params):
        if self.failures:
            return self.failures.pop(0)
        return Completion(f"{model}: {messages[-1]['content']}", 7, 2)

    def close(self) -> None:
        self.closed = True


def test_registered_provider_gets_the_clients_retries_and_ledger(tmp_path):
    made: list[EchoProvider] = []
    failures = [CallFailure("HTTP 503: busy", retryable=True, retry_after=0.0, status=503)]
    register_provider(
        "echo", lambda config: made.append(EchoProvider(config, failures)) or made[-1]
    )
    (tmp_path / "memory-config.yaml").write_text(
        ""
    )  # defaults; the provider comes from the config below
    llm = LLMClient(MemoryRepo(tmp_path), config=LLMConfig(provider="echo", max_retries=1))
    res = llm.complete("extract", "hello")
    assert (res.text, res.provider, res.tokens_in, res.tokens_out) == (
        "gpt-4o-mini: hello",
        "echo",
        7,
        2,
    )
    failures.append(CallFailure("HTTP 401: no key", retryable=False, status=401))
    with pytest.raises(LLMUnavailableError, match="OPENAI_API_KEY"):
        llm.complete("extract", "again")
    llm.close()
    assert len(made) == 1
    assert made[0].closed
    rows = ledger_rows(tmp_path)
    assert [(r["provider"], r["ok"], r["attempts"]) for r in rows] == [
        ("echo", True, 2),
        ("echo", False, 1),
    ]


# ── odds and ends ──
def test_estimate_cost_prefix_match():
    assert estimate_cost("gpt-4o-mini-2024-07-18", 1_000_000, 0) == pytest.approx(0.15)
    assert estimate_cost("gpt-4o", 0, 1_000_000) == pytest.approx(10.0)
    assert estimate_cost("openai/gpt-4o-mini", 1_000_000, 1_000_000) == pytest.approx(0.75)
    assert estimate_cost("llama3.1:8b", 10**6, 10**6) == 0


def test_import_does_not_load_openai_or_jsonschema():
    code = "import sys, autopoiesis.llm; print(sorted(m for m in ('openai', 'jsonschema', 'httpx') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_cli_llm_usage(make_client, openai_server, tmp_path):
    import typer
    from typer.testing import CliRunner

    from autopoiesis.cli.llm_cmd import register

    llm = make_client()
    openai_server.default_chat = lambda body: {
        "content": "ok",
        "prompt_tokens": 100,
        "completion_tokens": 10,
    }
    llm.complete("extract", "a " * 60)
    llm.complete("extract", "a " * 60)
    app = typer.Typer()

    @app.callback()
    def main() -> None:
        pass

    register(app)
    runner = CliRunner()
    env = {"AUTOPOIESIS_REPO": str(tmp_path)}
    res = runner.invoke(app, ["llm", "usage"], env=env)
    assert res.exit_code == 0, res.output
    assert "extract" in res.output
    assert "est. cost" in res.output
    assert "total" in res.output
    res = runner.invoke(app, ["llm", "usage", "--json"], env=env)
    (row,) = json.loads(res.output)
    assert (row["stage"], row["calls"], row["cached"], row["tokens_in"]) == ("extract", 2, 1, 200)
    res = runner.invoke(app, ["llm", "usage", "--since", "2199-01-01"], env=env)
    assert "No LLM calls recorded since 2199-01-01" in res.output
    res = runner.invoke(app, ["llm", "usage", "--since", "yesterday"], env=env)
    assert res.exit_code == 2


def test_loopback_embeddings_are_deterministic_and_sized(openai_server):
    """The shared server's /v1/embeddings, through the real client (which asks for base64)."""
    import math

    import openai

    client = openai.OpenAI(base_url=openai_server.base_url, api_key="x", max_retries=0)
    try:
        texts = ["deploy the gate service", "the gate service deploy failed", "banana bread recipe"]
        a = client.embeddings.create(model="text-embedding-3-small", input=texts, dimensions=64)
        b = client.embeddings.create(model="text-embedding-3-small", input=texts, dimensions=64)
    finally:
        client.close()
    vecs = [d.embedding for d in a.data]
    assert [d.embedding for d in b.data] == vecs
    assert all(len(v) == 64 for v in vecs)
    assert all(abs(math.sqrt(sum(x * x for x in v)) - 1) < 1e-5 for v in vecs)

    def cos(u, v):
        return sum(x * y for x, y in zip(u, v))

    assert cos(vecs[0], vecs[1]) > cos(vecs[0], vecs[2])
    (body, _) = openai_server.embedding_bodies()
    assert body["dimensions"] == 64
    assert body["input"] == texts
