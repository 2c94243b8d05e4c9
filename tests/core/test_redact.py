"""Secret redaction: every kind of the corpus goes, look-alikes and the text around stay."""

from __future__ import annotations

import base64
import json
import re
import subprocess
import sys
import textwrap
import time
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autopoiesis.capture.session import ConversationCapture, Session
from autopoiesis.core.config import parse_config
from autopoiesis.core.redact import Redactor, redactor_from_config
from autopoiesis.errors import ConfigError
from autopoiesis.testing.realistic_transcript import realistic_transcript
from autopoiesis.testing.secrets_corpus import CORPUS, LOOKALIKES, SecretSample
from tests.conftest import all_objects

SECRETS = {
    "openai_key": "sk-proj-Ab3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xYz2B4c6D8",
    "anthropic_key": "sk-ant-api03-" + "Xy9_" * 20 + "AA",
    "aws_access_key": "AKIAIOSFODNN7EXAMPLE",
    "github_token": "ghp_" + "a1B2c3D4e5F6" * 3,
    "slack_token": "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
    "bearer_token": "Authorization: Bearer eyJhbGciOi1234567890abcdefXYZ",
    "url_password": "postgres://admin:hunter2@db.internal:5432/app",
    "private_key": "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU=\n-----END OPENSSH PRIVATE KEY-----",
}


@pytest.mark.parametrize("kind, secret", SECRETS.items())
def test_real_secrets_are_redacted_and_counted(kind: str, secret: str) -> None:
    r = Redactor()
    out = r.redact(f"here: {secret} end")
    assert f"[redacted:{kind}]" in out
    assert r.counts[kind] == 1
    # nothing of the secret itself survives (for a URL only the password is secret)
    sensitive = "hunter2" if kind == "url_password" else secret[-8:]
    assert sensitive not in out
    assert out.startswith("here: ") and out.endswith(" end")


def test_the_corpus_has_at_least_35_kinds() -> None:
    assert len({s.kind for s in CORPUS}) >= 35
    assert all(s.secrets and all(x in s.text for x in s.secrets) for s in CORPUS)


def test_the_corpus_puts_each_provider_shape_in_every_context() -> None:
    """The second round: each shape alone, glued after `_` and letters, in Markdown
    italics, a URL, JSON, a shell command and prose (a prefix rule that wants a word
    boundary before it loses `MY_TOKEN_ghp_...` and `_ghp_..._`)."""
    contexts: dict[str, set[str]] = {}
    for sample in CORPUS:
        if "/" in sample.kind:
            kind, context = sample.kind.split("/")
            contexts.setdefault(kind, set()).add(context)
    assert len(contexts) >= 35
    needed = {"alone", "italics", "env_glued", "underscore", "url", "json", "shell", "prose"}
    assert all(needed <= c for c in contexts.values())
    assert len({s.kind.split("/")[0] for s in CORPUS}) >= 100


@pytest.mark.parametrize("sample", CORPUS, ids=lambda s: s.kind)
def test_every_corpus_kind_is_redacted_and_the_text_around_stays(sample) -> None:
    r = Redactor()
    out = r.redact(sample.text)
    for secret in sample.secrets:
        assert secret not in out, f"{sample.kind}: {secret[:12]}... survived"
    assert sum(r.counts.values()) >= 1
    # lines that carry no secret come through byte for byte
    for line in sample.text.splitlines():
        if "PRIVATE KEY-----" in line or re.fullmatch(r"[A-Za-z0-9+/=]{16,}", line):
            continue  # a line of a PEM block is part of the secret
        if not any(part in line for s in sample.secrets for part in (s, s[:8], s[-8:])):
            assert line in out.splitlines() or line in out, f"{sample.kind}: lost {line!r}"
    # a second pass changes nothing: a marker is never taken for a secret
    again = Redactor()
    assert again.redact(out) == out
    assert not again.counts


@pytest.mark.parametrize("name, text", LOOKALIKES, ids=[n for n, _ in LOOKALIKES])
def test_lookalikes_survive_byte_for_byte(name: str, text: str) -> None:
    r = Redactor()
    assert r.redact(text) == text
    assert not r.counts


def test_a_pem_header_in_prose_keeps_the_rest_but_a_truncated_key_body_goes() -> None:
    body = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj"
    prose = "-----BEGIN PRIVATE KEY----- is how the file starts; the rest of this message matters."
    assert Redactor().redact(prose) == prose
    pasted = (
        f"oops:\n-----BEGIN PRIVATE KEY-----\n{body}\n{body[::-1]}\n\nand then I stopped pasting."
    )
    out = Redactor().redact(pasted)
    assert body not in out and body[::-1] not in out
    assert out.startswith("oops:\n[redacted:private_key]") and out.endswith(
        "\n\nand then I stopped pasting."
    )


_KEY_LINES = (
    "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW",
    "QyNTUxOQAAACBvH0aK5Y2uF2J4l7m8w1pX3kQ9rT6sV0cZ2bN4mL8jHgAAAJgAAAAAAAAA",
    "AAAAC3NzaC1lZDI1NTE5AAAAIG8fRorljaEXYniXubzDWlfeRD2tPqxXRxnZs3iYvyMe",
)
_FOOTER = "-----END OPENSSH PRIVATE KEY-----"


@pytest.mark.parametrize(
    "tail, redacted",
    [
        ("{0}\n{1}\nAAAA==\n{end}", "[redacted:private_key]"),
        ("the rest:\n{0}\n{1}\n{end}\nthanks", "the rest:\n[redacted:private_key]\nthanks"),
        ("rest: {0} {1} {end} ok", "rest: [redacted:private_key] ok"),  # its line breaks lost
        ("> {0}\n> {1}\n> {end}", "> [redacted:private_key]"),  # quoted in Markdown
        ('{{"text": "{0}\\n{1}\\n{end}\\n"}}', '{{"text": "[redacted:private_key]\\n"}}'),
        ("```\r\n{0}\r\n{1}\r\n{end}\r\n```", "```\r\n[redacted:private_key]\r\n```"),
    ],
)
def test_the_end_of_a_key_whose_header_was_in_another_message_goes(
    tail: str, redacted: str
) -> None:
    """A key pasted over two messages: the first holds the header and goes whole; the
    second holds no header, only the last lines of the body and the footer."""
    first = Redactor().redact(
        f"my key, part one:\n-----BEGIN OPENSSH PRIVATE KEY-----\n{_KEY_LINES[0]}"
    )
    assert first == "my key, part one:\n[redacted:private_key]"
    out = Redactor().redact(tail.format(*_KEY_LINES[1:], end=_FOOTER))
    assert out == redacted.format()
    assert not any(line in out for line in _KEY_LINES)


