"""memory-config.yaml -> a typed, validated configuration.

The NamedTuples below (`Config()`) are the single source of every default: a user's file
is laid over them key by key, and every value must have the type its default has. The
commented template shipped in the package (`_files/memory-config.yaml`, what `init`
writes) shows the same defaults; a test holds it to them.
"""

import math
import re
from pathlib import Path
from typing import Any, NamedTuple

from autopoiesis.errors import ConfigError

CONFIG_FILENAME = "memory-config.yaml"
TEMPLATE_PATH = Path(__file__).parent.parent / "_files" / CONFIG_FILENAME

SEARCH_MERGES = ("auto", "rrf", "weighted")  # search.merge, and search --merge

# Keys that are not free-form mappings; anything else unknown is refused with a hint.
_ENUMS: dict[tuple[str, str], tuple[str, ...]] = {
    ("search", "merge"): SEARCH_MERGES,
    ("lifecycle", "extraction_trigger"): ("on_session_end", "hourly", "manual"),
}
# Settings that name a plugin: the registry that makes it (index.embedders, llm.providers)
# refuses an unknown name with the list of registered ones; the kernel cannot import those
# packages, so here a name only has to look like one.
_PLUGIN_NAMES = (("search", "embedder"), ("llm", "provider"))
_PLUGIN_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,63}\Z")


# The settings are immutable records, NamedTuples rather than frozen dataclasses: every
# command and hook loads them, and defining a frozen dataclass costs ~1.3 ms at import
# (13 of them were the largest single import of a cold `search`), a NamedTuple ~0.2 ms.
class NumberRule(NamedTuple):
    """The type and range of one numeric setting; the message says what to write."""

    kind: type  # int or float (a float setting takes a whole number too)
    minimum: float
    maximum: float
    nullable: bool = False
    hint: str = ""

    def describe(self) -> str:
        what = "a whole number" if self.kind is int else "a number"
        lo, hi = _fmt(self.minimum), _fmt(self.maximum)
        null = ", or null" if self.nullable else ""
        return f"{what} from {lo} to {hi}{null}" + (f" ({self.hint})" if self.hint else "")


