"""SpecStory's Markdown of a turn (`<project>/.specstory/history/*.md`, the exports of
Cursor, Claude Code and Copilot chats): how its steps read as transcript items. The
SpecStory importer (integrations/specstory) reads each turn of an export with it, and
extraction (`read_steps`) the agent texts of a transcript captured from such an export.

Inside a turn, `---` lines separate the agent's steps. A step is a tool use when it is a
`<tool-use data-tool-name=NAME>` block (v2), a `<details><summary>Searched codebase ...`
block or a `Read file: PATH` line (v1), or a ```` ```bash ```` command fence followed by its
output fence and nothing else (v1's terminal runs); it becomes a tool call with its name, its
argument (the command, the path, the query) and its output as the result (a long one
clipped to its head and its tail, where a run's verdict is). Every other step
is the turn's text; thinking (`<think>`) is left out. A v1 diff fence stays text: it is the
change itself, longer than a tool result keeps.
"""

from __future__ import annotations

import re
from dataclasses import replace

from autopoiesis.formats import transcript as tf

RESULT_CHARS = 300  # what formats.transcript keeps of a tool result
_FENCE = re.compile(r"^(`{3,}|~{3,})(.*)$")
# bounded: a tag or an attribute left open must not make each match scan to the text's end
_TOOL_NAME_ATTR = re.compile(r'data-tool-name="([^"\n]{1,200})"')
_TOOL_USE_SUMMARY = re.compile(r"^Tool use: \*\*(?P<name>[^*]+)\*\*(?:\s*•\s*(?P<what>.*))?$")
_LABELLED = re.compile(r"^[A-Z][A-Za-z ]{1,30}?: (.+)$")  # "Run command: ls", "Read file: a.py"
_READ_FILE = re.compile(r"^Read file: (.+)$")
_SHELLS = frozenset({"bash", "sh", "shell", "zsh", "powershell", "pwsh", "cmd", "console"})
_V1_TOOLS = (  # a v1 <summary>'s opening words -> the tool Cursor ran
    ("Searched codebase", "codebase_search"),
    ("Grep search", "grep_search"),
    ("Grep for", "grep_search"),
    ("Searched files", "file_search"),
    ("Searched web", "web_search"),
    ("Listed directory", "list_dir"),
    ("Listed current directory", "list_dir"),
    ("Deleted", "delete_file"),
    # Cursor's edit of a file, its diff in the body (read as a tool named "tool" before, no
    # edit: none of the second and third development sets' 392 edits changed their project)
    ("Edit file:", "edit_file"),
)
_TAGS = re.compile(r"</?(?:details|summary|tool-use)\b[^>]{0,500}>")


def _between(text: str, opening: str, closing: str, start: int = 0) -> tuple[int, int] | None:
    """Where OPENING's first occurrence from START opens and the first CLOSING after it
    ends, or None. str.find, not a lazy regex: with the block left open, a regex would scan
    to the end of the text from each OPENING (a captured message is anyone's text)."""
    i = text.find(opening, start)
    j = text.find(closing, i + len(opening)) if i >= 0 else -1
    return (i, j + len(closing)) if j >= 0 else None


def _without_thinking(text: str, keep_lines: bool = False) -> str:
    """TEXT without its `<think>...</think>` blocks (one left open stays); KEEP_LINES: each
    block's line breaks stay, so the text has as many lines as before."""
    out, pos = [], 0
    while (block := _between(text, "<think>", "</think>", pos)) is not None:
        out.append(text[pos : block[0]])
        if keep_lines:
            out.append("\n" * text.count("\n", block[0], block[1]))
        pos = block[1]
    out.append(text[pos:])
    return "".join(out)


# a tag of the markup, within one line (bounded: one left open must not scan the text)
_OPENING_TAG = re.compile(r"<(?:think|details|summary|tool-use)")  # one pass over a text
_LINE_TAGS = re.compile(r"</?(?:details|summary|tool-use|think)\b[^>\n]{0,500}>")