@pytest.mark.parametrize(
    "text",
    [
        f"the file ends with {_FOOTER} as usual",
        _FOOTER,
        f"commit 9efcf30a1b2c3d4e5f60718293a4b5c6d7e8f901\n{_FOOTER}",
        f"Here is what it looks like\n{_FOOTER}",
        f"{_KEY_LINES[1]}\n\n{_FOOTER}",  # a blank line: the body is not the footer's
    ],
)
def test_a_key_footer_without_a_body_before_it_keeps_the_text(text: str) -> None:
    assert Redactor().redact(text) == text


def test_a_key_pasted_over_two_messages_reaches_git_in_neither(memory_repo) -> None:
    cap = ConversationCapture(memory_repo)
    s = Session("splitkey", started=datetime(2026, 3, 1, 9, 0, tzinfo=UTC), model="m")
    cap.on_session_start(s)
    cap.on_message(s, "user", f"-----BEGIN OPENSSH PRIVATE KEY-----\n{_KEY_LINES[0]}")
    cap.on_message(s, "user", f"{_KEY_LINES[1]}\n{_KEY_LINES[2]}\n{_FOOTER}")
    closed = cap.on_session_end(s)
    assert closed is not None and closed.commit
    objects = all_objects(memory_repo.root)
    for line in _KEY_LINES:
        assert line.encode() not in objects


def test_a_key_pasted_over_three_messages_reaches_git_in_none(memory_repo) -> None:
    """The middle message holds neither the header nor the footer: only its shape (lines of
    base64 of a key's width, binary when decoded) says that it is a key's material."""
    cap = ConversationCapture(memory_repo)
    s = Session("splitkey3", started=datetime(2026, 3, 1, 9, 0, tzinfo=UTC), model="m")
    cap.on_session_start(s)
    cap.on_message(s, "user", f"-----BEGIN OPENSSH PRIVATE KEY-----\n{_KEY_LINES[0]}")
    cap.on_message(s, "user", f"{_KEY_LINES[1]}\n{_KEY_LINES[2]}\n")
    cap.on_message(s, "user", _FOOTER)
    closed = cap.on_session_end(s)
    assert closed is not None and closed.commit
    objects = all_objects(memory_repo.root)
    for line in _KEY_LINES:
        assert line.encode() not in objects
    assert _FOOTER.encode() in objects  # the footer alone is no secret


@pytest.mark.parametrize(
    "text",
    [
        # a document in MIME's 76-character lines: base64 of text is data
        base64.encodebytes(("The quarterly report, in plain words. " * 12).encode()).decode(),
        # an image's base64 in lines
        "\n".join(["iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAC"] * 2),
        # one line of a key's width: as likely a digest or an id as a key
        _KEY_LINES[1],
        # lines of one width that are words, not base64 material
        "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijkl\nabcdef",
    ],
)
def test_lines_of_base64_that_are_no_key_stay(text: str) -> None:
    assert Redactor().redact(text) == text


def test_only_the_secret_of_an_assignment_goes() -> None:
    out = Redactor().redact("jdbc:mysql://db:3306/shop?user=app&password=Xk9vL2qR7&useSSL=true")
    assert out == "jdbc:mysql://db:3306/shop?user=app&password=[redacted:password]&useSSL=true"


def test_extra_patterns_from_config_and_disabling() -> None:
    r = Redactor(extra=[("employee_id", r"EMP-\d{6}")])
    assert r.redact("badge EMP-123456") == "badge [redacted:employee_id]"
    off = Redactor(enabled=False)
    assert off.redact(SECRETS["openai_key"]) == SECRETS["openai_key"]


def test_a_catastrophic_extra_pattern_cannot_hang_redaction() -> None:
    """`ID-(\\w+)+-X` backtracks exponentially in Python's re; RE2 matches in linear time.
    Run in a subprocess with a timeout, so a regression fails instead of hanging the suite."""
    code = textwrap.dedent(r"""
        from autopoiesis.core.config import parse_config
        from autopoiesis.core.redact import redactor_from_config
        cfg = parse_config("capture:\n  redaction:\n    extra_patterns:\n      - {name: ticket, pattern: 'ID-(\\w+)+-X'}\n")
        r = redactor_from_config(cfg)
        print(r.redact("ID-" + "a" * 60 + "!"))
        print(r.redact("see ID-ab_c-X now"))
    """)
    try:
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=60
        )
    except subprocess.TimeoutExpired:
        pytest.fail("redaction with the extra pattern ID-(\\w+)+-X did not finish within 60 s")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["ID-" + "a" * 60 + "!", "see [redacted:ticket] now"]


@pytest.mark.slow
def test_a_frequent_extra_pattern_stays_linear() -> None:
    """A pattern that matches every word also matches the words of its own markers on the
    second pass: checking each span against each marker was quadratic (3.4 s for 50 KB),
    and so was finding the lines around each marker of one long line. Eight times the
    text takes about eight times the CPU time now; quadratic would be sixty-four times.
    The bound is loose (thirty) because CPU time still drifts on a machine under load."""
    r = Redactor(extra=[("word", r"[a-z]{4,}")])
    text = "some words here " * 3_000
    out = r.redact(text)
    assert out == "[redacted:word] [redacted:word] [redacted:word] " * 3_000
    assert r.counts == {"word": 9_000}

    def cpu(size: int) -> float:
        best = float("inf")
        for _ in range(3):
            started = time.process_time()
            Redactor(extra=[("word", r"[a-z]{4,}")]).redact("some words here " * size)
            best = min(best, time.process_time() - started)
        return best

    small, large = cpu(1_600), cpu(12_800)
    assert large < 30 * small, f"25 KB: {small:.2f} s, 200 KB: {large:.2f} s"


