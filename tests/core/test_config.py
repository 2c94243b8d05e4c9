"""Every numeric setting of memory-config.yaml is checked for its type and range at load:
a value that passes is one the code can use."""

from __future__ import annotations

import math
from typing import Any

import pytest

from autopoiesis.core.config import (
    NUMBERS,
    Config,
    _load_yaml,
    default_values,
    parse_config,
    template_text,
)
from autopoiesis.errors import ConfigError


def _yaml(section: str, key: str, value: str) -> str:
    return f"{section}:\n  {key}: {value}\n"


def _numeric_defaults() -> list[tuple[str, str]]:
    out = []
    for section, values in default_values().items():
        for key, value in values.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                out.append((section, key))
    return out


def test_an_empty_file_is_every_default() -> None:
    assert parse_config("") == Config()
    assert parse_config("search: {}\n") == Config()


def _keys(tree: Any) -> Any:
    return [(k, _keys(v)) for k, v in tree.items()] if isinstance(tree, dict) else None


def test_the_template_shows_every_default_in_order() -> None:
    """Config() owns the defaults; the commented template `init` writes shows each one."""
    template = _load_yaml(template_text(), "template")
    assert template == default_values()
    assert _keys(template) == _keys(default_values())
    assert parse_config(template_text()) == Config()


def test_every_numeric_key_has_a_rule() -> None:
    missing = [k for k in _numeric_defaults() if k not in NUMBERS]
    assert not missing, f"numeric settings without a type/range rule: {missing}"


@pytest.mark.parametrize("value", ["1.5", ".nan", "0", "-1", ".inf", "true", "'1024'", "1e20"])
def test_max_message_bytes_refuses_what_would_break_capture(value: str) -> None:
    with pytest.raises(
        ConfigError, match=r"capture.max_message_bytes' must be a whole number from 1024 to \d+"
    ):
        parse_config(_yaml("capture", "max_message_bytes", value))


@pytest.mark.parametrize(("section", "key"), sorted(NUMBERS))
def test_each_numeric_key_refuses_nan_bools_and_out_of_range(section: str, key: str) -> None:
    rule = NUMBERS[(section, key)]
    bad = [
        ".nan",
        ".inf",
        "-.inf",
        "true",
        "'5'",
        repr(rule.minimum - 1),
        repr(rule.maximum * 10 + 1),
    ]
    if rule.kind is int:
        bad.append(repr(rule.minimum + 0.5))
    for value in bad:
        with pytest.raises(ConfigError, match=f"'{section}.{key}' must be"):
            parse_config(_yaml(section, key, value))
    for good in {rule.minimum, rule.maximum}:
        text = repr(int(good)) if rule.kind is int or float(good).is_integer() else repr(good)
        cfg = parse_config(_yaml(section, key, text))
        got = getattr(getattr(cfg, section), key)
        assert got == good and isinstance(got, rule.kind) and math.isfinite(got)


def test_deadline_seconds_is_null_or_a_positive_number() -> None:
    assert parse_config("").llm.deadline_seconds is None
    assert parse_config(_yaml("llm", "deadline_seconds", "null")).llm.deadline_seconds is None
    assert parse_config(_yaml("llm", "deadline_seconds", "20")).llm.deadline_seconds == 20.0
    with pytest.raises(
        ConfigError, match="llm.deadline_seconds' must be a number from 0.1 to 86400"
    ):
        parse_config(_yaml("llm", "deadline_seconds", "0"))


@pytest.mark.parametrize(("section", "key"), [("search", "embedder"), ("llm", "provider")])
def test_a_plugin_name_with_a_final_newline_is_refused(section: str, key: str) -> None:
    with pytest.raises(ConfigError, match="write a plugin name"):
        parse_config(f'{section}:\n  {key}: "offline\\n"\n')
