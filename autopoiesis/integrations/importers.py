"""The built-in importers, as one plugin (autopoiesis.plugins names this module): every
log format of the packages here, in the order `--format auto` breaks ties and `--help`
lists them."""

from __future__ import annotations

from collections.abc import Callable

from autopoiesis.capture.importers.base import Importer
from autopoiesis.integrations.aider.importer import AiderImporter
from autopoiesis.integrations.amp.importer import AmpImporter
from autopoiesis.integrations.chatgpt.importer import ChatGPTImporter
from autopoiesis.integrations.claude_ai.importer import ClaudeAIImporter
from autopoiesis.integrations.claude_code.importer import ClaudeCodeImporter
from autopoiesis.integrations.claude_code.loglines import LoglinesImporter
from autopoiesis.integrations.cline.importer import ClineImporter
from autopoiesis.integrations.codex.importer import CodexImporter
from autopoiesis.integrations.continue_dev.importer import ContinueImporter
from autopoiesis.integrations.copilot.importer import CopilotImporter
from autopoiesis.integrations.cursor.importer import CursorImporter, CursorMarkdownImporter
from autopoiesis.integrations.droid.importer import DroidImporter
from autopoiesis.integrations.gemini.importer import GeminiImporter
from autopoiesis.integrations.goose.importer import GooseImporter
from autopoiesis.integrations.kimi.importer import KimiImporter
from autopoiesis.integrations.neutral.importer import NeutralImporter
from autopoiesis.integrations.neutral.stream import CaptureStreamImporter
from autopoiesis.integrations.openai.importer import OpenAIImporter
from autopoiesis.integrations.opencode.importer import OpenCodeImporter
from autopoiesis.integrations.pi.importer import PiImporter
from autopoiesis.integrations.qwen_code.importer import QwenCodeImporter
from autopoiesis.integrations.responses.importer import ResponsesImporter
from autopoiesis.integrations.specstory.importer import SpecStoryImporter
from autopoiesis.plugins import hookimpl

BUILTIN_IMPORTERS: tuple[Importer, ...] = (
    NeutralImporter(),
    CaptureStreamImporter(),
    OpenAIImporter(),
    ClaudeCodeImporter(),
    QwenCodeImporter(),
    KimiImporter(),
    DroidImporter(),
    PiImporter(),
    AmpImporter(),
    GooseImporter(),
    CodexImporter(),
    ResponsesImporter(),
    CursorImporter(),
    CursorMarkdownImporter(),
    SpecStoryImporter(),
    GeminiImporter(),
    ChatGPTImporter(),
    CopilotImporter(),
    ClaudeAIImporter(),
    ClineImporter(),
    OpenCodeImporter(),
    AiderImporter(),
    ContinueImporter(),
    LoglinesImporter(),
)


@hookimpl
def register_importers(register: Callable[[Importer], None]) -> None:
    for importer in BUILTIN_IMPORTERS:
        register(importer)
