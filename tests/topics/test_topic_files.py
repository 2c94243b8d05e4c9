"""Topic files: parsing, validation messages, loading, and the pre-commit hook's use of
`validate_topic_source`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autopoiesis.core.paths import MemoryRepo
from autopoiesis.errors import TopicError
from autopoiesis.formats.topic import (
    DEFAULT_SIMILARITY_THRESHOLD,
    parse_topic,
    validate_topic_source,
)
from autopoiesis.formats.topic_trigger import TRIGGER_TYPES
from autopoiesis.topics.loader import load_topic, load_topics, people_names

TEMPLATE_TOPICS = Path(__file__).resolve().parents[2] / "topics"


def topic_text(front: str, body: str = "# T\n\nDo the thing.\n") -> str:
    return f"---\n{front.strip()}\n---\n\n{body}"


def test_template_topics_are_valid_and_loaded(memory_repo: MemoryRepo) -> None:
    ts = load_topics(memory_repo, strict=True)
    names = {t.name for t in ts.topics}
    assert {"github-pr-review", "code-quality"} <= names
    pr = ts.get("github-pr-review")
    assert pr is not None
    assert pr.activation == "gated"
    assert pr.priority == "high"
    assert [t.type for t in pr.triggers] == ["pattern", "url", "keyword"]
    assert pr.subscriptions == ("knowledge/projects/_active.md",)
    cq = ts.get("code-quality")
    assert cq is not None
    assert cq.triggers[0].scope == "output"
    assert cq.triggers[0].correction_hint
    for path in TEMPLATE_TOPICS.glob("*.md"):
        errors, _ = validate_topic_source(f"topics/{path.name}", path.read_text(encoding="utf-8"))
        assert errors == []


def test_every_trigger_type_is_accepted_with_its_fields(memory_repo: MemoryRepo) -> None:
    text = topic_text("""
type: topic
description: all trigger types
triggers:
  - {type: pattern, match: "deploy(ed)?", scope: both}
  - {type: glob, match: ["*.py", "src/**/*.ts"]}
  - {type: keyword, words: [deploy, production, rollback]}
  - {type: code, languages: [python]}
  - {type: language, languages: [de]}
  - {type: mention, names: ["@silas", David]}
  - {type: url, match: github_issue}
  - {type: sentiment, min_score: 2}
  - {type: webhook, source: email, event: new_message}
  - {type: cron, schedule: "0 8 * * *"}
  - {type: pattern, match: "print ", scope: output, correction_hint: "Use print()"}
