"""Tier 3: the bypass table of design §5.4 (a test per row), activation modes, the LLM gate
through the real loopback OpenAI server, the offline rule, the decision log, feedback and
the report."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from autopoiesis.cli import app
from autopoiesis.core.paths import MemoryRepo
from autopoiesis.errors import GateDecisionNotFound
from autopoiesis.formats.topic import parse_topic
from autopoiesis.testing.openai_server import write_llm_config
from autopoiesis.topics.gate import (
    BYPASS_TABLE,
    GatedActivator,
    GateDecision,
    GateLog,
    bypass_route,
    gate_report,
    offline_gate,
    route_for,
)
from autopoiesis.topics.pipeline import WatcherPipeline

DEPLOY_MESSAGE = "please deploy the new release to production tonight"


def topic(
    priority: str = "medium",
    activation: str = "gated",
    threshold: float = 0.15,
    desc: str = "Deploying releases",
):
    text = (
        f"---\ntype: topic\ndescription: {desc}\ntriggers:\n  - {{type: keyword, words: [deploy]}}\n"
        f"priority: {priority}\nactivation: {activation}\nsimilarity_threshold: {threshold}\n---\n\n# Deploy\n\n"
        "Deploy releases to production; roll back when health checks fail.\n"
    )
    t, errors, _ = parse_topic("topics/deploy.md", text)
    assert t is not None, errors
    return t


# ── §5.4, one test per row ──
@pytest.mark.parametrize(
    "priority, score, route",
    [
        ("critical", 0.0, "activate"),  # critical | yes | any   -> no gate, activate
        ("high", 0.3, "activate"),  # high     | yes | >=0.3 -> skip the gate
        ("high", 0.29, "gate"),  # high     | yes | <0.3  -> gate
        ("medium", 0.2, "gate"),  # medium   | yes | >=0.2 -> gate
        ("medium", 0.19, "drop"),  # medium   | yes | <0.2  -> drop
        ("low", 0.3, "gate"),  # low      | yes | >=0.3 -> gate
        ("low", 0.29, "drop"),  # low      | yes | <0.3  -> drop
    ],
)
def test_bypass_table_row(priority: str, score: float, route: str) -> None:
    assert bypass_route(priority, True, score)[0] == route


def test_bypass_table_has_exactly_the_design_rows() -> None:
    assert [(r.priority, r.route) for r in BYPASS_TABLE] == [
        ("critical", "activate"),
        ("high", "activate"),
        ("high", "gate"),
        ("medium", "gate"),
        ("medium", "drop"),
        ("low", "gate"),
        ("low", "drop"),
    ]
    assert bypass_route("critical", False, 1.0)[0] == "drop"  # tier 1 must match
    with pytest.raises(ValueError):
        bypass_route("urgent", True, 0.5)


def test_activation_modes_and_threshold() -> None:
    assert route_for(topic(activation="manual", priority="critical"), True, 0.9)[0] == "drop"
    assert route_for(topic(activation="auto", priority="low"), True, 0.16)[0] == "activate"
    assert route_for(topic(activation="auto"), True, 0.1)[0] == "drop"  # below threshold 0.15
    assert route_for(topic(priority="critical", threshold=0.5), True, 0.0)[0] == "activate"
    assert route_for(topic(priority="high", threshold=0.25), True, 0.2)[0] == "drop"


# ── the LLM path, against the loopback server ──
@pytest.fixture
def llm_repo(memory_repo: MemoryRepo, openai_server) -> MemoryRepo:
    write_llm_config(memory_repo.root, openai_server.base_url, timeout_seconds=2, max_retries=0)
    _write_deploy_topic(memory_repo)
    return MemoryRepo(memory_repo.root)  # fresh: the config changed


def _write_deploy_topic(repo: MemoryRepo) -> None:
    """topics/deploy.md: a gated topic of medium priority, triggered by "deploy"."""
    (repo.topics_dir / "deploy.md").write_text(
        "---\ntype: topic\ndescription: Deploying releases to production\ntriggers:\n"
        "  - {type: keyword, words: [deploy]}\npriority: medium\nactivation: gated\n---\n\n# Deploy\n\n"
        "Deploy releases to production; roll back when health checks fail.\n",
        encoding="utf-8",
    )


def test_gate_asks_the_llm_once_with_one_token_at_temperature_zero(
    llm_repo: MemoryRepo, openai_server
) -> None:
    openai_server.enqueue("YES")
    pipe = WatcherPipeline(llm_repo)
    acts = pipe.evaluate(DEPLOY_MESSAGE)
    deploy = next(a for a in acts if a.topic == "deploy")
    assert deploy.route == "gate"
    assert deploy.tier == 3
    assert deploy.activated
    bodies = openai_server.chat_bodies()
    assert len(bodies) == 1
    body = bodies[0]
    assert body["max_tokens"] == 1
    assert body["temperature"] == 0
    prompt = body["messages"][-1]["content"]
    assert "Topic: deploy" in prompt
    assert DEPLOY_MESSAGE in prompt
    assert "YES or NO" in prompt
    again = next(a for a in pipe.evaluate(DEPLOY_MESSAGE) if a.topic == "deploy")
    assert again.activated
    assert "cache" in again.reason
    assert len(openai_server.chat_bodies()) == 1  # the LRU cache answered
    rows = GateLog(llm_repo).decisions()
    assert [(r.source, r.gate_result) for r in rows if r.topic_name == "deploy"] == [
        ("llm", True),
        ("cache", True),
    ]


def test_gate_no_means_not_activated(llm_repo: MemoryRepo, openai_server) -> None:
    openai_server.enqueue("NO")
    acts = WatcherPipeline(llm_repo).process(DEPLOY_MESSAGE)
    assert all(a.topic != "deploy" for a in acts)
    row = [r for r in GateLog(llm_repo).decisions() if r.topic_name == "deploy"][-1]
    assert row.gate_result is False
    assert not row.activated
    assert row.route == "gate"


def test_unreachable_llm_falls_back_to_the_offline_rule(
    llm_repo: MemoryRepo, openai_server
) -> None:
    openai_server.enqueue({"status": 500, "message": "boom"})
    gate = GatedActivator(llm_repo)
    t = topic(desc="Deploying releases to production")
    verdict = gate.decide(DEPLOY_MESSAGE, t, 0.25)
    assert verdict.source == "offline-fallback"
    assert verdict.result == offline_gate(DEPLOY_MESSAGE, t, 0.25)
    assert len(gate.cache) == 0  # a failure is not cached


def test_budget_fallback_is_logged_as_offline_fallback_not_llm(
    llm_repo: MemoryRepo, openai_server
) -> None:
    """Once the daily token budget is spent, the client answers offline: the gate's offline
    rule decides and the decision log says so (it used to say "llm")."""
    write_llm_config(
        llm_repo.root,
        openai_server.base_url,
        timeout_seconds=2,
        max_retries=0,
        daily_token_budget=50,
    )
    repo = MemoryRepo(llm_repo.root)
    openai_server.default_chat = lambda body: {
        "content": "NO",
        "prompt_tokens": 80,
        "completion_tokens": 1,
    }
    WatcherPipeline(repo).process(DEPLOY_MESSAGE)  # the model says NO and spends the whole budget
    assert len(openai_server.chat_bodies()) == 1
    pipe = WatcherPipeline(repo)
    later = DEPLOY_MESSAGE.replace("tonight", "this evening")  # not in the response cache
    pipe.process(later)
    assert len(openai_server.chat_bodies()) == 1  # budget spent: no request
    rows = [r for r in GateLog(repo).decisions() if r.topic_name == "deploy"]
    assert [(r.route, r.source) for r in rows] == [("gate", "llm"), ("gate", "offline-fallback")]
    topic_file = next(t for t in pipe.topics if t.name == "deploy")
    assert rows[0].gate_result is False
    assert (
        rows[1].gate_result
        == rows[1].activated
        == offline_gate(later, topic_file, rows[1].tier2_score)
    )


def test_gate_reads_watchers_gate_max_tokens(llm_repo: MemoryRepo, openai_server) -> None:
    assert GatedActivator(llm_repo).max_tokens == 1  # the default
    config = llm_repo.root / "memory-config.yaml"
    config.write_text(config.read_text() + "watchers:\n  gate_max_tokens: 3\n", encoding="utf-8")
    repo = MemoryRepo(llm_repo.root)
    openai_server.enqueue("YES")
    gate = GatedActivator(repo)
    assert gate.max_tokens == 3
    verdict = gate.decide(DEPLOY_MESSAGE, topic(desc="Deploying releases to production"), 0.25)
    assert (verdict.result, verdict.source) == (True, "llm")
    assert [b["max_tokens"] for b in openai_server.chat_bodies()] == [3]


def test_lru_cache_is_bounded(memory_repo: MemoryRepo) -> None:
    gate = GatedActivator(memory_repo, cache_size=3)
    t = topic()
    for i in range(10):
        gate.decide(f"message {i} about deploy", t, 0.5)
    assert len(gate.cache) == 3


# ── offline ──
def test_offline_rule_is_deterministic_and_documented(memory_repo: MemoryRepo) -> None:
    t = topic(desc="Deploying releases to production")
    assert offline_gate("deploy the release to production", t, 0.0)  # two shared content words
    assert not offline_gate("deploy it", t, 0.1)  # one word, weak score
    assert offline_gate("deploy it", t, 0.3)  # score >= 2 x threshold
    gate = GatedActivator(memory_repo)  # provider offline (the default)
    assert gate.llm is None
    v = gate.decide("deploy the release to production", t, 0.0)
    assert (v.result, v.source) == (True, "offline")


# ── log, feedback, report ──
def test_feedback_and_report(memory_repo: MemoryRepo) -> None:
    log = GateLog(memory_repo)
    rows = [
        GateDecision(
            id=f"gd_{i:04d}",
            timestamp="2026-02-16T00:00:00Z",
            message_hash=str(i),
            topic_name="deploy",
            tier1_matched=True,
            tier2_score=0.2 + i / 100,
            route="gate",
            gate_result=i >= 8,
            activated=i >= 8,
            source="llm",
        )
        for i in range(10)
    ]
    log.append(rows)
    runner = CliRunner()
    out = runner.invoke(
        app, ["-C", str(memory_repo.root), "gate", "feedback", "gd_0009", "--not-useful"]
    )
    assert out.exit_code == 0, out.output
    assert [d.was_useful for d in log.decisions() if d.id == "gd_0009"] == [False]
    with pytest.raises(GateDecisionNotFound):
        log.feedback("gd_nope", True)
    stats = gate_report(log.decisions(), [topic()])
    s = stats[0]
    assert (s.decisions, s.activated, s.gate_calls, s.gate_yes, s.not_useful) == (10, 2, 10, 2, 1)
    assert s.score_min == 0.2
    assert s.score_max == 0.29
    assert "raise similarity_threshold from 0.15 to" in s.suggestion
    rep = runner.invoke(app, ["-C", str(memory_repo.root), "gate", "report", "--json"])
    data = json.loads(rep.output)
    assert data["topics"][0]["gate_yes_rate"] == 0.2
    assert data["topics"][0]["activation_rate"] == 0.2
    text = runner.invoke(app, ["-C", str(memory_repo.root), "gate", "report"]).output
    assert "deploy" in text
    assert "suggestion:" in text


def test_the_gate_log_keeps_its_latest_decisions_and_its_readers_read_both_generations(
    memory_repo: MemoryRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A line a candidate topic of every message (~420 bytes) went to
    watch/gate-decisions.jsonl for ever. Past its cap the log becomes
    gate-decisions.jsonl.1 (the generation before dropped); `gate report` and `gate
    feedback` read both generations, the report says from when it counts, and feedback on
    a decision dropped with an old generation says why it is not found."""
    from autopoiesis.core.paths import STATE_LOG_KEEP_BYTES

    monkeypatch.setitem(STATE_LOG_KEEP_BYTES, "gate_log", 3000)
    log = GateLog(memory_repo)
    for i in range(40):
        log.append(
            [
                GateDecision(
                    id=f"gd_{i:04d}",
                    timestamp=f"2026-02-16T00:{i:02d}:00Z",
                    message_hash=str(i),
                    topic_name="deploy",
                    tier1_matched=True,
                    tier2_score=0.3,
                    route="gate",
                    gate_result=True,
                    activated=True,
                    source="llm",
                )
            ]
        )
    previous = log.events.previous
    assert previous.exists() and previous.stat().st_size < 3000 + 400
    assert log.path.stat().st_size < 3000 + 400
    kept = [d.id for d in GateLog(memory_repo).decisions()]
    assert 3000 // 400 < len(kept) < 40
    assert kept == [f"gd_{i:04d}" for i in range(40 - len(kept), 40)]  # the latest, in order
    oldest_kept = kept[0]  # in gate-decisions.jsonl.1
    assert oldest_kept in previous.read_text()
    log.feedback(oldest_kept, True)
    assert [d.was_useful for d in log.decisions() if d.id == oldest_kept] == [True]
    with pytest.raises(GateDecisionNotFound, match="keeps its latest months"):
        log.feedback("gd_0000", True)
    runner = CliRunner()
    text = runner.invoke(app, ["-C", str(memory_repo.root), "gate", "report"]).output
    since = f"2026-02-16T00:{40 - len(kept):02d}:00Z"
    assert f"{len(kept)} decisions since {since}" in text
    rep = runner.invoke(app, ["-C", str(memory_repo.root), "gate", "report", "--json"])
    data = json.loads(rep.output)
    assert data["since"] == since and data["topics"][0]["decisions"] == len(kept)


