"""Where the settings of a memory repo come from, in layers (core/config.py holds their
schema, defaults and checks, and re-exports what is here):

1. **the shared file**, `memory-config.yaml`: it travels with the repository, so a merge
   can leave conflict markers in it and a collaborator can change it. A shared file that
   cannot be used never stops capture, or the sync that repairs it: its last valid
   settings (the cache) are used, else the defaults, and a warning says why;
2. **this machine's approvals** of the settings that send data off it (core/approval.py):
   until approved, those keep their defaults;
3. **this machine's own settings**, `.git/autopoiesis/config.yaml` (beside the approvals),
   laid over the rest key by key: never pulled, never pushed, so one machine's LLM
   endpoint, harness folders or schedules never conflict with another's, and they need
   no approval (nothing but this machine writes there).

Every command and hook loads the settings, so both files' validated settings are cached
as JSON under .autopoiesis/cache/, keyed by the file's and the schema module's mtime and
size; loading costs a stat or two when nothing changed.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import warnings
from pathlib import Path
from typing import Any

from autopoiesis.core.config import (
    CONFIG_FILENAME,
    Config,
    _build,
    _check_choices,
    _merge,
    _user_settings,
    _validated,
    default_values,
)
from autopoiesis.core.paths import STATE_DIR, STATE_FILES
from autopoiesis.errors import ConfigError

CACHE_PATH = (STATE_DIR, *STATE_FILES["config_cache"])  # under the repo's root
LOCAL_CACHE_PATH = (STATE_DIR, *STATE_FILES["local_config_cache"])
# The most of a settings file read: the template is a few KiB (`_read_bytes`).
MAX_CONFIG_BYTES = 1 << 20
# The cache key holds this file's mtime and size too: the defaults and checks live here.
_DEFAULTS_SOURCE = Path(__file__).with_name("config.py")


def load_config(root: Path) -> Config:
    """The settings this machine uses for the repo at ROOT: its memory-config.yaml
    (`load_tracked_config`), with the settings that send data off the machine at their
    defaults until this machine approved them (core/approval.py: the file travels with the
    repository, so a collaborator could point them elsewhere), then this machine's own
    settings laid over them (`local_config_path`: never pulled, never pushed)."""
    from autopoiesis.core.approval import with_approved_outward

    return _with_local(Path(root), with_approved_outward(Path(root), load_tracked_config(root)))


def local_config_path(root: Path) -> Path:
    """This machine's settings for the repo at ROOT, laid over memory-config.yaml key by key:
    `.git/autopoiesis/config.yaml` (beside the approvals, core/approval.py), where no pull
    or commit reaches, so the settings of one machine (its LLM endpoint and key variable,
    its harness folders, its schedules) never conflict with another's and need no approval."""
    from autopoiesis.core.paths import git_state_path

    return git_state_path(root, "local_config")


def local_setting_names(root: Path) -> set[str]:
    """The dotted names (`llm.base_url`) this machine's settings file sets."""
    names: set[str] = set()
    for section, items in (_local_layer(Path(root)) or {}).items():
        for key, value in (items or {}).items() if isinstance(items, dict) else ():
            names |= {f"{section}.{key}.{k}" for k in value} if isinstance(value, dict) else set()
            names.add(f"{section}.{key}")
    return names


def _with_local(root: Path, config: Config) -> Config:
    """CONFIG with this machine's settings laid over it (CONFIG itself when it has none, or
    when its file cannot be used: a warning says why)."""
    user = _local_layer(root)
    if not user:
        return config
    source = str(local_config_path(root))
    try:
        values = _merge(default_values(config), user, "", source)
        _check_choices(values, source)
        return _build(values, source)
    except ConfigError as exc:
        _unusable(exc, "this machine's settings are left out until it is fixed")
        return config


def _local_layer(root: Path) -> dict[str, Any] | None:
    """The settings this machine's file sets, as YAML has them (None when there is no file
    or it cannot be read: a warning says why). Cached like the shared file."""
    path = local_config_path(root)
    try:
        st = path.stat()
    except OSError:
        return None  # the common case: one stat
    code = _DEFAULTS_SOURCE.stat()
    key = [str(path), st.st_mtime_ns, st.st_size, code.st_mtime_ns, code.st_size]
    cache = Path(root).joinpath(*LOCAL_CACHE_PATH)
    try:
        cached = json.loads(cache.read_text(encoding="utf-8"))
        if cached.get("key") == key and isinstance(cached.get("user"), dict):
            return dict(cached["user"])
    except (OSError, ValueError):
        pass
    try:
        user = _user_settings(_read_text(path), str(path))
        _merge(default_values(), user, "", str(path))  # every key and type checked
    except ConfigError as exc:
        _unusable(exc, "this machine's settings are left out until it is fixed")
        return None
    _write_cache(root, cache, {"key": key, "user": user})
    return user


def _unusable(exc: Exception, what: str) -> None:
    warnings.warn(f"{exc} ({what})", stacklevel=3)


