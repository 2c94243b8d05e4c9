"""The merge driver of knowledge files: `python -m autopoiesis.git.merge_driver %O %A %B %P`.

git runs it for a file under knowledge/ or archive/ that both sides of a merge changed
(`.gitattributes` names the driver, `.git/config` says how to run it; `autopoiesis init`
and `autopoiesis sync` register both). Two agents that extracted knowledge on two clones
both appended entries at the end of the same section; git's line merge calls that a
conflict. This driver merges the file as what it is, entries with ids:

* **union by entry id**: an entry added on either side is kept; one that a side removed
  (the pruner moved it to archive/) stays removed, unless the other side changed it;
* **supersede chains kept**: an entry superseded on either side stays superseded (both
  `#superseded-by:` tags are kept when the two sides superseded it differently); a
  field one side changed (a hand edit of the text) is taken from that side;
* **frontmatter by key**: `updated` takes the later time, `sessions` the union, the
  counts are recomputed (`formats.knowledge.refresh_counts`, as the writer does);
* **generated structure merges by construction**: headings are structure, not prose; a
  section both sides added (a day's journal written on two machines, a `### <channel>`
  heading each) is kept from both, a section both added under the same heading gets the
  entries of both;
* **prose is never resolved silently**: lines that are not entries or headings and that
  both sides changed differently get conflict markers (`<<<<<<< ours` / `=======` /
  `>>>>>>> theirs`) and the driver exits 1, so git reports the file as conflicted.

The three-way line merge itself is git's (`git merge-file`), run on the files with every
line turned into a token (`E <id>` for an entry, `H <hash>` for a heading, `P <hash>` for
any other line), so an entry whose tags changed is still the same line and git's conflict
hunks only need refining: a hunk of generated structure only (entries, headings, blank
lines) is united section by section; else its two sides are aligned with difflib and each
difference of structure only is united. Caps are not the driver's business: it can only
write this one file, and moving MEMORY.md's overflow to the archive writes another.
`autopoiesis sync` re-applies the caps after the merge, before committing it.

Anything unexpected (bytes that are not UTF-8, a failure of the driver itself) falls
back to git's own line merge of the file, so a merge never silently loses a side. Light
imports on purpose: git starts this once per file both sides changed.
"""

from __future__ import annotations

import difflib
import hashlib
import os
import shlex
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from autopoiesis.core.text import counted
from autopoiesis.formats import knowledge as kf
from autopoiesis.git.runner import call, run

DRIVER_NAME = "autopoiesis"
DRIVER_LABEL = "autopoiesis: knowledge entries merge by id"
MARKER = 7  # git's conflict-marker-size


@dataclass(frozen=True)
class MergedText:
    text: str
    conflicts: int  # conflict regions written (0: clean)


# ── the frontmatter, key by key ──
def _fm_blocks(fm: str | None) -> list[tuple[str, str]]:
    """(key, text) of each top-level key of frontmatter FM, its continuation lines included;
    lines before the first key (comments) come as the key ""."""
    blocks: list[tuple[str, str]] = []
    for line in (fm or "").splitlines(keepends=True):
        key = ""
        if line[:1] not in (" ", "\t", "-", "#", "\n", "") and ":" in line:
            key = line.split(":", 1)[0].strip()
        if key or not blocks:
            blocks.append((key, line))
        else:
            blocks[-1] = (blocks[-1][0], blocks[-1][1] + line)
    return blocks


def _fm_value(block: str) -> object:
    from autopoiesis.core.frontmatter import parse_yaml
    from autopoiesis.errors import FrontmatterError

    try:
        return next(iter(parse_yaml(block, "frontmatter").values()), None)
    except (FrontmatterError, StopIteration):
        return None


def _resolve_key(key: str, a: str, b: str) -> str | None:
    """A both-sides change of KEY that has one right answer, or None (a conflict)."""
    if key == "updated":
        va, vb = str(_fm_value(a) or ""), str(_fm_value(b) or "")
        return a if va >= vb else b
    if key in ("entry_count", "line_count"):
        return a  # recomputed from the merged body
    if key == "sessions":
        la, lb = _fm_value(a), _fm_value(b)
        if isinstance(la, list) and isinstance(lb, list):
            merged = [str(x) for x in la] + [
                str(x) for x in lb if str(x) not in {str(y) for y in la}
            ]
            return f"sessions: {kf.meta_value(merged)}\n"
    return None


