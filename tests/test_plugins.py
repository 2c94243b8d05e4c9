"""The one plugin door (autopoiesis.plugins): an outside plugin, registered in code or
installed with an entry point, contributes an importer, an extractor and a trigger type
that then work end to end; the built-ins come through the same door; and the light path
reads no entry point unless it must."""

from __future__ import annotations

import importlib
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from autopoiesis import plugins
from autopoiesis.core.paths import MemoryRepo

PLUGIN_SOURCE = textwrap.dedent('''
    """An outside package's plugin: one importer, one extractor, one trigger type."""
    import re
    from datetime import datetime, timezone

    from autopoiesis.capture.importers import SessionDraft
    from autopoiesis.formats import transcript as tf
    from autopoiesis.formats.topic_trigger import TriggerType
    from autopoiesis.knowledge.extractors import Extractor
    from autopoiesis.knowledge.changes import KnowledgeChange
    from autopoiesis.plugins import hookimpl


    class LinesImporter:
        """'who: text' lines, one session per file."""

        name = "demo-lines"
        description = "who: text lines"

        def detect(self, path, text):
            return 1.0 if path.suffix == ".lines" else 0.0

        def read(self, path, text, report):
            draft = SessionDraft(session_id=path.stem, channel="lines")
            when = datetime(2026, 3, 1, 9, 0, tzinfo=timezone.utc)
            for line in text.splitlines():
                who, _, said = line.partition(": ")
                draft.add_turn(when, "user" if who == "me" else "agent", [tf.Text(said)])
            return [draft]


    def tickets(src, key):
        found = dict.fromkeys(m for s in src.sentences for m in re.findall(r"\\bTICKET-\\d+\\b", s.text))
        return [KnowledgeChange("knowledge/reference/tickets.md", "append", "Tickets",
                                f"{t} was discussed in {src.session_id}", src.provenance(None, key))
                for t in found]


    TICKETS = Extractor("demo-tickets", 1, "ticket ids -> reference/tickets.md",
                        ("knowledge/reference/tickets.md",), frozenset({"append"}), tickets)


    def parse_ticket(raw, at, errors):
        prefix = str(raw.get("prefix", ""))
        if prefix and not prefix.isalpha():
            errors.append(f"{at}.prefix: write letters only, like JIRA.")
        return {"prefix": prefix.upper()}


    TICKET = TriggerType("ticket", True, parse_ticket, lambda t: t.option("prefix"), "prefix: JIRA",
                         required=("prefix",), re2_source=lambda t: rf"\\b{t.option('prefix')}-\\d+\\b")


    @hookimpl
    def register_importers(register):
        register(LinesImporter())


    @hookimpl
    def register_extractors(register):
        register(TICKETS)


    @hookimpl
    def register_trigger_types(register):
        register(TICKET)
''')


@pytest.fixture
def manager(monkeypatch: pytest.MonkeyPatch) -> plugins.PluginManager:
    """A fresh process manager for the test: its registrations end with it."""
    fresh = plugins.PluginManager()
    monkeypatch.setattr(plugins, "plugin_manager", lambda: fresh)
    return fresh


def _write_plugin(
    site: Path, monkeypatch: pytest.MonkeyPatch, entry_points: str | None = None
) -> None:
    site.mkdir()
    (site / "ap_demo_plugin.py").write_text(PLUGIN_SOURCE)
    if entry_points is not None:  # a distribution as pip would leave it
        info = site / "ap_demo_plugin-0.1.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(
            "Metadata-Version: 2.1\nName: ap-demo-plugin\nVersion: 0.1\n"
        )
        (info / "entry_points.txt").write_text(entry_points)
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.delitem(sys.modules, "ap_demo_plugin", raising=False)


def _works_end_to_end(repo: MemoryRepo, tmp_path: Path) -> None:
    from autopoiesis.capture.importers import format_names, import_files
    from autopoiesis.formats.topic import parse_topic
    from autopoiesis.knowledge.extract import KnowledgeExtractor
    from autopoiesis.knowledge.extractors import default_registry
    from autopoiesis.topics.pattern import PatternMatcher

    # the importer: detected by `--format auto`, filed like any other format
    assert format_names()[-1] == "demo-lines"
    log = tmp_path / "chat-1.lines"
    log.write_text("me: the login bug is TICKET-481, keep it in mind\nbot: noted, TICKET-481\n")
    report = import_files(repo, [log])
    assert report.refused == []
    assert report.imported[0].startswith("raw/conversations/2026/03/01/0900-chat-1-")

    # the extractor: in the default registry after the built-ins, and run by the library
    registry = default_registry()
    assert registry.names()[:2] == ["decisions", "lessons"]
    assert registry.names()[-1] == "demo-tickets"
    with KnowledgeExtractor(repo) as ex:
        done = ex.extract_pending(["demo-tickets"])
        ex.commit(done)
    assert [k for _, k, _ in done.processed] == ["demo-tickets@1"]
    assert "TICKET-481 was discussed" in (repo.root / "knowledge/reference/tickets.md").read_text()

    # the trigger type: parsed and validated by the format, evaluated by tier 1
    text = "---\ntype: topic\ndescription: tickets\ntriggers:\n  - {type: ticket, prefix: ticket}\n---\n# T\n"
    topic, errors, _ = parse_topic("topics/tickets.md", text)
    assert topic is not None, errors
    assert topic.triggers[0].describe() == "ticket(TICKET)"
    assert PatternMatcher([topic]).match("what about TICKET-42?") == {"tickets"}
    _, errors, _ = parse_topic("topics/x.md", text.replace("prefix: ticket", "prefix: '1'"))
    assert any("prefix: write letters only" in e for e in errors)
    _, errors, _ = parse_topic("topics/x.md", text.replace(", prefix: ticket", ""))
    assert any("needs 'prefix'; write e.g. prefix: JIRA" in e for e in errors)


