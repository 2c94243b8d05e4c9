"""Filing imported sessions under raw/: new sessions, exact re-imports, and logs that grew.

Transcripts are immutable, so a session read again is one of:

* **the same** as what is filed (every part together): skipped, nothing written;
* **grown**: it begins with every filed turn and goes on. The new turns become the next
  part, a new file with `part: N` and `continues: <the part before>` in its frontmatter
  (formats.transcript: "Parts"), filed under the date of its first new turn;
* **read differently**: the same turns, each with the words of the filed one and more, or
  fewer, or fewer of its parts (a newer reader leaves a part out, a redactor no longer
  takes a word for a secret: `formats.transcript.same_words`). What is filed stays as it
  was, with a warning; the turns the log added since are filed after it, as for a grown
  log (an export that goes on growing stays importable after an upgrade). A subagent's
  run whose messages that reading filed inside its parent's transcript (as the parent
  agent's words) is not filed again;
* **changed**: an earlier turn differs or is gone. Refused, with the reason: an import
  never rewrites what is filed.

A session not filed yet whose log begins with the turns of other filed sessions (a
resumed Claude Code session's log begins with a copy of the one it resumed) is filed
without them, saying `resumes:` that session; one whose every turn is filed so is
skipped. So each turn is filed once, whichever log is imported first (`_found_resumed`).

Which session ids are filed is answered by the session index (capture.session_index),
kept in a state file, so filing stays as fast with thousands of transcripts as with none.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from pathlib import Path

from autopoiesis.capture.importers.base import ImportReport
from autopoiesis.core.paths import (
    CONVERSATIONS_DIR,
    MemoryRepo,
    atomic_write_many,
    link_in_the_way,
    write_remedy,
)
from autopoiesis.core.redact import marker_kinds
from autopoiesis.core.text import counted
from autopoiesis.errors import GitError, TranscriptFormatError
from autopoiesis.formats import transcript as tf
from autopoiesis.formats.transcript_files import SessionIndex, first_turn_of, session_parts
from autopoiesis.git.repo import MemoryGit
from autopoiesis.git.runner import uncommitted


class Prepared:
    """A transcript ready to file: RAW, as it was built (and rendered), its TEXT (what the
    file will hold), and `transcript`, RAW as it reads back from TEXT (times to the
    minute, text normalised), parsed only when something filed must be compared with it:
    a new session is written from its text alone."""

    def __init__(
        self,
        raw: tf.Transcript,
        text: str | None = None,
        origin: str | None = None,
        notes: list[str] | None = None,
    ) -> None:
        self.raw = raw
        # what building it changed of what the log said (a time not trusted), as warnings
        self.notes = notes or []
        self.text = tf.decode(tf.encode(tf.render(raw))) if text is None else text
        self.origin = origin  # the file it was read from, when an import read one
        self._parsed: tf.Transcript | None = None

    @property
    def where(self) -> str:
        """What a refusal or a warning about this session names: its session id, and the
        file it was read from (of several files in one import, the one to look at)."""
        sid = f"session {self.raw.meta.session_id}"
        return f"{self.origin}: {sid}" if self.origin else sid

    @property
    def transcript(self) -> tf.Transcript:
        if self._parsed is None:
            self._parsed = tf.parse(self.text)
        return self._parsed


def file_sessions(
    repo: MemoryRepo,
    transcripts: list[Prepared] | list[tf.Transcript],
    report: ImportReport,
    *,
    commit: bool = True,
) -> None:
    """Write each transcript as a new session or as the continuation of a filed one; skip
    exact re-imports; commit what was written together. A session that cannot be
    written is refused on its own. The files are written together (core.paths'
    atomic_write_many); a session met twice in one batch waits for the first's file.

    One import files at a time (the repo's "import" lock, from reading which parts are
    filed to the commit): two imports of one growing log at once (the session watcher, a
    hook's import, a person's) each filed it as a new session, under two names, and the
    second file could never be committed."""
    with repo.lock("import"):
        _file_sessions(repo, transcripts, report, commit=commit)


def _file_sessions(
    repo: MemoryRepo,
    transcripts: list[Prepared] | list[tf.Transcript],
    report: ImportReport,
    *,
    commit: bool,
) -> None:
    index = SessionIndex.load(repo)
    written: list[str] = []
    pending: list[tuple[str, str, str]] = []  # (path, session id, text)
    waiting: set[str] = set()  # the session ids and paths in PENDING
    seen_before = len(report.skipped_duplicates)
    for given in transcripts:
        p = given if isinstance(given, Prepared) else Prepared(given)
        sid = p.raw.meta.session_id
        if sid in waiting:
            _write(repo, index, pending, written, report)
            waiting.clear()
        rel, text = _place(repo, index, p, report)
        if rel is None or text is None:
            continue
        if rel not in waiting and (repo.root / rel).exists():
            # filed by another import at the same moment (two processes, one grown log)
            meanwhile = _filed_meanwhile(repo, rel, sid, text)
            if meanwhile is not None:
                if meanwhile:
                    report.skipped_duplicates.append(rel)
                else:
                    report.refuse(
                        p.where,
                        f"another import filed {rel} at the same moment; nothing was "
                        "written. Import the log again to continue from it.",
                        temporary=True,
                    )
                continue
        if rel in waiting or (repo.root / rel).exists():
            report.refuse(
                p.where,
                f"{rel} already exists and is another transcript; nothing "
                "was written. Look at that file: its name and its session_id disagree.",
            )
            continue
        pending.append((rel, sid, text))
        waiting.update((sid, rel))
    _write(repo, index, pending, written, report)
    index.save()
    report.imported.extend(written)
    never_committed = _never_committed(repo, report, seen_before, set(written), commit=commit)
    if commit:
        report.imported.extend(never_committed)
        written.extend(never_committed)
    if commit and written:
        _commit(repo, written, report)


def _filed_meanwhile(repo: MemoryRepo, rel: str, sid: str, text: str) -> bool | None:
    """Of the file REL that exists although the session index did not know it when this
    import placed SID's text there: True when it holds that very text (the same log filed
    by another import at the same moment), False when it is another part of SID filed
    meanwhile, None when it is another session's (names and ids that disagree)."""
    path = repo.root / rel
    try:
        held = path.read_bytes()
    except OSError:
        return None
    if held == tf.encode(text):
        return True
    try:
        other = tf.parse(held.decode("utf-8"), rel)
    except (UnicodeDecodeError, TranscriptFormatError):
        return None
    return False if other.meta.session_id == sid else None