def test_the_lines_around_markers_are_those_lines_and_their_neighbours() -> None:
    from autopoiesis.core.redact import _around as _lines_around

    text = "a\nb [m] c\nd\ne\nf [m]\ng"
    first, second = text.index("[m]"), text.rindex("[m]")
    got = _lines_around(text, [(first, first + 3), (second, second + 3)])
    # lines a..d around the first marker, e..g around the second
    assert got == [(0, text.index("\ne")), (text.index("e"), len(text))]
    far = "x\n" * 5 + "[m]" + "\ny" * 5
    at = far.index("[m]")
    assert _lines_around(far, [(at, at + 3)]) == [(far.index("x\n[m]"), far.index("\ny", at + 5))]
    one_line = "w [m] " * 1000
    marks = [(i, i + 3) for i in range(2, len(one_line), 6)]
    assert _lines_around(one_line, marks) == [(0, len(one_line))]


def test_a_later_pass_reads_a_few_kb_around_a_marker_of_a_long_line() -> None:
    """One 1 MB line with one marker: the next pass reads CONTEXT characters either side,
    cut at a space, not the whole line (a chain of N glued secrets takes N passes)."""
    from autopoiesis.core.redact import CONTEXT, _around

    line = "word " * 100_000 + "[m]" + " word" * 100_000
    at = line.index("[m]")
    ((start, end),) = _around(line, [(at, at + 3)])
    assert at - CONTEXT <= start < at and at + 3 < end <= at + 3 + CONTEXT
    assert line[start - 1] == " " and line[end] == " "


@pytest.mark.parametrize(
    "sample", [s for s in CORPUS if s.secrets == (s.text,)], ids=lambda s: s.kind
)
def test_secrets_glued_end_to_end_redact_once_and_for_all(sample: SecretSample) -> None:
    """Eight copies of a secret with nothing between them: a second redact changes nothing
    (four passes left the first copies of a chain of five in clear for the next call)."""
    once = Redactor().redact(sample.text * 8)
    assert Redactor().redact(once) == once


def test_a_chain_of_glued_tokens_ends_where_each_next_marker_begins() -> None:
    """Each token of the chain ends only where the next one's marker begins: the passes go
    on until the first is redacted too (hypothesis found five glued Square tokens)."""
    token = "sq0atp-0000000000000000000000"
    r = Redactor()
    assert r.redact(token * 9) == "[redacted:square_token]" * 9
    assert r.counts == {"square_token": 9}


@pytest.mark.parametrize(
    "pattern, hint",
    [(r"(a)\1", "backreferences"), (r"(?<=k)v", "lookaround"), ("(unclosed", "RE2")],
)
def test_config_refuses_a_pattern_re2_cannot_run_and_says_what_to_write(
    pattern: str, hint: str
) -> None:
    text = f"capture:\n  redaction:\n    extra_patterns:\n      - name: thing\n        pattern: '{pattern}'\n"
    with pytest.raises(ConfigError) as err:
        parse_config(text)
    msg = str(err.value)
    assert "extra_patterns[0]" in msg and "RE2" in msg and hint in msg
    assert "\n" not in msg.strip() and "E0000" not in msg


def test_the_config_redactor_uses_re2_patterns() -> None:
    cfg = parse_config(
        "capture:\n  redaction:\n    extra_patterns:\n      - {name: emp, pattern: 'EMP-\\d{6}'}\n"
    )
    assert redactor_from_config(cfg).redact("EMP-123456 and EMP-12") == "[redacted:emp] and EMP-12"


@pytest.mark.parametrize(
    "pattern, why",
    [
        ("(?s).+", "% of a sample of ordinary prose"),
        ("[a-z]+", "% of a sample of ordinary prose"),
        ("x*", "matches the empty string"),
    ],
)
def test_an_extra_pattern_that_would_redact_ordinary_text_is_refused(
    pattern: str, why: str
) -> None:
    """A collaborator's settings, pulled with the memory, with `extra_patterns: [{name: all,
    pattern: '(?s).+'}]` turned every message this machine captured into a marker, and a
    transcript is never rewritten: the text was gone for good."""
    text = f"capture:\n  redaction:\n    extra_patterns:\n      - {{name: all, pattern: '{pattern}'}}\n"
    with pytest.raises(ConfigError) as refused:
        parse_config(text)
    msg = str(refused.value)
    assert "extra_patterns[0] ('all') would redact ordinary text" in msg and why in msg
    # a pattern of a secret's shape, even a short one, is kept
    parse_config(
        "capture:\n  redaction:\n    extra_patterns:\n      - {name: ip, pattern: '10\\.\\d+\\.\\d+\\.\\d+'}\n"
    )


def test_a_pulled_over_broad_pattern_leaves_what_is_captured_whole(memory_repo, git) -> None:
    """Through the real path: the settings file committed as a collaborator's pull brings
    it; the next capture keeps its text (the last valid settings apply, with a warning)."""
    from autopoiesis.core.config_layers import load_config

    config = memory_repo.root / "memory-config.yaml"

    text = config.read_text(encoding="utf-8")
    bad = text.replace(
        "extra_patterns: []", "extra_patterns:\n      - {name: all, pattern: '(?s).+'}"
    )
    assert bad != text, "the template's extra_patterns line moved"
    config.write_text(bad, encoding="utf-8")
    git(memory_repo, "add", "memory-config.yaml")
    git(memory_repo, "-c", "core.hooksPath=/dev/null", "commit", "-q", "-m", "pulled settings")
    with pytest.warns(UserWarning, match="would redact ordinary text"):
        load_config(memory_repo.root)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cap = ConversationCapture(memory_repo)
        s = Session("keepme", started=datetime(2026, 3, 1, 9, 0, tzinfo=UTC), model="m")
        cap.on_session_start(s)
        cap.on_message(s, "user", "We use uv, not pip, in this repo.")
        closed = cap.on_session_end(s)
    assert closed is not None
    kept = (memory_repo.root / closed.path).read_text(encoding="utf-8")
    assert "We use uv, not pip, in this repo." in kept
    assert "[redacted:all]" not in kept


@pytest.mark.slow
def test_a_real_capture_keeps_no_byte_of_any_corpus_secret(memory_repo, git) -> None:
    """Every corpus kind in a message body and a tool result of a real, committed session:
    no secret in the transcript file nor in any git object."""
    cap = ConversationCapture(memory_repo)
    s = Session(
        "secrets1", started=datetime(2026, 3, 1, 9, 0, tzinfo=UTC), model="m", channel="cli"
    )
    cap.on_session_start(s)
    for sample in CORPUS:
        cap.on_message(s, "user", sample.text)
        cap.on_tool_call(s, "exec", "cat config", sample.text[:250])
    closed = cap.on_session_end(s)
    assert closed is not None and closed.commit
    text = (memory_repo.root / closed.path).read_text(encoding="utf-8")
    objects = all_objects(memory_repo.root)
    for sample in CORPUS:
        for secret in sample.secrets:
            assert secret not in text, f"{sample.kind} leaked into the transcript"
            assert secret.encode() not in objects, f"{sample.kind} leaked into git"
    assert "[redacted:" in text


