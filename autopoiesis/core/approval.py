"""The settings of memory-config.yaml that send data off this machine, and this
machine's approval of them.

memory-config.yaml travels with the repository: a collaborator's commit, a pull or a
fresh clone can change it. Most settings only shape what the memory does with its own
files; a few decide where its content goes and which secret goes with it (OUTWARD):
the LLM provider, its endpoint and the environment variable whose value is sent as
the API key; the embedder, and its endpoint; the globs of files the daemon imports
from this machine; whether secrets are redacted before they are written (and so pushed
and sent); how much of a message capture keeps (a transcript is written once: a cap a
collaborator lowered to 1 KB cut every long message this machine captured, for good; a
redaction pattern of theirs, `(?i)postgres`, every word it matches). A
collaborator who sets `llm.base_url` to their server and
`llm.api_key_env: GITHUB_TOKEN` would otherwise receive the token and every prompt.

So those settings take effect only once this machine approved them, value for value
(`autopoiesis llm approve`), or when this machine's own settings file sets them
(`.git/autopoiesis/config.yaml`, core/config_layers.py): no pull can write there. The
approval lives in the git directory too (`.git/autopoiesis/approved.json`, shared by the
linked worktrees), which no clone, fetch or pull carries and no commit can hold; in a
folder without git, under `.autopoiesis/`. Until then, `load_config` gives the OUTWARD
settings their defaults (everything offline, redaction on with the built-in rules alone,
messages kept up to 1 MiB) and
the LLM client says once what was held back and how to approve it.

Kept light (stdlib only): load_config runs on every command and hook.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from autopoiesis.core.config import Config

# (section, key) of every setting that sends data off the machine, reads files outside
# the repo or decides what capture keeps for good:
# docs/security.md#what-a-collaborator-can-change lists why each is here.
OUTWARD: tuple[tuple[str, str], ...] = (
    ("llm", "provider"),
    ("llm", "base_url"),
    ("llm", "api_key_env"),
    ("search", "embedder"),
    ("search", "base_url"),
    ("daemon", "session_globs"),
    ("capture", "redaction_enabled"),
    ("capture", "max_message_bytes"),
    ("capture", "extra_patterns"),
    ("private", "model_paths"),
)
_GLOBS = ("daemon", "session_globs")
_MESSAGE_CAP = ("capture", "max_message_bytes")
_EMBEDDER = ("search", "embedder")
# Embedders that run from what is installed, sending nothing and fetching nothing: choosing
# one needs no approval (the others send text to a server or may fetch a model).
LOCAL_EMBEDDERS = ("offline", "wordllama")
_EXTRA_PATTERNS = ("capture", "extra_patterns")
_YAML_NAMES = {  # as the file has them
    ("capture", "redaction_enabled"): "capture.redaction.enabled",
    _EXTRA_PATTERNS: "capture.redaction.extra_patterns",
}
APPROVE_COMMAND = "autopoiesis llm approve"


def outward_settings(config: Config) -> dict[str, Any]:
    """CONFIG's OUTWARD settings by dotted name, as JSON has them. Of the session globs,
    only those beyond the defaults: fewer harness folders reads less, and needs no
    approval; nor does a message cap at or above the default, which keeps more."""
    from autopoiesis.core.config import CaptureConfig, DaemonConfig

    out: dict[str, Any] = {}
    for section, key in OUTWARD:
        value = getattr(getattr(config, section), key)
        if (section, key) == _GLOBS:
            value = [glob for glob in value if glob not in DaemonConfig().session_globs]
        elif (section, key) == _MESSAGE_CAP:
            value = min(value, CaptureConfig().max_message_bytes)
        elif (section, key) == _EMBEDDER and value in LOCAL_EMBEDDERS:
            value = LOCAL_EMBEDDERS[0]  # as the default: nothing leaves the machine
        elif (section, key) == _EXTRA_PATTERNS:
            value = [{"name": p.name, "pattern": p.pattern} for p in value]
        elif isinstance(value, tuple):
            value = list(value)  # as JSON has it
        out[_YAML_NAMES.get((section, key), f"{section}.{key}")] = value
    return out


def approval_path(root: Path) -> Path:
    """Where this machine records its approval for the repository at ROOT."""
    from autopoiesis.core.paths import git_state_path

    return git_state_path(root, "approval")


def approved_settings(root: Path) -> dict[str, Any] | None:
    """The OUTWARD settings this machine approved for ROOT, or None."""
    try:
        data = json.loads(approval_path(root).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    approved = data.get("approved") if isinstance(data, dict) else None
    return approved if isinstance(approved, dict) else None


def unapproved(root: Path, config: Config) -> dict[str, Any]:
    """CONFIG's OUTWARD settings that differ from the defaults, when this machine has not
    approved exactly CONFIG's OUTWARD settings; {} when they may be used."""
    from autopoiesis.core.config import Config

    wanted, defaults = outward_settings(config), outward_settings(Config())
    if wanted == defaults or approved_settings(root) == wanted:
        return {}
    return {name: value for name, value in wanted.items() if value != defaults[name]}


