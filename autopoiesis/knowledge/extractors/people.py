"""people: who someone is and what is true of them -> people/SLUG.md (Context), with one
derived line per person in people/_index.md carrying the id of the fact it restates.

* a role: "Lena Park is joining the team as our SRE", "Tom is now our tech lead", "we
  hired Ana as the new PM", "Ravi, our new designer, ..." — one live role a person
  (`#about:NAME-role`): a new role supersedes the old one, and the index line follows it;
* a date about a person: "Lena's birthday is on March 14", "Tom starts on Monday",
  "Ana was born on 3 May 1990" — one live value per person and kind of date;
* what is said about a named person next to a cue ("Maria Lopez owns ...", "ask Tom Becker");
* in a multi-party conversation, what a named participant says of themselves ("I went to
  a support group yesterday" -> their file, with the relative date made absolute).

Only what counts (the user's or a named participant's own words, or what the user
confirmed) is taken. A first name alone finds the full name of a person the repo (or the
session) already knows ("Lena" -> "Lena Park").
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from autopoiesis.core.paths import PEOPLE_INDEX_FILE
from autopoiesis.core.text import slugify
from autopoiesis.knowledge.changes import KnowledgeChange, entry_id_for
from autopoiesis.knowledge.extractors import cues, prose
from autopoiesis.knowledge.extractors.base import (
    NAME_SLUG_LEN,
    Extractor,
    Sentence,
    SourceTranscript,
    checked_name,
    clean,
    item_action,
    long_words,
    reply_items,
    reply_validator,
)

_NAME = re.compile(
    r"\b([A-Z][a-z]+(?:-[A-Z][a-z]+)?(?: (?:van |de |von )?[A-Z][a-z]+(?:-[A-Z][a-z]+)?){1,2})\b"
)
_FIRST_NAME = re.compile(r"\b([A-Z][a-z]{2,}(?:-[A-Z][a-z]+)?)\b")
_NOT_NAME_WORDS = set(
    """The This That These Those There Here When Where What Which Who Why How And But Or If Then So
Also Let Lets Good Great Thanks Thank Please Okay Yes No Not All Any Some Each Every Our Your
Their His Her Its We You They She He I My Me Us It Monday Tuesday Wednesday Thursday Friday
Saturday Sunday January February March April May June July August September October November
December Today Tomorrow Yesterday Key Decisions Lessons Learned Active Context Core Memory Pull
Request Merge Production Release Error Errors Procedure Project Projects Team Python Git GitHub
Docker Kubernetes Linux Mac Windows SQLite Markdown Google Amazon Microsoft Apple Slack Email
Chrome Firefox Agreed Sure Done Next Last First New Old Open Close Run Use After Before During
Since Until Rolled Roll Back Lesson Note Always Never Two One Three Four Five Ask Tell Ping
Maybe Hi Hello Dear Best Regards Sincerely Dr Mr Mrs Ms Prof Hey Wow Oh Yeah Yep Nope Cool Nice
Awesome Sounds Sorry Just Well Really Actually Definitely Totally Everyone Someone Anyone Nobody
Everything Something Nothing Today Tonight Morning Evening Night Week Weekend Month Year
Postgres PostgreSQL MySQL Redis Kafka Jenkins Terraform Ansible React Node Java Rust Ruby Go
Swift Kotlin Linear Jira Notion Figma Zoom Teams Office Excel Word Outlook Staging Prod Friday's
Monday's Christmas Easter Halloween Thanksgiving Understood Noted Got Will Would Could Should
Can Did Does Do Is Are Was Were Has Have Had Be Been Being Make Made Take Took See Saw Love Like
Enjoy Remember Note Keep Don't Doesn't Isn't Can't Won't I'm I've I'll Let's That's It's There's
Here's""".split()
)
_PERSON_CUE = re.compile(
    r"\b(?:owns|own|prefers|prefer|is|was|works|worked|leads|manages|maintains|said|says|asked|asks|wants|likes|runs|"
    r"handles|joined|reviewed|reviews|will|wrote|is responsible|reports "
    r"to|from)\b|\b(?:ask|tell|ping|email|call|with|cc|by|met)\s+$",
    re.IGNORECASE,
)
_CAPTION = re.compile(
    r"\s*\[[^\]]*\]\s*$"
)  # an attachment's caption after a sentence ("[shares a photo of ...]")
# what a kind of date about a person is called (the subject of its entry)
_DATE_KIND = (
    (r"was born|turns \d+|birthday", "birthday"),
    (r"start|join|first day|start date", "start"),
    (r"leav|left|last day|retire", "leaving"),
    (r"out|off|away|vacation|holiday|leave|day off", "away"),
    (r"married|wedding|anniversary", "anniversary"),
)