def merge_frontmatter(o: str | None, a: str | None, b: str | None) -> tuple[str | None, int]:
    """(merged frontmatter, conflicts) of three versions, key by key."""
    if a == b:
        return a, 0
    if a == o:
        return b, 0
    if b == o:
        return a, 0
    ob, ab, bb = dict(_fm_blocks(o)), _fm_blocks(a), _fm_blocks(b)
    bmap = dict(bb)
    out: list[str] = []
    conflicts = 0
    for key, text in ab:
        if key not in bmap:  # gone from theirs: deleted there unless ours changed it
            if key in ob and ob[key] == text:
                continue
            out.append(text)
            continue
        other = bmap[key]
        if text == other or other == ob.get(key):
            out.append(text)
        elif text == ob.get(key):
            out.append(other)
        else:
            resolved = _resolve_key(key, text, other)
            if resolved is None:
                conflicts += 1
                out.append(_conflict([text.rstrip("\n")], [other.rstrip("\n")]))
            else:
                out.append(resolved)
    have = {k for k, _ in ab}
    for key, text in bb:
        if key not in have and not (key in ob and ob[key] == text):
            out.append(text)
    return "".join(out), conflicts


# ── entries, field by field ──
def merge_entry(o: kf.Entry | None, a: kf.Entry | None, b: kf.Entry | None) -> kf.Entry | None:
    """One entry from its three versions, or None when both sides changed the same field
    differently. Superseded on either side stays superseded."""
    if a is None or b is None or a == b:
        return a or b
    values = _merge_fields(o, a, b)
    if values is None:
        return None
    return replace(
        a,
        text=values["text"] or a.text,
        date=values["date"],
        source=values["source"],
        at=values["at"],
        tags=_merge_tags(o, a, b),
    )


def _merge_fields(o: kf.Entry | None, a: kf.Entry, b: kf.Entry) -> dict[str, str | None] | None:
    """Text, date, source and at: the value a side changed, or None when both changed one
    field differently."""
    values: dict[str, str | None] = {}
    for name in ("text", "date", "source", "at"):
        va, vb = getattr(a, name), getattr(b, name)
        vo = getattr(o, name) if o is not None else None
        if va == vb or (o is not None and vb == vo):
            values[name] = va
        elif o is not None and va == vo:
            values[name] = vb
        else:
            return None
    return values


def _merge_tags(o: kf.Entry | None, a: kf.Entry, b: kf.Entry) -> tuple[str, ...]:
    """The union of both sides' tags, less the ones a side removed; every supersede tag
    of either side last."""
    sup = [t for t in a.tags if t.startswith(kf.SUPERSEDED_TAG)]
    sup += [t for t in b.tags if t.startswith(kf.SUPERSEDED_TAG) and t not in sup]
    plain_o = {t for t in (o.tags if o else ()) if not t.startswith(kf.SUPERSEDED_TAG)}
    plain_a = [t for t in a.tags if not t.startswith(kf.SUPERSEDED_TAG)]
    plain_b = [t for t in b.tags if not t.startswith(kf.SUPERSEDED_TAG)]
    tags = [
        t for t in plain_a if t in plain_b or t not in plain_o
    ]  # a tag one side removed stays removed
    tags += [t for t in plain_b if t not in plain_a and t not in plain_o]
    return tuple(tags + sup)


# ── the body, line by line ──
class _Side:
    """One version of the body as tokens: `E <id>` per entry, `H <hash>` per heading, `P
    <hash>` per other line."""

    def __init__(self, doc: kf.KnowledgeDoc, prose: dict[str, str]):
        self.tokens: list[str] = []
        self.entries: dict[str, kf.Entry] = {}
        for s in doc.sections:
            heading = s.heading()
            if heading is not None:
                self.tokens.append(_token("H ", heading, prose))
            for line in s.lines:
                if isinstance(line, kf.Entry) and line.id not in self.entries:
                    self.entries[line.id] = line
                    self.tokens.append("E " + line.id)
                elif isinstance(line, kf.Entry) and line == self.entries[line.id]:
                    # a second copy of an entry (a writer race of older versions left
                    # some): one entry per id, so it merges as the first and goes
                    continue
                else:
                    text = line.render() if isinstance(line, kf.Entry) else line
                    self.tokens.append(_token("P ", text, prose))
        self.set = set(self.tokens)


