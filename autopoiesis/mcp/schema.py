"""What `get_schema` tells an agent: where things go in the memory repo and how its files
are written. Built from the owners of each fact (the layout constants, the knowledge
writer's file templates, the topic trigger registry, the config), so it cannot drift
from what the code does."""

from __future__ import annotations

from typing import Any

from autopoiesis.core.paths import CATEGORIES, IDENTITY_FILES, MEMORY_FILE
from autopoiesis.memory import Memory


def memory_schema(memory: Memory) -> dict[str, Any]:
    from autopoiesis.formats.topic_trigger import TRIGGER_REGISTRY
    from autopoiesis.knowledge.changes import template_for

    def sections(example: str) -> list[str]:
        return [s.title for s in template_for(example).sections if s.level == 2]

    cap = memory.config.lifecycle.memory_line_cap
    files = {
        MEMORY_FILE: (
            "core memory: decisions, lessons and what is going on now; "
            f"at most {cap} lines, so distil",
            sections(MEMORY_FILE),
        ),
        "knowledge/journal/YYYY-MM-DD.md": (
            "what happened that day",
            sections("knowledge/journal/2026-01-01.md"),
        ),
        "knowledge/projects/SLUG/context.md": (
            "a project's state and decisions (knowledge/projects/_active.md lists the active ones)",
            sections("knowledge/projects/slug/context.md"),
        ),
        "knowledge/people/NAME.md": (
            "one file a person (knowledge/people/_index.md lists them)",
            sections("knowledge/people/name.md"),
        ),
        "knowledge/procedures/NAME.md": (
            "how to do something, step by step",
            sections("knowledge/procedures/name.md"),
        ),
        "knowledge/reference/NAME.md": (
            "facts and research on one subject",
            sections("knowledge/reference/name.md"),
        ),
    }
    return {
        "repo": str(memory.root),
        "layout": {
            "raw/conversations/YYYY/MM/DD/HHMM-SESSION-SLUG.md": "one transcript a session, "
            "immutable (read, never written)",
            f"knowledge/identity/{{{','.join(IDENTITY_FILES)}}}": "who the agent is and whom it "
            "works with; edited by people only",
            **{path: what for path, (what, _) in files.items()},
            "topics/NAME.md": "reactive playbooks: YAML frontmatter (description, triggers, "
            "activation, priority, "
            "subscriptions) and Markdown instructions, switched on when a message calls for them",
            "archive/": "cold storage: searchable, never loaded into context by itself",
            "memory-config.yaml": "the settings (readable)",
        },
        "sections": {path: secs for path, (_, secs) in files.items()},
        "entry_format": (
            "- YYYY-MM-DD: FACT (source: SOURCE @ YYYY-MM-DDTHH:MMZ) {id: YYYYMMDD-HHMM-xxxxxx} "
            "#tag; "
            "a superseded entry is struck through (~~...~~) and tagged #superseded-by:NEWID; "
            "entries are "
            "never deleted"
        ),
        "transcript_format": (
            "YAML frontmatter (session_id, started, ended, model, channel, topic, tags, tokens_in, "
            "tokens_out, status, redactions), a title, then turns '## HH:MM — user|agent|system' "
            "with "
            "text and items '> [tool:NAME] args → result', '> [knowledge:ACTION] path — summary', "
            "'> [attachment:PATH]'; times in UTC"
        ),
        "topic_trigger_types": {name: spec.example for name, spec in TRIGGER_REGISTRY.items()},
        "categories": list(CATEGORIES),
        "writing": (
            "remember(path, content, section?, source?, tags?) appends one fact as an entry under "
            "knowledge/ "
            "(never identity/, raw/ or outside the repo), cited to SOURCE (a transcript path "
            "under raw/ or a "
            "session id), skipped when the file already says it, secrets redacted, and commits it. "
            "supersede(path, target, content) strikes the entry TARGET (its id, or a phrase only "
            "it contains) "
            "and appends the new fact in its place. One fact an entry, one line; choose the file "
            "by the "
            "layout above."
        ),
        "reading": (
            "search(query) for what the memory holds (hybrid BM25 + vector), read(path, "
            "start_line, end_line) "
            "for a file, links(path) for a note's [[links]] and backlinks, "
            "compile_context(message) for the prompt context the memory would give, "
            "recall(text) "
            "for the commits that added or removed TEXT, history(path) for a file's commits (and "
            "blame), "
            "topics(message?) to list the topics or see which a message activates."
        ),
    }