def _never_committed(
    repo: MemoryRepo, report: ImportReport, since: int, written: set[str], *, commit: bool
) -> list[str]:
    """Of the re-imports REPORT skipped from entry SINCE on, the files an earlier import
    wrote but never committed (a full disk, a commit git refused): not "already
    imported", but still to commit. Taken out of the skipped, with a warning. One this
    import WRITTEN (the same log given twice, or two copies of it) is neither: it is
    committed with the rest, and its second reading stays a skipped duplicate."""
    skipped = [rel for rel in report.skipped_duplicates[since:] if rel not in written]
    if not skipped:
        return []
    waiting = set(uncommitted(repo.root, [CONVERSATIONS_DIR]))
    found = list(dict.fromkeys(rel for rel in skipped if rel in waiting))
    if found:
        report.skipped_duplicates[since:] = [rel for rel in skipped if rel not in waiting]
        what = "committed with this import" if commit else "`autopoiesis commit` commits them"
        report.warnings.append(
            f"{len(found)} transcript{'s' if len(found) != 1 else ''} an earlier import wrote "
            f"but never committed (a full disk, a commit git refused), {what}: "
            + ", ".join(found[:5])
            + (" ..." if len(found) > 5 else "")
        )
    return found


def _write(
    repo: MemoryRepo,
    index: SessionIndex,
    pending: list[tuple[str, str, str]],
    written: list[str],
    report: ImportReport,
) -> None:
    writable = []
    for rel, sid, text in pending:
        why = link_in_the_way(repo.root, rel)
        if why is None:
            writable.append((rel, sid, text))
            continue
        # a clone's link would have the session written wherever it points
        report.refuse(
            f"session {sid}",
            f"cannot write {rel}: {why}, then import it again; nothing was written.",
            temporary=True,  # the watcher tries again: once the link is gone it is filed
        )
    pending[:] = writable
    errors = atomic_write_many([(repo.root / rel, tf.encode(text)) for rel, _, text in pending])
    for (rel, sid, _), error in zip(pending, errors):
        if error is not None:
            report.refuse(
                f"session {sid}",
                f"cannot write {rel} ({error.strerror or error}); {write_remedy(error)}, "
                "and import it again.",
                temporary=True,
            )
            continue
        index.add(rel)
        written.append(rel)
    pending.clear()