def test_lone_surrogates_and_non_ascii_text_are_redacted_not_raised() -> None:
    r = Redactor(extra=[("emp", r"EMP-\d+")])
    assert (
        r.redact("hi \ud83d there password=abc\ud83ddef EMP-12 é")
        == "hi \ud83d there password=[redacted:password] [redacted:emp] é"
    )
    assert r.redact("héllo EMP-12 wörld") == "héllo [redacted:emp] wörld"


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.text(alphabet=st.characters(blacklist_categories=())),
            st.sampled_from(
                [s.text for s in CORPUS]
                + [t for _, t in LOOKALIKES]
                + ["=", ":", "\\n", "-----BEGIN PRIVATE KEY-----"]
            ),
        ),
        max_size=6,
    )
)
def test_redaction_never_raises_and_is_idempotent(parts: list[str]) -> None:
    text = "".join(parts)
    once = Redactor().redact(text)
    assert Redactor().redact(once) == once


def test_a_marker_that_exposes_an_assignment_is_redacted_in_the_same_call() -> None:
    """Found by hypothesis: once the Square token is a marker, `A=000000001234567A` reads as
    a fresh assignment; one call must give what a second call would."""
    text = "0sq0csp-0000000000000000000000000000000000000" + "000000A" + "=000000001234567A"
    r = Redactor()
    once = r.redact(text)
    assert once == "0[redacted:square_oauth_secret]A=[redacted:high_entropy]"
    assert Redactor().redact(once) == once
    assert r.counts == {"square_oauth_secret": 1, "high_entropy": 1}


def test_a_call_assigned_to_a_keyword_is_kept_in_a_fresh_process() -> None:
    """`token_budget = data.get(...)` is a call, not a secret: detect-secrets' filter that
    says so was consulted only once the library had been loaded by an earlier text."""
    code = textwrap.dedent("""
        from autopoiesis.core.redact import Redactor
        print(Redactor().redact('token_budget = data.get("max_tokens", 5)'))
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout == 'token_budget = data.get("max_tokens", 5)\n'


def test_a_long_session_loses_its_secrets_and_nothing_else() -> None:
    """The benchmark's transcript (prose, code, JSON and shell output, diffs, a corpus
    secret every 40 blocks): every secret goes, every line without one stays."""
    text = realistic_transcript(200_000)
    r = Redactor()
    out = r.redact(text)
    carried = [s for s in CORPUS if s.text in text]
    assert len(carried) >= 10
    for sample in carried:
        for secret in sample.secrets:
            assert secret not in out, sample.kind
    secret_lines = {line for s in carried for line in s.text.splitlines()}
    kept = set(out.splitlines())
    lost = [ln for ln in text.splitlines() if ln not in secret_lines and ln not in kept]
    assert not lost, lost[:3]
    assert Redactor().redact(out) == out


def test_a_caseless_rule_finds_on_the_lowercase_copy_what_it_finds_with_ignorecase() -> None:
    """The case-insensitive rules run without the flag on a lowercase copy of the text
    (three times faster): that holds only while their letters are lowercase."""
    from autopoiesis.core.redact import _lowercase
    from autopoiesis.core.redact_rules import BUILTIN_RULES

    texts = [s.text for s in CORPUS] + [t for _, t in LOOKALIKES]
    texts += [t.upper() for t in texts] + [t.swapcase() for t in texts]
    caseless = [p for *_, p in BUILTIN_RULES if p.startswith("(?i)")]
    assert len(caseless) >= 8
    for pattern in caseless:
        flagged, plain = re.compile(pattern), re.compile(pattern[len("(?i)") :])
        for text in texts:
            want = [m.span() for m in flagged.finditer(text)]
            assert [m.span() for m in plain.finditer(_lowercase(text))] == want, pattern


def test_a_rule_skipped_for_want_of_its_words_cannot_match_without_them() -> None:
    from autopoiesis.core.redact_rules import BUILTIN_RULES, WORDS_NEEDED

    texts = [s.text for s in CORPUS] + [t for _, t in LOOKALIKES]
    checked = 0
    for kind, _, family, pattern in BUILTIN_RULES:
        words = WORDS_NEEDED.get((family, kind))
        if not words:
            continue
        for text in texts:
            for m in re.finditer(pattern, text):
                checked += 1
                assert any(w in m.group(0).lower() for w in words), (kind, m.group(0))
    assert checked >= len(WORDS_NEEDED)


def test_detect_secrets_keyword_plugins_are_not_skipped_on_lines_they_match() -> None:
    """A keyword plugin is skipped on a keyword line without its words: each line here is
    one its regexes match, so its words must be there."""
    from autopoiesis.core.redact_library import _DS, _plugins_for

    _DS.load()
    assert _DS.plugins is not None
    hex64 = "0123456789abcdef" * 4
    lines = {
        "NpmDetector": ["//registry.npmjs.org/:_authToken=9b2c4f1e-7a3d-4e8b-9c6f-1d2e3f4a5b6c"],
        "AWSKeyDetector": ['aws_secret_key = "' + "A1b2C3d4E5" * 4 + '"'],
        "AzureStorageKeyDetector": ["AccountKey=" + "A1b2C3d4" * 11],
        "CloudantDetector": [
            f"cloudant_password = '{hex64}'",
            f"https://acct:{hex64}@acct.cloudant.com",
        ],
        "IbmCloudIamDetector": ['password = "' + "A1b2C3d4E5F6" * 3 + 'A1b2C3d4"'],
        "IbmCosHmacDetector": ['secret_access_key = "' + "0123456789abcdef" * 3 + '"'],
        "SoftlayerDetector": [
            f"softlayer_api_key = {hex64}",
            f"https://api.softlayer.com/soap/v3/{hex64}",
        ],
    }
    keyword_plugins = {type(plugin).__name__ for _, plugin, reads in _DS.plugins if reads}
    assert {type(plugin).__name__ for _, plugin, _ in _DS.keyword_plugins} == keyword_plugins
    for _, plugin, _ in _DS.keyword_plugins:
        name = type(plugin).__name__
        for line in lines[name]:
            assert list(plugin.analyze_string(line)), (name, line)
            assert plugin in [p for _, p in _plugins_for(line.lower(), every=False)], (name, line)


def test_a_name_made_of_words_is_no_token_but_random_tokens_stay_tokens() -> None:
    """A value in code or a model hub's id ("NonFunctionalRequirements",
    "unsloth/SmolLM3-3B-128K-GGUF") is no high-entropy secret; random tokens read as such
    names seldom (a fixed sample: at most 2 in 1,000 of base62, none without case)."""
    import random
    import string

    from autopoiesis.core.redact_rules import is_compound_name

    assert is_compound_name("addLanguageToCodeBlocks")
    assert is_compound_name("DevQuasar/princeton-nlp.llama-3-8b-prolong-512k-instruct")
    for token in ("Rx5okAo5Bm4", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "fontlab8_content"):
        assert not is_compound_name(token), token
    rng = random.Random(20261129)
    for alphabet, most in (
        (string.ascii_letters + string.digits, 0.002),
        (string.ascii_letters + string.digits + "+/", 0.002),
        (string.ascii_lowercase + string.digits + "_-", 0.0),
    ):
        tokens = ["".join(rng.choices(alphabet, k=rng.randint(16, 40))) for _ in range(20_000)]
        assert sum(map(is_compound_name, tokens)) <= most * len(tokens), alphabet
    r = Redactor()
    assert r.redact("x: aB3dE5fG7hJ9kL1mN3pQrS") == "x: [redacted:high_entropy]"


def test_a_comment_after_an_env_value_is_not_the_value() -> None:
    """dotenv and the shell end an unquoted value at ` #`: the secret before it goes, the
    comment stays; a number before it is no secret."""
    r = Redactor()
    assert r.redact("export API_TOKEN=abcDEF123ghiJKL456mno # prod") == (
        "export API_TOKEN=[redacted:secret] # prod"
    )
    assert r.redact("DB_PASSWORD=hunter2xyz   # the dev one") == (
        "DB_PASSWORD=[redacted:password]   # the dev one"
    )
    assert r.redact("SAFE_UNLIMITED_TOKENS = 4096  # fits 3-4 B models") == (
        "SAFE_UNLIMITED_TOKENS = 4096  # fits 3-4 B models"
    )
    # a quote in a password does not end it; one that closes a setting quoted in prose does
    assert r.redact("PASSWORD=abc'def") == "PASSWORD=[redacted:password]"
    assert r.redact("e_assertion_pass_hook=true' to pytest.ini") == (
        "e_assertion_pass_hook=true' to pytest.ini"
    )


def test_a_test_runner_s_verdict_and_a_model_s_id_are_no_secrets() -> None:
    """Real Go sessions exported from Claude Code lost every passing test's name to
    `[redacted:password]` ("--- PASS: TestX (0.00s)" reads as `pass: VALUE`), and a
    session's JSON its model ("model": "claude-opus-4-5-20251101" to `high_entropy`).
    A password said as PASS, and a key under a model's name, still go."""
    r = Redactor()
    for kept in (
        "--- PASS: TestAgentSessionTypes (0.00s)",
        "    --- PASS: TestClassifyToolType/Write_tool (0.12s)",
        "    --- PASS: TestParseGitRemoteURL/GIT+SSH_protocol (0.00s)",  # high entropy too
        "ok (0.01s) --- PASS: TestTotal/with_discount (0.00s) PASS ok shop 0.2s",  # one line
        '"model": "claude-opus-4-5-20251101",',
        "model: gpt-4o-mini-2024-07-18",
        "model_name: claude-sonnet-4-5-20250929",
    ):
        assert r.redact(kept) == kept, kept
    assert r.redact("PASS: hunter2xyz9") == "PASS: [redacted:password]"
    assert r.redact("pass: TestX (0.00s)") == "pass: [redacted:password] (0.00s)"
    assert r.redact('"model_api_key": "aB3dE5fG7hJ9kL1mN3pQrS"') == (
        '"model_api_key": "[redacted:secret]"'
    )