activation: auto
priority: critical
max_context_kb: 2
similarity_threshold: 0.3
""")
    topic, errors, warnings = parse_topic("topics/all.md", text, root=memory_repo.root)
    assert errors == []
    assert topic is not None
    assert [t.type for t in topic.triggers][:10] == list(TRIGGER_TYPES)
    assert topic.triggers[5].names == ("silas", "david")
    assert topic.similarity_threshold == 0.3
    assert topic.max_context_kb == 2.0
    assert topic.triggers[-1].correction_hint == "Use print()"


@pytest.mark.parametrize(
    "front, expected",
    [
        (
            "type: topic\ntriggers:\n  - type: regexp\n    match: x",
            ["triggers[0].type", "'regexp' is not a trigger type", "write one of: pattern, glob"],
        ),
        (
            "type: topic\ntriggers:\n  - type: pattern\n    match: '(unclosed'",
            ["triggers[0].match", "not a valid regex"],
        ),
        (
            "type: topic\ntriggers:\n  - type: pattern\n    match: '(a)\\1'",
            ["triggers[0].match", "RE2", "backreferences"],
        ),
        (
            "type: topic\ntriggers:\n  - type: pattern\n    match: '(?<=x)y'",
            ["triggers[0].match", "lookaround"],
        ),
        ("type: topic\ntriggers:\n  - type: keyword", ["needs 'words'", "words: [deploy"]),
        (
            "type: topic\ntriggers:\n  - type: pattern\n    match: x\n    scope: sideways",
            ["triggers[0].scope", "write input, output or both"],
        ),
        (
            "type: topic\ntriggers:\n  - type: cron\n    schedule: 'every day'",
            ["schedule", "cron expression"],
        ),
        ("type: topic\ntriggers:\n  - type: language\n    languages: [german]", ["ISO 639-1"]),
        (
            "type: topic\ntriggers:\n  - type: keyword\n    words: [a]\n    match: b",
            ["triggers[0].match", "has no field 'match'"],
        ),
        ("type: topic\nactivation: sometimes", ["activation: 'sometimes'", "auto, gated, manual"]),
        ("type: topic\npriority: urgent", ["priority: 'urgent'", "low, medium, high, critical"]),
        ("type: topic\nsimilarity_threshold: 2", ["similarity_threshold", "between 0 and 1"]),
        ("type: topic\nmax_context_kb: -1", ["max_context_kb"]),
        (
            "type: topic\nsubscriptions: [../outside.md]",
            ["subscriptions[0]", "outside the memory repo"],
        ),
        ("type: topic\nsubscriptions: [/etc/passwd]", ["subscriptions[0]", "absolute path"]),
        ("type: topic\nsubscriptions: [knowledge/nope.md]", ["subscriptions[0]", "does not exist"]),
        ("type: topic\ntriggers: {type: pattern}", ["triggers must be a list"]),
        ("type: topic\ncolour: blue", ["unknown field 'colour'"]),
        ("type: person", ["must say `type: topic`"]),
    ],
)
def test_errors_name_the_file_the_field_and_the_fix(
    memory_repo: MemoryRepo, front: str, expected: list[str]
) -> None:
    topic, errors, _ = parse_topic("topics/bad.md", topic_text(front), root=memory_repo.root)
    assert topic is None
    joined = "\n".join(errors)
    assert all(e.startswith("topics/bad.md:") for e in errors)
    for part in expected:
        assert part in joined, (part, joined)


def test_a_regex_python_warns_about_is_refused_without_python_s_warning(
    memory_repo: MemoryRepo,
) -> None:
    """`(unclosed[[`: Python's FutureWarning ("Possible nested set at position 10") came
    out beside the refusal, naming no file, on `topics check` and on the prompt hook's
    stderr. The refusal alone says it, naming the file and the field."""
    import warnings

    front = "type: topic\ntriggers:\n  - type: pattern\n    match: '(unclosed[['"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        topic, errors, _ = parse_topic("topics/bad.md", topic_text(front), root=memory_repo.root)
    assert topic is None and "triggers[0].match" in errors[0] and "not a valid regex" in errors[0]
    assert [str(w.message) for w in caught] == []


@pytest.mark.parametrize(
    "text, expected",
    [
        ("---\n- a\n- b\n---\nbody", "must be a YAML mapping"),
        ("---\n[unclosed\n---\nbody", "not valid YAML"),
        ("no frontmatter at all", "has no frontmatter"),
        ("---\ntype: topic\nbody without end", "not closed"),
    ],
)
def test_malformed_files_are_refused(text: str, expected: str) -> None:
    errors, _ = validate_topic_source("topics/x.md", text)
    assert errors
    assert expected in errors[0]


def test_catastrophic_pattern_is_accepted_because_re2_runs_it_in_linear_time() -> None:
    errors, _ = validate_topic_source(
        "topics/x.md",
        topic_text(
            "type: topic\ndescription: d\ntriggers:\n  - type: pattern\n    match: '(a+)+$'"
        ),
    )
    assert errors == []


def test_defaults_and_config_threshold(memory_repo: MemoryRepo) -> None:
    (memory_repo.topics_dir / "plain.md").write_text(
        topic_text("type: topic\ndescription: plain\ntriggers:\n  - {type: keyword, words: [x]}")
    )
    t = load_topic(memory_repo, "topics/plain.md")
    assert (t.activation, t.priority, t.similarity_threshold) == (
        "gated",
        "medium",
        DEFAULT_SIMILARITY_THRESHOLD,
    )
    cfg = memory_repo.root / "memory-config.yaml"
    cfg.write_text(
        cfg.read_text().replace("similarity_threshold: 0.15", "similarity_threshold: 0.4")
    )
    fresh = MemoryRepo(memory_repo.root)
    assert load_topic(fresh, "topics/plain.md").similarity_threshold == 0.4


def test_invalid_files_are_reported_without_hiding_valid_ones(memory_repo: MemoryRepo) -> None:
    (memory_repo.topics_dir / "broken.md").write_text(
        topic_text("type: topic\ntriggers:\n  - type: nope")
    )
    ts = load_topics(memory_repo)
    assert {t.name for t in ts.topics} >= {"github-pr-review", "code-quality"}
    assert any("topics/broken.md" in e and "nope" in e for e in ts.errors)
    with pytest.raises(TopicError, match="broken.md"):
        load_topics(memory_repo, strict=True)
    with pytest.raises(TopicError, match="nope"):
        load_topic(memory_repo, "topics/broken.md")


def test_duplicate_names_are_refused(memory_repo: MemoryRepo) -> None:
    (memory_repo.topics_dir / "other.md").write_text(
        topic_text("type: topic\nname: code-quality\ndescription: d")
    )
    ts = load_topics(memory_repo)
    assert any("already used" in e for e in ts.errors)


def test_a_file_taking_a_topics_name_never_displaces_the_file_named_after_it(
    memory_repo: MemoryRepo, git
) -> None:
    """A file added with `name: code-quality` sorted before topics/code-quality.md and took
    its name: the loader kept the impostor, left out the topic the name is the file of,
    and the error blamed that one; the pre-commit hook let the impostor in."""
    impostor = memory_repo.topics_dir / "a-quality.md"
    impostor.write_text(topic_text("type: topic\nname: code-quality\ndescription: impostor"))
    ts = load_topics(memory_repo)
    assert ts.get("code-quality") is not None
    assert ts.get("code-quality").path == "topics/code-quality.md"  # type: ignore[union-attr]
    assert [e for e in ts.errors if "already used" in e] == [
        "topics/a-quality.md: name 'code-quality' is already used by topics/code-quality.md; "
        "give it another name."
    ]
    git(memory_repo.root, "add", "topics/a-quality.md")
    proc = git(memory_repo.root, "commit", "-m", "impostor", check=False)
    assert proc.returncode != 0
    assert "topics/a-quality.md: name 'code-quality' is already used by topics/code-quality.md" in (
        proc.stderr
    )
    impostor.write_text(topic_text("type: topic\nname: quality-two\ndescription: its own"))
    git(memory_repo.root, "add", "topics/a-quality.md")
    git(memory_repo.root, "commit", "-m", "its own name")
    # a rename of the topic named after it, and an edit of it, go ahead
    git(memory_repo.root, "mv", "topics/code-quality.md", "topics/quality.md")
    git(memory_repo.root, "commit", "-m", "renamed")


def test_people_names_come_from_knowledge_people(memory_repo: MemoryRepo) -> None:
    people = memory_repo.knowledge_dir / "people"
    (people / "david-feldhofer.md").write_text(
        "---\ntype: person\nname: David Feldhofer\n---\n# David\n"
    )
    (people / "caroline.md").write_text("# Caroline\n")
    assert people_names(memory_repo) == ("caroline", "david", "david feldhofer")


def test_pre_commit_hook_rejects_an_invalid_topic(memory_repo: MemoryRepo, git) -> None:
    root = memory_repo.root
    (root / "topics" / "bad.md").write_text(
        topic_text("type: topic\ntriggers:\n  - type: pattern\n    match: '(a)\\1'")
    )
    git(root, "add", "topics/bad.md")
    proc = git(root, "commit", "-m", "bad topic", check=False)
    assert proc.returncode != 0
    assert "topics/bad.md" in proc.stderr + proc.stdout
    assert "RE2" in proc.stderr + proc.stdout
    (root / "topics" / "bad.md").write_text(
        topic_text("type: topic\ndescription: ok\ntriggers:\n  - type: pattern\n    match: 'a|b'")
    )
    git(root, "add", "topics/bad.md")
    ok = git(root, "commit", "-m", "good topic", check=False)
    assert ok.returncode == 0, ok.stderr


def test_validator_module_stays_light() -> None:
    code = (
        "import sys, autopoiesis.formats.topic as t; "
        "t.validate_topic_source('topics/x.md', '---\\ntype: topic\\n---\\n'); "
        "print(sorted(m for m in ('sklearn', 'numpy', 'openai', 'scipy') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=300))
def test_validation_never_crashes(text: str) -> None:
    errors, warnings = validate_topic_source("topics/fuzz.md", "---\n" + text + "\n---\nbody")
    assert isinstance(errors, list)
    assert isinstance(warnings, list)


# ── the cache of each topic file's frontmatter ──
def _topic_fields_in_a_fresh_process(root: Path) -> tuple[list[str], bool]:
    """(the names of the topics a new process loads, whether it imported PyYAML)."""
    code = (
        "import sys, json\n"
        "from autopoiesis.core.paths import MemoryRepo\n"
        "from autopoiesis.topics.loader import load_topics\n"
        f"ts = load_topics(MemoryRepo({str(root)!r}))\n"
        "print(json.dumps([[t.name for t in ts.topics], 'yaml' in sys.modules]))\n"
    )
    import json

    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    names, yaml_loaded = json.loads(out.stdout)
    return names, yaml_loaded


def test_topics_are_read_from_the_cache_without_yaml_and_an_edit_is_seen(
    memory_repo: MemoryRepo,
) -> None:
    first, yaml_first = _topic_fields_in_a_fresh_process(memory_repo.root)
    assert yaml_first and first  # nothing cached yet: every file parsed
    cache = memory_repo.state_file("topics_cache", create=False)
    assert cache.is_file()
    again, yaml_again = _topic_fields_in_a_fresh_process(memory_repo.root)
    assert again == first and not yaml_again
    # an edit changes the file's hash: that file is parsed again, the edit is what loads
    path = memory_repo.topics_dir / "github-pr-review.md"
    path.write_text(path.read_text(encoding="utf-8").replace("priority: high", "priority: low"))
    by_name = load_topics(memory_repo).by_name()
    assert by_name["github-pr-review"].priority == "low"
    # a removed topic is gone, from the result and from the cache
    path.unlink()
    assert "github-pr-review" not in load_topics(memory_repo).by_name()
    assert "github-pr-review" not in cache.read_text(encoding="utf-8")


def test_a_broken_cache_is_ignored_and_a_cached_mapping_is_still_validated(
    memory_repo: MemoryRepo,
) -> None:
    import json

    expected = load_topics(memory_repo)
    cache = memory_repo.state_file("topics_cache", create=False)
    cache.write_text("{not json", encoding="utf-8")
    assert load_topics(memory_repo).by_name().keys() == expected.by_name().keys()
    # a cache entry whose fields are invalid for a topic is refused like the file would be
    data = json.loads(cache.read_text(encoding="utf-8"))
    entry = data["files"]["topics/github-pr-review.md"]
    entry["fields"]["priority"] = "urgent-ish"
    cache.write_text(json.dumps(data), encoding="utf-8")
    got = load_topics(memory_repo)
    assert "github-pr-review" not in got.by_name()
    assert any("priority" in e for e in got.errors)


def test_a_value_json_cannot_hold_is_parsed_each_time(memory_repo: MemoryRepo) -> None:
    # YAML's .nan is a float JSON writes, but reads back as a value unequal to itself
    (memory_repo.topics_dir / "odd.md").write_text(
        topic_text("type: topic\ntriggers:\n  - {type: keyword, words: [zebra]}\ntags: [.nan]\n")
    )
    got = load_topics(memory_repo).by_name()
    assert "odd" in got and got["odd"].tags == ("nan",)
    cache = memory_repo.state_file("topics_cache", create=False).read_text(encoding="utf-8")
    assert "topics/odd.md" not in cache and "topics/github-pr-review.md" in cache
    assert load_topics(memory_repo).by_name()["odd"].tags == ("nan",)


CANARY_TOPIC = topic_text(
    "type: topic\ndescription: deploy\nactivation: auto\npriority: critical\n"
    "similarity_threshold: 0\ntriggers:\n  - type: pattern\n    match: '.'",
    "# Deploy\n\nOUTSIDE_FILE_CANARY_77\n",
)


def test_nothing_is_read_through_a_link(memory_repo: MemoryRepo, cli, tmp_path: Path) -> None:
    """A collaborator's pushed `topics/deploy.md -> ../other-memory/deploy.md` was loaded
    (is_file follows the link) and compiled into every prompt: a file outside the repo.
    A linked topic file or folder, and a linked person, are not read; `topics list` names
    the links."""
    outside = tmp_path / "other-memory"
    (outside / "team").mkdir(parents=True)
    (outside / "deploy.md").write_text(CANARY_TOPIC)
    (outside / "team" / "ops.md").write_text(CANARY_TOPIC.replace("deploy", "ops"))
    (outside / "person.md").write_text("---\ntype: person\nname: Mallory Outside\n---\n")
    (memory_repo.topics_dir / "deploy.md").symlink_to(outside / "deploy.md")
    (memory_repo.topics_dir / "team").symlink_to(outside / "team", target_is_directory=True)
    (memory_repo.knowledge_dir / "people" / "mallory.md").symlink_to(outside / "person.md")
    ts = load_topics(memory_repo)
    assert {t.name for t in ts.topics} >= {"github-pr-review", "code-quality"}
    assert not {"deploy", "ops"} & {t.name for t in ts.topics}
    assert [e.split(":")[0] for e in ts.errors] == ["topics/deploy.md", "topics/team"]
    assert "mallory" not in people_names(memory_repo)
    with pytest.raises(TopicError, match="symbolic link"):
        load_topic(memory_repo, "topics/deploy.md")
    compiled = cli("compile", "hello", "--dry-run", repo=memory_repo)
    assert compiled.returncode == 0 and "OUTSIDE_FILE_CANARY_77" not in compiled.stdout
    listed = cli("topics", "list", repo=memory_repo)
    assert "skipped: topics/deploy.md: a symbolic link" in listed.stderr


def test_a_topic_past_the_size_cap_is_not_read(memory_repo: MemoryRepo, git) -> None:
    """A pulled 45 MB topic that fired on every message made each compile take seconds
    and hundreds of MB. A topic file larger than MAX_TOPIC_BYTES (the most instructions a
    topic may inject) is skipped when loaded, naming it, and refused at commit."""
    cap = 2**20  # MAX_TOPIC_BYTES: 1024 KB, the largest max_context_kb
    huge = memory_repo.topics_dir / "huge.md"
    huge.write_text(CANARY_TOPIC.replace("deploy", "huge") + "- a playbook line\n" * (cap // 17))
    ts = load_topics(memory_repo)
    assert "huge" not in {t.name for t in ts.topics}
    assert [e for e in ts.errors if e.startswith("topics/huge.md: 1.1 MB, larger than a topic")]
    assert "github-pr-review" in {t.name for t in ts.topics}
    git(memory_repo, "add", "topics/huge.md")
    refused = git(memory_repo, "commit", "-m", "huge topic", check=False)
    assert (
        refused.returncode != 0 and "topics/huge.md: 1.1 MB, larger than a topic" in refused.stderr
    )


def test_doctor_names_a_topic_that_is_not_loaded_and_what_to_fix(
    memory_repo: MemoryRepo, cli
) -> None:
    """`compile` and the prompt hooks leave a broken topic out without a word, and `doctor`
    ("check everything") did not look at topics/: a topic pulled with a regex RE2 refuses
    stopped firing and `doctor` said all was well."""
    assert "topics      2 topics, each valid" in cli("doctor", repo=memory_repo).stdout
    (memory_repo.topics_dir / "deploy.md").write_text(
        topic_text("type: topic\ndescription: d\ntriggers:\n  - type: pattern\n    match: '(a)\\1'")
    )
    doctor = cli("doctor", "--check", "topics", repo=memory_repo)
    assert doctor.returncode == 1
    assert "topics/deploy.md: triggers[0].match: '(a)\\\\1' uses a feature" in doctor.stdout
    assert "autopoiesis topics check" in doctor.stdout
    assert cli("compile", "deploy", repo=memory_repo).returncode == 0  # the others still work
