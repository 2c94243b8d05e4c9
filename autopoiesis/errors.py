"""One exception hierarchy. Every message tells the user what to do next; the CLI prints
it without a traceback and exits non-zero.

The tree (`*`: caught by its own name somewhere; the others are caught only as an
AutopoiesisError, by the CLI, the hook runner, the MCP server or the daemon, and exist
for their message and for programs that use the library):

    AutopoiesisError *
    ├── NotAMemoryRepo
    ├── ConfigError *
    ├── TranscriptFormatError *
    │   └── TimestampError *
    ├── FrontmatterError *
    ├── ImmutableTranscriptError
    ├── CaptureError *
    ├── ImportFormatError *
    │   └── UnknownFormatError *
    ├── GitError *
    │   ├── SyncError *
    │   │   └── SyncConflictError *
    │   └── PrivateKnowledgeError
    ├── HookInstallError *
    ├── UnsafePathError *
    ├── LLMError *
    │   ├── LLMUnavailableError *
    │   └── LLMResponseError *
    ├── TopicError
    ├── BudgetTooSmallError *
    ├── GateDecisionNotFound
    ├── SearchIndexError *
    │   ├── EmbedderError
    │   └── IndexOutdatedError *
    │       └── IndexBusyError
    ├── ChangeRejectedError *
    ├── ExtractionError
    ├── UnknownExtractorError
    ├── ReplayError
    ├── HookPayloadError
    ├── KnowledgeFileError *
    ├── InvalidArgumentError
    ├── QuestionSetError
    └── ProgramNotFoundError
"""

from __future__ import annotations


class AutopoiesisError(Exception):
    """Base of every error the user can act on."""

    exit_code = 1


class NotAMemoryRepo(AutopoiesisError):
    """The folder is not a memory repository."""


class ConfigError(AutopoiesisError):
    """memory-config.yaml is malformed or holds an invalid value."""


class TranscriptFormatError(AutopoiesisError):
    """A transcript file does not follow the transcript format."""


class TimestampError(TranscriptFormatError):
    """A timestamp is not a real time of a conversation (unparseable, NaN, or outside 1970-2200)."""


class FrontmatterError(AutopoiesisError):
    """A Markdown file's YAML frontmatter is not closed, not valid YAML, or not a mapping."""


class ImmutableTranscriptError(AutopoiesisError):
    """Something tried to change a closed transcript under raw/."""


class CaptureError(AutopoiesisError):
    """A capture event was refused (bad session id, out-of-order event, ...)."""


class ImportFormatError(AutopoiesisError):
    """A file given to `autopoiesis import` could not be read in the chosen format."""


class UnknownFormatError(ImportFormatError):
    """No importer recognises a file given to `autopoiesis import` (with `--format auto`)."""


class GitError(AutopoiesisError):
    """A git operation failed."""


class HookInstallError(AutopoiesisError):
    """Hooks could not be installed without clobbering something."""


class UnsafePathError(AutopoiesisError):
    """A path would land outside the memory repository (or in a forbidden part of it)."""


class LLMError(AutopoiesisError):
    """Base of the errors of the LLM client (autopoiesis.llm)."""


class LLMUnavailableError(LLMError):
    """The LLM endpoint could not answer: retries exhausted, timeouts, refused or misconfigured."""


class LLMResponseError(LLMError):
    """The LLM answered, but not with what was asked (invalid JSON, wrong schema), even after a
    repair attempt."""


class TopicError(AutopoiesisError):
    """A topic file under topics/ is invalid; the message names the file, the field and what to
    write."""


class BudgetTooSmallError(AutopoiesisError):
    """The context budget cannot hold the parts that are never dropped (system prompt and identity
    files)."""


class GateDecisionNotFound(AutopoiesisError):
    """`autopoiesis gate feedback` was given a decision id that is not in the gate log."""


class SearchIndexError(AutopoiesisError):
    """The search index could not be opened, built or queried."""


class EmbedderError(SearchIndexError):
    """The configured embedder is unavailable or answered wrongly (missing package or model, server
    down)."""


class IndexOutdatedError(SearchIndexError):
    """memory.db cannot answer a search now and is being brought up to date meanwhile: built
    by another version of the chunker, schema or embedder and too large to rebuild while a
    search waits (rebuilt in the background), or a first build under way. A search answers
    with git grep meanwhile."""


class IndexBusyError(IndexOutdatedError):
    """The files changed since memory.db was written, and another process (a rebuild, a
    catch-up) holds the index longer than a search waits to catch up: the index is behind,
    so the search answers with git grep rather than keep an agent's prompt waiting."""


class ChangeRejectedError(AutopoiesisError):
    """A proposed knowledge change broke the writer's guard (path outside knowledge/, inside raw/ or
    identity/, an action its extractor did not declare); nothing of the batch was written."""


class ExtractionError(AutopoiesisError):
    """An extractor could not process a transcript; it stays pending for a retry."""


class UnknownExtractorError(AutopoiesisError):
    """An extractor name that is not registered was asked for."""


class ReplayError(AutopoiesisError):
    """A replay could not start or finish (branch exists, no base branch, empty raw/, ...)."""


class SyncError(GitError):
    """`autopoiesis sync` stopped: the remote is missing or unreachable, its history was
    rewritten, or a push was refused. The message says what happened and what to run."""


class PrivateKnowledgeError(GitError):
    """Private knowledge (git-crypt) cannot be set up, unlocked, read or pushed as asked."""


class SyncConflictError(SyncError):
    """`autopoiesis sync` stopped at a merge conflict a person has to resolve (`paths`)."""

    def __init__(self, message: str, paths: list[str] | None = None):
        super().__init__(message)
        self.paths = list(paths or [])


class HookPayloadError(AutopoiesisError):
    """An agent harness called a hook with a payload that is not what it documents (not
    JSON, a field missing or of the wrong type, another event than the one installed)."""


class KnowledgeFileError(AutopoiesisError):
    """A knowledge file that cannot be read as one (not UTF-8, or holding a NUL byte: a
    hand edit, a collaborator's commit made without the hooks); the message names it and
    says how to fix it."""


class InvalidArgumentError(AutopoiesisError):
    """A tool (the MCP server's) was called with an argument it cannot take; the message
    says what to pass instead."""


class QuestionSetError(AutopoiesisError):
    """An evaluation's question set cannot be read (not LoCoMo JSON, a bad JSONL line, ...)."""


class ProgramNotFoundError(AutopoiesisError):
    """A program autopoiesis runs (git above all) is not installed, or not on PATH."""

    def __init__(self, program: str):
        # what to do, for a report that names the program in a label of its own (doctor's)
        self.fix = (
            f"install {program} (or add the folder that holds it to PATH), then run this again"
        )
        super().__init__(
            f"{program} is not installed, or not on PATH: install it (or add the folder that "
            "holds it to PATH), then run this again."
        )
        self.program = program

    @classmethod
    def behind(cls, exc: BaseException) -> ProgramNotFoundError | None:
        """The missing program EXC is the sign of (git, where PATH has none), or None: a
        FileNotFoundError raised where subprocess starts a program (the same error for a
        missing file or working folder names that, not a program); EXC itself when it is
        one already."""
        import os
        import shutil
        import subprocess
        import traceback

        if isinstance(exc, ProgramNotFoundError):
            return exc
        if not isinstance(exc, FileNotFoundError) or not isinstance(exc.filename, str):
            return None
        frames = traceback.extract_tb(exc.__traceback__)
        if not frames or frames[-1].filename != subprocess.__file__:
            return None
        program = exc.filename
        if os.sep in program or shutil.which(program) is not None:
            return None
        return cls(program)