def _token(kind: str, text: str, prose: dict[str, str]) -> str:
    digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=12).hexdigest()
    prose[kind + digest] = text
    return kind + digest


def _conflict(ours: Sequence[str], theirs: Sequence[str]) -> str:
    return (
        "<" * MARKER
        + " ours\n"
        + "".join(f"{l}\n" for l in ours)
        + "=" * MARKER
        + "\n"
        + "".join(f"{l}\n" for l in theirs)
        + ">" * MARKER
        + " theirs\n"
    )


def _git_merge_file(ours: str, base: str, theirs: str) -> tuple[str, int]:
    """git's three-way line merge of three texts: (result with conflict markers, conflicts)."""
    with tempfile.TemporaryDirectory(prefix="ap-merge-") as tmp:
        paths = []
        for name, text in (("ours", ours), ("base", base), ("theirs", theirs)):
            p = os.path.join(tmp, name)
            with open(p, "w", encoding="utf-8", newline="") as fh:
                fh.write(text)
            paths.append(p)
        proc = call(
            None,
            "merge-file",
            "-p",
            f"--marker-size={MARKER}",
            "-L",
            "ours",
            "-L",
            "base",
            "-L",
            "theirs",
            *paths,
        )
    if proc.returncode < 0:
        raise RuntimeError(f"git merge-file failed: {proc.stderr.decode(errors='replace')}")
    return proc.stdout.decode("utf-8"), proc.returncode


_BLANK = "P " + hashlib.blake2b(b"", digest_size=12).hexdigest()


def _sections(tokens: list[str]) -> list[tuple[str | None, list[str]]]:
    """TOKENS cut at their headings: (None, the lines before the first), then (heading,
    its lines) for each."""
    groups: list[tuple[str | None, list[str]]] = [(None, [])]
    for t in tokens:
        if t.startswith("H "):
            groups.append((t, []))
        else:
            groups[-1][1].append(t)
    return groups