def as_read(text: str) -> str:
    """An agent's TEXT (a turn of an export captured as it is) as a reader of the export
    sees it, line for line, so that a line number still points where it did: its
    thinking's lines blank, as the import leaves the thinking out, a lookup's result
    blank (`_without_lookups`), and the markup's tags taken out of the rest. What the
    index and the compiled context read of an agent's turn; the transcript keeps every
    word."""
    if not has_markup(text):
        return text
    return _LINE_TAGS.sub("", _without_lookups(_without_thinking(text, keep_lines=True)))


# v2 marks a tool that reads the project (`tool_calls.is_lookup`) `data-tool-type="read"`
# or `"search"`; a web search is a "search" too, but its results are not the project's.
LOOKUP_TYPES = frozenset({"read", "search"})
_TOOL_TYPE_ATTR = re.compile(r'data-tool-type="([^"\n]{1,50})"')
_BLOCK_OPENING = re.compile(r"<tool-use\b[^>\n]{0,500}>|<details>")


def _without_lookups(text: str) -> str:
    """TEXT with the result of each lookup block (`tool_calls.is_lookup`) blank, line for line:
    its summary (the tool, what it looked for) stays. A turn's searches and listings
    print dozens of paths and matching lines, which outranked the words the agent and the
    user said about them (bench_coding.py, the memories streamed as Markdown turns, turn
    recall@10: 0.797 -> 0.805, the second set 0.784 -> 0.814); the project keeps the text
    itself.
    Linear: the scan moves past each block it reads and stops at one left open, and a
    summary is looked for and read once however many openings come before it."""
    from autopoiesis.formats.tool_calls import is_lookup, tool_name  # it reads steps here

    out, pos, scan = [], 0, 0  # the text before POS is in OUT; SCAN: where to look on
    summary: tuple[int, int] | None = None  # the first summary after the last opening
    v1_tool = ""  # the tool it names, read as v1 names them
    # whether it names only the tool ("Tool use: **Read**", a Claude Code block's): it says
    # nothing of what was looked up, and goes with the result; "Searched codebase "q"" stays
    names_only = False
    while (m := _BLOCK_OPENING.search(text, scan)) is not None:
        if summary is None or summary[0] < m.end():
            summary = _between(text, "<summary>", "</summary>", m.end())
            if summary is None:
                break
            inside = text[summary[0] + len("<summary>") : summary[1] - len("</summary>")]
            said = " ".join(inside.split())
            v1_tool = _v1_tool(said)[0]
            head = _TOOL_USE_SUMMARY.match(said)
            names_only = head is not None and not head.group("what")
        if m.group().startswith("<tool-use"):
            named = _TOOL_NAME_ATTR.search(m.group())
            typed = _TOOL_TYPE_ATTR.search(m.group())
            name = tool_name(named.group(1)) if named else ""
            lookup = is_lookup(name) or (
                typed is not None and typed.group(1) in LOOKUP_TYPES and "web" not in name
            )
            closing = "</tool-use>"
        else:
            lookup = is_lookup(v1_tool)
            closing = "</details>"
        if not lookup:
            scan = m.end()
            continue
        close = text.find(closing, summary[1])
        if close < 0:
            break
        keep = m.start() if names_only else summary[1]
        out.append(text[pos:keep])
        out.append("\n" * text.count("\n", keep, close))
        pos = scan = close
    out.append(text[pos:])
    return "".join(out)


def has_markup(text: str) -> bool:
    """Whether TEXT may hold the markup `as_read` takes out: a transcript without it (most)
    is read as it is, with no turn of it joined or scanned again."""
    return _OPENING_TAG.search(text) is not None


def _summary(step: str) -> tuple[str, int]:
    """The text of STEP's first `<summary>` (flattened) and where it ends; ("", 0) without one."""
    block = _between(step, "<summary>", "</summary>")
    if block is None:
        return "", 0
    return " ".join(
        step[block[0] + len("<summary>") : block[1] - len("</summary>")].split()
    ), block[1]


