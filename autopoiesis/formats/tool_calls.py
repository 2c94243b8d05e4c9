"""Which tool calls of a transcript run a shell command, which edit a file (or rename, move
or delete one: `shell_file_operations`) and which look something up in the project (whose
result search and the context leave out of a captured export's turn:
`specstory_markup.as_read`), and the project a session worked in as its
tool calls show it: what extraction's `coding` reads of the tool calls (ToolStep), and how
a session whose log names no working folder gets its project (at capture, at import, and
in extraction for a transcript filed before).

Harnesses name the same tools differently (Claude Code's `Bash` and `Edit`, Cursor's
`run_terminal_cmd` and `edit_file`, Codex's `exec_command` and `apply_patch`), some with a
server's prefix (`mcp.bash`) or a version (Cursor's `run_terminal_command_v2`,
`edit_file_v2`); a name is compared without either.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

from autopoiesis.core.project import project_name, project_slug
from autopoiesis.formats import transcript as tf
from autopoiesis.formats.specstory_markup import read_steps

SHELL_TOOLS = frozenset(
    {
        "bash",
        "shell",
        "exec",
        "exec_command",
        "local_shell",
        "run_shell_command",
        "run_terminal_cmd",
        "run_terminal_command",
        "terminal",
        "command",
        "run",
        "execute",
        "execute_command",
    }
)
EDIT_TOOLS = frozenset(
    {
        "edit",
        "multiedit",
        "write",
        "create",
        "str_replace",
        "str_replace_editor",
        "str_replace_based_edit_tool",
        "apply_patch",
        "edit_file",
        "write_file",
        "replace",
        "create_file",
        "search_replace",
        "notebookedit",
    }
)
# The tools whose result is the project's own text, which the project keeps: what a
# search of its files found (paths, line ranges, matching lines), a folder's listing, a
# file read.
LOOKUP_TOOLS = frozenset(
    {
        "codebase_search",
        "grep_search",
        "file_search",
        "list_dir",
        "read_file",
        "ripgrep_raw_search",
        "glob_file_search",
        "grep",
        "glob",
        "ls",
        "read",
    }
)
# A question the agent puts to its user through a tool (Claude Code's AskUserQuestion):
# what comes back is the user's answer, their own words or the option they chose.
ASK_USER_TOOLS = frozenset({"askuserquestion"})
# The tool an agent proposes its plan through (Claude Code's ExitPlanMode): its argument is
# the plan, and its result says whether the user approved it.
PLAN_TOOLS = frozenset({"exitplanmode"})
_APPROVED = re.compile(r"^User has approved (?:your|the) plan\b", re.I)
# a plan's title: its first heading ("# Plan: Extract commands into pkg/cmd"), up to the
# next heading or list item (a call line is one line: the heading's end is gone)
_PLAN_TITLE = re.compile(
    r"^\s*#{1,6}\s+(?:plan:\s*)?(.+?)(?=\s#{1,6}\s|\s(?:\d+\.|[-*])\s|$)", re.I
)
PLAN_TITLE_CHARS = 150  # at most, cut at a word: a title runs into its text when none follows
# Claude Code's answer to a call the user rejected and typed why; what it writes there
# itself when the user chose to clarify a question is no words of theirs. The answer is
# the whole result (an error, which the importers mark "error: "), so it opens it: the
# same words inside a command's output (a grep of a codebase that handles Claude Code's
# logs, a file that quotes them) are no user's, and read as theirs they would become a
# rule of the memory that nobody said.
_REJECTED_WITH_WORDS = re.compile(
    r"\s*(?:error:\s*)?The user doesn't want to proceed with this tool use\b"
    r".{0,300}?the user said:\s*",
    re.I | re.S,
)
_CLARIFY = "The user wants to clarify these questions."
REJECTION_HEAD = 600  # where the rejection's text is looked for, at most
# SpecStory writes each answer after its question and options ("**Answer:** ..."); the
# tool's own result says `User has answered your questions: "Q"="A", ...`
_ANSWER_MARK = re.compile(r"\*\*Answer:\*\*\s*")
_ANSWERED = re.compile(r'"((?:[^"\\]|\\.)*)"="((?:[^"\\]|\\.)*)"')
# an option as SpecStory lists it ("- **Label** - what it means"), and as a call line of
# an imported question shows it (`shapes.args_summary`)
_OPTION = re.compile(r"(?:^|\s)- \*\*(.+?)\*\*(?: - (?!\*\*)(.*?))?(?=\s- \*\*|\s\*\*|$)")
_OPTIONS_MARK = re.compile(r"(?:^|\s)Options:\s")
_SELECT_MULTIPLE = re.compile(r"_?\(select multiple\)_?", re.I)
_VERSION = re.compile(r"_v\d+$")
# a folder a shell command moves into first ("cd /work/shop && pnpm test")
_CD_TARGET = re.compile(r"^\s*cd\s+(\"[^\"]+\"|'[^']+'|[^\s;&|]+)\s*(?:&&|;)")
_ABSOLUTE = re.compile(r"^(?:/|[A-Za-z]:[\\/]|\\\\)")
FOLDERS_READ = 200  # the tool calls a session's folders are read from, at most


@lru_cache(maxsize=1024)  # asked for each call a transcript holds, of a few dozen names
def tool_name(tool: str) -> str:
    """TOOL's own name: lower case, without its server's prefix or its version."""
    return _VERSION.sub("", tool.lower().rsplit(".", 1)[-1])


def is_shell(tool: str) -> bool:
    return tool_name(tool) in SHELL_TOOLS


def is_edit(tool: str) -> bool:
    return tool_name(tool) in EDIT_TOOLS


def is_lookup(tool: str) -> bool:
    return tool_name(tool) in LOOKUP_TOOLS


def asks_user(tool: str) -> bool:
    return tool_name(tool) in ASK_USER_TOOLS


def approved_plan(call: tf.ToolCall) -> str | None:
    """The title of the plan the user approved through CALL (a PLAN_TOOLS tool whose result
    says so): its first heading, else its first words (PLAN_TITLE_CHARS); None for another
    tool, a plan rejected or one not yet answered."""
    if tool_name(call.tool) not in PLAN_TOOLS or not _APPROVED.match(call.result or ""):
        return None
    m = _PLAN_TITLE.match(call.args)
    title = " ".join((m.group(1) if m else call.args).split())
    if len(title) > PLAN_TITLE_CHARS:
        title = title[: PLAN_TITLE_CHARS - 1].rsplit(" ", 1)[0] + "…"
    return title or None


def rejection_words(result: str | None) -> str | None:
    """What the user typed when they rejected a tool call, as Claude Code answers the call
    ("The user doesn't want to proceed with this tool use. ... To tell you how to proceed,
    the user said:" and their words: often a correction, "no, use bun, not node"); None
    for any other result (one that only holds those words, further in: a command's output
    quoting them), a rejection without words, or Claude Code's own text when the user
    chose to clarify a question."""
    if not result or "the user said:" not in result[:REJECTION_HEAD]:
        return None
    m = _REJECTED_WITH_WORDS.match(result[:REJECTION_HEAD])
    if m is None:
        return None
    said = result[m.end() :].strip()
    return None if not said or said.startswith(_CLARIFY) else said


def holds_user_words(tool: str, result: str | None) -> bool:
    """Whether a call of TOOL answered RESULT holds the user's own words: a question tool's
    answers, or what the user said rejecting the call (a transcript keeps them whole)."""
    return asks_user(tool) or rejection_words(result) is not None


def user_words(call: tf.ToolCall) -> str | None:
    """The user's own words in CALL: their answers to a question it asked (`user_answer`),
    or what they said when they rejected it (`rejection_words`)."""
    return user_answer(call) or rejection_words(call.result)


def user_answer(call: tf.ToolCall) -> str | None:
    """What the user answered to a question the agent asked them through CALL (an
    ASK_USER_TOOLS tool), each answer of several on its own line; None for another tool,
    or a question refused or left unanswered."""
    answers = [a for _, a in answered(call)]
    return "\n".join(answers) or None


def answered(call: tf.ToolCall) -> list[tuple[str, str]]:
    """(question, answer) of each question CALL (an ASK_USER_TOOLS tool) asked and the user
    answered, in order; [] for another tool, or questions refused or left unanswered.
    SpecStory writes each answer after its question's options, the first question as the
    call's argument and each later one in bold after the answer before it; the tool's own
    result pairs them as `"Q"="A"`."""
    if not asks_user(call.tool) or not call.result:
        return []
    marked = _ANSWER_MARK.split(call.result)
    pairs: list[tuple[str, str]] = []
    if len(marked) > 1:
        question = call.args
        for part in marked[1:]:  # an answer runs to the next question (bold) or the end
            answer, _, rest = part.partition(" **")
            pairs.append((question, answer))
            question = rest.split("**", 1)[0]
    elif call.result.startswith("User has answered"):
        pairs = [
            (m.group(1).replace('\\"', '"'), m.group(2).replace('\\"', '"'))
            for m in _ANSWERED.finditer(call.result)
        ]
    cleaned = [(_question_text(q), " ".join(a.split())) for q, a in pairs]
    return [(q, a) for q, a in cleaned if a]


def _question_text(text: str) -> str:
    """A question as a call line shows it, without its bold, its "(select multiple)" and
    the options that follow it."""
    text = text.split(" Options:", 1)[0].replace("**", "")
    return " ".join(_SELECT_MULTIPLE.sub("", text).split())


@dataclass(frozen=True)
class Choice:
    """An option the user chose among those the agent offered through an ASK_USER_TOOLS
    tool: the question, the option's label and what the agent said it means."""

    question: str
    label: str
    description: str


def choices(call: tf.ToolCall) -> list[Choice]:
    """The options CALL offered that the user's answers chose, in the order answered: an
    answer that is one option's label, or (a question that takes several) the labels it
    lists; what else an answer says is the user's own words, not a choice."""
    answers = answered(call)
    if not answers:
        return []
    offered = _offered(call)
    out: list[Choice] = []
    for n, (question, answer) in enumerate(answers):
        options = offered[n] if len(offered) == len(answers) else {}
        padded = f", {answer},"
        found: list[tuple[int, int, str]] = []
        # longest first: a label may hold a comma, or a shorter label ("YAML, TOML, or
        # similar" holds "YAML")
        for label in sorted(options, key=len, reverse=True):
            at = padded.find(f", {label},")
            if at >= 0 and not any(s <= at < e for s, e, _ in found):
                found.append((at, at + len(label) + 2, label))
        out += [Choice(question, label, options[label]) for _, _, label in sorted(found)]
    return out


def _offered(call: tf.ToolCall) -> list[dict[str, str]]:
    """The options of each question CALL asked, in order: label -> description. Each
    question's options follow its "Options:", up to its answer (SpecStory) or the next
    question."""
    pieces = _OPTIONS_MARK.split(f"{call.args} {call.result or ''}")
    out = []
    for piece in pieces[1:]:
        piece = _ANSWER_MARK.split(piece, maxsplit=1)[0].split(" User has answered", 1)[0]
        options: dict[str, str] = {}
        for m in _OPTION.finditer(piece):
            label = " ".join(m.group(1).split())
            options.setdefault(label, " ".join((m.group(2) or "").split()))
        out.append(options)
    return out


def folders_worked_in(turns: Iterable[tf.Turn]) -> list[str]:
    """The absolute folders a session's tool calls worked in, one for each call that shows
    one (of its first FOLDERS_READ): the folder of a file it edited, the folder a shell
    command moved into first. Where a session read files is not counted: an agent reads
    libraries and other projects' files too."""
    out: list[str] = []
    calls = 0
    for turn in turns:
        for item in turn.items:
            if not isinstance(item, tf.ToolCall):
                continue
            calls += 1
            if calls > FOLDERS_READ:
                return out
            args = item.args.strip()
            if is_edit(item.tool):
                path = args.split(maxsplit=1)[0] if args else ""
                cut = max(path.rfind("/"), path.rfind("\\"))  # the file's own name
                if _ABSOLUTE.match(path) and cut > 0:
                    out.append(path[:cut])
            elif is_shell(item.tool):
                m = _CD_TARGET.match(args)
                if m and _ABSOLUTE.match(m.group(1).strip("\"'")):
                    out.append(m.group(1).strip("\"'"))
    return out


# a folder of an application's below the home folder (~/.claude, ~/.cursor): no project's
_APP_FOLDER = re.compile(
    r"^(?:/home/[^/]+|/Users/[^/]+|/root|[A-Za-z]:[\\/]Users[\\/][^\\/]+)[\\/]\."
)


def is_application_file(path: str) -> bool:
    """Whether PATH lies in an application's dot folder below the home folder (a plan
    Claude Code keeps in ~/.claude/plans/): no project's file."""
    return _APP_FOLDER.match(path) is not None


def below_project(path: str, project: str) -> str | None:
    """PATH below the first of its folders named as PROJECT ("/Users/x/src/shop/app/a.ts"
    of project "shop" -> "app/a.ts"): how the project's people name a file a session of
    another machine changed; None when no folder of it is named so."""
    if not project or not _ABSOLUTE.match(path):
        return None
    parts = re.split(r"[\\/]+", path)
    for i, part in enumerate(parts[:-1]):
        if part and project_slug(part) == project:
            return "/".join(parts[i + 1 :]) or None
    return None


def _folder_project(folder: str, memory_root: Path | None) -> str | None:
    """The project of a folder a session worked in (`core.project.project_name`, the name
    it goes by in the memory at MEMORY_ROOT); none for a folder under a dot folder of the
    home folder (~/.claude): an application's."""
    return None if is_application_file(folder) else project_name(folder, memory_root)


def project_worked_in(turns: Iterable[tf.Turn], memory_root: Path | None = None) -> str | None:
    """The project most of a session's work was in (`folders_worked_in`, each folder named
    by `_folder_project` as in the memory at MEMORY_ROOT), or None."""
    names: dict[str, str | None] = {}
    counts: dict[str, int] = {}
    for folder in folders_worked_in(turns):
        if folder not in names:
            names[folder] = _folder_project(folder, memory_root)
        name = names[folder]
        if name:
            counts[name] = counts.get(name, 0) + 1
    return min(counts, key=lambda name: (-counts[name], name)) if counts else None


def with_project_worked_in(
    meta: tf.TranscriptMeta, transcript: tf.Transcript, memory_root: Path | None = None
) -> tf.TranscriptMeta:
    """META, given the project TRANSCRIPT's tool calls worked in (`project_worked_in`) when
    it names no folder (neither `project` nor `cwd`: a chat exported to Markdown, a capture
    stream without them); as it is otherwise. The one rule of capture's close and of the
    importers; tool calls an export's markup carries in the text count too (`read_steps`)."""
    if meta.project is not None or meta.cwd is not None:
        return meta
    return replace(meta, project=project_worked_in(read_steps(transcript).turns, memory_root))


def folder_of_project(
    turns: Iterable[tf.Turn], project: str, memory_root: Path | None = None
) -> str:
    """The folder a session worked in for PROJECT, as its tool calls show it: the deepest
    folder holding every folder of that project it edited in or moved into, when that
    folder is the project's too; "" otherwise (and for Windows paths)."""
    folders = [
        f
        for f in dict.fromkeys(folders_worked_in(turns))
        if f.startswith("/") and _folder_project(f, memory_root) == project
    ]
    if not folders:
        return ""
    common = posixpath.commonpath(folders)
    return common if _folder_project(common, memory_root) == project else ""


# A shell command's own file operations: `mv` and `git mv` rename or move, `rm` and `git rm`
# delete. Read as the shell splits the command (shlex: quotes, operators), one simple command
# at a time, each operand below the folders a `cd` before it moved into.
_FILE_OP_WORDS = re.compile(r"\b(?:mv|rm)\b")
_SHELL_OPERATORS = frozenset({"&&", "||", ";", "|", "&", ";;", "|&", "(", ")"})
_REDIRECTION = re.compile(r"^(?:\d*|&)(?:>>?|<<?|>&|<&|>\|)$")
# an operand the shell would expand ($HOME, a glob, a command's output) or a log cut short
# ("…") names no file that can be told
_EXPANDED = re.compile(r"[$*?\[\]{}`~…]")
FILE_OP_COMMAND_CHARS = 2000  # a longer command is a script, not a file operation (~1 ms)


@dataclass(frozen=True)
class FileOperation:
    """A file or folder a shell command renamed or moved (TO its new path) or deleted (TO
    None), as the command names it: relative to the folder it ran in, or absolute."""

    path: str
    to: str | None = None


@lru_cache(maxsize=4096)  # a step's operations are asked for its Changes and its journal line
def shell_file_operations(command: str) -> tuple[FileOperation, ...]:
    """The renames, moves and deletions COMMAND makes with `mv`, `git mv`, `rm` and `git rm`;
    none for an operand the shell would expand or a log cut short, for `git rm --cached`
    (the file stays) or `mv -t`, or for a command the shell could not parse."""
    if len(command) > FILE_OP_COMMAND_CHARS or not _FILE_OP_WORDS.search(command):
        return ()
    try:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        lexer.commenters = ""  # "task#002" is a word; a word that starts with "#" is below
        tokens = list(lexer)
    except ValueError:  # an unclosed quote: a log cut the command short
        return ()
    out: list[FileOperation] = []
    here: str | None = ""  # None: a `cd` to a folder that cannot be told ("cd", "cd $DIR")
    simple: list[str] = []
    for token in [*tokens, ";"]:
        if token not in _SHELL_OPERATORS:
            simple.append(token)
            continue
        words = _without_redirections(simple)
        simple = []
        comment = next((i for i, w in enumerate(words) if w.startswith("#")), None)
        words = words[:comment]  # a comment: to its line's end, here to the operator
        if words[:1] == ["cd"]:
            plain = len(words) == 2 and not _EXPANDED.search(words[1]) and words[1] != "-"
            here = posixpath.join(here, words[1]) if plain and here is not None else None
            if plain and words[1].startswith("/"):
                here = words[1]
            continue
        if words[:1] in (["mkdir"], ["touch"]):  # made again: replaced, not deleted
            made = {posixpath.normpath(posixpath.join(here or "", w)) for w in words[1:]}
            out = [op for op in out if op.to is not None or op.path not in made]
            continue
        if words[:1] == ["git"]:
            words = _git_subcommand(words)
        out.extend(_operations(words, here))
    return tuple(out)


def _without_redirections(words: list[str]) -> list[str]:
    out: list[str] = []
    skip = False
    for word in words:
        if skip:
            skip = False
        elif _REDIRECTION.match(word):
            skip = True  # and its target
            if out and out[-1].isdigit():  # "2>": the descriptor split from its operator
                out.pop()
        else:
            out.append(word)
    return out


def _git_subcommand(words: list[str]) -> list[str]:
    """["mv", ...] of ["git", "-C", "x", "mv", ...]: git's own options before its command
    (a -C folder too: not followed, an operand below it is named from there)."""
    i = 1
    while i < len(words) and words[i].startswith("-"):
        i += 2 if words[i] in ("-C", "-c") else 1
    return ["git " + words[i], *words[i + 1 :]] if i < len(words) else []


def _operations(words: list[str], here: str | None) -> list[FileOperation]:
    if not words or words[0] not in ("mv", "rm", "git mv", "git rm"):
        return []
    options = [w for w in words[1:] if w.startswith("-")]
    operands = [w for w in words[1:] if not w.startswith("-")]
    if any(_EXPANDED.search(w) for w in operands) or not operands:
        return []
    if here is None:  # below a folder that cannot be told: only absolute paths are known
        if not all(w.startswith("/") for w in operands):
            return []
        here = ""
    named = [posixpath.normpath(posixpath.join(here, w)) for w in operands]
    if words[0].endswith("rm"):
        return [] if "--cached" in options else [FileOperation(p) for p in named]
    if len(named) < 2 or any(o.startswith("-t") or o == "--target-directory" for o in options):
        return []
    *sources, target = named
    # into a folder: several sources, a target written as one ("dir/"), or a file with an
    # extension moved to a name without one ("mv util.py lib": lib is a folder)
    into = (
        len(sources) > 1
        or operands[-1].endswith("/")
        or (bool(_EXTENSION_OF.search(sources[0])) and not _EXTENSION_OF.search(target))
    )
    if into:
        return [FileOperation(p, posixpath.join(target, posixpath.basename(p))) for p in sources]
    return [FileOperation(sources[0], target)]


_EXTENSION_OF = re.compile(r"[^/.]\.[A-Za-z0-9_-]{1,12}$")


__all__ = [
    "EDIT_TOOLS",
    "FILE_OP_COMMAND_CHARS",
    "LOOKUP_TOOLS",
    "SHELL_TOOLS",
    "FileOperation",
    "below_project",
    "folder_of_project",
    "folders_worked_in",
    "is_application_file",
    "is_edit",
    "is_lookup",
    "is_shell",
    "project_worked_in",
    "shell_file_operations",
    "tool_name",
]