def _place(
    repo: MemoryRepo, index: SessionIndex, p: Prepared, report: ImportReport
) -> tuple[str | None, str | None]:
    """(where, the text) to write for P, or (None, None) when nothing is (a re-import, a
    refusal)."""
    sid = p.raw.meta.session_id
    if not p.raw.turns:
        report.refuse(p.where, "it has no messages; nothing imported.")
        return None, None
    try:
        parts = session_parts(repo, sid, index)
    except TranscriptFormatError as exc:
        report.refuse(
            p.where,
            f"a filed part cannot be read ({exc}); restore it (`git checkout -- FILE`) and "
            "import again.",
        )
        return None, None
    if not parts:  # a new session: its text as prepared, nothing to compare it with
        inside = _filed_in_parent(repo, index, p.raw)
        if inside is not None:
            report.skipped_duplicates.append(inside)
            report.warnings.append(
                f"{p.where}: a subagent's run whose messages are filed inside its "
                f"parent's transcript {inside} already (by a version of autopoiesis that "
                "read them as the parent agent's); nothing written."
            )
            return None, None
        resumed = _found_resumed(repo, index, p.transcript)
        if resumed is None:
            slug = tf.slug_from_turns(p.raw.turns, p.raw.meta.topic)
            return tf.transcript_relpath(sid, p.raw.meta.started, slug), p.text
        t, held_in = resumed
        if not t.turns:
            report.skipped_duplicates.append(held_in)
            report.warnings.append(
                f"{p.where}: every turn of it is filed in {held_in} already (the log of a "
                "session resumed from this one repeats its turns); nothing written."
            )
            return None, None
        slug = tf.slug_from_turns(t.turns, t.meta.topic)
        return tf.transcript_relpath(sid, t.meta.started, slug), tf.render(t)
    t = p.transcript
    if parts[0][1].meta.resumes is not None:
        try:
            t = _after_resumed_chain(repo, index, t, parts[0][1].meta.resumes)
        except TranscriptFormatError as exc:
            report.refuse(
                p.where,
                f"a part of the session it resumes cannot be read ({exc}); restore it "
                "(`git checkout -- FILE`) and import again.",
            )
            return None, None
        if not t.turns:  # its log holds only what it repeated of the session it resumed
            report.skipped_duplicates.extend(rel for rel, _ in parts)
            return None, None
    open_parts = [rel for rel, p in parts if p.meta.status == "open"]
    if open_parts:
        report.refuse(
            p.where,
            f"it is being captured live in {open_parts[0]}; import it after that session ends.",
        )
        return None, None
    numbers = [p.meta.part for _, p in parts]
    if numbers != list(range(1, len(parts) + 1)):
        report.refuse(
            p.where,
            f"its filed parts are numbered {numbers}, not 1 to {len(parts)}, so where this "
            f"import would continue is unclear; see {', '.join(rel for rel, _ in parts)}.",
        )
        return None, None
    every_turn = [turn for _, p in parts for turn in p.turns]
    filed_turns = tf.as_it_stands(every_turn)
    new = tf.continued_turns(filed_turns, t.turns)
    if new is None and any(
        tf.continued_turns(state, t.turns) == () for state in tf.earlier_states(every_turn)
    ):
        new = ()  # a copy of the log from before a rewind filed since (a backup): nothing new
    where = parts[0][0] if len(parts) == 1 else f"{len(parts)} parts ({parts[0][0]} ...)"
    if new is None:
        # the same log read by another version of its reader or redactor (a part it now
        # leaves out, a word it no longer takes for a secret): what is filed stays as it
        # was, and what the log added since is filed after it, as for any grown log
        new = tf.continued_turns(filed_turns, t.turns, reread=True)
        if new is not None:
            added = (
                f", and the {counted(len(new), 'turn')} the log added "
                f"{'is' if len(new) == 1 else 'are'} filed after it"
            )
            report.warnings.append(
                f"{p.where}: this version of autopoiesis reads its log with more or "
                f"fewer words than the one that filed {where}; the filed transcript stays "
                f"as it was{added if new else ''}."
            )
    if new is None:
        # rewound (or an earlier turn edited): what the log says from there is filed after
        # the parts, which stay as they were, with the system's note of where it goes on
        new = tf.rewound_turns(filed_turns, t.turns)
        if new is not None:
            report.warnings.append(
                f"{p.where}: the log was rewound or edited after what {where} holds; "
                f"what it says from there on is filed as the next part ({new[0].text})"
            )
    if new is None:
        report.refuse(
            p.where,
            f"it is already filed as {where}, and the log does not begin as the filed "
            "session does (another session under the same id, or a log this version of "
            "autopoiesis reads differently from the one that filed it); transcripts are "
            "immutable, so the filed one stays as it is. If it is another session, give it "
            "a session id of its own in the log.",
        )
        return None, None
    if not new:
        report.skipped_duplicates.extend(rel for rel, _ in parts)
        return None, None
    continuation = _continuation(parts, t, new)
    return tf.continuation_relpath(
        parts[0][0], continuation.meta.started, continuation.meta.part
    ), tf.render(continuation)