def _steps(lines: list[str]) -> list[str]:
    """LINES cut at the `---` lines that are not inside a code fence or a tool-use block,
    and around each tool-use block (two may follow each other with no `---` between: each
    is a step of its own). A block closes on the line that holds `</tool-use>`, which
    SpecStory writes as `</details></tool-use>`."""
    steps: list[list[str]] = [[]]
    fence: str | None = None
    in_tool = 0
    for line in lines:
        stripped = line.strip()
        m = _FENCE.match(stripped)
        if fence is None and m:
            fence = m.group(1)
        elif fence is not None and m and stripped.startswith(fence) and not m.group(2).strip():
            fence = None
        elif fence is None:
            if stripped.startswith("<tool-use"):
                if not in_tool and steps[-1]:
                    steps.append([])
                in_tool += 1
            if "</tool-use>" in stripped and in_tool:
                in_tool -= 1
                if not in_tool:
                    steps[-1].append(line)
                    steps.append([])
                    continue
            elif stripped == "---" and not in_tool:
                steps.append([])
                continue
        steps[-1].append(line)
    return [s for s in ("\n".join(step).strip() for step in steps) if s]


def _fence_walk(text: str) -> tuple[list[tuple[str, str]], list[str]]:
    """(the code fences of TEXT as (info string, body), the lines outside them); one left
    open runs to the end."""
    fences: list[tuple[str, str]] = []
    outside: list[str] = []
    fence: str | None = None
    info = ""
    body: list[str] = []
    for line in text.split("\n"):
        stripped = line.strip()
        m = _FENCE.match(stripped)
        if fence is None:
            if m:
                fence, info, body = m.group(1), m.group(2).strip(), []
            else:
                outside.append(line)
        elif m and stripped.startswith(fence) and not m.group(2).strip():
            fences.append((info, "\n".join(body)))
            fence = None
        else:
            body.append(line)
    if fence is not None:
        fences.append((info, "\n".join(body)))
    return fences, outside


def _fences(text: str) -> list[tuple[str, str, bool]]:
    """The code fences of TEXT: (info string, body, whether text lies outside them)."""
    fences, outside = _fence_walk(text)
    said = any(line.strip() for line in outside)
    return [(info, body, said) for info, body in fences]


def _clip(result: str | None, tool: str = "") -> str | None:
    """RESULT as a transcript keeps it (one line, RESULT_CHARS at most): a long output's
    head and its tail, where a command's verdict (`1 fail`, the error) is. A result that
    holds the user's words (their answer to a question TOOL asked, what they said
    rejecting a call) is kept as the transcript keeps it (up to its ANSWER_CHARS)."""
    from autopoiesis.formats.tool_calls import holds_user_words  # it reads steps here

    if result is None:
        return None
    flat = " ".join(result.split())
    if len(flat) <= RESULT_CHARS or holds_user_words(tool, result):
        return flat or None
    head = RESULT_CHARS // 3
    return f"{flat[:head]} … {flat[-(RESULT_CHARS - head - 3) :]}"


