"""Rewriting history, the one sanctioned exception to immutability (`autopoiesis
forget`): git's half of it, and the record of each rewrite.

`rewrite_history` removes a string (from every file and commit message) or a whole file
from every commit with git-filter-repo (a well-kept tool, run as a subprocess;
fast-import runs no hooks, so the pre-commit guard of raw/ is not in the way, and the
reference-transaction hook lets it through: verify.ALLOW_REWRITE_ENV). Remote-tracking
refs, which hold the old history, are deleted first (filter-repo would turn them into
local branches); every branch and tag is re-pointed at the rewritten commits; reflogs are
expired and `git gc --prune=now` drops the old objects.

The record (`.autopoiesis/verify/rewrites.json`): per rewrite, the maintenance commit that
records it, the tips of every branch and tag before and after, and every commit of the
old history, so that `autopoiesis sync --force-after-forget` can tell a remote that holds
only the old history (safe to overwrite) from one where others have built on it since.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autopoiesis.core.clock import format_ts, utc_now
from autopoiesis.core.paths import MemoryRepo, atomic_write, git_state_path
from autopoiesis.core.private import is_ciphertext, is_unlocked
from autopoiesis.core.text import is_utf8, typed_bytes
from autopoiesis.errors import GitError
from autopoiesis.git import crypt
from autopoiesis.git.runner import call, repository_env
from autopoiesis.git.verify import ALLOW_REWRITE_ENV, RECORD_VERSION

REDACTED = b"[redacted:forgotten]"
REDACTED_NAME = b"redacted-forgotten"  # in a file name: no brackets, no colon


def _git(
    root: Path, *args: str, check: bool = True, input: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    done = call(root, *args, input=input)
    if check and done.returncode != 0:
        raise GitError(
            f"git {' '.join(args)} failed: {done.stderr.decode(errors='replace').strip()}"
        )
    return done


# ── what the repository holds ──
def uncommitted_status(root: Path) -> list[str]:
    """`git status --porcelain` lines of what is modified or untracked (empty when clean)."""
    out = _git(root, "status", "--porcelain=v1", "--untracked-files=all").stdout.decode(
        errors="replace"
    )
    return out.splitlines() if out.strip() else []


def has_linked_worktrees(root: Path) -> bool:
    listing = _git(root, "worktree", "list", "--porcelain").stdout.decode()
    return len(listing.split("\nworktree ")) > 1


def in_history(root: Path, rel: str) -> bool:
    """Whether any commit of any ref holds the path REL."""
    return bool(_git(root, "log", "--all", "--format=%H", "-1", "--", rel).stdout.strip())


def tracked_files(root: Path) -> list[str]:
    """The paths `git ls-files` lists (the index: at a clean tree, HEAD's files)."""
    return [
        p.decode(errors="replace") for p in _git(root, "ls-files", "-z").stdout.split(b"\0") if p
    ]


def remotes(root: Path) -> dict[str, str]:
    """{name: URL} of the repository's remotes."""
    found = {}
    for line in _git(root, "remote", "-v").stdout.decode(errors="replace").splitlines():
        parts = line.split()
        if len(parts) >= 2:
            found[parts[0]] = parts[1]
    return found


def all_commits(root: Path) -> list[str]:
    """Every commit a branch or tag of ROOT reaches."""
    return _git(root, "rev-list", "--all", check=False).stdout.decode().split()


def tips(root: Path) -> dict[str, str]:
    """{ref: object} of every branch and tag."""
    out = _git(
        root, "for-each-ref", "--format=%(refname) %(objectname)", "refs/heads/", "refs/tags/"
    ).stdout.decode()
    return dict(line.split(" ", 1) for line in out.splitlines() if " " in line)


def branches(root: Path) -> list[str]:
    """The full names (refs/heads/...) of every branch."""
    return _git(root, "for-each-ref", "--format=%(refname)", "refs/heads/").stdout.decode().split()


def pattern_for(text: str, *, ignore_case: bool = False) -> re.Pattern[bytes]:
    """TEXT as a bytes pattern, matched literally (case-insensitively when asked: ASCII
    letters only, as Python's bytes patterns are), with the forms it takes in a
    transcript's name and title (formats.transcript.name_forms: a first message names
    its transcript, lowercased in the file name, title-cased in the title) and quoted in a
    frontmatter or JSON value (a forget of `a"b\\c` reported success and left `a\\"b\\\\c`).

    TEXT is matched as the bytes the user typed (core.text.typed_bytes): a string that
    is not UTF-8 (a Latin-1 secret from a log, typed in a Latin-1 terminal) is found where
    those very bytes are, in a file committed as it was; it has no name or quoted forms,
    since a transcript and its frontmatter are UTF-8 text."""
    from autopoiesis.formats.transcript import name_forms

    forms = {text}
    if is_utf8(text):
        # as a sentence begins with it (a journal line, a commit's "Learned:" title)
        forms |= {*name_forms(text), text[:1].upper() + text[1:]}
        # and as a quoted value holds it: JSON's and YAML's double quotes escape `"` and
        # `\` (and, ASCII-only, every other character), YAML's single quotes double `'` (a
        # topic, a tag, a working folder in a transcript's frontmatter)
        forms |= {json.dumps(text)[1:-1], json.dumps(text, ensure_ascii=False)[1:-1]}
        forms.add(text.replace("'", "''"))
    source = b"|".join(re.escape(typed_bytes(f)) for f in sorted(forms, key=len, reverse=True))
    return re.compile(source, re.IGNORECASE if ignore_case else 0)


def object_store_holds(root: Path, needle: bytes | re.Pattern[bytes]) -> bool:
    """Whether any object of the store (reachable or not) holds NEEDLE."""
    store = _git(root, "cat-file", "--batch-all-objects", "--batch").stdout
    return needle in store if isinstance(needle, bytes) else needle.search(store) is not None


@dataclass
class Occurrences:
    """Where a pattern is in the history (every object any branch or tag reaches): in the
    content of files (PATH: the most times one version of it holds it), in file names,
    and in commit and tag messages (how many of them)."""

    in_files: dict[str, int] = field(default_factory=dict)
    in_names: list[str] = field(default_factory=list)
    in_messages: int = 0

    @property
    def total(self) -> int:
        return sum(self.in_files.values()) + len(self.in_names) + self.in_messages


def occurrences(root: Path, pattern: re.Pattern[bytes]) -> Occurrences:
    """Where PATTERN is in the reachable history: one `rev-list --objects` walk and one
    `cat-file --batch` read of each object it lists."""
    listing = _git(root, "rev-list", "--all", "--objects").stdout.decode(errors="replace")
    names: dict[str, list[str]] = {}
    for line in listing.splitlines():
        sha, _, name = line.partition(" ")
        names.setdefault(sha, [])
        if name:
            names[sha].append(name)
    found = Occurrences()
    found.in_names = sorted(
        {n for ns in names.values() for n in ns if pattern.search(n.encode("utf-8"))}
    )
    batch = _git(root, "cat-file", "--batch", input="\n".join(names).encode() + b"\n").stdout
    pos = 0
    while pos < len(batch):
        end = batch.index(b"\n", pos)
        header = batch[pos:end].decode(errors="replace").split(" ")
        if len(header) != 3:  # "<sha> missing": nothing follows
            pos = end + 1
            continue
        sha, kind, size = header
        body = batch[end + 1 : end + 1 + int(size)]
        pos = end + 1 + int(size) + 1
        if kind == "blob" and is_ciphertext(body):  # a private file: read through git-crypt
            body = crypt.decrypt(root, body) or b""
        count = len(pattern.findall(body)) if kind in ("blob", "commit", "tag") else 0
        if not count:
            continue
        if kind != "blob":
            found.in_messages += 1
            continue
        for name in names.get(sha, []):
            found.in_files[name] = max(found.in_files.get(name, 0), count)
    return found


# ── the rewrite ──
@dataclass
class Rewritten:
    """What the rewrite replaced (OLD_TIPS, {ref: object}, and OLD_COMMITS, every commit of
    the old history) and the branches and tags it re-pointed (REFS, short names)."""

    old_tips: dict[str, str]
    old_commits: list[str]
    refs: list[str]


def rewrite_history(
    root: Path,
    *,
    text: str | None = None,
    ignore_case: bool = False,
    path: str | None = None,
    drop_lines_with: Iterable[str] = (),
    scrub_messages: Iterable[str] = (),
    scrub_message_lines: Iterable[str] = (),
    scrub_message_rules: Iterable[bytes] = (),
) -> Rewritten:
    """Remove TEXT (replaced by [redacted:forgotten] in files and messages, by
    redacted-forgotten in file names; case-insensitively when IGNORE_CASE) or the file
    PATH from every commit of every branch and tag, drop every line of every file that
    holds one of DROP_LINES_WITH, replace each of SCRUB_MESSAGES in commit and tag messages
    (and the rest of a message's line from each of SCRUB_MESSAGE_LINES on; each of
    SCRUB_MESSAGE_RULES is a filter-repo rule of its own), and drop the
    old objects; see the module doc. The caller holds the repository's git lock and
    checked that the work tree is clean."""
    old_tips = tips(root)
    old_commits = all_commits(root)
    # they come back, rewritten, with the next fetch after the force-push
    tracking = (
        _git(root, "for-each-ref", "--format=%(refname) %(objectname)", "refs/remotes/")
        .stdout.decode()
        .splitlines()
    )
    for line in tracking:
        _git(root, "update-ref", "-d", line.split()[0])
    rules_folder = git_state_path(root, "forget_rules")
    shutil.rmtree(rules_folder, ignore_errors=True)  # a killed forget's, with its text
    rules_folder.mkdir(mode=0o700, parents=True)
    try:
        tmp = str(rules_folder)
        args = [
            sys.executable,
            "-m",
            "autopoiesis.git.filter_repo",  # git-filter-repo's main(), repaired (see there)
            "--force",
            "--quiet",
            "--sensitive-data-removal",
            "--no-fetch",
            "--replace-refs",
            "delete-no-add",
        ]
        rules: list[bytes] = []
        if text is not None:
            # a regex, so that case can be ignored; filter-repo reads one rule a line and
            # splits it at the last '==>' (forget refuses both in TEXT)
            found = b"regex:" + (b"(?i)" if ignore_case else b"") + pattern_for(text).pattern
            rules.append(found + b"==>" + REDACTED)
            renames = Path(tmp) / "renames.txt"
            renames.write_bytes(found + b"==>" + REDACTED_NAME + b"\n")
            args += ["--paths-from-file", str(renames)]
        for marker in drop_lines_with:
            rules.append(b"regex:(?m)^[^\\n]*" + re.escape(marker.encode()) + b"[^\\n]*\\n?==>")
        messages = (
            [
                b"regex:" + re.escape(m.encode("utf-8")) + b"==>" + REDACTED
                for m in sorted(set(scrub_messages), key=len, reverse=True)
                if m.strip() and "==>" not in m  # filter-repo splits a rule at its last '==>'
            ]
            + [
                b"regex:" + re.escape(m.encode("utf-8")) + b"[^\\n]*==>" + REDACTED
                for m in sorted(set(scrub_message_lines))
                if m.strip() and "==>" not in m
            ]
            + list(scrub_message_rules)
        )
        if rules:
            rules_file = Path(tmp) / "replace.txt"
            rules_file.write_bytes(b"".join(r + b"\n" for r in rules))
            args += ["--replace-text", str(rules_file)]
        if (text is not None and rules) or messages:
            message_rules = Path(tmp) / "messages.txt"
            own = [rules[0]] if text is not None else []
            message_rules.write_bytes(b"".join(r + b"\n" for r in own + messages))
            args += ["--replace-message", str(message_rules)]
        if text is not None and is_unlocked(root):
            # private files (git-crypt): their ciphertext is decrypted, edited, re-encrypted
            found_in = re.compile(re.escape(typed_bytes(text)), re.IGNORECASE if ignore_case else 0)
            args += [
                "--blob-callback",
                crypt.forget_callback(found_in.pattern, found_in.flags, REDACTED),
            ]
        if path is not None:
            args += ["--invert-paths", "--path", path]
        # the one sanctioned rewrite: the reference-transaction hook lets it through
        env = repository_env(
            root, {**os.environ, "GIT_TERMINAL_PROMPT": "0", ALLOW_REWRITE_ENV: "1"}
        )
        done = subprocess.run(
            args, cwd=root, capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL
        )
        if done.returncode != 0:
            for line in tracking:  # nothing was rewritten: they stand as they were
                ref, sha = line.split()
                _git(root, "update-ref", ref, sha)
            why = (done.stderr or done.stdout).strip()[-2000:]
            raise GitError(f"git-filter-repo failed: {why}")
    finally:
        shutil.rmtree(rules_folder, ignore_errors=True)
    drop_old_objects(root)
    return Rewritten(old_tips, old_commits, ref_names(root))


def ref_names(root: Path) -> list[str]:
    """The short names of every branch and tag."""
    return (
        _git(root, "for-each-ref", "--format=%(refname:short)", "refs/heads/", "refs/tags/")
        .stdout.decode()
        .split()
    )


# ── a forget under way ──
# A forget killed after git-filter-repo re-pointed the refs (before its check, its
# cleanup and its record commit) left a history half done: rewritten, with the old
# objects in the reflogs, the work tree maybe still the old one, and no record, so a
# `sync` would merge the old history back from the remote and a second forget would find
# nothing to forget. What the history was before is kept here (commit ids, the markers
# of the lines dropped, how the record describes it: never the secret) from before the
# first change until the record commit, so that the same forget run again finishes it.


def begin_rewrite(repo: MemoryRepo, under_way: dict[str, Any]) -> None:
    """Keep UNDER_WAY (what a forget is about to rewrite: `old_tips`, `old_commits`, how
    its record describes it, and what identifies its request) until `end_rewrite`."""
    atomic_write(git_state_path(repo.root, "forget_under_way"), json.dumps(under_way))


def rewrite_under_way(repo: MemoryRepo) -> dict[str, Any] | None:
    """What `begin_rewrite` kept of a forget that has not finished (killed, or stopped by
    an error), or None."""
    try:
        data = json.loads(git_state_path(repo.root, "forget_under_way").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def stopped_forget(under_way: dict[str, Any]) -> str:
    """What to say of the forget UNDER_WAY stopped before its record (killed, or stopped by
    an error), and how to finish it."""
    what = under_way.get("what") or "an earlier forget"
    when = under_way.get("when") or "earlier"
    return (
        f"a forget begun {when} was stopped before it finished ({what}): the history may be "
        "rewritten without its record, and a sync would bring the old history back. Run that "
        "same `autopoiesis forget` again (the same string, or the same --transcript PATH) to "
        "finish it"
    )


def end_rewrite(repo: MemoryRepo) -> None:
    """The forget `begin_rewrite` announced is recorded: nothing is left to finish."""
    git_state_path(repo.root, "forget_under_way").unlink(missing_ok=True)
    # a killed rewrite's rule files spell the text forgotten; finished, it needs them no more
    shutil.rmtree(git_state_path(repo.root, "forget_rules"), ignore_errors=True)


def reset_work_tree(root: Path) -> None:
    """The work tree and the index as HEAD has them: the last step of git-filter-repo's
    rewrite, which a forget killed before it did not get to (the old files, secret and
    all, would read as changes to commit)."""
    _git(root, "reset", "--hard", "--quiet")


def drop_old_objects(root: Path) -> None:
    """Expire every reflog and prune the objects nothing reaches any more (the old history)."""
    _git(root, "reflog", "expire", "--expire=now", "--expire-unreachable=now", "--all")
    _git(root, "gc", "--prune=now", "--quiet")


# ── the record of sanctioned rewrites, for `autopoiesis sync` ──
def _load_rewrites(repo: MemoryRepo) -> list[dict[str, Any]]:
    try:
        data = json.loads(repo.state_file("verify_rewrites").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    items = data.get("rewrites") if isinstance(data, dict) else None
    return [r for r in items if isinstance(r, dict)] if isinstance(items, list) else []


def record_rewrite(
    repo: MemoryRepo,
    *,
    commit: str,
    what: str,
    old_tips: dict[str, str],
    new_tips: dict[str, str],
    old_commits: Iterable[str],
) -> None:
    """Remember a sanctioned history rewrite: the maintenance commit that records it, the
    tips of every branch and tag before and after, and every commit of the old history.
    A remote that still holds (part of) that old history may then be overwritten by
    `autopoiesis sync --force-after-forget`, and by nothing else. Kept apart from the
    verify record, which the hooks read on every run (this one can be large)."""
    # a forget finished after its kill records the same commit again: once is enough
    items = [r for r in _load_rewrites(repo) if r.get("commit") != commit]
    items.append(
        {
            "commit": commit,
            "what": what,
            "when": format_ts(utc_now()),
            "old_tips": dict(old_tips),
            "new_tips": dict(new_tips),
            "old_commits": sorted(set(old_commits)),
            "pushed": {},
        }
    )
    atomic_write(
        repo.state_file("verify_rewrites"),
        json.dumps({"version": RECORD_VERSION, "rewrites": items}),
    )


def sanctioned_rewrites(repo: MemoryRepo) -> list[dict[str, Any]]:
    """The rewrites `record_rewrite` kept, oldest first (each with `pushed`: {remote URL: when})."""
    return _load_rewrites(repo)


# A line of forget's record commit per branch or tag tip the rewrite replaced: every clone
# that has the record then knows a commit of the history it removed (not a secret: a sha).
OLD_TIP = "Old-tip: "
# ... and one per commit the rewrite replaced (of the old history, not in the new one),
# up to OLD_COMMITS_LISTED: a clone that was behind the old tips holds those, not the tips
OLD_COMMIT = "Old-commit: "
OLD_COMMITS_LISTED = 2000
FORGET_RECORD = "^maintenance: forget "  # the subject of forget's record commit


def old_tip_lines(old_tips: dict[str, str], replaced: Iterable[str] = ()) -> str:
    """The record commit's OLD_TIP lines for OLD_TIPS ({ref: sha}), and its OLD_COMMIT
    lines for REPLACED (the old history's commits that are not the new one's), the first
    OLD_COMMITS_LISTED of them."""
    tips = "".join(f"{OLD_TIP}{sha} {ref}\n" for ref, sha in sorted(old_tips.items()))
    listed = sorted(set(replaced) - set(old_tips.values()))[:OLD_COMMITS_LISTED]
    return tips + "".join(f"{OLD_COMMIT}{sha}\n" for sha in listed)


def record_commit_of(root: Path, old_tips: dict[str, str]) -> str | None:
    """The record commit in HEAD's history that names the tips OLD_TIPS as the ones it
    replaced (a forget killed after committing it, before it was done), or None."""
    if not old_tips:
        return None
    wanted = old_tip_lines(old_tips)
    out = _git(
        root, "log", "--format=%x1e%H%n%B", f"--grep={FORGET_RECORD}", "HEAD", check=False
    ).stdout.decode(errors="replace")
    for record in out.split("\x1e")[1:]:
        sha, _, body = record.partition("\n")
        if wanted in body:
            return sha.strip()
    return None


def forgotten_commits(repo: MemoryRepo, *tips: str) -> tuple[set[str], set[str]]:
    """(the commits of the histories forgets replaced, as this clone knows them; the forgets'
    record commits): every commit of the old history this clone's own rewrites recorded,
    and the old tips and replaced commits named by the record commits of its refs and
    TIPS' history (what a clone that pulled someone else's rewrite knows). A commit the
    rewrite did not change (one before the secret first appeared) is in both histories:
    `resurrected` tells them apart by the record commits, whose history is the new one."""
    known: set[str] = set()
    records: set[str] = set()
    under_way = rewrite_under_way(repo)  # a forget not finished: its old history all the same
    if under_way is not None and isinstance(under_way.get("old_commits"), list):
        known.update(c for c in under_way["old_commits"] if isinstance(c, str))
    for r in _load_rewrites(repo):
        old = r.get("old_commits")
        if isinstance(old, list):
            known.update(c for c in old if isinstance(c, str))
        if isinstance(r.get("commit"), str) and r["commit"]:
            records.add(r["commit"])
    # the record commits of every ref this clone has, and of TIPS: a tag or a branch of the
    # old history carries none, but the clone that pushes it holds the new history's
    heads = [t for t in tips if t and t.strip("0") and _is_commit(repo.root, t)]
    out = _git(
        repo.root,
        "log",
        "--format=%x1e%H%n%B",
        f"--grep={FORGET_RECORD}",
        "--all",
        *heads,
        check=False,
    ).stdout.decode(errors="replace")
    for record in out.split("\x1e")[1:]:
        sha, _, body = record.partition("\n")
        records.add(sha.strip())
        for line in body.splitlines():
            if line.startswith((OLD_TIP, OLD_COMMIT)):
                known.add(line.split(" ", 2)[1])
    return known, records


def _is_commit(root: Path, sha: str | None) -> bool:
    return (
        bool(sha) and _git(root, "cat-file", "-e", f"{sha}^{{commit}}", check=False).returncode == 0
    )


def resurrected(repo: MemoryRepo, tip: str, exclude: str | None) -> list[str]:
    """The commits of TIP's history that EXCLUDE's lacks and a forget removed (of the
    history it replaced, and not in the history it left): a clone that still had the old
    history merged it (plain git, or a clone that knew of no rewrite), and with it what
    was forgotten. Empty when this clone knows of no forget."""
    known, records = forgotten_commits(repo, tip, *([exclude] if exclude else []))
    if not known:
        return []
    root = repo.root
    args = ["rev-list", tip] + (["--not", str(exclude)] if _is_commit(root, exclude) else [])
    back = [c for c in _git(root, *args, check=False).stdout.decode().split() if c in known]
    kept = [r for r in records if _is_commit(root, r)]
    if back and kept:  # those the rewrite did not change are the new history's too
        gone = set(
            _git(root, "rev-list", "--no-walk=unsorted", *back, "--not", *kept, check=False)
            .stdout.decode()
            .split()
        )
        back = [c for c in back if c in gone]
    return back


def mark_rewrite_pushed(repo: MemoryRepo, commits: Iterable[str], remote_url: str) -> None:
    """Note that the rewrites recorded by COMMITS now hold on the remote at REMOTE_URL."""
    wanted = set(commits)
    items = _load_rewrites(repo)
    for r in items:
        if r.get("commit") in wanted:
            pushed: dict[str, str] = r["pushed"] if isinstance(r.get("pushed"), dict) else {}
            pushed[remote_url] = format_ts(utc_now())
            r["pushed"] = pushed
    atomic_write(
        repo.state_file("verify_rewrites"),
        json.dumps({"version": RECORD_VERSION, "rewrites": items}),
    )