def _fmt(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


# EVERY numeric setting, with its type and range: a value outside breaks something later
# (a 0-byte message cap empties capture, NaN never compares, 1.5 bytes is no size).
NUMBERS: dict[tuple[str, str], NumberRule] = {
    ("context_compiler", "token_budget"): NumberRule(int, 256, 10_000_000, hint="tokens"),
    ("context_compiler", "identity_budget_kb"): NumberRule(float, 0, 100_000, hint="KB"),
    ("context_compiler", "memory_budget_kb"): NumberRule(float, 0, 100_000, hint="KB"),
    ("context_compiler", "journal_budget_kb"): NumberRule(float, 0, 100_000, hint="KB"),
    ("context_compiler", "topic_budget_kb"): NumberRule(float, 0, 100_000, hint="KB"),
    ("context_compiler", "session_share"): NumberRule(
        float, 0, 1, hint="a fraction of token_budget"
    ),
    ("context_compiler", "history_share"): NumberRule(
        float, 0, 0.9, hint="a fraction of token_budget"
    ),
    ("search", "bm25_weight"): NumberRule(float, 0, 1),
    ("search", "vector_weight"): NumberRule(float, 0, 1),
    ("search", "embedding_dimensions"): NumberRule(int, 1, 65_536),
    ("watchers", "similarity_threshold"): NumberRule(float, 0, 1),
    ("watchers", "gate_max_tokens"): NumberRule(int, 1, 4096),
    ("lifecycle", "commit_interval_minutes"): NumberRule(
        int, 1, 10_080, hint="minutes, at most a week"
    ),
    ("lifecycle", "journal_retention_days"): NumberRule(int, 1, 36_500, hint="days"),
    ("lifecycle", "memory_line_cap"): NumberRule(int, 10, 100_000, hint="lines"),
    ("capture", "max_message_bytes"): NumberRule(
        int, 1024, 1 << 30, hint="bytes, e.g. 1048576 for 1 MB"
    ),
    ("llm", "timeout_seconds"): NumberRule(float, 0.1, 3600, hint="seconds per request"),
    ("llm", "deadline_seconds"): NumberRule(
        float,
        0.1,
        86_400,
        nullable=True,
        hint="seconds for a whole call; null = every attempt's timeout plus the backoff and 0.25 "
        "s an attempt",
    ),
    ("llm", "max_retries"): NumberRule(int, 0, 20),
    ("llm", "concurrency"): NumberRule(int, 1, 256),
    ("llm", "daily_token_budget"): NumberRule(
        int, 0, 10**12, hint="tokens a day; 0 means no limit"
    ),
    ("integrations", "hook_token_budget"): NumberRule(
        int, 256, 1_000_000, hint="tokens a harness hook adds to a prompt"
    ),
    ("integrations", "import_idle_minutes"): NumberRule(
        int, 1, 10_080, hint="minutes, at most a week"
    ),
    ("daemon", "session_idle_minutes"): NumberRule(int, 1, 10_080, hint="minutes"),
    ("daemon", "explore_max_age_days"): NumberRule(int, 1, 36_500, hint="days"),
    ("daemon", "job_timeout_minutes"): NumberRule(int, 1, 1440, hint="minutes, at most a day"),
    ("daemon", "job_retries"): NumberRule(int, 0, 20),
    ("daemon", "job_token_budget"): NumberRule(
        int, 0, 10**12, hint="tokens a job run; 0 means no limit"
    ),
}

# Settings that are cron expressions (read in UTC, like every time autopoiesis keeps):
# refused at load when croniter cannot read them or they never fire.
CRON_SETTINGS = (
    ("lifecycle", "condensation_schedule"),
    ("lifecycle", "pruning_schedule"),
    ("daemon", "health_schedule"),
)


def shown(value: Any) -> str:
    """VALUE as an error message shows it: its repr, cut short. A settings file may hold a
    string of a MiB or a list of thousands, and the warning saying it is wrong is printed by
    every command."""
    import reprlib

    short = reprlib.Repr()
    short.maxstring, short.maxother, short.maxlist, short.maxdict = 80, 80, 6, 6
    return short.repr(value)


def check_number(where: str, value: Any, rule: NumberRule) -> int | float | None:
    """VALUE as the number RULE asks for, or a ConfigError saying what to write."""
    if value is None and rule.nullable:
        return None
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    if ok and rule.kind is int and not isinstance(value, int):
        ok = False
    if ok and isinstance(value, float) and not math.isfinite(value):
        ok = False
    if ok and not (rule.minimum <= value <= rule.maximum):
        ok = False
    if not ok:
        raise ConfigError(f"{where} must be {rule.describe()}, not {shown(value)}.")
    return float(value) if rule.kind is float else int(value)


# Documented aliases of the design's docs/design.md#config-keys names: one setting, one place.
_ALIASES: dict[tuple[str, str], tuple[str, str]] = {
    ("watchers", "gate_model"): ("models", "gate"),
    ("git", "commit_message_model"): ("models", "commit_message"),
}


# How deep a settings file's mappings and lists may nest: the deepest setting,
# capture.redaction.extra_patterns[i].name, is five levels down
MAX_CONFIG_DEPTH = 16


def _load_yaml(text: str, source: str) -> Any:
    """TEXT (a settings file, SOURCE) as YAML has it, or a ConfigError naming the line.

    The shared file travels with the repository, so it is read as untrusted: an alias
    (`*name` of an `&name` anchor) is refused (nine lines of them nested, "billion
    laughs", passed validation inside an extra pattern and hung every command writing the
    settings cache, and any error message showing the value), so is nesting past
    MAX_CONFIG_DEPTH (50,000 `[` raised RecursionError in every command), and a value
    PyYAML's constructors cannot make (`2026-13-01`, an integer of 5,000 digits) is named
    as such, not raised as a ValueError."""
    from ruamel.yaml import YAML
    from ruamel.yaml.composer import MaxDepthExceededError
    from ruamel.yaml.error import YAMLError
    from ruamel.yaml.events import AliasEvent

    yaml = YAML(typ="safe", pure=True)
    yaml.max_depth = MAX_CONFIG_DEPTH
    fix = "Fix that line, or delete the file to use the defaults."
    try:
        if "*" in text:  # an alias is written `*name`: read the events before any node
            for event in yaml.parse(text):
                if isinstance(event, AliasEvent):
                    raise ConfigError(
                        f"{source}, line {event.start_mark.line + 1}: the settings use a YAML "
                        f"alias (*{event.anchor}); write each value out."
                    )
        return yaml.load(text)
    except MaxDepthExceededError as exc:
        raise ConfigError(
            f"{source}{_line_of(exc)}: the settings nest lists or mappings more than "
            f"{MAX_CONFIG_DEPTH} levels deep; no setting is nested that far. {fix}"
        ) from None
    except RecursionError:
        raise ConfigError(
            f"{source}: the settings nest lists or mappings too deep to read. {fix}"
        ) from None
    except YAMLError as exc:
        raise ConfigError(
            f"{source}{_line_of(exc)} is not valid YAML: {_yaml_problem(exc)}. {fix}"
        ) from exc
    except (ValueError, OverflowError) as exc:
        # a date that does not exist (`2026-13-01`), an integer of thousands of digits:
        # YAML's constructors raise a plain ValueError, which no caller expects
        raise ConfigError(
            f"{source} holds a value YAML cannot read ({str(exc).split('; use ')[0]}): a date "
            "that does not exist or "
            "a number too long. Correct it, or quote it to keep it as text."
        ) from exc


def _line_of(exc: Exception) -> str:
    """', line N' for a YAML error that knows where it happened, else ''."""
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    return f", line {mark.line + 1}" if mark is not None else ""


def _yaml_problem(exc: Exception) -> str:
    """What a YAML error says is wrong, without its library's advice (how to turn the
    duplicate key check off) or its excerpt of the text (the line is named instead)."""
    problem = getattr(exc, "problem", None)
    context = getattr(exc, "context", None)
    if not problem:
        return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return f"{problem} ({context})" if context else str(problem)


def template_text() -> str:
    return TEMPLATE_PATH.read_text(encoding="utf-8")


class CompilerConfig(NamedTuple):
    token_budget: int = 8192
    identity_budget_kb: float = 17.0
    memory_budget_kb: float = 3.0
    journal_budget_kb: float = 4.0
    topic_budget_kb: float = 6.0
    # P0/P1: the part of the budget the identity files, MEMORY.md and the project files
    # take at most; past it their entries compete against the message (compiler/standing.py)
    session_share: float = 0.25
    history_share: float = (
        0.25  # P4: the part of the budget scored knowledge leaves to session history
    )


class SearchConfig(NamedTuple):
    merge: str = "auto"
    bm25_weight: float = 0.4
    vector_weight: float = 0.6
    embedder: str = "offline"
    embedding_model: str = "text-embedding-3-small"
    embedding_dimensions: int = 1536
    base_url: str | None = None


class WatchersConfig(NamedTuple):
    similarity_threshold: float = 0.15
    gate_max_tokens: int = 1


class LifecycleConfig(NamedTuple):
    commit_interval_minutes: int = 30
    journal_retention_days: int = 90
    memory_line_cap: int = 200
    extraction_trigger: str = "on_session_end"
    condensation_schedule: str = "0 23 * * *"
    pruning_schedule: str = "0 0 * * 0"


class GitConfig(NamedTuple):
    auto_commit: bool = True
    auto_push: bool = False
    auto_tag_daily: bool = True


class DaemonConfig(NamedTuple):
    # every harness's own locations, each owned by its package (integrations/<harness>:
    # SESSION_GLOBS); the config cannot import them, so a test holds this copy to theirs
    session_globs: tuple[str, ...] = (
        "~/.local/share/amp/threads/*.json",
        "~/.claude/projects/*/*.jsonl",
        "~/.claude/projects/*/*/subagents/*.jsonl",
        "~/.config/claude/projects/*/*.jsonl",
        "~/.config/claude/projects/*/*/subagents/*.jsonl",
        "~/.config/*/User/globalStorage/saoudrizwan.claude-dev/tasks/*/api_conversation_history.json",
        "~/.config/*/User/globalStorage/rooveterinaryinc.roo-cline/tasks/*/api_conversation_history.json",
        "~/.config/*/User/globalStorage/kilocode.kilo-code/tasks/*/api_conversation_history.json",
        "~/Library/Application Support/*/User/globalStorage/"
        "saoudrizwan.claude-dev/tasks/*/api_conversation_history.json",
        "~/Library/Application Support/*/User/globalStorage/"
        "rooveterinaryinc.roo-cline/tasks/*/api_conversation_history.json",
        "~/Library/Application Support/*/User/globalStorage/"
        "kilocode.kilo-code/tasks/*/api_conversation_history.json",
        "~/.vscode-server/data/User/globalStorage/saoudrizwan.claude-dev/tasks/*/api_conversation_history.json",
        "~/.vscode-server/data/User/globalStorage/rooveterinaryinc.roo-cline/tasks/*/api_conversation_history.json",
        "~/.vscode-server/data/User/globalStorage/kilocode.kilo-code/tasks/*/api_conversation_history.json",
        "~/.cline/data/tasks/*/api_conversation_history.json",
        "~/.codex/sessions/**/*.jsonl",
        "~/.codex/archived_sessions/*.jsonl",
        "$CODEX_HOME/sessions/**/*.jsonl",
        "~/.continue/sessions/*-*.json",
        "~/.copilot/session-state/*/events.jsonl",
        "~/.copilot/session-state/*.jsonl",
        "~/.cursor/projects/*/agent-transcripts/**/*.jsonl",
        "~/.factory/sessions/*/*.jsonl",
        "~/.factory/sessions/*.jsonl",
        "~/.gemini/tmp/*/chats/*.json",
        "~/.gemini/tmp/*/chats/*.jsonl",
        "~/.local/share/goose/sessions/sessions.db",
        "~/.local/share/goose/sessions/*.jsonl",
        "~/.config/goose/sessions/*.jsonl",
        "~/.kimi-code/sessions/*/*/agents/*/wire.jsonl",
        "~/.local/share/opencode/opencode.db",
        "~/.local/share/opencode/storage/session/*/*.json",
        "~/.pi/agent/sessions/*/*.jsonl",
        "~/.qwen/projects/*/chats/*.jsonl",
    )
    session_idle_minutes: int = 10
    health_schedule: str = "30 * * * *"
    explore_max_age_days: int = 7
    job_timeout_minutes: int = 30
    job_retries: int = 2
    job_token_budget: int = 100000


class RedactionPattern(NamedTuple):
    name: str
    pattern: str


class CaptureConfig(NamedTuple):
    max_message_bytes: int = 1048576
    redaction_enabled: bool = True
    extra_patterns: tuple[RedactionPattern, ...] = ()


class LLMModels(NamedTuple):
    gate: str = "gpt-4o-mini"
    extract: str = "gpt-4o-mini"
    condense: str = "gpt-4o-mini"
    commit_message: str = "gpt-4o-mini"
    compact: str = "gpt-4o-mini"


class LLMConfig(NamedTuple):
    provider: str = "offline"
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    models: LLMModels = LLMModels()
    timeout_seconds: float = 30.0
    max_retries: int = 3
    deadline_seconds: float | None = None  # None: the client derives it (LLMClient.deadline)
    concurrency: int = 4
    daily_token_budget: int = 200000


class IntegrationsConfig(NamedTuple):
    hook_token_budget: int = 2000
    import_idle_minutes: int = 30


class PrivateConfig(NamedTuple):
    paths: tuple[str, ...] = ("knowledge/private/**",)
    model_paths: tuple[str, ...] = ()


class Config(NamedTuple):
    context_compiler: CompilerConfig = CompilerConfig()
    search: SearchConfig = SearchConfig()
    watchers: WatchersConfig = WatchersConfig()
    lifecycle: LifecycleConfig = LifecycleConfig()
    git: GitConfig = GitConfig()
    daemon: DaemonConfig = DaemonConfig()
    capture: CaptureConfig = CaptureConfig()
    llm: LLMConfig = LLMConfig()
    integrations: IntegrationsConfig = IntegrationsConfig()
    private: PrivateConfig = PrivateConfig()


def _plain(value: Any) -> Any:
    """VALUE with its NamedTuples as dicts and its other tuples as lists, as YAML has them."""
    if isinstance(value, tuple) and hasattr(value, "_asdict"):
        return {key: _plain(item) for key, item in value._asdict().items()}
    if isinstance(value, tuple):
        return [_plain(item) for item in value]
    return value


def default_values(config: "Config | None" = None) -> dict[str, Any]:
    """Config()'s defaults (or CONFIG's settings) laid out as memory-config.yaml writes
    them (a fresh copy)."""
    values: dict[str, Any] = _plain(config if config is not None else Config())
    capture = values["capture"]
    values["capture"] = {
        "max_message_bytes": capture["max_message_bytes"],
        "redaction": {
            "enabled": capture["redaction_enabled"],
            "extra_patterns": capture["extra_patterns"],
        },
    }
    return values


def _check_type(where: str, value: Any, default: Any, rule: NumberRule | None = None) -> Any:
    if rule is not None:
        return check_number(where, value, rule)
    if default is None:
        if value is None or isinstance(value, str):
            return value
        raise ConfigError(f"{where} must be a string or null, not {shown(value)}.")
    if isinstance(default, bool):
        if isinstance(value, bool):
            return value
        raise ConfigError(f"{where} must be true or false, not {shown(value)}.")
    if isinstance(default, str):
        if isinstance(value, str):
            return value
        raise ConfigError(f"{where} must be a string, not {shown(value)}.")
    if isinstance(default, list):
        if isinstance(value, list):
            return value
        raise ConfigError(f"{where} must be a list, not {shown(value)}.")
    return value


def _merge(
    defaults: dict[str, Any], user: dict[str, Any], path: str, source: str
) -> dict[str, Any]:
    merged = dict(defaults)
    for key, value in user.items():
        where = f"{path}.{key}" if path else str(key)
        if key not in defaults:
            known = ", ".join(sorted(defaults))
            name = where if len(where) <= 80 else where[:77] + "..."  # a key may be a MiB long
            raise ConfigError(f"{source}: unknown setting '{name}'. Known settings here: {known}.")
        default = defaults[key]
        if isinstance(default, dict):
            if not isinstance(value, dict):
                raise ConfigError(
                    f"{source}: '{where}' must be a mapping of settings, not {shown(value)}."
                )
            merged[key] = _merge(default, value, where, source)
        else:
            section, _, name = where.rpartition(".")
            merged[key] = _check_type(
                f"{source}: '{where}'", value, default, NUMBERS.get((section, name))
            )
    return merged


def parse_config(text: str, source: str = CONFIG_FILENAME) -> Config:
    """Parse the text of a memory-config.yaml into a validated Config."""
    return _validated(text, source)[1]


def _validated(text: str, source: str) -> tuple[dict[str, Any], Config]:
    """(the user's settings laid over the defaults, as YAML has them; their Config), every
    type, range, choice and pattern checked."""
    values = _merge(default_values(), _user_settings(text, source), "", source)
    _check_choices(values, source)
    return values, _build(values, source)  # _build checks the redaction patterns


def _user_settings(text: str, source: str) -> dict[str, Any]:
    """The sections of TEXT, each a fresh dict, with the aliases moved to their settings."""
    user = _load_yaml(text, source) if text.strip() else {}
    if user is None:
        user = {}
    if not isinstance(user, dict):
        raise ConfigError(
            f"{source} must be a mapping of sections (context_compiler:, search:, ...), "
            f"not a {type(user).__name__}."
        )
    user = {k: (dict(v) if isinstance(v, dict) else v) for k, v in user.items()}
    llm_models: dict[str, Any] = {}
    for (section, key), (_, target) in _ALIASES.items():
        if isinstance(user.get(section), dict) and key in user[section]:
            llm_models[target] = user[section].pop(key)
    if llm_models:
        llm = dict(user.get("llm") or {})
        models = dict(llm.get("models") or {})
        for target, value in llm_models.items():
            models.setdefault(target, value)
        llm["models"] = models
        user["llm"] = llm
    return user


def _check_choices(values: dict[str, Any], source: str) -> None:
    """The checks beyond a value's type: enums, plugin names, cron expressions, globs."""
    for (section, key), allowed in _ENUMS.items():
        if values[section][key] not in allowed:
            raise ConfigError(
                f"{source}: '{section}.{key}' is {shown(values[section][key])}; write one of: "
                f"{', '.join(allowed)}."
            )
    for section, key in _PLUGIN_NAMES:
        if not _PLUGIN_NAME_RE.match(values[section][key]):
            raise ConfigError(
                f"{source}: '{section}.{key}' is {shown(values[section][key])}; write a plugin "
                "name such as offline or openai."
            )
    for section, key in CRON_SETTINGS:
        from autopoiesis.core.clock import check_cron

        problem = check_cron(values[section][key])
        if problem:
            raise ConfigError(
                f"{source}: '{section}.{key}' is {shown(values[section][key])}, which {problem}."
            )
    globs = values["daemon"]["session_globs"]
    if not all(isinstance(g, str) and g.strip() for g in globs):
        raise ConfigError(
            f"{source}: 'daemon.session_globs' must be a list of glob patterns such as "
            f"~/.claude/projects/*/*.jsonl (or [] for no session watcher), not {shown(globs)}."
        )


def _build(values: dict[str, Any], source: str) -> Config:
    cap = values["capture"]
    extra = []
    for i, item in enumerate(cap["redaction"]["extra_patterns"]):
        if (
            not isinstance(item, dict)
            or not isinstance(item.get("name"), str)
            or not isinstance(item.get("pattern"), str)
        ):
            raise ConfigError(
                f"{source}: capture.redaction.extra_patterns[{i}] must be a mapping like {{name: "
                f"KIND, pattern: REGEX}}."
            )
        unknown = sorted(map(str, set(item) - set(RedactionPattern._fields)))
        if unknown:
            # a key no code reads was silently dropped (`flags: i` did nothing), and it
            # carried any value past every check, into the settings cache
            raise ConfigError(
                f"{source}: capture.redaction.extra_patterns[{i}] has an unknown key "
                f"'{unknown[0]}'; an extra pattern has only name and pattern."
            )
        from autopoiesis.core.redact_library import compile_extra_pattern, overreach

        try:
            # RE2: linear-time, so no pattern can hang capture
            compiled = compile_extra_pattern(item["pattern"])
        except ValueError as exc:
            raise ConfigError(
                f"{source}: capture.redaction.extra_patterns[{i}] ({item['name']}): {exc}."
            ) from exc
        too_broad = overreach(compiled)
        if too_broad:
            raise ConfigError(
                f"{source}: capture.redaction.extra_patterns[{i}] ({shown(item['name'])}) would "
                f"redact ordinary text: {too_broad}. Redaction happens before a transcript is "
                "written, and a transcript is never rewritten, so what it matched would be lost "
                "for good. Write it to match only the secret's own shape (e.g. EMP-\\d{6})."
            )
        extra.append(RedactionPattern(item["name"], item["pattern"]))
    llm = values["llm"]
    return Config(
        context_compiler=CompilerConfig(**values["context_compiler"]),
        search=SearchConfig(**values["search"]),
        watchers=WatchersConfig(**values["watchers"]),
        lifecycle=LifecycleConfig(**values["lifecycle"]),
        git=GitConfig(**values["git"]),
        daemon=DaemonConfig(
            **{**values["daemon"], "session_globs": tuple(values["daemon"]["session_globs"])}
        ),
        capture=CaptureConfig(
            max_message_bytes=cap["max_message_bytes"],
            redaction_enabled=cap["redaction"]["enabled"],
            extra_patterns=tuple(extra),
        ),
        llm=LLMConfig(**{**llm, "models": LLMModels(**llm["models"])}),
        integrations=IntegrationsConfig(**values["integrations"]),
        private=_private(values["private"], source),
    )


def _private(values: dict[str, Any], source: str) -> PrivateConfig:
    """private.paths and private.model_paths: lists of .gitattributes-style patterns."""
    out = {}
    for key in ("paths", "model_paths"):
        patterns = values[key]
        if not all(isinstance(p, str) and p.strip() and "\n" not in p for p in patterns):
            raise ConfigError(
                f"{source}: 'private.{key}' must be a list of path patterns such as "
                f"knowledge/private/** (or []), not {shown(patterns)}."
            )
        out[key] = tuple(p.strip() for p in patterns)
    return PrivateConfig(**out)


# Where the settings come from (the shared file, this machine's approvals and its own
# file) is core/config_layers.py; re-exported here, where every caller looks for them.
from autopoiesis.core.config_layers import (  # noqa: E402
    check_tracked_config as check_tracked_config,
)
from autopoiesis.core.config_layers import load_config as load_config  # noqa: E402
from autopoiesis.core.config_layers import (  # noqa: E402
    load_tracked_config as load_tracked_config,
)
from autopoiesis.core.config_layers import (  # noqa: E402
    local_config_path as local_config_path,
)
from autopoiesis.core.config_layers import (  # noqa: E402
    local_setting_names as local_setting_names,
)