def _names_in(sentence: str, known: dict[str, str]) -> list[tuple[str, int, int, bool]]:
    """(name, start, end, full) for each person named in SENTENCE: a capitalised full
    name, or a single capitalised name (full=False; resolved through KNOWN first names)."""
    out: list[tuple[str, int, int, bool]] = []
    taken: list[tuple[int, int]] = []
    for m in _NAME.finditer(sentence):
        parts = re.split(r"[ -]", m.group(1))
        if any(w in _NOT_NAME_WORDS for w in parts):
            continue
        out.append((m.group(1), m.start(), m.end(), True))
        taken.append((m.start(), m.end()))
    for m in _FIRST_NAME.finditer(sentence):
        if m.group(1) in _NOT_NAME_WORDS or any(a <= m.start() < b for a, b in taken):
            continue
        out.append((known.get(m.group(1), m.group(1)), m.start(), m.end(), m.group(1) in known))
    return out


def _known_first_names(src: SourceTranscript) -> dict[str, str]:
    """First name -> full name, for the people the repo has files for and the full names
    this session mentions (a first name shared by two people resolves to neither)."""
    seen: dict[str, set[str]] = {}
    names = list(src.known_people) + [
        m.group(1) for s in src.sentences for m in _NAME.finditer(s.text)
    ]
    for name in names:
        parts = name.split()
        if len(parts) >= 2 and not any(w in _NOT_NAME_WORDS for w in parts):
            seen.setdefault(parts[0], set()).add(name)
    return {first: next(iter(full)) for first, full in seen.items() if len(full) == 1}


def _date_kind(phrase: str) -> str:
    for rx, kind in _DATE_KIND:
        if re.search(rx, phrase, re.IGNORECASE):
            return kind
    return "date"


def _person_changes(
    src: SourceTranscript,
    key: str,
    name: str,
    fact: str,
    at: datetime,
    *,
    subject: str | None = None,
    lead: bool = False,
) -> list[KnowledgeChange]:
    """The canonical entry in the person's file and the derived line of people/_index.md.
    LEAD: the fact says who the person is (a role), so it replaces the index line."""
    s = slugify(name, NAME_SLUG_LEN)
    if not s:
        return []
    prov = src.provenance(at, key)
    canonical = KnowledgeChange(
        f"knowledge/people/{s}.md", "append", "Context", fact, prov, subject=subject
    )
    derived = KnowledgeChange(
        PEOPLE_INDEX_FILE,
        "supersede" if lead else "append",
        "People",
        f"**{name}** — {fact}",
        prov,
        key=f"**{name.lower()}**",
        dated=False,
        section_level=1,
        entry_id=entry_id_for(canonical),
    )
    return [canonical, derived]


def _said_about(s: Sentence, known: dict[str, str]) -> list[tuple[str, str, str | None, bool]]:
    """(person, fact, subject, lead) for what sentence S says about named people."""
    out: list[tuple[str, str, str | None, bool]] = []
    text = cues.with_absolute_dates(s.text, s.at)
    for name, start, end, full in _names_in(s.text, known):
        after, before = s.text[end : end + 90], s.text[max(0, start - 30) : start]
        role = cues.ROLE_CUE.match(after) or (
            cues.HIRED_BEFORE.search(before) and cues.HIRED_AFTER.match(after)
        )
        if role:
            out.append((name, clean(text), f"{name} role", True))
            continue
        when = cues.PERSON_DATE.match(after)
        if when and cues.DATE.search(after):
            out.append((name, clean(text), f"{name} {_date_kind(when.group(0))}", False))
            continue
        if full and (
            cues.ROLE_CUE.match(after)
            or _PERSON_CUE.match(after.strip()[:40] + " ")
            or _PERSON_CUE.search(before[-12:])
        ):
            out.append((name, clean(text), None, False))
    return out


def people_offline(src: SourceTranscript, key: str) -> list[KnowledgeChange]:
    known = _known_first_names(src)
    out: list[KnowledgeChange] = []
    for s in src.sentences:
        if not s.counts or s.question:
            continue
        for name, fact, subject, lead in _said_about(s, known):
            out += _person_changes(src, key, name, fact, s.at, subject=subject, lead=lead)
        out += _own_fact(src, key, s)
    return out