def _write_cache(root: Path, cache: Path, data: dict[str, Any]) -> None:
    if not (Path(root) / ".git").exists():  # only inside a memory repo, never beside a stray file
        return
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        tmp = cache.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data), encoding="utf-8")
        os.replace(tmp, cache)
    except OSError:
        pass  # a read-only repo still works, only slower


def load_tracked_config(root: Path) -> Config:
    """Load ROOT/memory-config.yaml as written; a missing file means all defaults.

    Every command and hook reads the config, and parsing it with ruamel.yaml costs ~40 ms,
    so the validated settings are cached as JSON under .autopoiesis/ (a cache like any
    other there), keyed by the file's and this module's mtime and size. Any edit of the
    file changes the key, and the next load parses and validates it again.

    The file travels with the repository, and a merge can leave conflict markers in it: a
    shared file that cannot be used never stops capture or the sync that repairs it. Its
    last valid settings (the cache) are used, else the defaults, and a warning says why
    (`check_tracked_config` is the strict reading, for doctor)."""
    path = Path(root) / CONFIG_FILENAME
    if not os.path.lexists(path):
        return Config()
    # the entry itself (a link's own times): a link in place of a file is read, and refused
    st, code = path.lstat(), _DEFAULTS_SOURCE.stat()
    key = [st.st_mtime_ns, st.st_size, code.st_mtime_ns, code.st_size]
    cache = Path(root).joinpath(*CACHE_PATH)
    cached: Any = None
    try:
        cached = json.loads(cache.read_text(encoding="utf-8"))
        if cached.get("key") == key:
            return _build(cached["values"], str(path))
    except (OSError, ValueError, KeyError, TypeError, AttributeError, ConfigError):
        pass  # no cache, or an unusable one: parse the file
    try:
        values, config = _validated(_read_text(path), str(path))
    except ConfigError as exc:
        return _last_valid(cached, exc, path)
    _write_cache(Path(root), cache, {"key": key, "values": values})
    return config


def check_tracked_config(root: Path) -> str | None:
    """Why ROOT/memory-config.yaml cannot be used as written, or None when it can."""
    path = Path(root) / CONFIG_FILENAME
    try:
        if os.path.lexists(path):
            _validated(_read_text(path), str(path))
    except ConfigError as exc:
        return str(exc)
    return None


def _read_text(path: Path) -> str:
    """PATH's text, read as a settings file may be (`_read_bytes`)."""
    try:
        return _read_bytes(path).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path} is not UTF-8 text. Re-save it as UTF-8.") from exc


def _read_bytes(path: Path) -> bytes:
    """PATH's bytes: a regular file of at most MAX_CONFIG_BYTES, never read through a
    symbolic link. memory-config.yaml travels with the repository, and every command and
    prompt hook reads it: a pulled `memory-config.yaml -> /dev/zero` was read to the end
    of memory, a link to any file of this machine would be parsed, a FIFO waited on.
    Raises ConfigError naming the file and what to do."""
    fix = "Replace it with a regular settings file, and commit that."
    try:
        # O_NONBLOCK: opening a FIFO to read would wait for a writer
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ConfigError(
                f"{path} is a symbolic link; settings are never read through one (a pulled "
                f"link can name any file of this machine). {fix}"
            ) from None
        raise ConfigError(f"{path} cannot be read ({exc.strerror or exc}).") from None
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            raise ConfigError(f"{path} is not a regular file (a device, a FIFO, a folder). {fix}")
        data = fh.read(MAX_CONFIG_BYTES + 1)
    if len(data) > MAX_CONFIG_BYTES:
        raise ConfigError(
            f"{path} is over {MAX_CONFIG_BYTES // 1024} KiB; a settings file is a few KiB. {fix}"
        )
    return data


def _last_valid(cached: Any, exc: ConfigError, path: Path) -> Config:
    """The settings to use while PATH cannot be: its last valid settings (CACHED, what the
    last load that could parse it kept), else the defaults."""
    try:
        config = _build(cached["values"], str(path))
        used = "its last valid settings are used until it is fixed"
    except (KeyError, TypeError, ConfigError):
        config = Config()
        used = "the defaults are used until it is fixed"
    text = _peek(path)
    if "\n<<<<<<< " in "\n" + text:
        line = ("\n" + text).split("\n<<<<<<< ", 1)[0].count("\n") + 1
        warnings.warn(
            f"{path} holds merge conflict markers (line {line}), so it cannot be read; {used}. "
            "Keep the right lines between <<<<<<< and >>>>>>>, delete the markers, then "
            f"`git add {CONFIG_FILENAME}` and run `autopoiesis sync`.",
            stacklevel=3,
        )
    else:
        _unusable(exc, used)
    return config


def _peek(path: Path) -> str:
    try:
        return _read_bytes(path).decode("utf-8", errors="replace")
    except ConfigError:
        return ""
