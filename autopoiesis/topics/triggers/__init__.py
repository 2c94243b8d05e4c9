"""The built-in topic trigger types, one module each (its fields, their parse and how
tier 1 evaluates it), and the plugin that registers them (autopoiesis.plugins names this
package for the hook `register_trigger_types`).

On the light path: the pre-commit hook parses topics, which asks for these types, so
nothing here imports more than the standard library and the kernel at module level
(google-re2, croniter and py3langid are imported inside the functions that need them).
"""

from __future__ import annotations

from collections.abc import Callable

from autopoiesis.formats.topic_trigger import TriggerType
from autopoiesis.plugins import hookimpl
from autopoiesis.topics.triggers.code import CODE
from autopoiesis.topics.triggers.cron import CRON
from autopoiesis.topics.triggers.glob import GLOB
from autopoiesis.topics.triggers.keyword import KEYWORD
from autopoiesis.topics.triggers.language import LANGUAGE
from autopoiesis.topics.triggers.mention import MENTION
from autopoiesis.topics.triggers.pattern import PATTERN
from autopoiesis.topics.triggers.sentiment import SENTIMENT
from autopoiesis.topics.triggers.url import URL_TRIGGER
from autopoiesis.topics.triggers.webhook import WEBHOOK

# In the order of the table in autopoiesis.formats.topic_trigger (and of its error messages).
BUILTIN_TRIGGER_TYPES: tuple[TriggerType, ...] = (
    PATTERN,
    GLOB,
    KEYWORD,
    CODE,
    LANGUAGE,
    MENTION,
    URL_TRIGGER,
    SENTIMENT,
    WEBHOOK,
    CRON,
)


@hookimpl
def register_trigger_types(register: Callable[[TriggerType], None]) -> None:
    for spec in BUILTIN_TRIGGER_TYPES:
        register(spec)
