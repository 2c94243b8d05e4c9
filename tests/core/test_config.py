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


def _laughs(indent: str) -> str:
    """Nine lines of nested aliases ("billion laughs"): 9**9 strings once expanded."""
    lines = [f"{indent}a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"{indent}a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 9)]
    return "\n".join(lines) + "\n"


def test_an_alias_is_refused_naming_its_line() -> None:
    """memory-config.yaml travels with the repository. Nested aliases inside an extra
    pattern's mapping passed every check, and each command then wrote the settings cache
    as JSON, expanding them: `doctor` hung, `status` ran out of memory."""
    bomb = (
        "capture:\n  redaction:\n    extra_patterns:\n"
        "      - name: foo\n        pattern: 'foo[0-9]+'\n        junk:\n" + _laughs(" " * 10)
    )
    with pytest.raises(ConfigError, match=r"line 8: the settings use a YAML alias \(\*a0\)"):
        parse_config(bomb)
    with pytest.raises(ConfigError, match="alias"):
        parse_config("llm:\n  models:\n    gate: &m gpt-4o\n    extract: *m\n")


def test_an_extra_pattern_with_a_key_no_code_reads_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"extra_patterns\[0\] has an unknown key 'flags'"):
        parse_config(
            "capture:\n  redaction:\n    extra_patterns:\n"
            "      - {name: a, pattern: 'a[0-9]+', flags: i}\n"
        )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("context_compiler: " + "[" * 5000 + "]" * 5000 + "\n", "more than 16 levels deep"),
        ("".join("  " * i + f"k{i}:\n" for i in range(2000)), "more than 16 levels deep"),
        ("llm:\n  api_key_env: 2026-13-01\n", r"a date that does not exist.*quote it"),
        ("llm:\n  daily_token_budget: " + "9" * 5000 + "\n", "value has 5000 digits"),
    ],
)
def test_yaml_no_setting_can_be_made_of_is_named_not_raised(text: str, message: str) -> None:
    """Deep nesting raised RecursionError, an impossible date or an integer of thousands of
    digits a ValueError: a traceback from every command, `doctor` 'the check failed'."""
    with pytest.raises(ConfigError, match=message):
        parse_config(text)


def test_a_yaml_error_names_the_line_without_the_librarys_advice() -> None:
    with pytest.raises(ConfigError) as info:
        parse_config("context_compiler:\n  token_budget: 4000\n  token_budget: 9000\n")
    message = str(info.value)
    assert message.startswith("memory-config.yaml, line 3 is not valid YAML: found duplicate key")
    assert "suppress" not in message and "<unicode string>" not in message


def test_a_wrong_value_is_shown_cut_short() -> None:
    with pytest.raises(ConfigError) as info:
        parse_config("llm:\n  api_key_env: [" + ", ".join(["x" * 1000] * 1000) + "]\n")
    assert "'llm.api_key_env' must be a string" in str(info.value)
    assert len(str(info.value)) < 1000