def test_a_model_that_trickles_its_answer_is_given_the_gates_deadline_not_the_clients(
    memory_repo: MemoryRepo, openai_server
) -> None:
    """A gate call (one token) waited the client's whole deadline, (30 s + margin) x 4
    attempts, on a model that sends one byte every few seconds: `compile` took two
    minutes and the prompt hook gave up with no context at all. The gate's call has its
    own deadline (GATE_DEADLINE_SECONDS); past it the offline rule decides."""
    from autopoiesis.llm.ledger import Ledger
    from autopoiesis.topics.gate import GATE_DEADLINE_SECONDS

    write_llm_config(memory_repo.root, openai_server.base_url, timeout_seconds=30, max_retries=3)
    _write_deploy_topic(memory_repo)
    repo = MemoryRepo(memory_repo.root)
    openai_server.default_chat = lambda body: {"trickle": 2.0, "content": "YES, surely"}
    verdict = GatedActivator(repo).decide(DEPLOY_MESSAGE, topic())
    assert verdict.source == "offline-fallback"
    rows = Ledger(repo.state_file("llm_ledger")).rows()
    (event,) = [e for e in rows if e.get("stage") == "gate"]
    assert f"deadline of {GATE_DEADLINE_SECONDS:g} s" in event["error"]


def test_a_healthy_model_slower_than_the_gates_deadline_does_not_back_off_the_endpoint(
    memory_repo: MemoryRepo, openai_server, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The gate gives up at its own deadline, shorter than the endpoint's timeout; that
    cut-off was recorded as a failure of the whole endpoint in the repo's shared backoff,
    so the next capture's extractions were refused at once ("every LLM stage waits
    until ...") although the model answers well within llm.timeout_seconds."""
    from autopoiesis.llm import LLMClient
    from autopoiesis.topics import gate as gate_module

    write_llm_config(memory_repo.root, openai_server.base_url, timeout_seconds=30, max_retries=3)
    repo = MemoryRepo(memory_repo.root)
    monkeypatch.setattr(gate_module, "GATE_DEADLINE_SECONDS", 0.2)
    openai_server.enqueue({"delay": 1.0, "content": "YES"}, "the extraction")
    verdict = GatedActivator(repo).decide(DEPLOY_MESSAGE, topic())
    assert verdict.source == "offline-fallback"
    with LLMClient(repo) as llm:
        assert llm.backoff is not None and llm.backoff.state().failures == 0
        assert llm.complete("extract", "what was learned?").text == "the extraction"
    assert len(openai_server.chat_bodies()) == 2


def test_the_gate_calls_of_one_message_share_one_deadline(
    memory_repo: MemoryRepo, openai_server, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each gate call had GATE_DEADLINE_SECONDS of its own, and the calls of one message
    were made one after another: a slow model (2.5 s an answer, within the gate's 3 s)
    and four gated topics firing on one prompt took 10 s, the prompt hook's whole
    deadline, and the prompt got no context at all. The calls of one message now share
    the one deadline; past it the offline rule decides the rest."""
    from autopoiesis.topics import gate as gate_module

    write_llm_config(memory_repo.root, openai_server.base_url, timeout_seconds=30, max_retries=0)
    for i in range(4):
        (memory_repo.topics_dir / f"deploy-{i}.md").write_text(
            "---\ntype: topic\ndescription: Deploying releases to production\ntriggers:\n"
            "  - {type: keyword, words: [deploy]}\npriority: medium\nactivation: gated\n---\n\n"
            f"# Deploy {i}\n\nDeploy releases to production; roll back when health checks "
            "fail.\n",
            encoding="utf-8",
        )
    monkeypatch.setattr(gate_module, "GATE_DEADLINE_SECONDS", 0.8)
    openai_server.default_chat = lambda body: {"delay": 0.3, "content": "YES"}
    pipe = WatcherPipeline(MemoryRepo(memory_repo.root), log_decisions=False)
    acts = pipe.evaluate(DEPLOY_MESSAGE, dry_run=True)
    assert [a.route for a in acts] == ["gate"] * 4
    assert "offline-fallback" in acts[-1].reason  # four answers of 0.3 s do not fit in 0.8 s
    assert len(openai_server.chat_bodies()) < 4