# The fewest characters a subagent's messages hold for their being found in its parent's
# transcript to say that they were filed there.
MIN_SAID_INSIDE = 80


def _filed_in_parent(repo: MemoryRepo, index: SessionIndex, t: tf.Transcript) -> str | None:
    """The filed part of T's parent session that holds every message of T, a subagent's
    run, when one does: an export read before its subagents were sessions of their own
    filed their messages as the parent agent's, and filing them again as a session would
    say them twice. None for a session with no parent filed, or no message."""
    parent = t.meta.parent_session
    said = [" ".join(turn.text.split()) for turn in t.turns if turn.text.strip()]
    if parent is None or sum(map(len, said)) < MIN_SAID_INSIDE:
        return None  # a run of a few short words ("Done.") could be anywhere
    try:
        parts = session_parts(repo, parent, index)
    except TranscriptFormatError:
        return None
    for rel, filed in parts:
        text = " ".join(" ".join(turn.text.split()) for turn in filed.turns)
        if all(line in text for line in said):
            return rel
    return None


def _found_resumed(
    repo: MemoryRepo, index: SessionIndex, t: tf.Transcript
) -> tuple[tf.Transcript, str] | None:
    """When T, a session not filed yet, begins with the turns of other sessions filed (its
    log is a resumed session's, which begins with a copy of the one it resumed, itself
    perhaps resumed from another): T without those turns, `resumes:` the session that
    holds the last of them, and the file that holds its first; None when it begins with
    no filed session's turns. Whichever log is imported first, each turn is filed once:
    the earlier session's own log, imported after the resumed one, is all filed already.

    The sessions looked at are those that started in the minute of T's first turn left
    (a copy keeps its lines' times, so the session copied started then), taking the one
    that holds the most of T's first turns (`formats.transcript.repeated_start`)."""
    sid = t.meta.session_id
    looked: set[str] = {sid}
    resumes: str | None = None
    held_in: str | None = None
    turns = list(t.turns)
    tokens_in, tokens_out = t.meta.tokens_in, t.meta.tokens_out
    while turns:
        best: tuple[int, str, list[tuple[str, tf.Transcript]]] | None = None
        # the sessions whose first turn is this one: the others are not read whole
        # (sessions begun in one minute -- parallel subagents, a batch of runs -- were each
        # parsed for every new one, a quadratic import)
        first = first_turn_of(tf.render(tf.Transcript(t.meta, t.title, (turns[0],))))
        for rel in index.started_at(turns[0].time):
            try:
                if first is not None and index.first_turn(rel) != first:
                    continue
                other = tf.parse_meta(tf.decode((repo.root / rel).read_bytes(), rel), rel)
                if other.session_id in looked:
                    continue
                looked.add(other.session_id)
                parts = session_parts(repo, other.session_id, index)
            except (OSError, TranscriptFormatError):
                continue  # a file that cannot be read holds nothing to compare with
            n = tf.repeated_start(_filed_turns(parts), turns)
            if n and (best is None or n > best[0]):
                best = (n, other.session_id, parts)
        if best is None:
            break
        n, resumes, parts = best
        held_in = held_in or parts[0][0]
        turns = turns[n:]
        if n >= len(_filed_turns(parts)):  # all of it repeated: its tokens are counted there
            tokens_in -= sum(part.meta.tokens_in for _, part in parts)
            tokens_out -= sum(part.meta.tokens_out for _, part in parts)
    if resumes is None or held_in is None:
        return None
    return _without_repeated(t, turns, resumes, tokens_in, tokens_out), held_in


