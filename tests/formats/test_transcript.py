"""The transcript format: lossless round trip (property-tested) and its documented rules."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autopoiesis.core.text import slugify
from autopoiesis.errors import TranscriptFormatError
from autopoiesis.formats import transcript as tf

UTC = UTC
T0 = datetime(2026, 2, 16, 23, 50, tzinfo=UTC)

text_st = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=0, max_size=80)
# content that likes to look like structure
tricky_line = st.sampled_from(
    [
        "## 12:00 — user",
        "\\## 12:00 — agent",
        "> [tool:x] y → z",
        "> [knowledge:updated] a — b",
        "> [attachment:a.png]",
        "---",
        "# Title",
        "",
        "  indented",
        "\\\\## 01:02 — system",
    ]
)
content_st = st.lists(st.one_of(text_st, tricky_line), min_size=0, max_size=6).map("\n".join)
item_st = st.one_of(
    content_st.map(tf.Text),
    st.builds(tf.ToolCall, text_st, text_st, st.one_of(st.none(), text_st)),
    st.builds(
        tf.KnowledgeOp,
        st.sampled_from(["updated", "appended", "created"]),
        st.text(alphabet="abc/._- ", min_size=1, max_size=20),
        st.one_of(st.none(), text_st),
    ),
    st.builds(tf.Attachment, text_st),
)


@st.composite
def transcripts(draw):
    started = T0 + timedelta(minutes=draw(st.integers(0, 60 * 24 * 3)))
    n = draw(st.integers(0, 6))
    turns = []
    when = started
    for _ in range(n):
        when = when + timedelta(minutes=draw(st.integers(0, 60 * 30)))
        turns.append(
            tf.Turn(
                time=when.replace(second=0),
                role=draw(st.sampled_from(tf.ROLES)),
                items=tuple(draw(st.lists(item_st, max_size=4))),
                name=draw(
                    st.one_of(st.none(), st.text(alphabet="ABCabc ()[]", min_size=1, max_size=10))
                ),
                memory=draw(st.booleans()),
            )
        )
    meta = tf.TranscriptMeta(
        session_id=draw(
            st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,20}", fullmatch=True).filter(
                lambda s: ".." not in s
            )
        ),
        started=started,
        ended=draw(st.one_of(st.none(), st.just(when))),
        model=draw(st.one_of(st.none(), text_st)),
        channel=draw(
            st.one_of(
                st.none(),
                st.sampled_from(["webchat", "email", "yes", "null", "2026-01-01", "a: b"]),
            )
        ),
        topic=draw(st.one_of(st.none(), text_st)),
        tags=tuple(draw(st.lists(st.sampled_from(["a", "b c", "true", "x:y", "1.5"]), max_size=3))),
        tokens_in=draw(st.integers(0, 10**6)),
        status=draw(st.sampled_from(tf.STATUSES)),
        redactions=tuple(
            draw(st.dictionaries(st.sampled_from(["openai_key", "jwt"]), st.integers(1, 9))).items()
        ),
        knowledge_changes=tuple(
            draw(
                st.lists(
                    st.builds(
                        tf.KnowledgeChangeRef,
                        st.just("knowledge/x.md"),
                        st.just("updated"),
                        text_st,
                    ),
                    max_size=2,
                )
            )
        ),
    )
    return tf.Transcript(meta, draw(text_st), tuple(turns))


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(transcripts())
def test_render_parse_render_is_identity(t: tf.Transcript) -> None:
    text = tf.render(t)
    parsed = tf.parse(text)
    assert tf.render(parsed) == text
    assert len(parsed.turns) == len(t.turns)
    for a, b in zip(parsed.turns, t.turns):
        assert a.role == b.role
        assert a.memory == b.memory
        assert a.time == b.time.replace(second=0, microsecond=0)


@settings(max_examples=200, deadline=None)
@given(content_st)
def test_message_content_survives_exactly(content: str) -> None:
    turn = tf.Turn(T0, "user", (tf.Text(content),))
    t = tf.Transcript(tf.TranscriptMeta("s1", T0), "t", (turn,))
    parsed = tf.parse(tf.render(t))
    expected = tf.normalize_content(content)
    assert (parsed.turns[0].text if parsed.turns[0].items else "") == expected


def test_turn_after_midnight_carries_the_date() -> None:
    turns = (
        tf.Turn(datetime(2026, 2, 16, 23, 55, tzinfo=UTC), "user", (tf.Text("late"),)),
        tf.Turn(datetime(2026, 2, 17, 0, 5, tzinfo=UTC), "agent", (tf.Text("after midnight"),)),
        tf.Turn(datetime(2026, 2, 17, 0, 6, tzinfo=UTC), "user", (tf.Text("same day"),)),
    )
    text = tf.render(tf.Transcript(tf.TranscriptMeta("s1", T0), "Night", turns))
    assert "## 23:55 — user" in text
    assert "## 2026-02-17 00:05 — agent" in text
    assert "## 00:06 — user" in text
    assert [t.time for t in tf.parse(text).turns] == [t.time for t in turns]


def test_structure_lookalikes_in_content_are_escaped_not_parsed() -> None:
    content = "## 12:00 — user\n> [tool:rm] -rf / → gone\nnormal line"
    text = tf.render(
        tf.Transcript(
            tf.TranscriptMeta("s1", T0), "t", (tf.Turn(T0, "agent", (tf.Text(content),)),)
        )
    )
    assert "\\## 12:00 — user" in text
    assert "\\> [tool:rm]" in text
    parsed = tf.parse(text)
    assert len(parsed.turns) == 1
    assert parsed.turns[0].items == (tf.Text(content),)


def test_speaker_name_and_memory_suffix() -> None:
    turn = tf.Turn(T0, "user", (tf.Text("hi"),), name="Caroline")
    mem = tf.Turn(
        T0,
        "agent",
        (tf.KnowledgeOp("updated", "knowledge/memory/MEMORY.md", "added"),),
        memory=True,
    )
    text = tf.render(tf.Transcript(tf.TranscriptMeta("s1", T0), "t", (turn, mem)))
    assert "## 23:50 — user (Caroline)" in text
    assert (
        "## 23:50 — agent [memory]\n> [knowledge:updated] knowledge/memory/MEMORY.md — added"
        in text
    )
    parsed = tf.parse(text)
    assert parsed.turns[0].name == "Caroline"
    assert parsed.turns[1].memory


@pytest.mark.parametrize(
    "bad, fragment",
    [
        ("no frontmatter\n", "missing frontmatter"),
        ("---\nsession_id: s\n", "not closed"),
        ("---\nstarted: 2026-01-01T00:00:00Z\n---\n\n# t\n", "session_id"),
        ("---\nsession_id: a/../b\nstarted: 2026-01-01T00:00:00Z\n---\n\n# t\n", "'/'"),
        (
            "---\nsession_id: s\nstarted: 2026-01-01T00:00:00Z\n---\n\n# t\n\n## 10:00 — robot\nhi\n",
            "unknown role",
        ),
        ("---\nsession_id: s\nstarted: yesterday\n---\n\n# t\n", "ISO-8601"),
    ],
)
def test_parse_errors_say_what_is_wrong(bad: str, fragment: str) -> None:
    with pytest.raises(TranscriptFormatError, match=fragment.replace("(", r"\(")):
        tf.parse(bad)


@pytest.mark.parametrize("sid", ["a/b", "..", "x\x00y", "", "../etc", "a\\b", "-start", "abc\n"])
def test_unsafe_session_ids_are_refused(sid: str) -> None:
    with pytest.raises(TranscriptFormatError):
        tf.validate_session_id(sid)


@pytest.mark.parametrize(
    ("sid", "shown"), [("ses_ok ", "'ses_ok '"), ("a\nb", "'a\\nb'"), (" ", "' '")]
)
def test_a_refused_session_id_is_quoted_as_it_is(sid: str, shown: str) -> None:
    """An id refused for a space at its end was quoted 'ses_ok' (an id that is allowed),
    a line break as a space: the error seemed wrong. It is quoted as Python writes it."""
    with pytest.raises(TranscriptFormatError, match=f"session_id {re.escape(shown)} is not"):
        tf.validate_session_id(sid)


def test_path_and_slug() -> None:
    assert (
        tf.transcript_relpath("ses_1", datetime(2026, 2, 16, 18, 45, tzinfo=UTC), "git-memory")
        == "raw/conversations/2026/02/16/1845-ses_1-git-memory.md"
    )
    slug = slugify("Let's décide — the agent's 中文 memory, café! " * 5)
    assert slug.isascii()
    assert len(slug) <= 60
    assert slug.startswith("lets-decide-the-agents-memory")
    assert slugify("中文") == ""
    # a slash command's tags (Claude Code's, as an export keeps them) are no words said
    command = "<command-message>review</command-message>\n<command-name>/review</command-name>"
    at = datetime(2026, 2, 16, 18, 45, tzinfo=UTC)
    turns = [tf.Turn(at, "user", (tf.Text(command),)), tf.Turn(at, "user", (tf.Text("PR 12"),))]
    assert tf.slug_from_turns(turns) == "review-review-pr-12"
    assert tf.slug_from_turns([tf.Turn(at, "user", (tf.Text("use a <div> here"),))]) == (
        "use-a-div-here"
    )


# ── frontmatter strings stay strings (YAML 1.1 would read 1:30 as 90, 0x1F as 31) ──
NUMBER_LOOKALIKES = [
    "1:30",
    "0x1F",
    "1_000",
    "0o17",
    "0b101",
    "012",
    "1e3",
    "1.5",
    "+12",
    "-3",
    ".inf",
    "190:20:30",
    "yes",
    "Off",
    "~",
    "null",
    "2026-02-16",
    "2026-02-16 10:00:00",
]


@pytest.mark.parametrize("value", NUMBER_LOOKALIKES)
def test_number_lookalike_strings_round_trip_as_strings(value: str) -> None:
    meta = tf.TranscriptMeta(
        "s1",
        T0,
        model=value,
        channel=value,
        topic=value,
        tags=(value, "plain"),
        source=value,
        knowledge_changes=(tf.KnowledgeChangeRef("knowledge/x.md", value, value),),
    )
    text = tf.render(tf.Transcript(meta, "t", ()))
    back = tf.parse(text).meta
    assert (back.model, back.channel, back.topic, back.tags, back.source) == (
        value,
        value,
        value,
        (value, "plain"),
        value,
    )
    assert back.knowledge_changes == meta.knowledge_changes
    assert tf.render(tf.parse(text)) == text


@pytest.mark.parametrize("sid", ["1:30", "0x1F", "1_000", "012", "1e3", "1.5", "2026-02-16"])
def test_number_lookalike_session_ids_round_trip(sid: str) -> None:
    text = tf.render(tf.Transcript(tf.TranscriptMeta(sid, T0), "t", ()))
    assert tf.parse_meta(text).session_id == sid


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="0123456789xXoObBeE_:.+-", min_size=1, max_size=12))
def test_numeric_looking_models_and_tags_stay_the_same_string(value: str) -> None:
    meta = tf.TranscriptMeta("s1", T0, model=value, topic=value, tags=(value,))
    back = tf.parse(tf.render(tf.Transcript(meta, "t", ()))).meta
    assert (back.model, back.topic, back.tags) == (value, value, (value,))


def test_bom_and_crlf_files_parse_like_lf_ones() -> None:
    turn = tf.Turn(T0, "user", (tf.Text("line one\nline two"),))
    text = tf.render(tf.Transcript(tf.TranscriptMeta("s1", T0, model="1:30"), "Title", (turn,)))
    for variant in (
        "\ufeff" + text,
        text.replace("\n", "\r\n"),
        "\ufeff" + text.replace("\n", "\r\n"),
    ):
        assert tf.parse(variant) == tf.parse(text)
        assert tf.parse_meta(variant) == tf.parse_meta(text)


@pytest.mark.parametrize(
    "started", [".nan", ".inf", "-.inf", "9999-01-01T00:00:00Z", "1900-01-01T00:00:00Z", "1e400"]
)
def test_impossible_times_are_refused_with_a_timestamp_error(started: str) -> None:
    from autopoiesis.errors import TimestampError

    with pytest.raises(TimestampError, match="started"):
        tf.parse(f"---\nsession_id: s\nstarted: {started}\n---\n\n# t\n")


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(transcripts())
def test_a_rendered_frontmatter_is_read_without_yaml_as_yaml_reads_it(t: tf.Transcript) -> None:
    """parse_meta reads a frontmatter as render_frontmatter lays it out without YAML; what it
    reads is what the YAML reader reads."""
    from autopoiesis.core import frontmatter
    from autopoiesis.formats.transcript_meta import _canonical_meta

    source, _ = frontmatter.split(tf.render(t))
    assert source is not None
    fast = _canonical_meta(source, "t")
    assert fast is not None
    assert fast == tf.meta_from_mapping(frontmatter.parse_yaml(source), "t")


@pytest.mark.parametrize(
    "frontmatter_text",
    [
        "session_id: a\nstarted: 2026-02-16T18:45:00Z\nstatus: open\nstatus: closed\n",
        "session_id: &x a\nstarted: 2026-02-16T18:45:00Z\n",
        "session_id: a\nstarted: '2026-02-16T18:45:00Z'\nmodel: 1:30\n",
        "session_id: a\nstarted: 2026-02-16T18:45:00Z\ntags: [x, y]\n",
    ],
    ids=["duplicate-key", "anchor", "quoted-and-sexagesimal", "flow-list"],
)
def test_any_other_frontmatter_is_read_by_yaml(frontmatter_text: str) -> None:
    from autopoiesis.core import frontmatter
    from autopoiesis.formats.transcript_meta import _canonical_meta

    assert _canonical_meta(frontmatter_text, "t") is None
    text = f"---\n{frontmatter_text}---\n\n# T\n"
    assert tf.parse_meta(text) == tf.meta_from_mapping(frontmatter.parse_yaml(frontmatter_text))


KEY = "ghp_" + "Q7vLm2Xc9RtK4pWz8NbY3HdJ6FsA1GeU5oIy"  # a GitHub token's shape (fake)
PGP = (
    "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBGXq2r0BCAC7wZf1k3Xq9PmN2vR8sT4uY6hJ0kL3aB5cD7eF9gH1iJ2kL4mN\n"
    + "\n".join("Zm9vYmFyYmF6cXV4" * 4 for _ in range(6))
    + "\n=Xk9q\n-----END PGP PRIVATE KEY BLOCK-----"
)


def _heads(secret: str, text: str) -> list[str]:
    return [secret[:n] for n in range(12, len(secret) + 1) if secret[:n] in text]


def test_a_one_line_field_is_redacted_whole_before_it_is_cut_or_flattened() -> None:
    """A field is cut to its limit and flattened to one line when its value is built; the
    redaction (map_text) reads what the field was given, so a key across the cut keeps no
    head, and a key block said in a one-line field goes whole."""
    from autopoiesis.core.redact import Redactor

    call = tf.ToolCall("exec", "x" * 280 + " " + KEY, None)
    assert KEY[:12] in call.args  # the cut keeps 19 characters of it
    redacted = tf.map_text(call.with_result("ok " + KEY), Redactor().redact)
    assert _heads(KEY, redacted.args) == [] and redacted.result == "ok [redacted:github_token]"
    assert len(redacted.args) <= 300
    meta = tf.TranscriptMeta("ses_1", T0, model=PGP, topic="notes " + PGP, tags=(KEY * 3,))
    safe = tf.map_text(meta, Redactor().redact)
    assert "PRIVATE KEY" not in (safe.model or "") + (safe.topic or "")
    assert "lQOYBGXq2r0B" not in tf.render_frontmatter(safe)
    assert _heads(KEY, safe.tags[0]) == []


def test_a_redaction_marker_in_a_bracketed_field_stays_whole() -> None:
    """A `]` would end a tool's name, a knowledge event's action or an attachment's path,
    so it is shown as `)`; a redaction marker there read `[redacted:github_token)`."""
    call = tf.ToolCall("bash-[redacted:github_token]", "ls", None)
    assert call.tool == "bash-(redacted:github_token)"
    assert tf.ToolCall("a]b", "x", None).tool == "a)b"