def test_a_plugin_registered_in_code_contributes_all_three(
    memory_repo: MemoryRepo,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    manager: plugins.PluginManager,
) -> None:
    _write_plugin(tmp_path / "site", monkeypatch)
    manager.register(importlib.import_module("ap_demo_plugin"))
    _works_end_to_end(memory_repo, tmp_path)


def test_an_installed_plugin_contributes_all_three(
    memory_repo: MemoryRepo,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    manager: plugins.PluginManager,
) -> None:
    _write_plugin(
        tmp_path / "site",
        monkeypatch,
        "[autopoiesis]\ndemo = ap_demo_plugin\nbroken = ap_no_such_plugin_module\n",
    )
    _works_end_to_end(memory_repo, tmp_path)
    assert manager.has_plugin("demo")
    # a broken plugin is reported, and stops nothing
    assert any("'broken'" in e and "did not load" in e for e in manager.load_errors)
    from autopoiesis.knowledge.extractors import default_registry

    assert any("'broken'" in e for e in default_registry().load_errors)


def test_the_builtins_come_through_the_same_door(manager: plugins.PluginManager) -> None:
    from autopoiesis.formats.topic_trigger import TRIGGER_TYPES
    from autopoiesis.topics.triggers import BUILTIN_TRIGGER_TYPES

    assert tuple(plugins.trigger_types(installed=False)) == TRIGGER_TYPES
    assert [t.name for t in BUILTIN_TRIGGER_TYPES] == list(TRIGGER_TYPES)
    assert list(plugins.importers())[:4] == ["neutral", "capture", "openai", "claude-code"]
    assert [e.name for e in plugins.extractors()][:2] == ["decisions", "lessons"]
    assert list(plugins.embedders())[:2] == ["offline", "openai"]
    assert "openai" in plugins.llm_providers()
    assert "autopoiesis.integrations.importers" in {name for name, _ in manager.list_name_plugin()}


def test_a_registration_in_code_is_a_plugin_and_a_later_one_replaces_it(
    manager: plugins.PluginManager,
) -> None:
    from autopoiesis.index.embedders import embedder_names, register_embedder
    from autopoiesis.llm.providers import register_offline_handler, unregister_offline_handler

    register_embedder("tiny", lambda config: None)
    register_embedder("tiny", lambda config: "second")
    assert embedder_names().count("tiny") == 1
    assert plugins.embedders()["tiny"](None) == "second"
    register_offline_handler("stage-x", lambda prompt, system: "one")
    assert plugins.offline_handlers()["stage-x"]("", None) == "one"
    unregister_offline_handler("stage-x")
    assert "stage-x" not in plugins.offline_handlers()


def test_the_light_path_reads_no_entry_point_unless_a_type_is_unknown() -> None:
    """Parsing a topic of built-in trigger types (what the pre-commit hook does on every
    commit) leaves importlib.metadata unimported; a type no built-in knows looks further."""
    probe = textwrap.dedent("""
        import sys
        from autopoiesis.formats.topic import parse_topic
        text = "---\\ntype: topic\\ndescription: d\\ntriggers:\\n  - {type: %s, words: [deploy]}\\n---\\n"
        topic, errors, _ = parse_topic("topics/t.md", text)
        print(topic is not None, "importlib.metadata" in sys.modules, errors[:1])
    """)
    known = subprocess.run(
        [sys.executable, "-c", probe % "keyword"], capture_output=True, text=True, check=True
    )
    assert known.stdout.split()[:2] == ["True", "False"], known.stdout
    unknown = subprocess.run(
        [sys.executable, "-c", probe % "nosuch"], capture_output=True, text=True, check=True
    )
    assert unknown.stdout.split()[:2] == ["False", "True"], unknown.stdout
    assert "write one of: pattern, glob, keyword" in unknown.stdout


def test_a_plugin_that_fails_is_reported_and_stops_nothing(manager: plugins.PluginManager) -> None:
    class Broken:
        @plugins.hookimpl
        def register_trigger_types(self, register):
            raise RuntimeError("boom")

    manager.register(Broken(), name="broken-types")
    assert "pattern" in plugins.trigger_types()
    assert any("'broken-types'" in e and "boom" in e for e in plugins.load_errors())