def test_an_aws_secret_key_said_in_prose_or_beside_its_access_key_is_redacted() -> None:
    """Only `aws_secret_access_key = ...` was found: "the AWS secret key is wJalr..." and
    the secret written after its access key on one line reached the transcript. A git SHA
    (40 hex digits) in the same place is no secret."""
    from autopoiesis.core.redact import Redactor

    secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEZ"
    r = Redactor()
    assert r.redact(f"the AWS secret key is {secret} ok") == (
        "the AWS secret key is [redacted:aws_secret_key] ok"
    )
    assert secret not in r.redact(f"secret access key: `{secret}`")
    assert r.redact(f"keys: AKIAIOSFODNN7EXAMPLQ {secret}") == (
        "keys: [redacted:aws_access_key] [redacted:aws_secret_key]"
    )
    sha = "3f9a0c1b2d4e5f60718293a4b5c6d7e8f9012345"
    assert r.redact(f"the secret key fix is commit {sha}") == f"the secret key fix is commit {sha}"
    assert sha in r.redact(f"AKIAIOSFODNN7EXAMPLQ rotated in {sha}")


def test_a_url_password_holding_an_at_sign_goes_whole() -> None:
    """The userinfo ends at the last `@` before the host: a password with `@` was missed
    (`P@ssw0rd!2024@db`) or cut at its first `@`, the rest kept (`Xq9z@Pw7Lm2`). An `@`
    in the query is no part of it."""
    r = Redactor()
    assert r.redact("https://admin:P@ssw0rd!2024@db.internal:5432/app") == (
        "https://admin:[redacted:url_password]@db.internal:5432/app"
    )
    assert r.redact("see https://alice:Xq9z@Pw7Lm2@host/x ok") == (
        "see https://alice:[redacted:url_password]@host/x ok"
    )
    assert r.redact("https://u:hunter2@host?next=a@b.org") == (
        "https://u:[redacted:url_password]@host?next=a@b.org"
    )