def _tool_use(step: str) -> tf.ToolCall:
    """A v2 `<tool-use>` block as a tool call. Its argument is what the summary names
    ("Tool use: **run_terminal_cmd** • Run command: ls"), else what the body shows before
    its output (`_body_args`: a Claude Code session's summary names only the tool)."""
    name_attr = _TOOL_NAME_ATTR.search(step)
    summary, after = _summary(step)
    head = _TOOL_USE_SUMMARY.match(summary)
    name = (name_attr.group(1) if name_attr else None) or (head.group("name") if head else "tool")
    what = ((head.group("what") or "") if head else summary).split(" • ")[0]
    labelled = _LABELLED.match(what)
    args = labelled.group(1) if labelled else what
    rest = _TAGS.sub("", step[after:])
    fences = _fences(rest)
    from_body = not args.strip()
    typed = _TOOL_TYPE_ATTR.search(step[:after])
    kind = typed.group(1) if typed else ""
    if from_body:
        args, rest = _body_args(rest, fences, shell=kind == "shell")
    results = [body for info, body, _ in fences if body.strip() != args.strip()]
    if not results and not fences:
        results = [rest]  # a tool's answer in plain text (the user's, to AskUserQuestion)
    result = "\n".join(r.strip() for r in results if r.strip()) or None
    # the tool's answer is the block's last fence (a Write shows the file's text before it,
    # which may run past any head of the result: docs/POSTHOG.md's did)
    answer = results[-1][:2000] if results else ""
    if from_body and answer and _edits(name, kind) and (m := _EDITED_FILE.search(answer)):
        args = next(g for g in m.groups() if g)  # an edit's file, which only its answer names
    elif from_body and result and (m := _APPROVED_PLAN.search(result)):
        # the plan the user approved, which the export shows only in the answer: the call's
        # argument, as a log has it (a transcript keeps a result's head and tail, not its
        # middle, where the plan's title would be)
        args, result = result[m.end() :].strip(), result[: m.start()].strip()
    from html import unescape  # here: html.entities' table costs every cold `compile` ~2 ms

    return tf.ToolCall(name, unescape(args), _clip(unescape(result) if result else None, name))


# Where an approved plan starts in what Claude Code answers its ExitPlanMode (the plan
# follows; what comes before is the approval)
_APPROVED_PLAN = re.compile(r"^#{1,6} Approved Plan:[ \t]*$", re.M)
# A line that is one code span: how a Claude Code session's export shows a shell command
# (after the description the agent gave it), a file read, a URL fetched.
_CODE_LINE = re.compile(r"^\s*`([^`\n]+)`\s*$")
# What Claude Code's file tools answer, the one place its export names the file an Edit or
# a Write changed (the export shows no input of theirs). Bounded, one line each.
_EDITED_FILE = re.compile(
    r"^(?:The file (\S[^\n]{0,500}?) has been (?:updated|created|overwritten)\b"
    r"|File created successfully at: (\S[^\n]{0,500}?)\s*$"
    r"|Applied \d+ edits? to (\S[^\n]{0,500}?):)",
    re.MULTILINE,
)


def _edits(name: str, kind: str) -> bool:
    """Whether a block of tool NAME (of v2's type KIND) writes a file (`tool_calls.is_edit`,
    or SpecStory's own type): only its answer may name the file it wrote, not a command's
    output that happens to say "The file ... has been updated"."""
    from autopoiesis.formats.tool_calls import is_edit  # it reads steps here

    return kind == "write" or is_edit(name)


def _body_args(body: str, fences: list[tuple[str, str, bool]], *, shell: bool) -> tuple[str, str]:
    """(what a tool block's BODY shows it was given, the rest of the body) when its
    summary names only the tool, as SpecStory writes a Claude Code session: a shell tool's
    command (the line that is one code span after its description, or a multi-line
    command's shell fence; its output is a fence after it, and nothing else is), any other
    tool's first line outside the FENCES (a file read's path, a search's path and pattern,
    a question asked), without its code marks and bold; "" when there is none."""
    lines = _fence_walk(body)[1]
    if shell:
        for line in lines:
            if m := _CODE_LINE.match(line):
                return m.group(1).strip(), ""
        shells = [b for info, b, _ in fences if info.lower() in _SHELLS]
        return (shells[0].strip() if shells else ""), ""
    at = next((i for i, line in enumerate(lines) if line.strip()), len(lines))
    first = lines[at] if at < len(lines) else ""
    args = " ".join(first.replace("`", " ").replace("**", " ").split())[:500]
    return args, "\n".join(lines[at + 1 :]).strip()


def _v1_tool(summary: str) -> tuple[str, str]:
    """(the tool, what it was given) that a v1 `<summary>`'s text names ("tool" and the
    text when it names none)."""
    what = summary.split(" • ")[0]
    for lead, tool in _V1_TOOLS:
        if what.startswith(lead):
            return tool, what[len(lead) :].strip()
    return "tool", what


_NO_INSTRUCTIONS = "undefined\n"


