"""Tier 1 (pattern), tier 2 (similarity) and the watcher pipeline against real memory
repos; the CLI through the real Typer app."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from autopoiesis.cli import app
from autopoiesis.core.paths import MemoryRepo
from autopoiesis.formats.topic import parse_topic
from autopoiesis.topics.loader import load_topics
from autopoiesis.topics.pattern import (
    PatternMatcher,
    detect_code,
    detect_language,
    find_urls,
    sentiment_score,
)
from autopoiesis.topics.pipeline import WatcherPipeline, peek_pending, take_pending
from autopoiesis.topics.similarity import SimilarityScorer

PR_MESSAGE = "Can you review the PR that just came in?"


def make_topic(
    name: str, triggers: str, *, description: str = "", body: str = "", extra: str = ""
) -> object:
    text = (
        f"---\ntype: topic\ndescription: {description or name}\ntriggers:\n{triggers}\n{extra}---\n\n"
        f"# {name}\n\n{body or description or name}\n"
    )
    topic, errors, _ = parse_topic(f"topics/{name}.md", text)
    assert topic is not None, errors
    return topic


def write_topic(
    repo: MemoryRepo,
    name: str,
    triggers: str,
    *,
    description: str = "",
    body: str = "",
    extra: str = "",
) -> Path:
    path = repo.topics_dir / f"{name}.md"
    path.write_text(
        f"---\ntype: topic\ndescription: {description or name}\ntriggers:\n{triggers}\n{extra}---\n\n"
        f"# {name}\n\n{body or description or name}\n",
        encoding="utf-8",
    )
    return path


# ── tier 1 ──
def test_each_tier1_trigger_type_fires_and_only_on_its_own_signal() -> None:
    topics = [
        make_topic("rx", "  - {type: pattern, match: '\\b(email|inbox)\\b'}"),
        make_topic("gl", "  - {type: glob, match: '*.py'}"),
        make_topic("kw", "  - {type: keyword, words: [deploy, 'pull request']}"),
        make_topic("code", "  - {type: code, languages: [python]}"),
        make_topic("lang", "  - {type: language, languages: [de]}"),
        make_topic("mention", "  - {type: mention, names: [silas]}"),
        make_topic("people", "  - {type: mention}"),
        make_topic("ghpr", "  - {type: url, match: github_pull}"),
        make_topic("ghissue", "  - {type: url, match: github_issue}"),
        make_topic("urgent", "  - {type: sentiment}"),
    ]
    m = PatternMatcher(topics, people=["caroline"])
    assert m.match("Please check my INBOX") == {"rx"}
    assert m.match("nothing here") == set()
    assert m.match("I edited src/app.py") == {"gl"}
    assert m.match("done", paths=["lib/tool.py"]) == {"gl"}
    assert m.match("time to DEPLOY") == {"kw"}
    assert m.match("open a pull   request") == {"kw"}
    assert m.match("redeployment is not a keyword match") == set()
    assert m.match("```python\nx = 1\n```") == {"code"}
    assert m.match("```go\nfunc main() {}\n```") == set()
    assert m.match("Kannst du bitte den Bericht bis morgen fertig machen und mir schicken?") == {
        "lang"
    }
    assert m.match("hey @silas look") == {"mention", "people"}
    assert m.match("Caroline said so") == {"people"}
    assert m.match("see https://github.com/acme/app/pull/42") == {"ghpr"}
    assert m.match("see https://github.com/acme/app/issues/7.") == {"ghissue"}
    assert m.match("URGENT!!! production is DOWN") == {"urgent"}


def test_scope_decides_which_direction_a_trigger_watches() -> None:
    t = make_topic(
        "py2",
        "  - {type: pattern, match: '^\\s*print [^(=]', scope: output, correction_hint: 'Use print()'}",
    )
    both = make_topic("deploy", "  - {type: keyword, words: [deploy], scope: both}")
    m = PatternMatcher([t, both])
    reply = "Here you go:\n    print 'hello'\n"
    assert m.match(reply, "input") == set()
    hits = m.hits(reply, "output")
    assert [(h.topic, h.correction_hint) for h in hits] == [("py2", "Use print()")]
    assert m.match("deploy", "input") == m.match("deploy", "output") == {"deploy"}


def test_feature_detectors() -> None:
    assert detect_code("def f(x):\n    return x\n").languages == frozenset({"python"})
    assert detect_code("```js\nconst a = 1;\n```").languages == frozenset({"javascript"})
    assert not detect_code("Just a sentence about code review.").has_code
    assert detect_language("Bonjour, pouvez-vous relire la demande de fusion aujourd'hui ?") == "fr"
    assert detect_language("too short") is None
    kinds = [
        u.kind
        for u in find_urls(
            "a https://github.com/o/r/pull/1 b https://github.com/o/r c https://example.com/x"
        )
    ]
    assert kinds == ["github_pull", "github", "other"]
    assert sentiment_score("all good, thanks")[0] == 0
    assert sentiment_score("URGENT!!! the API is DOWN")[0] >= 4


def test_catastrophic_pattern_and_huge_message_do_not_hang(memory_repo: MemoryRepo) -> None:
    write_topic(
        memory_repo,
        "evil",
        "  - {type: pattern, match: '(a+)+$'}\n  - {type: sentiment}\n  - {type: code}",
    )
    pipe = WatcherPipeline(memory_repo)
    hostile = "a" * 200_000 + "!"
    # CPU time of this process (a busy machine does not stretch it): backtracking on
    # (a+)+$ would take longer than the universe's age, RE2 takes milliseconds
    start = time.process_time()
    assert pipe.matcher.match(hostile) == set()
    assert time.process_time() - start < 5
    big = ("Please review the PR. " * 50_000)[:1_000_000]
    start = time.process_time()
    acts = pipe.evaluate(big, "input")
    assert time.process_time() - start < 5
    assert any(a.topic == "github-pr-review" for a in acts)


def test_a_lone_surrogate_in_a_message_is_read_as_a_replacement_character(
    memory_repo: MemoryRepo,
) -> None:
    """A JSON `\\udcc1` escape (or a byte of argv that is no UTF-8) decodes to a lone
    surrogate, which RE2 and the byte 3-grams of MinHash refused: the watcher raised, so
    `watch` and `compile` showed a traceback and the prompt hook gave no context."""
    write_topic(memory_repo, "odd", "  - {type: pattern, match: 'deploy .? now'}")
    odd = json.loads('" and deploy \\udcc1 now"')
    pipe = WatcherPipeline(memory_repo)
    acts = {a.topic: a for a in pipe.evaluate(PR_MESSAGE + odd, "input", all_topics=True)}
    assert [h.detail for h in acts["odd"].hits] == ["deploy \ufffd now"]
    assert acts["github-pr-review"].activated and acts["github-pr-review"].scores["minhash"] > 0
    line = json.dumps({"text": PR_MESSAGE + odd, "id": "m1"})  # ASCII: the escape as sent
    out = CliRunner().invoke(app, ["-C", str(memory_repo.root), "watch"], input=line + "\n")
    assert out.exit_code == 0, out.output
    assert [a["topic"] for a in json.loads(out.output)["activations"]] == ["github-pr-review"]


def test_a_watch_line_nested_past_reading_is_its_text_and_the_stream_goes_on(
    memory_repo: MemoryRepo,
) -> None:
    """A line of 5,000 opening brackets: `watch` ended in a RecursionError traceback and
    the lines after it were never read. It is read as text, as a line that is not JSON,
    and the next line is answered."""
    lines = "[" * 5000 + "\n" + json.dumps({"text": PR_MESSAGE}) + "\n"
    out = CliRunner().invoke(app, ["-C", str(memory_repo.root), "watch"], input=lines)
    assert out.exit_code == 0, out.output
    answers = [json.loads(x) for x in out.output.splitlines()]
    assert [a["line"] for a in answers] == [1, 2]
    assert "github-pr-review" in [a["topic"] for a in answers[1]["activations"]]


# ── tier 2 ──
def test_tfidf_score_equals_scikit_learn_cosine(memory_repo: MemoryRepo, tmp_path: Path) -> None:
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.metrics.pairwise import cosine_similarity

    topics = load_topics(memory_repo).topics
    scorer = SimilarityScorer(topics, cache_dir=tmp_path / "c")
    vec = TfidfVectorizer(stop_words="english", sublinear_tf=True, token_pattern=r"(?u)\b\w\w+\b")
    matrix = vec.fit_transform([t.profile_text for t in topics])
    for msg in (PR_MESSAGE, "print python code please", "weather today"):
        expected = cosine_similarity(vec.transform([msg]), matrix)[0]
        got = [s.score for s in scorer.scores(msg)]
        assert got == pytest.approx(list(expected), abs=1e-9)
    ranked = scorer.score(PR_MESSAGE)
    assert ranked[0][0] == "github-pr-review"
    assert ranked[0][1] >= 0.15
    assert scorer.score("weather today") == []


def test_topic_vectors_are_cached_on_disk_by_content(
    memory_repo: MemoryRepo, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    topics = load_topics(memory_repo).topics
    first = SimilarityScorer(topics, cache_dir=cache)
    assert not first.loaded_from_cache
    assert len(list(cache.glob("*.npz"))) == 1
    second = SimilarityScorer(topics, cache_dir=cache)
    assert second.loaded_from_cache
    assert second.scores(PR_MESSAGE) == first.scores(PR_MESSAGE)
    write_topic(
        memory_repo,
        "deploy",
        "  - {type: keyword, words: [deploy]}",
        description="Deploying to production",
    )
    third = SimilarityScorer(load_topics(memory_repo).topics, cache_dir=cache)
    assert not third.loaded_from_cache  # the topics changed: refit


def test_per_topic_threshold(memory_repo: MemoryRepo) -> None:
    write_topic(
        memory_repo,
        "strict",
        "  - {type: keyword, words: [review]}",
        description="review of pull requests",
        extra="similarity_threshold: 0.99\nactivation: auto\n",
    )
    acts = {a.topic: a for a in WatcherPipeline(memory_repo).evaluate(PR_MESSAGE)}
    assert not acts["strict"].activated
    assert acts["strict"].tier == 2
    assert "threshold 0.99" in acts["strict"].reason


# ── the pipeline ──
def test_pr_message_activates_the_pr_topic_and_logs_the_decision(memory_repo: MemoryRepo) -> None:
    pipe = WatcherPipeline(memory_repo)
    acts = pipe.process(PR_MESSAGE, "input")
    assert [a.topic for a in acts] == ["github-pr-review"]
    a = acts[0]
    assert a.tier == 2
    assert a.route == "activate"
    assert a.scores["tfidf"] >= 0.3
    log = memory_repo.state_dir / "watch" / "gate-decisions.jsonl"
    row = json.loads(log.read_text().splitlines()[-1])
    assert row["topic_name"] == "github-pr-review"
    assert row["tier1_matched"]
    assert row["id"] == a.decision_id
    assert pipe.process("What's the weather like?", "input") == []


def test_output_steering_reaches_the_next_compile_in_another_process(
    memory_repo: MemoryRepo,
) -> None:
    WatcherPipeline(memory_repo).process("Sure:\n    print 'hi'\n", "output")
    pending = peek_pending(memory_repo)
    assert [(p.topic, p.hint) for p in pending] == [
        ("code-quality", "Use Python 3 syntax: print() is a function.")
    ]
    result = CliRunner().invoke(app, ["-C", str(memory_repo.root), "compile", "hello", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    labels = [s["label"] for s in data["sections"] if s["included"]]
    assert "correction:code-quality" in labels
    assert "topic:code-quality" in labels
    assert "Use Python 3 syntax" in data["prompt"]
    assert take_pending(memory_repo) == []  # consumed once


def test_topic_file_edited_while_running_is_reloaded(memory_repo: MemoryRepo) -> None:
    pipe = WatcherPipeline(memory_repo, reload_interval=0)
    assert pipe.process("the kubernetes cluster", "input") == []
    path = write_topic(
        memory_repo,
        "k8s",
        "  - {type: keyword, words: [kubernetes]}",
        description="kubernetes cluster operations",
        extra="activation: auto\n",
    )
    assert [a.topic for a in pipe.process("the kubernetes cluster", "input")] == ["k8s"]
    path.write_text(path.read_text().replace("kubernetes]", "nomad]"))
    os.utime(path, ns=(time.time_ns(), time.time_ns() + 10_000_000))
    assert pipe.process("the kubernetes cluster", "input") == []
    assert pipe.reloads == 3


def test_a_person_added_while_running_is_recognised(memory_repo: MemoryRepo) -> None:
    # a long-lived pipeline (the viewer's, `compile --batch`'s) reads the people's names
    # again when knowledge/people/ changes, as it reads the topics again
    write_topic(memory_repo, "people", "  - {type: mention}", extra="activation: auto\n")
    pipe = WatcherPipeline(memory_repo, reload_interval=0)
    assert pipe.evaluate("Silvana said so", dry_run=True) == []  # no candidate: nobody named
    (memory_repo.knowledge_dir / "people").mkdir(exist_ok=True)
    (memory_repo.knowledge_dir / "people" / "silvana.md").write_text("# Silvana\n")
    verdicts = pipe.evaluate("Silvana said so", dry_run=True)
    assert [(a.topic, a.hits[0].trigger_type) for a in verdicts] == [("people", "mention")]


def test_webhook_and_cron_triggers(memory_repo: MemoryRepo) -> None:
    write_topic(
        memory_repo,
        "email-triage",
        "  - {type: webhook, source: email, event: new_message}\n"
        "  - {type: cron, schedule: '0 8 * * *'}",
        description="triage email",
    )
    runner = CliRunner()
    root = str(memory_repo.root)
    out = runner.invoke(
        app, ["-C", root, "topics", "fire", "--webhook", "email/new_message", "--json"]
    )
    assert out.exit_code == 0, out.output
    assert [a["topic"] for a in json.loads(out.output)["activations"]] == ["email-triage"]
    assert [p.topic for p in peek_pending(memory_repo)] == ["email-triage"]
    none = runner.invoke(
        app, ["-C", root, "topics", "fire", "--webhook", "email/deleted", "--json"]
    )
    assert json.loads(none.output)["activations"] == []
    due = runner.invoke(
        app, ["-C", root, "topics", "due", "--at", "2026-02-16T08:00:00Z", "--json"]
    )
    assert [d["topic"] for d in json.loads(due.output)["due"]] == ["email-triage"]
    later = runner.invoke(
        app, ["-C", root, "topics", "due", "--at", "2026-02-16T08:01:30Z", "--json"]
    )
    assert json.loads(later.output)["due"] == []


# ── CLI ──
def test_topics_test_json_shape(memory_repo: MemoryRepo) -> None:
    out = CliRunner().invoke(
        app, ["-C", str(memory_repo.root), "topics", "test", PR_MESSAGE, "--json"]
    )
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    by = {a["topic"]: a for a in data["activations"]}
    assert set(by) >= {"github-pr-review", "code-quality"}
    for a in data["activations"]:
        assert {"topic", "activated", "tier", "scores"} <= set(a)
    assert by["github-pr-review"]["activated"]
    assert not by["code-quality"]["activated"]
    assert not (memory_repo.state_dir / "watch" / "gate-decisions.jsonl").exists()  # a dry run
    text = CliRunner().invoke(
        app, ["-C", str(memory_repo.root), "topics", "test", "print 'x'", "--output"]
    )
    assert "correction hint: Use Python 3 syntax" in text.output


def test_topics_check_exits_nonzero_on_errors(memory_repo: MemoryRepo) -> None:
    runner = CliRunner()
    assert runner.invoke(app, ["-C", str(memory_repo.root), "topics", "check"]).exit_code == 0
    write_topic(memory_repo, "bad", "  - {type: telepathy}")
    out = runner.invoke(app, ["-C", str(memory_repo.root), "topics", "check"])
    assert out.exit_code == 1
    assert "telepathy" in out.output


def test_watch_reads_jsonl_and_writes_activations(memory_repo: MemoryRepo) -> None:
    lines = "\n".join(
        [
            json.dumps({"text": PR_MESSAGE, "id": "m1"}),
            "plain text line",
            json.dumps({"content": "ok\n    print 'x'", "role": "agent"}),
            json.dumps({"text": 3}),
        ]
    )
    out = CliRunner().invoke(app, ["-C", str(memory_repo.root), "watch"], input=lines + "\n")
    assert out.exit_code == 0, out.output
    rows = [json.loads(l) for l in out.output.splitlines()]
    assert rows[0]["id"] == "m1"
    assert [a["topic"] for a in rows[0]["activations"]] == ["github-pr-review"]
    assert rows[1]["activations"] == []
    assert rows[2]["direction"] == "output"
    assert rows[2]["activations"][0]["correction_hints"]
    assert "error" in rows[3]


def test_a_new_trigger_type_is_one_registration_per_layer(monkeypatch: pytest.MonkeyPatch) -> None:
    from autopoiesis import plugins
    from autopoiesis.formats import topic_trigger as fmt
    from autopoiesis.topics import pattern

    manager = plugins.PluginManager()
    monkeypatch.setattr(
        plugins, "plugin_manager", lambda: manager
    )  # the registrations end with the test

    def parse_ticket(raw, at, errors):
        prefix = str(raw.get("prefix", ""))
        if prefix and not prefix.isalpha():
            errors.append(f"{at}.prefix: write letters only, like JIRA.")
        return {"prefix": prefix.upper()}

    fmt.register_trigger_type(
        fmt.TriggerType(
            "ticket",
            True,
            parse_ticket,
            lambda t: t.option("prefix"),
            "prefix: JIRA",
            required=("prefix",),
        )
    )
    pattern.register_evaluator(
        pattern.TriggerEvaluator("ticket", re2_source=lambda t: rf"\b{t.option('prefix')}-\d+\b")
    )
    topic = make_topic("tickets", "  - {type: ticket, prefix: ops}")
    assert topic.triggers[0].describe() == "ticket(OPS)"
    matcher = PatternMatcher([topic])
    assert matcher.match("please look at OPS-42 today") == {"tickets"}
    assert matcher.match("no ticket here") == set()
    _, errors, _ = parse_topic(
        "topics/x.md", "---\ntype: topic\ntriggers:\n  - {type: ticket, prefix: '1'}\n---\n"
    )
    assert any("prefix: write letters only" in e for e in errors)
    _, errors, _ = parse_topic(
        "topics/x.md", "---\ntype: topic\ntriggers:\n  - {type: ticket}\n---\n"
    )
    assert any("needs 'prefix'; write e.g. prefix: JIRA" in e for e in errors)


def _many_patterns(name: str, count: int) -> str:
    return "".join(
        f"  - {{type: pattern, match: '{name}{i}[a-z]{{1,30}}x{i}'}}\n" for i in range(count)
    )


def test_a_topic_whose_triggers_together_are_too_much_for_re2_is_refused() -> None:
    """Each of 10,000 patterns compiles alone; together they are more than an RE2 set
    compiles, and the set of every topic failed with it ('failed to compile Set')."""
    text = f"---\ntype: topic\ndescription: d\ntriggers:\n{_many_patterns('w', 10_000)}---\n# T\n"
    topic, errors, _ = parse_topic("topics/many.md", text)
    assert topic is None
    assert errors == [
        "topics/many.md: triggers: its 10000 pattern and keyword triggers together are more "
        "than the RE2 engine can compile; split the topic into smaller ones, or write fewer "
        "and shorter patterns (a bounded repeat such as [a-z]{0,100} counts once per step)."
    ]


def test_topics_too_many_for_one_re2_set_each_still_fire() -> None:
    """Topics that each compile but together are more than one RE2 set holds: each gets a
    set of its own, so none takes the others' triggers away."""
    topics = [make_topic(f"t{n}", _many_patterns(f"t{n}w", 300)) for n in range(10)]
    matcher = PatternMatcher(topics)  # type: ignore[arg-type]
    assert len(matcher._rules["input"].re2_sets) == 10
    assert matcher.match("say t3w5abcx5 and t9w299qx299 please") == {"t3", "t9"}


def test_a_pulled_topic_too_large_for_re2_leaves_the_prompt_hook_its_context(
    memory_repo: MemoryRepo, cli, git
) -> None:
    """A collaborator's topic of one pattern too large for an RE2 set (committed without
    the hooks) made every UserPromptSubmit hook fail: the agent got no memory at all."""
    huge = "(" + "|".join(f"[a-z]{{0,100}}{i}" for i in range(300)) + ")"
    write_topic(memory_repo, "huge", f"  - {{type: pattern, match: '{huge}'}}")
    git(memory_repo.root, "add", "-A")
    git(memory_repo.root, "commit", "-qm", "a collaborator's topic", "--no-verify")
    payload = {
        "session_id": "ses_hook",
        "prompt": PR_MESSAGE,
        "hook_event_name": "UserPromptSubmit",
    }
    done = cli(
        "hook", "claude-code", "UserPromptSubmit", repo=memory_repo, input=json.dumps(payload)
    )
    assert done.returncode == 0, done.stderr
    context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "<!-- topic:github-pr-review -->" in context
    listed = cli("topics", "check", repo=memory_repo)
    assert (
        "topics/huge.md: triggers: its pattern is more than the RE2 engine"
        in listed.stdout + listed.stderr
    )