def test_a_url_userinfo_that_is_one_long_token_goes() -> None:
    """`https://<token>@github.com/...` is how git is handed a token with no known prefix;
    a user's name before `@` stays."""
    r = Redactor()
    token = "Q7wE9rT5yU3iO1pA8sD6fG4hJ2kL0zXcVbN1mQwE"
    assert r.redact(f"git clone https://{token}@github.com/o/r.git") == (
        "git clone https://[redacted:url_token]@github.com/o/r.git"
    )
    hexed = "0123456789abcdef0123456789abcdef01234567"  # GitHub's tokens of old: 40 hex
    assert hexed not in r.redact(f"https://{hexed}@github.com/o/r")
    for kept in (
        "ssh://git@gitlab.example.com:2222/acme/infra.git",
        "https://someone.with.a.long.name@example.com/x",
        "https://ana@example.com/x",
    ):
        assert r.redact(kept) == kept


# the user's code, kept byte for byte: each line used to lose its value (a call's head
# eaten, its brackets left unbalanced; a number; a name), whatever its keyword
CODE_WITH_KEYWORDS = (
    'password = input("Password: ")',
    "pw = request.POST.get('password')",
    "password = getpass()",
    "password = getpass.getpass('Password: ')",
    "MAX_PASSWORD_LENGTH = 128",
    "password_reset_token_expiry = 3600",
    "api_key_env: ANTHROPIC_API_KEY",
    "TOKEN_URL = 'https://oauth2.googleapis.com/token'",
    "API_KEY_HEADER = 'X-API-Key'",
    "api_key = config.api_key",
    "secret_key = settings.SECRET_KEY",
)


@pytest.mark.parametrize("line", CODE_WITH_KEYWORDS)
def test_a_keyword_s_value_that_is_a_call_a_number_or_a_name_is_kept(line: str) -> None:
    """A plain number, a URL without credentials, an environment variable's name, a
    dotted reference, a header's name or a call is no secret value."""
    r = Redactor()
    assert r.redact(line) == line
    assert not r.counts


@pytest.mark.parametrize("line", ["password = 83920174", "db_password: 482913", "PASSWORD=1234567"])
def test_a_password_of_six_digits_or_more_still_goes(line: str) -> None:
    """A keyword's number is kept as a measure (a length, seconds); one of six digits or
    more may be a PIN or a password of digits."""
    assert Redactor().redact(line) != line


def test_code_on_one_line_or_in_a_json_string_keeps_its_values() -> None:
    """How capture sees a file: a tool's output on one line (`'Password: '` then more code
    up to the next quote read as a quoted value), a tool's arguments as JSON (the last
    line's value ran on to the string's closing `"}`)."""
    code = "\n".join(CODE_WITH_KEYWORDS)
    for text in (" ".join(CODE_WITH_KEYWORDS), json.dumps({"content": code})):
        r = Redactor()
        assert r.redact(text) == text
        assert not r.counts
    # the same values, secrets: still found in both forms
    for text in (
        "x = 1 DB_PASSWORD='Xq9z!Lm2' y = 2",
        json.dumps({"c": "a\nDB_PASSWORD=Xq9z!Lm2"}),
    ):
        assert "Xq9z!Lm2" not in Redactor().redact(text)


def test_values_shaped_like_names_but_random_are_still_secrets() -> None:
    """What is_reference lets through: the same shapes made of random characters, and a
    URL that carries a token in its path."""
    r = Redactor()
    assert r.redact("password: Xq9z.Pw7Lm2") == "password: [redacted:password]"
    assert r.redact("secret: QW7P2_XKZQ_RTPLM9") == "secret: [redacted:secret]"
    assert r.redact('password = "P@ss(word)1"') == 'password = "[redacted:password]"'
    hook = "https://example.com/h/8f3kd92jf83kd02kd93kf83kdk3x"
    assert r.redact(f'webhook_token = "{hook}"') == 'webhook_token = "[redacted:secret]"'


def test_code_written_by_a_tool_call_is_captured_as_written(memory_repo) -> None:
    """The real capture path: the lines in an agent's message, as a file a tool call
    writes (its arguments are JSON, where `password = input(` is not at the start of a
    line and the last line ends with the string's `"}`) and as its output (on one line,
    where `'Password: '` is followed by more code and more quotes) come out of the
    transcript as they went in, and nothing is counted as redacted."""
    from autopoiesis.capture.stream import process_stream

    code = "\n".join(CODE_WITH_KEYWORDS)
    fenced = f"Here it is:\n\n```python\n{code}\n```"
    args = json.dumps({"file_path": "login.py", "content": code})
    events = [
        {"event": "session_start", "session_id": "red-code", "started": "2026-02-16T18:45:00Z"},
        {"event": "message", "role": "user", "content": "write login.py"},
        {"event": "message", "role": "assistant", "content": fenced},
        {"event": "tool_call", "tool": "Write", "args": args, "result": code},
    ]
    for line in CODE_WITH_KEYWORDS:
        one = json.dumps({"file_path": "a.py", "content": f"import os\n{line}"})
        events.append({"event": "tool_call", "tool": "Write", "args": one, "result": line})
    events.append({"event": "session_end"})
    report = process_stream(memory_repo, [json.dumps(e).encode() for e in events])
    assert not report.refused
    [path] = (memory_repo.root / "raw").rglob("*.md")
    text = path.read_text(encoding="utf-8")
    assert "[redacted:" not in text and "redactions: {}" in text
    assert code in text
    for line in CODE_WITH_KEYWORDS:
        assert json.dumps(line)[1:-1] + '"}' in text
        assert f"→ {line}\n" in text


def test_a_keyword_s_value_of_words_to_the_end_of_its_line_goes_whole() -> None:
    """`passphrase: correct horse battery staple` kept "horse battery staple": a plain
    value runs to the end of its line (YAML's, as `key = value` in INI already did), to a
    comment, or to the end of a JSON string; not over a quote, bracket or `key:` after it."""
    r = Redactor()
    assert r.redact("passphrase: correct horse battery staple") == "passphrase: [redacted:password]"
    assert r.redact("  password: correct horse battery staple  # the old one") == (
        "  password: [redacted:password]  # the old one"
    )
    wrapped = json.dumps({"content": "a\npassphrase: correct horse battery staple"})
    assert r.redact(wrapped) == json.dumps({"content": "a\npassphrase: [redacted:password]"})
    assert r.redact("password: hunter2, user: bob") == "password: [redacted:password], user: bob"
    assert r.redact("password: Xq9z then {x}") == "password: [redacted:password] then {x}"
    # prose: a sentence of words after "is" cannot be told from a passphrase said in it
    for kept in (
        "Password: required for login",
        "the password is stored in vault",
        "my password is correct horse battery staple",
    ):
        assert r.redact(kept) == kept