def _details(step: str) -> tf.ToolCall:
    """A v1 `<details><summary>Searched codebase "q" • **25** results</summary>` block."""
    summary, after = _summary(step)
    name, what = _v1_tool(summary)
    rest = _TAGS.sub("", step[after:]).strip()
    # an edit's instructions open its body; SpecStory writes "undefined" where Cursor gave none
    rest = rest.removeprefix(_NO_INSTRUCTIONS).lstrip()
    return tf.ToolCall(name, what.strip('"') or what, _clip(rest, name))


def _step_items(step: str) -> list[tf.Item]:
    """One step of an agent turn: tool calls, or text (None: nothing to keep)."""
    step = _without_thinking(step).strip()
    if not step:
        return []
    if step.startswith("<tool-use"):
        return [_tool_use(step)]
    if step.startswith("<details") and _between(step, "<summary>", "</summary>"):
        return [_details(step)]
    lines = step.split("\n")
    reads = [_READ_FILE.match(ln.strip()) for ln in lines]
    if all(reads):
        return [tf.ToolCall("read_file", m.group(1), None) for m in reads if m]
    fences = _fences(step)
    if (
        fences
        and len(fences) <= 2
        and not fences[0][2]
        and fences[0][0].lower() in _SHELLS
        and all(not info for info, _, _ in fences[1:])
    ):
        output = fences[1][1].strip() if len(fences) > 1 else ""
        return [tf.ToolCall("run_terminal_cmd", fences[0][1].strip(), _clip(output))]
    return [tf.Text(step)]


def turn_items(role: str, lines: list[str]) -> list[tf.Item]:
    """A turn of an export as transcript items: a user's its text; an agent's its steps
    (`_step_items`), text joined, thinking left out."""
    if role == "user":
        text = _without_thinking("\n".join(lines)).strip()
        while text.endswith("\n---") or text == "---":
            text = text[:-3].rstrip()
        return [tf.Text(text)] if text else []
    items: list[tf.Item] = []
    for step in _steps(lines):
        for item in _step_items(step):
            last = items[-1] if items else None
            if isinstance(item, tf.Text) and isinstance(last, tf.Text):
                items[-1] = tf.Text(f"{last.content}\n\n{item.content}")
            else:
                items.append(item)
    return items


# A tool step as only SpecStory writes it, at the start of a line: v2's `<tool-use`, v1's
# `<details>` (with its `<summary>`) and `Read file: PATH`.
_TOOL_MARKUP = re.compile(
    r"^\s*<(?:tool-use\b|details>\s*$|details>\s*<summary>)|^Read file: \S", re.MULTILINE
)


def read_steps(transcript: tf.Transcript) -> tf.Transcript:
    """TRANSCRIPT with its agent's steps read, when it came as SpecStory's Markdown through
    a capture stream: a converter that sends each turn's Markdown as one message leaves
    the tool uses in the text, and with them which files changed, which commands ran and
    what they answered. So when no turn holds a tool call and an agent's text carries
    SpecStory's tool markup (`<tool-use ...>`, `<details><summary>...`, `Read file: PATH`),
    every agent text is read as the importer reads a turn of the export (`turn_items`).
    Any other transcript is returned as it is: a terminal fence in a harness's message is
    a suggestion, not a run. The file is not changed: this is how extraction reads it."""
    turns = transcript.turns
    if any(isinstance(i, tf.ToolCall) for t in turns for i in t.items) or not any(
        t.role == "agent" and isinstance(i, tf.Text) and _TOOL_MARKUP.search(i.content)
        for t in turns
        for i in t.items
    ):
        return transcript
    read = []
    for t in turns:
        if t.role != "agent":
            read.append(t)
            continue
        items: list[tf.Item] = []
        for item in t.items:
            items += (
                turn_items("agent", item.content.split("\n"))
                if isinstance(item, tf.Text)
                else [item]
            )
        read.append(replace(t, items=tuple(items)))
    return replace(transcript, turns=tuple(read))