class _BodyMerge:
    def __init__(self, o: kf.KnowledgeDoc, a: kf.KnowledgeDoc, b: kf.KnowledgeDoc):
        self.prose: dict[str, str] = {_BLANK: ""}
        self.o, self.a, self.b = _Side(o, self.prose), _Side(a, self.prose), _Side(b, self.prose)
        self.conflicts = 0

    def _blank(self, token: str) -> bool:
        return token.startswith("P ") and self.prose[token] == ""

    def _kept(self, token: str, other: _Side) -> bool:
        """A line of one side of a hunk stays unless it was in the base and the other
        side removed it (and did not merely change it: entries are matched by id)."""
        return self._blank(token) or not (token in self.o.set and token not in other.set)

    def _hunk(self, ours: list[str], theirs: list[str]) -> list[str]:
        """Resolve one of git's conflict hunks: united section by section when it holds
        only generated structure; else the two sides aligned, each difference united when
        it holds only that, else a conflict region (as `# C <index>`)."""
        if self._structure(ours + theirs):
            return self._sections_union(ours, theirs)
        out: list[str] = []
        matcher = difflib.SequenceMatcher(None, ours, theirs, autojunk=False)
        for op, i1, i2, j1, j2 in matcher.get_opcodes():
            mine, other = ours[i1:i2], theirs[j1:j2]
            if op == "equal":
                out += mine
            elif not other or not mine:
                out += [t for t in mine if self._kept(t, self.b)] + [
                    t for t in other if self._kept(t, self.a)
                ]
            elif self._structure(mine + other):
                out += self._sections_union(mine, other)
            else:
                self.conflicts += 1
                out.append(
                    "C "
                    + _conflict(
                        [self._line(t, self.a) for t in mine],
                        [self._line(t, self.b) for t in other],
                    )
                )
        return out

    def _structure(self, tokens: list[str]) -> bool:
        """Whether TOKENS are only what the writer generates (entries, blank lines, and
        headings neither side removed): they merge by construction, never by a person."""
        return all(
            t.startswith("E ")
            or self._blank(t)
            or (t.startswith("H ") and (t not in self.o.set or t in self.a.set & self.b.set))
            for t in tokens
        )

    def _sections_union(self, mine: list[str], other: list[str]) -> list[str]:
        """Two sides' additions of entries and sections, united: the lines before the first
        heading, then each section of ours with the entries theirs added to it, then the
        sections only theirs added (a day's journal written on two machines from two
        channels gains a `### <channel>` section on each)."""
        groups = _sections(mine)
        theirs = _sections(other)
        where = {heading: i for i, (heading, _) in enumerate(groups)}
        for heading, body in theirs:
            if heading in where:
                i = where[heading]
                groups[i] = (heading, self._union_body(groups[i][1], body))
            else:
                where[heading] = len(groups)
                groups.append((heading, [t for t in body if self._kept(t, self.a)]))
        out: list[str] = []
        for heading, body in groups:
            if heading is not None:
                if out and not self._blank(out[-1]):
                    out.append(_BLANK)
                out.append(heading)
            out += body
        return out

    def _union_body(self, mine: list[str], other: list[str]) -> list[str]:
        """Our lines of a section (less what theirs removed), then the entries theirs
        added, before our trailing blank lines."""
        kept = [t for t in mine if self._kept(t, self.b)]
        end = len(kept)
        while end and self._blank(kept[end - 1]):
            end -= 1
        added = [t for t in other if t.startswith("E ") and t not in mine and self._kept(t, self.a)]
        return kept[:end] + added + kept[end:]

    def _line(self, token: str, side: _Side) -> str:
        return side.entries[token[2:]].render() if token.startswith("E ") else self.prose[token]

    def merge(self) -> list[str]:
        merged, _ = _git_merge_file(
            "".join(t + "\n" for t in self.a.tokens),
            "".join(t + "\n" for t in self.o.tokens),
            "".join(t + "\n" for t in self.b.tokens),
        )
        tokens: list[str] = []
        ours: list[str] = []
        theirs: list[str] = []
        state = ""
        for line in merged.splitlines():
            if line.startswith("<" * MARKER):
                state, ours, theirs = "ours", [], []
            elif line.startswith("=" * MARKER) and state == "ours":
                state = "theirs"
            elif line.startswith(">" * MARKER) and state == "theirs":
                tokens += self._hunk(ours, theirs)
                state = ""
            elif state == "ours":
                ours.append(line)
            elif state == "theirs":
                theirs.append(line)
            else:
                tokens.append(line)
        return self._one_section_each(self._restore_changed(tokens))

    def _one_section_each(self, tokens: list[str]) -> list[str]:
        """A heading the merge holds more often than either side did (both sides added
        the same section, and git's line merge placed the two apart) becomes one section:
        the later one's lines move up into the first."""
        allowed = {
            t: max(self.a.tokens.count(t), self.b.tokens.count(t))
            for t in set(tokens)
            if t.startswith("H ")
        }
        groups = _sections(tokens)
        first: dict[str, int] = {}
        seen: dict[str, int] = {}
        out: list[tuple[str | None, list[str]]] = []
        for heading, body in groups:
            if heading is not None:
                seen[heading] = seen.get(heading, 0) + 1
                if seen[heading] > allowed[heading] and heading in first:
                    i = first[heading]
                    mine = out[i][1]
                    end = len(mine)
                    while end and self._blank(mine[end - 1]):
                        end -= 1
                    moved = [t for t in body if not self._blank(t) and t not in mine]
                    out[i] = (heading, mine[:end] + moved + mine[end:])
                    continue
                first.setdefault(heading, len(out))
            out.append((heading, list(body)))
        if len(out) == len(groups):
            return tokens
        return [t for heading, body in out for t in ([heading] if heading else []) + body]

    def _restore_changed(self, tokens: list[str]) -> list[str]:
        """An entry one side removed while the other changed it (superseded it, edited it)
        is kept, after the line it followed on the side that kept it."""
        present = set(tokens)
        for keeper, remover in ((self.a, self.b), (self.b, self.a)):
            for i, token in enumerate(keeper.tokens):
                if (
                    not token.startswith("E ")
                    or token in present
                    or token not in self.o.set
                    or token in remover.set
                ):
                    continue
                eid = token[2:]
                if keeper.entries[eid] == self.o.entries.get(eid):
                    continue  # unchanged on the side that kept it: the removal stands
                at = len(tokens)
                for prev in reversed(keeper.tokens[:i]):
                    if prev in present:
                        at = tokens.index(prev) + 1
                        break
                tokens.insert(at, token)
                present.add(token)
        return tokens

    def render(self, tokens: list[str]) -> list[str]:
        lines: list[str] = []
        seen: set[str] = set()
        for token in tokens:
            if token.startswith("C "):
                lines.append(token[2:].rstrip("\n"))
            elif token.startswith("E "):
                eid = token[2:]
                if eid in seen:
                    continue
                seen.add(eid)
                entry = merge_entry(
                    self.o.entries.get(eid), self.a.entries.get(eid), self.b.entries.get(eid)
                )
                if entry is None:
                    self.conflicts += 1
                    lines.append(
                        _conflict(
                            [self.a.entries[eid].render()], [self.b.entries[eid].render()]
                        ).rstrip("\n")
                    )
                else:
                    lines.append(entry.render())
            else:
                lines.append(self.prose[token])
        return lines