def test_an_xml_element_named_after_its_secret_holds_a_secret() -> None:
    """Maven's settings.xml: `<password>Mvn9Settings7x</password>` was kept. An element
    whose name goes on past the word (`<passwordPolicy>`), a property and a number stay."""
    r = Redactor()
    server = "<server><id>x</id><username>me</username><password>Mvn9Settings7x</password>"
    assert r.redact(server) == (
        "<server><id>x</id><username>me</username><password>[redacted:password]</password>"
    )
    assert r.redact("<keyPassword>correct horse</keyPassword>") == (
        "<keyPassword>[redacted:password]</keyPassword>"
    )
    assert r.redact("  <apiKey>Q7wE9rT5yU3iO1pA8sD6</apiKey>") == (
        "  <apiKey>[redacted:secret]</apiKey>"
    )
    for kept in (
        "<password>${env.MVN_PW}</password>",
        "<passwordPolicy>strong</passwordPolicy>",
        "<passwordLength>8</passwordLength>",
    ):
        assert r.redact(kept) == kept


def test_an_authorization_header_of_any_scheme_loses_its_credentials() -> None:
    """Only Bearer and Basic were known: GitHub's `Authorization: token X` and Django REST
    framework's `Token X` were kept."""
    r = Redactor()
    assert r.redact("Authorization: token Q7wE9rT5yU3iO1pA8sD6fG4hJ2kL0zXc") == (
        "Authorization: token [redacted:auth_token]"
    )
    assert r.redact(
        'curl -H "Authorization: Token 9944b09199c62bcf9418ad846dd0e4bbdfc6ee4b" x'
    ) == ('curl -H "Authorization: Token [redacted:auth_token]" x')
    for kept in (
        'Authorization: Digest username="Mufasa", realm="x"',
        "the Authorization: header carries a token usually",
    ):
        assert r.redact(kept) == kept


def test_a_cookie_header_s_random_values_go() -> None:
    """`Cookie: sessionid=...` was kept (only a value under a keyword name went): a
    session's id is its credentials. Settings in a cookie stay."""
    r = Redactor()
    assert r.redact("Cookie: sessionid=8f3kd92jf83kd02kd93kf83kdk3; theme=dark; lang=en-US") == (
        "Cookie: sessionid=[redacted:cookie]; theme=dark; lang=en-US"
    )
    assert r.redact("Set-Cookie: sessionid=8f3kd92jf83kd02kd93kf83kdk3; Path=/; HttpOnly") == (
        "Set-Cookie: sessionid=[redacted:cookie]; Path=/; HttpOnly"
    )
    kept = 'curl -H "Cookie: theme=dark; lang=en-US" https://example.com'
    assert r.redact(kept) == kept


def test_a_signed_url_s_signature_goes() -> None:
    """Azure's SAS `sig=` (URL-encoded base64) was kept; whoever has the URL has access."""
    r = Redactor()
    sas = (
        "sv=2021-06-08&se=2024-01-01&sr=b&sp=r&sig=Zk3x%2Bq9Lm2Pw7Xq9zT5yU3iO1pA8sD6fG4hJ2kL0zX%3D"
    )
    assert r.redact(f"https://acct.blob.core.windows.net/c/b?{sas} ok") == (
        "https://acct.blob.core.windows.net/c/b?sv=2021-06-08&se=2024-01-01&sr=b&sp=r"
        "&sig=[redacted:url_signature] ok"
    )
    kept = "see https://example.com/docs?page=2&sig=short#install"
    assert r.redact(kept) == kept


@pytest.mark.parametrize(
    "command",
    [
        "redis-cli -h cache -a {pw} ping",
        "zip -P {pw} out.zip notes.txt",
        "unzip -P {pw} out.zip",
        "7z a -p{pw} out.7z dir",
        "az login -u me@example.com -p {pw}",
        "podman login -u ana -p {pw} quay.io",
    ],
)
def test_a_password_on_these_command_lines_goes(command: str) -> None:
    pw = "Xq9zPw7Lm2"
    out = Redactor().redact(command.format(pw=pw))
    assert out == command.format(pw="[redacted:password]")


def test_these_command_lines_without_a_password_stay() -> None:
    r = Redactor()
    for kept in (
        'redis-cli -a "$REDIS_PASSWORD" ping',
        'zip -r out.zip dir -x "*.pyc"',
        "gzip -P x",
        "7z a -p out.7z dir",
        "for a, b in zip(xs, ys): pass",
        "the zip file has a password",
    ):
        assert r.redact(kept) == kept


