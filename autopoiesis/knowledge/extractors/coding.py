"""coding: what a coding session's tool calls show -> projects/SLUG/context.md.

* **Commands**: the commands that ran and succeeded, by kind (tests, build, lint, type
  check, format, run, install): the project's "how to". One live command a kind and
  runner (`#about:command test pytest`): a later one supersedes it.
* **Changes**: the files the session changed (edited, or renamed, moved and deleted by
  `mv`, `git mv`, `rm` and `git rm`), and the user's request they served; the packages it
  added to the project's manifest or removed from it, one live entry a package.
* **Errors and Fixes**: an error a command printed, the files edited next, and the same
  command passing afterwards.
* **Current State**: where the work was pushed last (the branch and the remote a `git
  push` reported, a remote's name read as the address the session gave it), one live
  entry: a later push supersedes it.

Only what the tool calls show (a command's exit as its result line reports it, an
edit's path); nothing is taken from what the agent says it did. A session whose project
is unknown (no `project:` / `cwd:` in its transcript, no project named in it) yields
nothing: a command or a file means nothing without its codebase, and none of it belongs
in MEMORY.md or reference/general.md.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime

from autopoiesis.core.clock import utc
from autopoiesis.core.paths import project_context_file
from autopoiesis.core.text import slash_command
from autopoiesis.formats import tool_calls as tools
from autopoiesis.formats import transcript as tf
from autopoiesis.formats.knowledge import SECTION_CHANGES, SECTION_FIXES
from autopoiesis.knowledge.changes import KnowledgeChange
from autopoiesis.knowledge.extractors import prose
from autopoiesis.knowledge.extractors.base import (
    Extractor,
    SourceTranscript,
    clean,
    long_words,
)

SECTION_COMMANDS = "Commands"
SECTION_STATE = "Current State"

# A package script's name ends there or at its variant ("test", "test:e2e"): "bun run
# test-session-autodetect.ts" runs a file whose name starts with "test", no test script.
_SCRIPT_END = r"(?=$|[\s:;&|])"
# what a command is for, by its runner (the first match wins)
_KINDS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (kind, re.compile(rx, re.IGNORECASE))
    for kind, rx in (
        (
            "install",
            r"\b(?:pip install|uv (?:sync|pip install|add)|poetry install|(?:npm|pnpm|yarn|bun) "
            r"(?:install|add|i)\b|cargo add|go get|bundle install)",
        ),
        ("format", r"\b(?:prettier|black|ruff format|gofmt|rustfmt|cargo fmt|isort)\b"),
        (
            "lint",
            r"\b(?:ruff(?: check)?|eslint|flake8|pylint|golangci-lint|clippy|shellcheck|"
            rf"stylelint|(?:npm|pnpm|yarn|bun)(?: run)? lint{_SCRIPT_END}|lint-imports|biome)\b",
        ),
        (
            "typecheck",
            rf"\b(?:mypy|tsc|pyright|(?:npm|pnpm|yarn|bun)(?: run)? typecheck{_SCRIPT_END})\b",
        ),
        (
            "test",
            r"\b(?:pytest|py\.test|tox|nox|unittest|jest|vitest|mocha|rspec|phpunit|"
            r"go test|cargo test|mvn test|gradle test|ctest|playwright test|manage\.py test|"
            rf"(?:npm|pnpm|yarn|bun)(?: run)? test{_SCRIPT_END}|make test)\b"
            r"|(?:^|\s)\./run(?:_tests)?\.sh\b",
        ),
        (
            "build",
            rf"\b(?:(?:npm|pnpm|yarn|bun)(?: run)? build{_SCRIPT_END}|cargo build|go build|"
            r"make\b|cmake|"
            r"vite build|webpack|gradle build|mvn package|python -m build|docker build)",
        ),
        (
            "run",
            rf"\b(?:(?:npm|pnpm|yarn|bun)(?: run)? (?:dev|start){_SCRIPT_END}|cargo run|go run|"
            r"uvicorn|"
            r"flask run|manage\.py runserver|docker compose up)\b",
        ),
    )
)
# A failure in the output; or a result that starts with "error", how the importers mark a
# call the harness flagged as failed (`is_error`), with or without its text; or Claude
# Code's "Exit code 1" heading a command's output, all a Markdown export keeps of the flag.
# A test runner's count of failures in its own words: pytest, jest "1 failed", bun and
# vitest "1 fail", mocha "1 failing"; bun's, jest's and vitest's mark of a failed test,
# which a space follows (a prompt's git status, "[$✘!+?]", copied with a Cursor terminal's
# output, made each run of gpt-crawler's `yarn tsc` fail, "Done in 2.15s" too).
_FAILED = re.compile(
    r"\A\s*error\b|[✗✕✘](?=\s)|"
    r"\b(?:[1-9]\d* (?:fail(?:ed|ing|ures?)?|errors?)\b|FAILED\b|FAIL\b|Traceback|Error:|"
    r"error(?:\[\w+\])?:|"
    r"Exception\b|command failed|(?i:exit (?:code|status)) [1-9]|npm ERR!|command not found|"
    r"No module named|cannot find|not found)",
)
# ...and of passes: "3 passed", bun's "3 pass", mocha's "3 passing", golangci-lint's "0
# issues."; a check mark (no word boundary before it: it is no word character)
_PASSED = re.compile(
    r"[✓✔]|\b(?:\d+ pass(?:ed|ing)?\b|passed|all (?:checks|tests) passed|"
    r"success(?:ful(?:ly)?)?|succeeded|ok\b|"
    r"OK\b|0 (?:errors|issues)\b|no (?:issues|errors|problems) found|found 0|built in|"
    r"compiled|done in|Successfully installed)",
    re.IGNORECASE,
)
# what runs before the command proper: moving into the project, activating its virtualenv
_CD_PREFIX = re.compile(
    r"^(?:(?:cd\s+(?:\"[^\"]*\"|'[^']*'|\S+)|(?:source\s+|\.\s+)?\S*activate(?:\.ps1|\.bat)?)"
    r"\s*(?:&&|;)\s*)+",
    re.IGNORECASE,
)
# what an agent chains after the command to narrate it ("bun install && echo 'Dependencies
# installed'"): not part of how to run it
_ECHO_SUFFIX = re.compile(r"(?:&&|;)[ \t]*echo\b[^&|;]*$")  # from the operator: linear
# what an agent pipes a command's output through to read it in its terminal ("bun test |
# cat", "pytest -x 2>&1 | tail -50"): not part of how to run it
_PAGERS = frozenset({"cat", "head", "tail", "less", "more"})


def _without_pager(command: str) -> str:
    """COMMAND without the pagers piped after it (three at most: each is one more pass
    over it) and a `2>&1` before them (split by hand: a pattern with a repeated optional
    flag backtracks on a long run of spaces)."""
    for _ in range(3):
        head, bar, tail = command.rpartition("|")
        words = tail.split()
        if (
            not head.strip()
            or head.endswith("|")  # `||`: an or, not a pipe
            or not words
            or words[0] not in _PAGERS
            or len(words) > 3
            or not all(w.lstrip("-+").isalnum() for w in words[1:])
        ):
            return command
        command = head.rstrip().removesuffix("2>&1").rstrip()
    return command


# the line that says what went wrong, best first: an exception, a compiler's or linter's
# "error:", the failure count; a bare "FAILED" says least
_ERROR_LINES = tuple(
    re.compile(rx)
    for rx in (
        r"\b[A-Z]\w*(?:Error|Exception)\b:?[^|]{0,160}",
        r"\b(?i:error)(?:\[\w+\])?:[^|]{3,160}",
        r"FAILED [^|]{3,160}",
        r"--- FAIL: \S{1,160}",  # go test's failed test by its name
        r"[✗✕✘] [^|\n]{3,160}",  # bun's, jest's, vitest's failed test by its name
        r"\b\d+ fail(?:ed|ing)?\b[^|]{0,80}",
    )
)
# an install that names packages ("pip install seaborn"), not the project's own set-up
# ("pip install -r requirements.txt", "npm install", "uv sync")
_NAMES_PACKAGES = re.compile(
    r"\b(?:install|add|i|get)\s+(?!-r\b|-e\s+\.|--requirement|\.\s*$)(?:-\S+\s+)*[A-Za-z@]"
)
# A command that adds named packages to the project's manifest (go.mod, package.json,
# pyproject.toml, Cargo.toml, composer.json): the package manager and its verb. `pip
# install` is not one: it changes the environment, not the project. Options are skipped
# (with the value of those that take one); a requirements file, an editable or local
# install and an operand the shell would expand name no package.
_ADDS_PACKAGES = re.compile(
    r"^(?:go get|(?:npm|pnpm|yarn|bun) (?:install|add|i)|uv add|poetry add|cargo add|"
    r"composer require)\s"
)
_OPTION_WITH_VALUE = frozenset(
    {"-i", "--index-url", "--extra-index-url", "-c", "--constraint", "--target", "-t", "--prefix"}
)
# what an install prints when it added something, and when it did not (pip prints "ERROR:
# pip's dependency resolver ..." above "Successfully installed": the report wins)
_INSTALLED = re.compile(
    r"Successfully installed|\bgo: added\b|\badded \d+ packages?\b|\binstalled\b|\bAdding\b|"
    r"\bAdded\b|Resolved \d+ packages",
)
_NOT_INSTALLED = re.compile(
    r"\bERROR\b|\berror\b|No matching distribution|Could not (?:find|resolve)|\bE404\b|ERR!",
)
# A command that takes named packages out of the manifest, and `go get X@none` (Go's way).
# `go mod tidy` drops what nothing imports but names none of it, so it is not read.
_REMOVES_PACKAGES = re.compile(
    r"^(?:(?:npm|pnpm) (?:uninstall|remove|rm|un|r)|yarn remove|bun (?:remove|rm)|uv remove|"
    r"poetry remove|cargo (?:remove|rm)|composer remove)\s"
)
_GO_NONE = "@none"
# what a removal prints when it took something out, and when it did not ("not present", a
# package the manifest does not list)
_UNINSTALLED = re.compile(
    r"\bremoved \d+ packages?\b|\bpackages? removed\b|\bUninstalled\b|\bRemoving\b|"
    r"\b\d+ removals?\b|Packages: -\d|\bgo: removed\b|Resolved \d+ packages",
)
_NOT_UNINSTALLED = re.compile(
    r"\berror\b|ERR!|not (?:found|present|in dependencies)|isn't specified|could not be found",
    re.IGNORECASE,
)
_NO_PACKAGE = re.compile(r"^(?:-r|--requirement|-e|--editable)$|^[.~/]|[$*`{}]")
# what a package manager takes as a package: a name, a scope, a module path, a version
# ("@types/node", "golang.org/x/term@v0.40.0", "pytest-xdist==3.5.0", "serde@^1"); a
# word of other characters (a mangled byte, U+FFFD) is none
_PACKAGE_NAME = re.compile(r"[@\w][\w@./:+~^=<>!,\[\]-]{0,200}", re.ASCII)
# a run of one chosen test ("pytest x.py::test_a", "-k name") is no way to run the tests
_ONE_TEST = re.compile(r"::|\s-k\s|\s--grep\s|\s-t\s|\s-run\s")
# an operand that names a configuration file chooses no files ("tsc -p tsconfig.json")
_CONFIG_FILE = re.compile(r"\.(?:json|toml|ya?ml|ini|cfg|conf)$")
_EXTENSION = re.compile(r"\.[A-Za-z]{1,5}$")
# the script an interpreter runs is the program, not a chosen file ("python manage.py test")
_SCRIPT_RUN = re.compile(
    r"^\s*(?:python[\d.]*|node|ruby|php|bash|sh|bun|deno)\s+(?:-\S+\s+)*\S+\.\w+"
)


def on_chosen_files(command: str) -> bool:
    """Whether COMMAND checks chosen files ("bun test src/cart.test.ts"), not the whole
    project: a way to run them, which must not replace the project's own in Commands. A
    chosen file or folder is an operand with an extension ("eslint src/a.ts") or a path
    into the project ("bun test src/domain", "pytest tests/unit"); a top folder ("pytest
    tests", "ruff check ./src"), a glob ("src/*.ts", "./...") or a configuration file
    chooses none. Token by token: one regular expression of both shapes backtracked
    quadratically on a long path (200 s for 100,000 characters)."""
    for token in _SCRIPT_RUN.sub("", command, count=1).split():
        name = token.strip("'\"").removeprefix("./")
        if not name or name[0] in "-." or "*" in name:
            continue
        if "/" in name.rstrip("/") or (_EXTENSION.search(name) and not _CONFIG_FILE.search(name)):
            return True
    return False


# `git commit`, after git's own options ("git -C repo -c user.name=x commit"); possessive,
# as "-C -x" reads both as one option with its value and as two options: backtracking
# through every reading of "git -C -x -C -x ... nope" took time doubling with each pair
_GIT_OPTIONS = r"\bgit\s+(?:-[Cc]\s+\S+\s+|--(?:git-dir|work-tree)\s+\S+\s+|-\S+\s+)*+"
_GIT_COMMIT = re.compile(_GIT_OPTIONS + r"commit\b")
COMMIT_SUBJECT_CHARS = 100  # git advises 50-72 for a subject line; past this it is cut
# a commit line of git's is the -m message that starts as it does, for this many characters
# (a log cuts or wraps a long line further on)
COMMIT_MATCH_CHARS = 20
# git's line for a commit it made: "[main 40c1a2b] Add the parser" (a first commit's
# "[main (root-commit) 40c1a2b] ..."), up to its stat line ("1 file changed, ...", after a
# space where a log keeps the output as one line, or " | ") or the line's end. Bounded,
# and no branch name holds "[" or a space: a result of 100,000 "[" took minutes to scan
# otherwise.
_COMMIT_MADE = re.compile(
    r"\[[^\[\]\s]{1,250}(?: \(root-commit\))? [0-9a-f]{7,40}\] ([^\n]{1,300}?)"
    r"(?=\s{1,3}(?:\|\s{1,3})?\d+ files? changed\b|[ \t]{0,20}(?:\n|$))"
)
# a `git commit` command's message: -m/--message with its quoted or bare value
_COMMIT_MESSAGE = re.compile(
    _GIT_OPTIONS + r"commit\b[^&|;]*?(?:\s-a?m|\s--message)(?:=|\s*)"
    r"(?:\"((?:[^\"\\]|\\.)*)\"|'([^']*)'|([^\s\"']\S*))"
)
_HEREDOC = re.compile(r"^\$\(\s*cat\s+<<-?\s*['\"]?\w+['\"]?\s*$")
_GIT_PUSH = re.compile(_GIT_OPTIONS + r"push\b")
# what a push that did not go through prints (a hook's or the server's refusal, nothing to
# push), besides what _FAILED knows
_PUSH_REFUSED = re.compile(
    r"\bfatal:|\berror:|\[(?:remote )?rejected\]|failed to push|Everything up-to-date",
    re.IGNORECASE,
)
# git's report of a push: "To github.com:me/moto.git", then "+ 6751ade...14ddacb kms-fix ->
# kms-fix (forced update)", " * [new branch] x -> x" or "ff6065a..65d6cf6 master -> master";
# "branch 'x' set up to track 'origin/x'" after -u. Bounded: a result is up to 4,000
# characters of anything.
_CREDENTIALS = re.compile(r"^([A-Za-z][\w+.-]*://)[^/@\s]+@")
_LOCAL_REMOTE = re.compile(r"(?:file:|[/.~]|[A-Za-z]:[\\/])")
_PUSHED_TO = re.compile(r"(?:^|[\s|])To (\S{1,300})")
_PUSHED_REF = re.compile(
    r"(?:\[new branch\]|\b[0-9a-f]{6,40}\.{2,3}[0-9a-f]{6,40})\s{1,20}\S{1,250} -> ([^\s()]{1,250})"
)
# a remote's address set or changed ("git remote add origin URL", "git remote set-url
# --push origin URL"), renamed or removed, each subcommand of a chained command in turn
_GIT_REMOTE = re.compile(
    _GIT_OPTIONS + r"remote\s+(add|set-url|rename|remove|rm)\s+(?:-\S+\s+)*+([^\s;&|]{1,100})"
    r"(?:\s+([^\s;&|]{1,300}))?"
)
_GIT_REMOTE_LIST = re.compile(_GIT_OPTIONS + r"remote\s+(?:-v|--verbose)\b")
# a line of `git remote -v`: "origin  https://github.com/me/dvc.git (push)"
_REMOTE_LISTED = re.compile(r"(?:^|[\s|])([\w.-]{1,100})\s+(\S{1,300}) \(push\)")
_TRACKING = re.compile(
    r"[Bb]ranch '[^'\n]{1,250}' set up to track (?:remote branch '([^'\n]{1,250})' from "
    r"'([^'\n]{1,250})'|'([^'/\n]{1,250})/([^'\n]{1,250})')"
)


def _subject(m: re.Match[str]) -> str:
    """The first line of a commit message _COMMIT_MESSAGE found; of a here-document's text
    (`-m "$(cat <<'EOF' ... EOF)"`) only while its lines are kept (a transcript keeps a call
    on one line, and the subject runs into the body there); "" when it has none."""
    text = next(g for g in m.groups() if g is not None).replace('\\"', '"')
    lines = [line.strip() for line in text.split("\n")]
    if lines[0].startswith("$("):
        if len(lines) == 1 or not _HEREDOC.match(lines[0]):
            return ""  # a command's output, or a here-document on one line: git's line says
        lines = lines[1:]
    return next((line for line in lines if line), "")


_PATH_ARG = re.compile(r"^\s*(\S*?\.[A-Za-z0-9_-]{1,12})(?=\s|$)")  # a.py, src/x.ts, .gitignore
# What a failed `mv` or `rm` prints (besides what _FAILED knows): it changed nothing.
_FILE_OP_FAILED = re.compile(
    r"No such file|cannot (?:stat|move|remove)|Permission denied|not under version control"
    r"|did not match any files|Directory not empty|Is a directory",
    re.IGNORECASE,
)
_CREATED = re.compile(r"\bFile created\b|\bcreated (?:the )?(?:new )?file\b", re.IGNORECASE)
# A rename or deletion that is no change of the project's: of its git internals, of what a
# build or a tool makes (node_modules/, dist/, __pycache__/), or of a backup an agent keeps
# for a moment ("mv a.ts a.ts.bak && touch a.ts", then back)
_NOT_THE_PROJECTS = re.compile(
    r"(?:^|/)(?:\.git|node_modules|dist|build|out|target|coverage|__pycache__|\.\w+_cache|"
    r"\.cache|\.next|\.venv|venv|tmp|temp)(?:/|$)|\.(?:bak|orig|tmp|swp)$|~$",
    re.IGNORECASE,
)


# What a shell says of a command it has not got (bash, zsh, Ubuntu's suggestion, Windows'
# cmd and PowerShell), of a folder `cd` cannot enter, and Python of a module `-m` names
# that is not installed: the words the command was given are checked against what it names.
_NO_COMMAND = re.compile(
    r"(?:^|\s)(?:\S+: )?(?:line \d+: )?([^\s:'\"]{1,200}): command not found(?!:)"
    r"|command not found: ([^\s'\"]{1,200})|Command '([^'\s]{1,200})' not found"
    r"|'([^'\s]{1,200})' is not recognized as an internal or external command"
    r"|The term '([^'\s]{1,200})' is not recognized"
)
_CD_FAILED = re.compile(
    r"\bcd: (?:[^\n:]{1,500}: No such file or directory|no such file or directory: )"
    r"|The system cannot find the path specified",
)
_CD_THEN = re.compile(r"\s*cd\s[^;&|\n]{1,500}&&")
_NO_MODULE = re.compile(r"No module named '?([\w.]{1,200})'?")
RESULT_TAIL = 4000  # where a long result's machine errors are looked for (at its end)


@dataclass(frozen=True)
class ToolStep:
    """One tool call of the session, in order, with the request it served."""

    at: datetime
    tool: str
    args: str
    result: str
    request: str  # the user's last request before it ("" when none reads as one)
    cwd: str = ""  # the session's working folder, when its transcript says
    project: str = ""  # the session's project

    @property
    def is_shell(self) -> bool:
        return tools.is_shell(self.tool)

    @property
    def is_edit(self) -> bool:
        return tools.is_edit(self.tool)

    @property
    def commits(self) -> list[str]:
        """The subjects of the commits a `git commit` made, one for each line of git's that
        reports one: as the command's `-m` message that line begins with says it (the log's
        copy of git's line may be cut short, run into the next line of output or wrapped
        by the terminal), else as git's line says it when the log kept it whole."""
        if not (self.is_shell and _GIT_COMMIT.search(self.command)):
            return []
        said = [s for s in (_subject(m) for m in _COMMIT_MESSAGE.finditer(self.command)) if s]
        out = []
        for m in _COMMIT_MADE.finditer(self.result):
            made = m.group(1).strip()
            start = " ".join(made.split())[:COMMIT_MATCH_CHARS]
            message = next((s for s in said if " ".join(s.split()).startswith(start)), None)
            if message is not None:
                out.append(message)
            elif "…" not in made:
                out.append(made)
        return out

    @property
    def pushed(self) -> tuple[str, str] | None:
        """(branch, remote) of a `git push` that git reported making: the remote's address
        when git printed it ("To github.com:me/moto.git"), else its name; None for a push
        that failed, pushed nothing or whose report the log did not keep."""
        if not (self.is_shell and _GIT_PUSH.search(self.command)):
            return None
        if self.failed or _PUSH_REFUSED.search(self.result):
            return None
        ref = _PUSHED_REF.search(self.result)
        track = _TRACKING.search(self.result)
        if ref is not None:
            branch = ref.group(1)
        elif track is not None:
            branch = track.group(1) or track.group(4)
        else:
            return None
        to = _PUSHED_TO.search(self.result)
        if to is not None:
            remote = self.public_remote(to.group(1))
            return None if remote is None else (branch, remote)
        if track is not None:
            return branch, track.group(2) or track.group(3)
        return None

    def public_remote(self, address: str) -> str | None:
        """ADDRESS as the pushed remote's entry names it, without the credentials a URL
        may carry (redacted on capture: of no use to anyone); None for a folder of this
        machine (a workflow's clone handing its branch back to the main checkout puts
        the work nowhere anyone else sees it) and for another project's repository."""
        remote = _CREDENTIALS.sub(r"\1", address)
        if _LOCAL_REMOTE.match(remote) or not self._project_s_repository(remote):
            return None
        return remote

    def remotes_set(self, known: dict[str, str]) -> None:
        """Update KNOWN (a remote's name -> its address) with what this command shows or
        does: `git remote -v`'s listing, `git remote add`, `set-url`, `rename`, `remove`."""
        if not self.is_shell or self.failed:
            return
        command = self.command
        if _GIT_REMOTE_LIST.search(command):
            for m in _REMOTE_LISTED.finditer(self.result):
                known[m.group(1)] = m.group(2)
        for m in _GIT_REMOTE.finditer(command):
            verb, name, value = m.groups()
            if verb in ("add", "set-url") and value:
                known[name] = value.strip("'\"")
            elif verb == "rename" and value:
                if name in known:
                    known[value] = known.pop(name)
            elif verb in ("remove", "rm"):
                known.pop(name, None)

    def _project_s_repository(self, remote: str) -> bool:
        """Whether the repository REMOTE names is the project's ("github.com:me/moto.git" is
        not the dvc project's, whatever folder the session ran in); case and punctuation
        aside ("ChangShuoRadioRecognition.git" is changshuo-radio-recognition's)."""
        name = re.split(r"[/:]", remote.rstrip("/"))[-1].removesuffix(".git")
        return not self.project or _squashed(name) == _squashed(self.project)

    @property
    def command(self) -> str:
        command = _without_pager(
            _ECHO_SUFFIX.sub("", _CD_PREFIX.sub("", self.args.strip())).rstrip()
        )
        # a trailing `2>&1` (the agent reading the errors too) says nothing of how to run it
        return command.removesuffix("2>&1").rstrip() or command

    @property
    def kind(self) -> str | None:
        """What the command is for (test, lint, build, ...), None for anything else."""
        return command_kind(self.command) if self.is_shell else None

    @property
    def failed(self) -> bool:
        return bool(_FAILED.search(self.result))

    @property
    def passed(self) -> bool:
        """It reports success and no failure (a silent result proves nothing)."""
        return not self.failed and bool(_PASSED.search(self.result))

    @property
    def not_run(self) -> bool:
        """Whether the command never got to run what it names, as its shell or interpreter
        said: no such command (`Command 'python' not found`), no such folder to `cd` into,
        no such runner module (`No module named pytest`). Its failure is the machine's,
        no verdict of the check; a project's module that a test run cannot import is one."""
        if not self.is_shell:
            return False
        result = self.result[-RESULT_TAIL:] if len(self.result) > RESULT_TAIL else self.result
        said = {re.split(r"[/\\]", w)[-1] for w in self.args.split()}
        if any(next(g for g in m.groups() if g) in said for m in _NO_COMMAND.finditer(result)):
            return True
        # `cd X && check`: the check did not run (after `cd X;` it ran, in another folder)
        if _CD_FAILED.search(result) and _CD_THEN.match(self.args):
            return True
        m = _NO_MODULE.search(result)
        return m is not None and m.group(1) == runner_of(self.command)

    @property
    def ran_through(self) -> bool:
        """It printed something and no failure: what a command that is no check (a
        script, a commit) shows when it works, in whatever words or language."""
        return not self.failed and bool(self.result.strip())

    @property
    def edited_path(self) -> str | None:
        """The file an edit names, as the project's people say it: below the working folder,
        or below the project's folder of another machine (`tools.below_project`)."""
        m = _PATH_ARG.match(self.args)
        if not m or not re.search(r"[/\\]|\.\w+$", m.group(1)):
            return None
        return self._named_in_project(m.group(1)) or m.group(1)

    def _named_in_project(self, path: str) -> str | None:
        """Absolute PATH as the project's people say it: below the working folder, or below
        the project's folder of another machine (`tools.below_project`); None when it lies
        in neither."""
        folder = self.cwd.rstrip("/\\")
        if folder and path.startswith((folder + "/", folder + "\\")):
            return path[len(folder) + 1 :]
        return tools.below_project(path, self.project)

    @property
    def changed_file(self) -> str | None:
        """The project's file an edit changed: its edited_path, unless that is an
        application's file below the home folder (Claude Code's plan in ~/.claude/plans/)."""
        path = self.edited_path if self.is_edit else None
        return None if path is None or tools.is_application_file(path) else path

    @property
    def packages_added(self) -> list[str]:
        """The packages this install command added, as it names them (`golang.org/x/term`,
        `pytest-xdist==3.5.0`): none when it failed or printed nothing (a log that kept
        no output proves nothing), or when it installs from a file or a folder."""
        named = self._packages(_ADDS_PACKAGES, _INSTALLED, _NOT_INSTALLED)
        return [p for p in named if not p.endswith(_GO_NONE)]

    @property
    def packages_removed(self) -> list[str]:
        """The packages this command took out of the project's manifest (`npm uninstall
        lodash`, `cargo remove serde`, `go get golang.org/x/term@none`), as it names them;
        none when it failed, printed nothing or named a package the manifest lacks."""
        if self.command.startswith("go get"):
            named = self._packages(_ADDS_PACKAGES, _UNINSTALLED, _NOT_UNINSTALLED)
            return [p.removesuffix(_GO_NONE) for p in named if p.endswith(_GO_NONE)]
        return self._packages(_REMOVES_PACKAGES, _UNINSTALLED, _NOT_UNINSTALLED)

    def _packages(
        self, verb: re.Pattern[str], done: re.Pattern[str], not_done: re.Pattern[str]
    ) -> list[str]:
        """The packages a package manager's command of VERB names, when its result says it
        did (DONE) or shows no failure (NOT_DONE, the result line's failure); none for a
        chained command, a silent result, or an operand that names a file, a folder or
        what the shell expands."""
        command = self.command
        m = verb.match(command) if self.is_shell else None
        if m is None or re.search(r"&&|\|\||[;|]", command) or not self.result.strip():
            return []
        if not done.search(self.result) and (self.failed or not_done.search(self.result)):
            return []
        out: list[str] = []
        skip = False
        for word in command[m.end() :].split():
            if skip:
                skip = False
            elif _NO_PACKAGE.search(word):
                return []
            elif word.startswith("-"):
                skip = word in _OPTION_WITH_VALUE
            elif _PACKAGE_NAME.fullmatch(name := word.strip("'\"")):
                out.append(name)
            else:
                return []
        return out

    @property
    def created_file(self) -> bool:
        """Whether the edit made its file (Claude Code's "File created successfully at")."""
        return self.changed_file is not None and bool(_CREATED.search(self.result))

    @property
    def file_operations(self) -> list[tools.FileOperation]:
        """The project's files and folders this shell command renamed, moved or deleted
        (`tools.shell_file_operations`), named as the project's people name them; none when
        it failed, and none of what lies outside the project or is none of its own."""
        if not self.is_shell or self.failed or _FILE_OP_FAILED.search(self.result):
            return []
        out = []
        for op in tools.shell_file_operations(self.args):
            path = self._in_project(op.path)
            to = self._in_project(op.to) if op.to is not None else None
            if path is not None and (op.to is None or to is not None):
                out.append(tools.FileOperation(path, to))
        return out

    def _in_project(self, path: str) -> str | None:
        """PATH as a path of the project's (relative to its folder), or None: outside it
        (above the working folder, another folder of the machine) or none of its own."""
        if path.startswith("/"):
            if tools.is_application_file(path):  # ~/.local/state/NAME: a tool's, no project's
                return None
            path = self._named_in_project(path) or ""
        path = path.removeprefix("./")
        if not path or path in (".", "..") or path.startswith("../"):
            return None
        return None if _NOT_THE_PROJECTS.search(path) else path


def _squashed(name: str) -> str:
    return re.sub(r"[^0-9a-z]", "", name.lower())


def command_kind(command: str) -> str | None:
    first = re.split(r"\s*(?:&&|\|\||;|\|)\s*", command, maxsplit=1)[0]
    for kind, rx in _KINDS:
        if rx.search(first):
            return kind
    return None


def runner_of(command: str) -> str:
    """The runner a command names ("python -m pytest -q x" -> "pytest", "pnpm test" -> "pnpm")."""
    words = [
        re.split(r"[/\\]", w)[-1].removesuffix(".exe")
        for w in command.split()
        if (not w.startswith("-") or w == "-m") and "=" not in w
    ]
    if len(words) >= 3 and words[0].startswith("python") and words[1] == "-m":
        return words[2]
    words = [w for w in words if w != "-m"]
    for w in words:
        if w not in ("python", "python3", "uv", "run", "poetry", "npx", "exec", "sudo", "env"):
            return w
    return words[0] if words else ""


_ROLE_PROMPT = re.compile(r"^(?:you are|act as|as an? \w+ (?:expert|engineer)|imagine you)\b", re.I)


def request_of(turn: tf.Turn) -> str:
    """What a turn asks or says, in a line: the first lines of its first prose paragraph,
    up to about 120 characters, or the slash command the user ran with words after it
    ("/pr-review 154", `core.text.slash_command`: the harness's record of it is no prose);
    "" for a pasted document (a form, a template, a log says nothing of the request) or a
    role prompt ("You are an expert on ...")."""
    for item in turn.items:
        if not isinstance(item, tf.Text):
            continue
        if typed := slash_command(item.content):
            return clean(typed, limit=120)
        if prose.looks_pasted(item.content):
            continue
        said = ""
        for line in prose.prose_of(item.content).split("\n"):
            line = re.sub(r"@\S+", "", line).strip()
            if not line:
                if len(said) >= 20:
                    break  # the first paragraph is the request (a title line is not all)
                continue
            if _ROLE_PROMPT.match(line) or prose.code_share(line) >= 0.3:
                continue
            said = f"{said} {line}".strip()
            if len(said) >= 40:
                break
        if len(said.split()) >= 3 or len(said) >= 12:
            return clean(said, limit=120)
    return ""


# a go-ahead, in the languages of the sessions read: "No problem, the folder is private"
# ("Nao tem problema, a pasta nao é publica") says why nothing needs doing, not what to do
_YES = re.compile(
    r"^(?:yes|yeah|yep|ok(?:ay)?|sure|sim|s[ií]|oui|ja|go on|continue"
    r"|no (?:problem|worries)|n[aã]o (?:tem|h[aá]) problema|sem problema|tudo bem)\b",
    re.I,
)


def names_a_task(request: str) -> bool:
    """Whether a request says what to do: not a confirmation ("Yes, go on"), a question,
    or a few words of status ("I restarted it")."""
    return (
        len(long_words(request)) >= 4
        and "?" not in request
        and not _YES.match(request)
        and not request.endswith("…")
    )


def tool_steps(src: SourceTranscript) -> list[ToolStep]:
    steps: list[ToolStep] = []
    request = ""
    # a session without a recorded working folder: the one its tool calls show, so that
    # its edits are named as the project's people name them (`src/cart.ts`)
    cwd = str(getattr(src.transcript.meta, "cwd", None) or "") or tools.folder_of_project(
        src.transcript.turns, src.project, src.memory_root
    )
    for turn in src.transcript.turns:
        if turn.role == "user":
            if any(isinstance(i, tf.Text) for i in turn.items):
                # the edits that follow serve this turn; when it names no task (a pasted
                # document, a confirmation, a question, a status note) they are filed nowhere
                asked = request_of(turn)
                request = asked if names_a_task(asked) else ""
            continue
        for item in turn.items:
            if isinstance(item, tf.ToolCall):
                steps.append(
                    ToolStep(
                        utc(turn.time),
                        item.tool,
                        item.args,
                        item.result or "",
                        request,
                        cwd,
                        src.project,
                    )
                )
    return steps


def _code(text: str, limit: int = 160) -> str:
    text = " ".join(text.split()).replace("`", "'")
    if len(text) > limit:
        text = text[: limit - 1].rstrip() + "…"
    return f"`{text}`"


# A shell's prompt copied into a result with the output ("edobry@host task#002 % minsky git
# pr Error: ...", bash's "dorgham@host:/mnt/d/DocGen$ python3 ...", a virtualenv's "(venv) "
# before it): the error ends where the next prompt starts.
_SHELL_PROMPT = re.compile(r"\s(?:\([\w.-]+\) )?\S+@\S+(?: \S+ [%$#]|:\S*[$#])(?=\s|$)")


def _error_of(result: str) -> str:
    """The line of RESULT that says what went wrong, without a shell prompt after it: the
    same error seen in two folders reads the same, so it is kept once."""
    for rx in _ERROR_LINES:
        m = rx.search(result)
        if m:
            return _SHELL_PROMPT.split(m.group(0))[0].strip(" |=")
    return _EXIT_HEADING.sub("", result).strip(" |=")


# Claude Code's heading of a failed command's output: the error is what follows
_EXIT_HEADING = re.compile(r"\A\s*Exit code \d+\s*")


_KIND_LABEL = {
    "test": "Run the tests",
    "lint": "Lint",
    "typecheck": "Type-check",
    "build": "Build",
    "format": "Format",
    "install": "Install the dependencies",
    "run": "Run it",
}


def coding_offline(src: SourceTranscript, key: str) -> list[KnowledgeChange]:
    project = src.project
    if project == "general":
        return []
    path = project_context_file(project)
    steps = tool_steps(src)
    out: list[KnowledgeChange] = []
    seen: set[str] = set()
    for step in steps:  # the commands that ran and passed
        kind = step.kind
        if (
            kind is None
            or not step.passed
            or step.command in seen
            or _ONE_TEST.search(step.command)
            or (kind == "install" and _NAMES_PACKAGES.search(step.command))
        ):
            continue  # one package added is a fix or a one-off, not how to set a project up
        seen.add(step.command)
        runner = runner_of(step.command)
        # one live command a kind and runner for the whole project, and one for chosen files
        scope = " files" if on_chosen_files(step.command) else ""
        out.append(
            KnowledgeChange(
                path,
                "append",
                SECTION_COMMANDS,
                f"{_KIND_LABEL[kind]}: {_code(step.command)}",
                src.provenance(step.at, key),
                subject=f"command {kind} {runner}{scope}",
            )
        )
    out += _fixes(src, key, path, steps)
    out += _flag_fixes(src, key, path, steps)
    out += _changes(src, key, path, steps)
    out += _pushed(src, key, path, steps)
    out += _dependencies(src, key, path, steps)
    unique: dict[tuple[str, str], KnowledgeChange] = {}  # the same fix seen twice: once
    for change in out:
        unique.setdefault((change.section, change.content), change)
    return list(unique.values())


def _fixes(
    src: SourceTranscript, key: str, path: str, steps: list[ToolStep]
) -> list[KnowledgeChange]:
    """An error a command printed, the edits or installs after it, then the same command
    (a check: the same kind and runner) passing: the error and what made it go away."""
    out: list[KnowledgeChange] = []
    for i, failing in enumerate(steps):
        # a command its machine could not run (no such command, `python` where only
        # `python3` is) failed for the machine's set-up: no edit after it fixed the project
        if (
            failing.is_shell
            and failing.failed
            and failing.kind != "install"
            and not failing.not_run
        ):
            found = _fix_after(failing, steps[i + 1 :])
            if found is not None:
                text, at = found
                out.append(
                    KnowledgeChange(path, "append", SECTION_FIXES, text, src.provenance(at, key))
                )
    return out


def _fix_after(failing: ToolStep, later_steps: list[ToolStep]) -> tuple[str, datetime] | None:
    """(entry, time) of what made FAILING pass among LATER_STEPS, or None: the files edited
    and packages installed before its next run, when that run passed ("fixed by 1 edit"
    names nothing: no entry). A check (tests, lint, build) must say it passed; any other
    command must run through (a script that stopped on "No module named 'seaborn'" and
    printed its report after `pip install seaborn`)."""
    edited: list[str] = []
    installed: list[str] = []
    for later in later_steps:
        if later.changed_file and later.changed_file not in edited:
            edited.append(later.changed_file)
        if later.kind == "install" and later.passed and later.command not in installed:
            installed.append(later.command)
        if not _same_run(failing, later):
            continue
        check = failing.kind is not None
        if not (later.passed if check else later.ran_through) or not (edited or installed):
            return None  # still failing: the next failure tells its own story
        how = [f"editing {', '.join(_code(p, 80) for p in edited[:4])}"] if edited else []
        how += [f"running {_code(c, 80)}" for c in installed[:2]]
        then = (
            ("it passed" if check else "it ran")
            if later.command == failing.command
            else f"{_code(later.command, 80)} passed"
        )
        error = f"{_code(_error_of(failing.result))} from {_code(failing.command, 80)}"
        return f"{error} — fixed by {' and '.join(how)}; then {then}", later.at
    return None


def _same_run(failing: ToolStep, later: ToolStep) -> bool:
    """Whether LATER runs what FAILING ran: the same check (kind and runner), or else the
    very same command."""
    if not later.is_shell:
        return False
    if failing.kind is not None:
        return later.kind == failing.kind and runner_of(later.command) == runner_of(failing.command)
    return later.command == failing.command


_GIT_OPTION = re.compile(r"^git\s+(?:-c\s+\S+\s+|-C\s+\S+\s+)+")
_FORCE = re.compile(r"^--?(?:f|force.*|no-verify|yes|y)$")
# a flag that only prints (usage, a version) makes any command pass and fixes nothing
_PRINTS_ONLY = re.compile(r"^--?(?:h|help|version|V)$")


def _verb(command: str) -> str:
    """A command's program and subcommand ("git -c a=b commit -m x" -> "git commit")."""
    first = re.split(r"\s*(?:&&|\|\||;|\|)\s*", command, maxsplit=1)[0]
    words = [w for w in _GIT_OPTION.sub("git ", first).split() if not w.startswith("-")]
    return " ".join(words[:2])


def _flags(command: str) -> set[str]:
    """The flags COMMAND's program is given: of its first command only, as `_verb` names
    it (`sed -n 1,4p f | od -c` gives `sed` no `-c`: a flag of another program of the
    pipeline is none of the command's)."""
    first = re.split(r"\s*(?:&&|\|\||;|\|)\s*", command, maxsplit=1)[0]
    return {w.split("=", 1)[0] for w in first.split() if w.startswith("-")}


def _operands(command: str) -> set[str]:
    """The words of COMMAND that are no flag (program, subcommands, arguments)."""
    return {w for w in command.split() if not w.startswith("-")}


def _flag_fixes(
    src: SourceTranscript, key: str, path: str, steps: list[ToolStep]
) -> list[KnowledgeChange]:
    """A command that failed, then the same command with a flag added that went through
    ("git commit" failing on a signing key, "git commit --no-gpg-sign" working): the flag
    is the fix. The same command: every word of the failing one is in the later one (a
    flag's value may be added), unless the error names the flag ("--repo is required");
    `minsky session list --json` passing after `minsky session start x` failed fixed
    nothing. Forcing (-f, --force, --no-verify) is never one to remember, and --help or
    --version makes any command "pass"."""
    out: list[KnowledgeChange] = []
    for i, failing in enumerate(steps):
        if not (failing.is_shell and failing.failed and failing.kind is None):
            continue
        verb = _verb(failing.command)
        for later in steps[i + 1 :]:
            if not later.is_shell or _verb(later.command) != verb:
                continue
            if later.failed:
                break  # the next failure tells its own story
            added = sorted(_flags(later.command) - _flags(failing.command))
            same = _operands(failing.command) <= _operands(later.command) or any(
                f in failing.result for f in added
            )
            if (
                added
                and same
                and later.ran_through
                and not any(_FORCE.match(f) or _PRINTS_ONLY.match(f) for f in added)
            ):
                out.append(
                    KnowledgeChange(
                        path,
                        "append",
                        SECTION_FIXES,
                        f"{_code(_error_of(failing.result))} from {_code(verb, 80)} — fixed by "
                        f"adding {', '.join(_code(f, 40) for f in added)}",
                        src.provenance(later.at, key),
                    )
                )
            break
    return out


def _changes(
    src: SourceTranscript, key: str, path: str, steps: list[ToolStep]
) -> list[KnowledgeChange]:
    """The files changed, grouped by the request they served: edited, renamed or moved
    (a file moved twice by its first and last names, one moved back not at all) and
    deleted."""
    by_request: dict[str, tuple[datetime, _Changed]] = {}
    for step in steps:
        if not step.request:  # a change is filed with the request it served
            continue
        if step.changed_file is None and not step.file_operations:
            continue
        by_request.setdefault(step.request, (step.at, _Changed()))[1].take(step)
    out = []
    for request, (at, changed) in by_request.items():
        said = changed.said()
        if said:
            out.append(
                KnowledgeChange(
                    path,
                    "append",
                    SECTION_CHANGES,
                    f"{said} — for: {request}",
                    src.provenance(at, key),
                )
            )
    return out


def _pushed(
    src: SourceTranscript, key: str, path: str, steps: list[ToolStep]
) -> list[KnowledgeChange]:
    """Where the session's last push went: the project's one live "pushed" entry. A remote
    git named only ("set up to track 'origin/x'", its "To ..." line lost) is named by the
    address the session gave it or listed for it before, when it did."""
    remotes: dict[str, str] = {}
    last = None
    for step in steps:
        step.remotes_set(remotes)
        to = step.pushed
        if to is None:
            continue
        branch, remote = to
        if remote in remotes:  # a name the session gave an address (an address is no key)
            address = step.public_remote(remotes[remote])
            if address is None:
                continue
            remote = address
        last = (step, branch, remote)
    if last is None:
        return []
    step, branch, remote = last
    return [
        KnowledgeChange(
            path,
            "append",
            SECTION_STATE,
            f"The work is pushed to branch {_code(branch, 120)} of {_code(remote, 200)}",
            src.provenance(step.at, key),
            subject="pushed",
        )
    ]


def _dependencies(
    src: SourceTranscript, key: str, path: str, steps: list[ToolStep]
) -> list[KnowledgeChange]:
    """The packages the session added to the project's manifest or took out of it, one
    entry each, with the command that did it: a standing fact of the project, the same
    whichever session did it, so one live entry a package (its subject), the later
    (a removal after an addition, an addition again after a removal) winning."""
    out = []
    for step in steps:
        for verb, packages in (("Added", step.packages_added), ("Removed", step.packages_removed)):
            for package in packages:
                name = _VERSION_SUFFIX.sub("", package) or package
                out.append(
                    KnowledgeChange(
                        path,
                        "append",
                        SECTION_CHANGES,
                        f"{verb} the dependency {_code(package, 120)} with {_code(step.command)}",
                        src.provenance(step.at, key),
                        subject=f"dependency {name.lower()}",
                    )
                )
    return out


# a package's version as an install names it: "x==3.5.0", "x@^1.2", "x@latest", "x@v0.40.0"
_VERSION_SUFFIX = re.compile(r"(?<=.)(?:[=<>~!]=?|@)[^/]*$")


def _listed(items: list[str]) -> str:
    return ", ".join(items[:6]) + (f" and {len(items) - 6} more" if len(items) > 6 else "")


@dataclass
class _Changed:
    """What the steps serving one request did to the project's files, in order."""

    edited: list[str] = field(default_factory=list)
    renamed: dict[str, str] = field(default_factory=dict)  # first name -> last name
    deleted: list[str] = field(default_factory=list)
    created: set[str] = field(default_factory=set)  # made here: deleted again, no change

    def take(self, step: ToolStep) -> None:
        """What STEP did to the project's files: an edit, or a shell's file operations."""
        if step.changed_file is not None:
            self.edit(step.changed_file, step.created_file)
        for op in step.file_operations:
            self.operate(op)

    def edit(self, path: str, created: bool = False) -> None:
        if path not in self.edited:
            self.edited.append(path)
        if created:
            self.created.add(path)
        if path in self.deleted:  # deleted and made again: changed, not gone
            self.deleted.remove(path)

    def operate(self, op: tools.FileOperation) -> None:
        first = next((a for a, b in self.renamed.items() if b == op.path), op.path)
        if op.to is None:  # deleted: under the name it had before this request
            self.renamed.pop(first, None)
            self.edited = [p for p in self.edited if p not in (op.path, first)]
            if first not in self.deleted and first not in self.created:
                self.deleted.append(first)
        elif op.to == first:  # moved back
            self.renamed.pop(first, None)
        else:
            self.renamed[first] = op.to

    def paths(self) -> list[str]:
        """The files it leaves changed: edited, under their new names, and deleted."""
        return list(dict.fromkeys([*self.edited, *self.renamed.values(), *self.deleted]))

    def said(self) -> str:
        parts = []
        if self.edited:
            parts.append("changed " + _listed([_code(p, 80) for p in self.edited]))
        if self.renamed:
            pairs = [f"{_code(a, 80)} → {_code(b, 80)}" for a, b in self.renamed.items()]
            parts.append("renamed " + _listed(pairs))
        if self.deleted:
            parts.append("deleted " + _listed([_code(p, 80) for p in self.deleted]))
        text = "; ".join(parts)
        return text[:1].upper() + text[1:]


def session_outcome(src: SourceTranscript) -> list[str]:
    """What the session did, as its tool calls show it (for the journal): the files it
    changed, the commits it made, the checks that passed or still fail."""
    steps = tool_steps(src)
    return [
        part for part in (_edits_done(steps), _commits_done(steps), *_checks_done(steps)) if part
    ]


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n > 1 else ''}"


def _edits_done(steps: list[ToolStep]) -> str:
    changed = _Changed()
    for step in steps:
        changed.take(step)

    def names(files: list[str]) -> str:
        return ", ".join(p.rsplit("/", 1)[-1] for p in files[:4]) + (
            ", …" if len(files) > 4 else ""
        )

    if any(s.is_edit and not s.edited_path for s in steps):  # a log that does not name them all
        edits = sum(s.is_edit for s in steps)
        # the files its edits name (a rename or a deletion is no edit: not counted here)
        return f"made {_plural(edits, 'edit')}" + (
            f" ({names(changed.edited)})" if changed.edited else ""
        )
    files = changed.paths()
    return f"changed {_plural(len(files), 'file')} ({names(files)})" if files else ""


def _commits_done(steps: list[ToolStep]) -> str:
    """'committed "SUBJECT", ...': the commits the session made, its first and last named
    (a commit's subject is what its author said the change does; the first is most often
    the change the session was for, the last where it ended)."""
    subjects = list(dict.fromkeys(subject for step in steps for subject in step.commits))
    if not subjects:
        return ""
    named = subjects if len(subjects) <= 2 else [subjects[0], subjects[-1]]
    said = f" and {_plural(len(subjects) - 2, 'other')} between" if len(subjects) > 2 else ""
    return (
        "committed " + ", ".join(f'"{clean(s, limit=COMMIT_SUBJECT_CHARS)}"' for s in named) + said
    )


_CHECKS = ("test", "lint", "typecheck", "build")


def _checks_done(steps: list[ToolStep]) -> tuple[str, str]:
    """("checks passed: ...", "still failing: ...") of the check commands' last runs; a
    run of one chosen test says less than the suite's, and is shown only when it is all.
    A check is still failing only when nothing after its failure says otherwise: a run that
    never ran it (`ToolStep.not_run`) is no result; a later run of the same command that
    prints something and no failure ends it (`ran_through`; passed when it says so: "0
    issues.", "Done in 2.15s"), one that prints nothing (its output lost, a run in the
    background) does not; and the whole project's run of the same check passing covers the
    runs of chosen files before it."""
    last: dict[str, ToolStep] = {}
    for step in steps:
        if step.kind not in _CHECKS or step.not_run:
            continue
        before = last.get(step.command)
        if (
            step.passed
            or step.failed
            or (before is not None and before.failed and step.ran_through)
        ):
            last[step.command] = step
        if step.passed and not (on_chosen_files(step.command) or _ONE_TEST.search(step.command)):
            for command in [c for c, run in last.items() if run.failed and _covers(step, c)]:
                del last[command]
    general = {c: step for c, step in last.items() if not _ONE_TEST.search(c)}
    last = general or dict(list(last.items())[-1:])
    passed = [_code(c, 60) for c, step in last.items() if step.passed]
    failing = [_code(c, 60) for c, step in last.items() if step.failed]
    return (
        "checks passed: " + ", ".join(passed[:3]) if passed else "",
        "still failing: " + ", ".join(failing[:2]) if failing else "",
    )


def _covers(whole: ToolStep, command: str) -> bool:
    """Whether WHOLE, a run of the project's check, covers COMMAND, a run of the same kind
    and runner on chosen files (`golangci-lint run main.go` by `golangci-lint run`)."""
    return (
        command != whole.command
        and (on_chosen_files(command) or bool(_ONE_TEST.search(command)))
        and command_kind(command) == whole.kind
        and runner_of(command) == runner_of(whole.command)
    )


CODING = Extractor(
    "coding",
    1,
    "what the tool calls show: commands that passed, files changed and why, packages added "
    "or removed, errors and their fixes, where the work was pushed -> projects/SLUG/context.md",
    ("knowledge/projects/*/context.md",),
    frozenset({"append", "supersede"}),
    coding_offline,
)

__all__ = [
    "CODING",
    "SECTION_COMMANDS",
    "ToolStep",
    "coding_offline",
    "command_kind",
    "names_a_task",
    "runner_of",
    "session_outcome",
    "tool_steps",
]