def _filed_turns(parts: list[tuple[str, tf.Transcript]]) -> list[tf.Turn]:
    """The turns of a session's filed PARTS as the conversation stands."""
    return tf.as_it_stands([turn for _, part in parts for turn in part.turns])


def _after_resumed_chain(
    repo: MemoryRepo, index: SessionIndex, t: tf.Transcript, resumes: str
) -> tf.Transcript:
    """T, a session whose first part says it `resumes:` RESUMES, without the turns its log
    repeats of that session and of the sessions that one resumed in turn, oldest first,
    as when it was first filed (`_found_resumed`). TranscriptFormatError for a part of
    them that cannot be read."""
    chain: list[list[tuple[str, tf.Transcript]]] = []
    seen = {t.meta.session_id}
    current: str | None = resumes
    while current is not None and current not in seen:
        seen.add(current)
        parts = session_parts(repo, current, index)
        if not parts:
            break  # its transcript is gone (forgotten): what is left of T is T's
        chain.append(parts)
        current = parts[0][1].meta.resumes
    turns = list(t.turns)
    tokens_in, tokens_out = t.meta.tokens_in, t.meta.tokens_out
    for parts in reversed(chain):
        filed = _filed_turns(parts)
        n = tf.repeated_start(filed, turns)
        turns = turns[n:]
        if n and n >= len(filed):
            tokens_in -= sum(part.meta.tokens_in for _, part in parts)
            tokens_out -= sum(part.meta.tokens_out for _, part in parts)
    return _without_repeated(t, turns, resumes, tokens_in, tokens_out)


def _without_repeated(
    t: tf.Transcript, turns: list[tf.Turn], resumes: str, tokens_in: int, tokens_out: int
) -> tf.Transcript:
    """T with only TURNS (its own, after those its log repeated of the session it
    RESUMES), the tokens and redactions of those alone."""
    if not turns:
        return tf.Transcript(replace(t.meta, resumes=resumes), t.title, ())
    counts: Counter[str] = Counter()

    def count(text: str) -> str:
        counts.update(marker_kinds(text))
        return text

    tf.map_text(tuple(turns), count)
    meta = replace(
        t.meta,
        started=turns[0].time,
        ended=max(t.meta.ended or turns[-1].time, turns[-1].time, turns[0].time),
        tokens_in=max(0, tokens_in),
        tokens_out=max(0, tokens_out),
        redactions=tuple(sorted(counts.items())),
        resumes=resumes,
    )
    return tf.Transcript(meta, t.title, tuple(turns))


def _continuation(
    parts: list[tuple[str, tf.Transcript]], t: tf.Transcript, new: tuple[tf.Turn, ...]
) -> tf.Transcript:
    """The next part of the session PARTS hold: the NEW turns of T, with the tokens and
    redactions of those turns alone."""
    turns = tuple(sorted(new, key=lambda turn: turn.time))
    first_rel, first = parts[0]
    last_rel, last = parts[-1]
    started = turns[0].time
    counts: Counter[str] = Counter()

    def count(text: str) -> str:
        counts.update(marker_kinds(text))
        return text

    tf.map_text(turns, count)
    meta = replace(
        t.meta,
        started=started,
        ended=max(t.meta.ended or turns[-1].time, turns[-1].time, started),
        tokens_in=max(0, t.meta.tokens_in - sum(p.meta.tokens_in for _, p in parts)),
        tokens_out=max(0, t.meta.tokens_out - sum(p.meta.tokens_out for _, p in parts)),
        redactions=tuple(sorted(counts.items())),
        part=last.meta.part + 1,
        continues=last_rel,
        resumes=None,  # the first part says which session this one resumed
    )
    rendered = tf.render(tf.Transcript(meta, f"{first.title} (part {meta.part})", turns))
    return tf.parse(tf.decode(tf.encode(rendered)), first_rel)


def _commit(repo: MemoryRepo, written: list[str], report: ImportReport) -> None:
    if len(written) == 1:
        msg = f"conversation: {Path(written[0]).stem[5:]}\n\nSession: {written[0]}\n"
    else:
        msg = f"conversation: import {len(written)} sessions\n\n" + "".join(
            f"Session: {p}\n" for p in written
        )
    try:
        report.commit = MemoryGit(repo).commit_paths(written, msg).sha
    except GitError as exc:
        report.refuse(
            counted(len(written), "transcript"),
            f"written but not committed ({exc}); `autopoiesis commit` commits them.",
            temporary=True,  # an import again commits them too (_never_committed)
        )