def test_text_without_a_secret_compiles_only_the_prefilter_in_a_fresh_process() -> None:
    """The families' anchors and the library's are compiled for the first text the
    prefilter flags, not for every text: a compiled context of plain notes never needs
    them. Once flagged, a secret is redacted as ever."""
    code = textwrap.dedent("""
        from autopoiesis.core.redact import Redactor
        from autopoiesis.core.redact_library import _Anchors
        r = Redactor()
        print(r.redact("We decided to move the deploy to Friday."))
        print(_Anchors.prefilter is not None, _Anchors.library is None, _Anchors.families)
        print(r.redact("token: xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"))
        print(_Anchors.library is not None, len(_Anchors.families) > 0)
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "We decided to move the deploy to Friday.",
        "True True ()",
        "token: [redacted:slack_token]",
        "True True",
    ]


def test_detect_secrets_keyword_regexes_are_not_skipped_on_lines_they_match() -> None:
    """Each of detect-secrets' keyword regexes runs only on a line with what it cannot
    match without (`:`, `=`, `;`, `==`): on a line it matches, its value is still found."""
    from detect_secrets.plugins import keyword as kw

    from autopoiesis.core.redact_library import _DS, _keyword_detector_values

    _DS.load()
    value = "Xq9k2mZ7vL4wP8rT"
    lines = {
        "FOLLOWED_BY_COLON_REGEX": [f"password: {value}"],
        "FOLLOWED_BY_COLON_QUOTES_REQUIRED_REGEX": [f'api_key: "{value}"'],
        "FOLLOWED_BY_EQUAL_SIGNS_REGEX": [f"password = {value}", f"password !== {value}"],
        "FOLLOWED_BY_EQUAL_SIGNS_QUOTES_REQUIRED_REGEX": [f'password = "{value}"'],
        "FOLLOWED_BY_ARROW_FUNCTION_SIGN_QUOTES_REQUIRED_REGEX": [f'password => "{value}"'],
        "FOLLOWED_BY_QUOTES_AND_SEMICOLON_REGEX": [f'private_key "{value}";'],
        "PRECEDED_BY_EQUAL_COMPARISON_SIGNS_QUOTES_REQUIRED_REGEX": [
            f'if "{value}" == password:',
            f'if "{value}" != password:',
        ],
    }
    checked = 0
    for groups, _ in _DS.keyword_groups:
        for rx, group in groups.items():
            name = next(n for n, v in vars(kw).items() if v is rx)
            for line in lines[name]:
                m = rx.search(line)
                assert m is not None, (name, line)
                found = [v for _, v, _ in _keyword_detector_values(line, line.lower())]
                assert m.group(group) in found, (name, line)
                checked += 1
    assert checked >= 9


def test_the_lowercase_copy_holds_every_line_a_rule_reads() -> None:
    """The caseless rules read a copy of the text lowercased only on the lines the anchors
    flag: on each of them it is what lowercasing the whole text gives."""
    from autopoiesis.core.redact import (
        _flagged_lines,
        _lowercase,
        _lowercase_lines,
        _view,
    )
    from autopoiesis.core.redact_library import _Anchors

    _Anchors.load()
    corpus = "\n".join(s.text.upper() for s in CORPUS)
    for text in (realistic_transcript(50_000) + corpus, "Zürich\n" + corpus.swapcase()):
        view = _view(text)
        lines = _flagged_lines(view)
        low, sparse = _lowercase(view), _lowercase_lines(view, lines)
        assert len(sparse) == len(view)
        ranges = [r for family in lines.values() for r in family]
        assert len(ranges) > 100
        for start, end in ranges:
            assert sparse[start:end] == low[start:end], view[start:end]


@pytest.mark.parametrize("elsewhere", ["", "Zürich \u00e9t\u00e9\n"])
def test_a_key_split_by_characters_of_no_width_or_escaped_goes_in_a_long_text(
    elsewhere: str,
) -> None:
    """Detection reads a text not ASCII without its characters of no width and with its
    JSON `\\u` escapes decoded, and an ASCII text with its escapes decoded: a key hidden so
    in a long transcript, ASCII or not, goes."""
    key = SECRETS["github_token"]
    hidden = key[:6] + "\u200b" + key[6:12] + "\u2060" + key[12:]
    escaped = "\\u0067" + key[1:]  # `g` as a JSON escape
    text = realistic_transcript(20_000).replace("\u200d", "")
    if not elsewhere:
        text = text.encode("ascii", "ignore").decode()
        assert text.isascii()
    out = Redactor().redact(
        f"{elsewhere}{text}Use {escaped} for the deploy.\n{text}"
        + (f"Or {hidden} instead.\n" if elsewhere else "")
    )
    assert escaped not in out and "Use [redacted:github_token] for" in out
    assert not elsewhere or "Or [redacted:github_token] instead." in out


def test_the_anchors_find_through_re2s_regexp_what_re2_search_finds() -> None:
    """The anchors search through google-re2's regexp without its match objects, and
    through `search` where that is not there: both find the same first match from each
    offset."""
    from autopoiesis.core.redact_library import _first_match, compile_extra_pattern
    from autopoiesis.core.redact_rules import ANCHORS

    class SearchOnly:  # a compiled pattern that has `search` and nothing else
        def __init__(self, rx: object) -> None:
            self.search = rx.search  # type: ignore[attr-defined]

    data = "\n".join([s.text for s in CORPUS] + [t for _, t in LOOKALIKES]).encode()
    for source in ANCHORS.values():
        rx = compile_extra_pattern(source.encode())
        raw, plain = _first_match(rx), _first_match(SearchOnly(rx))
        assert raw.__name__ == "raw_search" and plain.__name__ == "search"
        for pos in [*range(0, len(data), len(data) // 50), len(data) - 1, len(data)]:
            assert raw(data, pos) == plain(data, pos) == _span(rx.search(data, pos))


def _span(m: object) -> tuple[int, int] | None:
    return None if m is None else m.span()  # type: ignore[attr-defined]


def test_a_secret_one_field_of_a_record_holds_is_redacted_in_the_others() -> None:
    """`echo KEY | aws configure set aws_secret_access_key` beside its result's
    `AWS_SECRET_ACCESS_KEY=KEY`: the result's key was redacted, the arguments' kept,
    since no rule sees a bare token before a pipe. Redacted as the fields of one record,
    a secret found in one is redacted in all (one of 12 characters or more: a short one
    may be a word elsewhere); apart, or in the next record, it is not known."""
    key = "Zx9kP2mQ7vR4tY8wB3nL6jH1cF5gD0sA2eU9iO4p"
    said = f"echo {key} | aws configure set aws_secret_access_key"
    r = Redactor()
    assert r.redact_fields([said, f"AWS_SECRET_ACCESS_KEY={key}"]) == [
        "echo [redacted:aws_secret_key] | aws configure set aws_secret_access_key",
        "AWS_SECRET_ACCESS_KEY=[redacted:aws_secret_key]",
    ]
    assert r.counts["aws_secret_key"] == 2
    assert r.redact(said) == said  # another record
    assert r.redact_fields(["hunter2 is a film", "password: hunter2"])[0] == "hunter2 is a film"


def test_a_password_in_a_url_escaped_query_goes() -> None:
    """A logged query string whose `=` and `&` are escaped (`password%3DTr0ub4dor-Xq9z%26
    user%3Dbob`) kept the password, and it reached the commit subject and the journal.
    Detection reads `%3D` after a name as `=` and `%26` before one as `&`: the password
    goes, and the rest of the text stays as written."""
    r = Redactor()
    logged = "the server logged: password%3DTr0ub4dor-Xq9z%26user%3Dbob"
    assert r.redact(logged) == "the server logged: password%3D[redacted:password]%26user%3Dbob"
    assert r.redact("search?q=a%20b%3Dc%26d") == "search?q=a%20b%3Dc%26d"