def merge_texts(base: str, ours: str, theirs: str, path: str) -> MergedText:
    """The merge of three versions of the knowledge file PATH (see the module doc)."""
    if ours == theirs or theirs == base:
        return MergedText(ours, 0)
    if ours == base:
        return MergedText(theirs, 0)
    o, a, b = kf.parse(base), kf.parse(ours), kf.parse(theirs)
    fm, fm_conflicts = merge_frontmatter(o.frontmatter, a.frontmatter, b.frontmatter)
    body = _BodyMerge(o, a, b)
    lines = body.render(body.merge())
    final_newline = (
        a.final_newline
        if a.final_newline == b.final_newline
        else (a.final_newline or b.final_newline)
    )
    text = "\n".join(lines) + ("\n" if final_newline and lines else "")
    if fm is not None:
        text = f"---\n{fm}---\n" + text
    conflicts = fm_conflicts + body.conflicts
    if not conflicts:
        text = kf.render(kf.refresh_counts(path, kf.parse(text)))
    return MergedText(text, conflicts)


# ── git's side: the command, and registering it ──
def driver_command(python: str | None = None) -> str:
    return f"{shlex.quote(python or sys.executable)} -m autopoiesis.git.merge_driver %O %A %B %P"


def install(root: Path) -> list[str]:
    """Register the driver in the repo's .git/config (the .gitattributes lines that use it
    are the template's: `autopoiesis init` adds them). Returns what changed."""
    wanted = {
        f"merge.{DRIVER_NAME}.name": DRIVER_LABEL,
        f"merge.{DRIVER_NAME}.driver": driver_command(),
    }
    changed = []
    for key, value in wanted.items():
        have = call(root, "config", "--local", "--get", key, text=True)
        if have.returncode == 0 and have.stdout.rstrip("\n") == value:
            continue
        run(root, "config", "--local", key, value)
        changed.append(key)
    return [f"merge driver {DRIVER_NAME}: registered in .git/config"] if changed else []


def _fallback(base: Path, ours: Path, theirs: Path) -> int:
    """git's own line merge of the file, written in place: whatever went wrong here, the
    merge still keeps both sides (as conflict markers where they differ)."""
    proc = call(
        None,
        "merge-file",
        f"--marker-size={MARKER}",
        "-L",
        "ours",
        "-L",
        "base",
        "-L",
        "theirs",
        str(ours),
        str(base),
        str(theirs),
    )
    return 0 if proc.returncode == 0 else 1


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) < 3:
        print(
            "usage: python -m autopoiesis.git.merge_driver BASE OURS THEIRS [PATH]", file=sys.stderr
        )
        return 2
    base, ours, theirs = (Path(p) for p in args[:3])
    path = args[3] if len(args) > 3 else ours.name
    try:
        texts = [p.read_bytes().decode("utf-8") for p in (base, ours, theirs)]
        result = merge_texts(texts[0], texts[1], texts[2], path)
    except Exception as exc:  # never lose a side: git's merge of the file instead
        print(
            f"autopoiesis merge driver: {path}: {exc}; merged line by line instead", file=sys.stderr
        )
        return _fallback(base, ours, theirs)
    with open(ours, "w", encoding="utf-8", newline="") as fh:
        fh.write(result.text)
    if result.conflicts:
        print(
            f"autopoiesis merge driver: {path}: {counted(result.conflicts, 'conflict')} in text "
            "both sides changed; "
            "edit the file between the <<<<<<< ours and >>>>>>> theirs markers",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