def held_back(root: Path) -> dict[str, Any]:
    """The OUTWARD settings of ROOT's memory-config.yaml that load_config holds back: {}
    when none. One this machine's own settings file sets is not held back: it replaces
    the shared one."""
    from autopoiesis.core.config import load_tracked_config, local_setting_names

    mine = local_setting_names(Path(root))
    held = unapproved(Path(root), load_tracked_config(root))
    return {name: value for name, value in held.items() if name not in mine}


def with_approved_outward(root: Path, config: Config) -> Config:
    """CONFIG as this machine may use it: its OUTWARD settings at their defaults unless
    approved (what load_config returns)."""
    if not unapproved(root, config):
        return config
    from autopoiesis.core.config import Config

    safe = Config()
    replaced = config
    for section, key in OUTWARD:
        value = getattr(getattr(safe, section), key)
        if (section, key) == _GLOBS:  # the defaults the file keeps (it may turn some off)
            value = tuple(g for g in config.daemon.session_globs if g in value)
        elif (section, key) == _MESSAGE_CAP:  # a higher cap keeps more: it stands
            value = max(config.capture.max_message_bytes, value)
        part = getattr(replaced, section)._replace(**{key: value})
        replaced = replaced._replace(**{section: part})
    return replaced


def approve(root: Path, config: Config) -> dict[str, Any]:
    """Record CONFIG's OUTWARD settings as approved on this machine for ROOT; returns them."""
    from autopoiesis.core.clock import format_ts, utc_now

    settings = outward_settings(config)
    path = approval_path(root)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(
        json.dumps({"approved": settings, "at": format_ts(utc_now())}, indent=2) + "\n",
        encoding="utf-8",
    )
    os.replace(tmp, path)
    return settings


def describe(settings: dict[str, Any]) -> str:
    """`llm.base_url: http://...; llm.api_key_env: X` for a message."""
    return "; ".join(f"{name}: {json.dumps(value)}" for name, value in settings.items())


def held_back_message(root: Path, settings: dict[str, Any]) -> str:
    """The one warning for SETTINGS held back at ROOT: the file, the endpoint, the command."""
    from autopoiesis.core.config import CONFIG_FILENAME

    return (
        f"{Path(root) / CONFIG_FILENAME} decides where memory content goes (or what capture "
        "keeps) with settings "
        f"this machine has not approved ({describe(settings)}). A pull or a clone can change "
        "that file, so they keep their defaults: the LLM stages run offline, search embeds "
        "offline, secrets are redacted (by the built-in rules alone), a message is kept up "
        "to 1 MiB. If you wrote them or trust them, run "
        f"`{APPROVE_COMMAND}` in {root}."
    )


def capture_held_back(root: Path) -> str | None:
    """The warning for what capture and import write when memory-config.yaml sets how they
    redact or cut (`capture.*`) and this machine has not approved it, or None: a person
    who wrote an extra redaction pattern into the shared file learns it is not yet used."""
    held = {k: v for k, v in held_back(root).items() if k.startswith("capture.")}
    return held_back_message(root, held) if held else None


__all__ = [
    "APPROVE_COMMAND",
    "OUTWARD",
    "approval_path",
    "approve",
    "approved_settings",
    "capture_held_back",
    "describe",
    "held_back",
    "held_back_message",
    "outward_settings",
    "unapproved",
    "with_approved_outward",
]
