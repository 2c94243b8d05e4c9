"""What the context hooks of every harness share (Claude Code's and Codex's read the same
answer): the project of the session's folder, the compiled context within the hook's
budget and the harness's inline limit, and the JSON that carries it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from autopoiesis.core.paths import MemoryRepo

# Claude Code keeps a hook's additionalContext inline up to 10,000 characters; past that
# the model sees a 2,000-character preview and a file path instead.
INLINE_CHARS = 10_000
_SECTION_BREAK = "\n\n<!-- "
# The share of a session start's budget that the session-level memory (identity,
# MEMORY.md, the active projects, the project's file) may take; a message's compile gives
# it `context_compiler.session_share` (a quarter) so that it never crowds out the evidence
# for the message, but a session starts with no message. With half, the context a Claude
# Code session starts with held the answer to 41 of the coding development set's 123
# questions, with a quarter 35 (bench/bench_coding.py; 0.4 and 0.75: 43). Since the
# project's last day in the journal comes too (compiler/compile.LAST_DAY_SCAN): 45.
START_SHARE = 0.5


def project_of(repo: MemoryRepo, cwd: str | None) -> str | None:
    """The project of the folder the session works in (its git repository, a worktree's
    or subfolder's main one, not the memory repo): its knowledge first, other projects'
    only when nothing better fits. Read from the files under .git, no git run: this is
    every prompt's path."""
    from autopoiesis.memory import Memory

    return Memory(repo).project_here(cwd)


def about(project: str | None, cwd: str | None) -> str:
    """What SessionStart asks the memory about: the project's name, or, outside any git
    repository, the folder's (a hint for the search, not a project to prefer). The name
    alone: "the minsky project" ranked every entry that says "project" first."""
    return project or (Path(cwd).name if cwd else "")


def context_output(event: str, text: str | None) -> str | None:
    """What a context hook prints: TEXT as EVENT's additionalContext (the JSON Claude Code
    and Codex read alike); None for no context."""
    if not text:
        return None
    return json.dumps(
        {"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}},
        ensure_ascii=False,
    )


def compile_context(
    repo: MemoryRepo,
    message: str,
    *,
    budget: int,
    session_context: bool,
    preamble: str,
    project: str | None = None,
) -> tuple[str | None, dict[str, Any]]:
    """The compiled context for MESSAGE within BUDGET, or None when it holds nothing but
    the preamble (no topic, no knowledge: nothing worth the model's attention). PROJECT:
    the current project, whose items come first. SESSION_CONTEXT: a session's start, with
    the session-level memory in up to START_SHARE of BUDGET."""
    from autopoiesis.compiler import ContextCompiler
    from autopoiesis.memory import Memory

    config = repo.config.context_compiler
    if session_context:  # a session's start: no message yet (see START_SHARE)
        config = config._replace(session_share=max(config.session_share, START_SHARE))
    with ContextCompiler(repo, config, system_prompt=preamble) as compiler:
        result, activations = Memory(repo).compile(
            message,
            budget=budget,
            compiler=compiler,
            session_context=session_context,
            project=project,
        )
    included = [s for s in result.sections if s.included and s.label != "system"]
    info: dict[str, Any] = {
        "tokens": result.total_tokens if included else 0,
        "sections": len(included),
        "topics": [a.topic for a in activations],
    }
    if not included:
        return None, info
    text, dropped = fit_inline(result.prompt)
    if dropped:
        info["dropped_for_length"] = dropped
    return text, info


def fit_inline(prompt: str, limit: int = INLINE_CHARS) -> tuple[str, int]:
    """PROMPT within LIMIT characters: whole sections from its end (the lowest priority)
    left out first, and a closing line naming them, so the model knows what it was not
    shown and where to read it (the compiler says the same of what it leaves out for
    room); a first section longer than LIMIT alone is cut, with a marker. Returns (text,
    sections left out)."""
    if len(prompt) <= limit:
        return prompt, 0
    parts = prompt.split(_SECTION_BREAK)
    for keep in range(len(parts) - 1, 0, -1):
        text = _SECTION_BREAK.join(parts[:keep]) + _left_out_line(parts[keep:])
        if len(text) <= limit:
            return text, len(parts) - keep
    marker = "\n[… cut to fit the hook's 10,000 characters]"
    rest = _left_out_line(parts[1:]) if len(parts) > 1 else ""
    text = parts[0][: limit - len(marker) - len(rest)].rsplit("\n", 1)[0] + marker + rest
    return text, len(parts) - 1


def _left_out_line(parts: list[str]) -> str:
    """The line that closes a context whose sections PARTS (each after its `<!-- `) were
    left out for length: how many, and their labels (a file's path and lines)."""
    labels = [part.split(" -->", 1)[0][:160] for part in parts]
    some = "a section" if len(labels) == 1 else f"{len(labels)} sections"
    # the first few by name (a context of hundreds of small sections must not spend the
    # room it frees on their list)
    named = ", ".join(labels[:LEFT_OUT_NAMED]) + (
        f", and {len(labels) - LEFT_OUT_NAMED} more" if len(labels) > LEFT_OUT_NAMED else ""
    )
    return (
        f"\n\n[… left out to fit the hook's 10,000 characters: {some} ({named}); read them there]"
    )


LEFT_OUT_NAMED = 8  # sections the closing line of a context cut for length names