def _own_fact(src: SourceTranscript, key: str, s: Sentence) -> list[KnowledgeChange]:
    """A named participant of a group conversation speaking of themselves ("I moved to
    Berlin last May"): a fact about that person."""
    if (
        s.speaker
        and s.owned
        and cues.PERSONAL_FACT.search(s.text)
        and not cues.HYPOTHETICAL.search(s.text)
        and len(long_words(_CAPTION.sub("", s.text))) >= 4
        and _names_in(s.speaker, {})
    ):
        return _person_changes(
            src, key, s.speaker, clean(cues.with_absolute_dates(s.text, s.at)), s.at
        )
    return []


# v3: a name is a person's only next to what people do: said, asked, wants, owns, leads, a
# role or a date; or after "ask", "tell", "ping", "cc", "thanks". "is", "will", "from",
# "with" and "by" follow any capitalised phrase ("Web Search is ...", "by Cursor Response").
_PERSON_VERB_AFTER = re.compile(
    r"^\s*(?:(?:just|also|already)\s+)?(?:owns|prefers|leads|manages|maintains|said|says|asked|"
    r"asks|wants|told|tells|thinks|suggested|approved|reviewed|mentioned|replied|wrote to|"
    r"reports to|is responsible|is on (?:leave|vacation)|is out)\b",
    re.IGNORECASE,
)
_PERSON_VERB_BEFORE = re.compile(
    r"\b(?:ask|tell|ping|email|cc|thanks|thank|talk to|talked to|met with|according to)\s+$",
    re.IGNORECASE,
)


def _said_about_v3(s: Sentence, known: dict[str, str]) -> list[tuple[str, str, str | None, bool]]:
    """_said_about for v3: a role, a date, or a person's verb next to the name."""
    out = []
    for name, fact, subject, lead in _said_about(s, known):
        if subject is None:  # v2's loose cue: keep it only next to a person's verb
            at = s.text.find(name.split()[0])
            after, before = s.text[at + len(name) : at + len(name) + 60], s.text[:at][-20:]
            if not (_PERSON_VERB_AFTER.match(after) or _PERSON_VERB_BEFORE.search(before)):
                continue
        if prose.is_statement(fact):
            out.append((name, fact, subject, lead))
    return out


def people_v3_offline(src: SourceTranscript, key: str) -> list[KnowledgeChange]:
    """v3: the sentences somebody wrote (no headings, no pasted forms or logs), and, outside
    a group conversation, a name only next to what people do (`_said_about_v3`)."""
    known = _known_first_names(src)
    # in a group conversation a capitalised name is most likely a person's; in a session
    # with an agent it is as likely a product or a heading ("Web Search is ...")
    group = any(turn.name for turn in src.transcript.turns)
    said_about = _said_about if group else _said_about_v3
    out: list[KnowledgeChange] = []
    for s in src.prose_sentences:
        if not s.counts or s.question or not prose.is_statement(s.text):
            continue
        for name, fact, subject, lead in said_about(s, known):
            out += _person_changes(src, key, name, fact, s.at, subject=subject, lead=lead)
        out += _own_fact(src, key, s)
    return out


def people_llm(data: Any, src: SourceTranscript, key: str) -> list[KnowledgeChange]:
    out: list[KnowledgeChange] = []
    for i, d in enumerate(reply_items(data, "name")):
        act = item_action(d, src)
        if act is None:
            continue
        name = checked_name(d["name"], "name", i)
        fact = clean(str(d.get("fact") or "")) or f"Mentioned in “{src.transcript.title}”"
        changes = _person_changes(
            src,
            key,
            name,
            fact,
            src.locate(f"{name} {fact}"),
            subject=f"{name} role" if str(d.get("kind") or "") == "role" else None,
            lead=str(d.get("kind") or "") == "role",
        )
        if act[1] and changes:
            changes[0] = KnowledgeChange(
                **{**changes[0].__dict__, "action": "supersede", "target": act[1]}
            )
        out += changes
    return out


PEOPLE_V2 = Extractor(
    "people",
    2,
    "people: roles, dates and what was said about them -> people/SLUG.md and people/_index.md",
    ("knowledge/people/*.md",),
    frozenset({"append", "supersede"}),
    people_offline,
    people_llm,
    reply_validator("name", ("name",)),
    "people.v2.md",
)

PEOPLE = Extractor(
    "people",
    3,
    "people: roles, dates and what was said about them -> people/SLUG.md and people/_index.md; "
    "v3: a name only where it is used as a person's",
    ("knowledge/people/*.md",),
    frozenset({"append", "supersede"}),
    people_v3_offline,
    people_llm,
    reply_validator("name", ("name",)),
    "people.v2.md",
)

__all__ = ["PEOPLE_V2", "PEOPLE", "people_llm", "people_offline", "people_v3_offline"]
