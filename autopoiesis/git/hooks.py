"""The git hooks' logic (docs/design.md#git-hooks). This is the light path: it runs on every commit,
so it imports only the standard library, PyYAML (through python-frontmatter) and this
package's kernel and formats — never scikit-learn, numpy, openai or GitPython.

pre-commit rejects (exit 1, naming the file):
  * a change, rename or deletion of a committed file under raw/ (immutability);
  * a new transcript whose frontmatter is missing or invalid, or that is still open;
  * MEMORY.md over 110% of lifecycle.memory_line_cap (220 lines by default);
  * a topic whose frontmatter does not parse, holds an invalid regex or is past the size
    cap (formats/topic.py: MAX_TOPIC_BYTES), or that goes by another topic's name;
  * a knowledge file whose frontmatter does not parse (every reader would trip on it);
  * a knowledge file or topic that holds a merge's conflict markers (a conflict staged
    with `git add` before its markers were edited out), or a NUL byte (binary to git and
    to the index).
It warns (the commit goes ahead) about MEMORY.md over 90% of the cap (180 lines) and
topics without triggers.

post-commit hands the changed paths to the search index, which updates in the
background under its own lock. The installed shim does that hand-off in shell (no Python
start-up on the commit path); `post_commit()` here serves `autopoiesis git-hooks run
post-commit` (the pre-commit framework).

The commands that never run pre-commit (merge, cherry-pick, rebase, am, revert, reset,
branch -M, replace) are held by the history hooks, which use `autopoiesis.git.verify`:
reference-transaction refuses a ref update that would alter a transcript's history (its
shim checks the common case, a commit, with two git calls and starts Python only when
they find something); pre-push refuses to push a history that fails verify; post-merge
and post-rewrite run verify and say what they found.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable
from pathlib import Path, PurePosixPath

from autopoiesis.core.paths import CONTENT_DIRS, MEMORY_FILE, ODD_NAME, MemoryRepo, template_dir
from autopoiesis.core.text import is_utf8, utf8_problem
from autopoiesis.errors import FrontmatterError, GitError
from autopoiesis.git.history import in_read_scope, misplaced, secrets_in_names
from autopoiesis.git.runner import (
    Change,
    GitCommandError,
    cat_file_batch,
    decode,
    ls_tree,
    staged_changes,
)
from autopoiesis.git.runner import run as git

HOOK_NAMES = (
    "pre-commit",
    "post-commit",
    "reference-transaction",
    "pre-push",
    "post-merge",
    "post-rewrite",
)
SHIM_MARKER = "autopoiesis"


class CheckResult:
    """Errors (the commit is rejected) and warnings (it goes ahead) of a hook run."""

    def __init__(self) -> None:
        self.errors: list[str] = []
        self.warnings: list[str] = []

    @property
    def ok(self) -> bool:
        return not self.errors


def _frontmatter_error(path: str, text: str) -> str | None:
    """Why TEXT's frontmatter cannot be read, or None when it can (or there is none)."""
    from autopoiesis.core.frontmatter import (
        load as load_frontmatter,
    )  # ~30 ms (yaml): only when a file needs it

    try:
        load_frontmatter(text, path)
    except FrontmatterError as exc:
        return str(exc)
    return None


def _committed_text(root: Path, path: str | None) -> Callable[[], str] | None:
    """What reads PATH's text at HEAD (None for a file HEAD does not hold)."""
    if path is None:
        return None

    def read() -> str:
        blob = cat_file_batch(root, [f"HEAD:{path}"]).get(f"HEAD:{path}") or b""
        return blob.decode("utf-8", "replace")

    return read


def check_transcript(path: str, text: str, result: CheckResult) -> bool:
    """A new transcript: what git/admission.py asks of every transcript entering the
    history. True when it asks nothing more."""
    from autopoiesis.git.admission import transcript_problems  # only when a transcript is staged

    problems = transcript_problems(path, text)
    for kind, why in problems:
        advice = {
            "open": "It is committed automatically when it ends; unstage it with "
            f"`git restore --staged {path}`.",
            "misnamed": f"Rename it (`git mv {path} NEW`) or unstage it "
            f"(`git restore --staged {path}`).",
        }.get(kind, "")
        result.errors.append(f"{path}: {why.rstrip('.')}." + (f" {advice}" if advice else ""))
    return not problems


def _refuse_second_files(root: Path, new: dict[str, str], result: CheckResult) -> None:
    """A new transcript (of NEW: path -> text) that holds a part of a session another
    transcript already holds, in HEAD or earlier in this commit (git/admission.py's
    `same_session`): the tools write a session once a part, so a second file of it is a
    forgery of that session or two sessions that shared an id."""
    from autopoiesis.git.admission import same_session, session_of

    head = ls_tree(root, "HEAD", ["raw/conversations"])
    texts = {p: t.encode("utf-8") for p, t in new.items()}

    def read(other: str) -> bytes | None:
        if other in texts:
            return texts[other]
        return cat_file_batch(root, [f"HEAD:{other}"]).get(f"HEAD:{other}")

    seen: list[str] = []
    for path in new:
        session = session_of(path, texts[path])
        first = session and same_session(path, session, [*head, *seen], read)
        if session and first:
            result.errors.append(
                f"{path}: it holds {f'part {session[1]} of ' if session[1] > 1 else ''}"
                f"session {session[0]}, which {first} already holds; a session is one file a "
                f"part. Unstage it with `git restore --staged {path}`."
            )
        seen.append(path)


def check_memory(text: str, cap: int, result: CheckResult) -> None:
    lines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
    hard, soft = int(cap * 1.1), int(cap * 0.9)
    if lines > hard:
        from autopoiesis.formats.knowledge import parse

        by_hand = lines - sum(1 for _ in parse(text).entries())
        if by_hand > hard:  # prune moves entries only: it cannot bring this file under
            result.errors.append(
                f"{MEMORY_FILE} has {lines} lines, over the limit of {hard} (cap {cap}), "
                f"and {by_hand} of them are not entries (written by hand: notes, headings, "
                "blank lines), which `autopoiesis prune` never moves. Move some of them into "
                "project or people files, or raise lifecycle.memory_line_cap in "
                "memory-config.yaml."
            )
        else:
            result.errors.append(
                f"{MEMORY_FILE} has {lines} lines, over the limit of {hard} (cap {cap}). "
                "Prune it first (`autopoiesis prune`), or move detail into project or people "
                "files."
            )
    elif lines > cap:  # a hand edit or a merge: the writer never takes it past the cap
        result.warnings.append(
            f"{MEMORY_FILE} has {lines} lines, over its cap of {cap}; `autopoiesis prune` "
            "moves its oldest entries to archive/."
        )
    elif lines > soft:
        # at the cap prune has nothing to do: the writer makes room for each new entry
        result.warnings.append(
            f"{MEMORY_FILE} is at {lines} lines (cap {cap}); its oldest entries move to "
            "archive/ as new ones arrive."
        )


# the lines git writes around a conflict it leaves in a file (`merge.conflictStyle` merge,
# diff3 or zdiff3); "=======" alone is no marker here: it underlines a Markdown heading
_CONFLICT_MARKER = re.compile(r"^(?:<{7}|>{7}|\|{7})(?: |$)", re.M)


def check_conflict_markers(path: str, text: str, result: CheckResult) -> None:
    """A knowledge file or topic holding a merge's conflict markers: both sides' text
    staged as it was left, with the markers, which every reader (the compiler, search, the
    writer's next entry) would take as the note's own lines and a sync would push to every
    clone. Lines inside a fenced code block are a note's example, not a conflict. (A
    transcript is never checked: a conversation may quote a conflict.)"""
    fenced = False
    for number, line in enumerate(text.split("\n"), 1):
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and _CONFLICT_MARKER.match(line):
            result.errors.append(
                f"{path}: line {number} is a merge conflict marker ({line[:7]}): the conflict "
                "was staged before it was resolved. Edit the file: keep the right text between "
                "<<<<<<< and >>>>>>>, delete the marker lines, then `git add "
                f"{path}` and commit again (`autopoiesis sync` commits a merge)."
            )
            return


def check_topic(path: str, text: str, result: CheckResult) -> None:
    from autopoiesis.formats.topic import validate_topic_source

    errors, warnings = validate_topic_source(path, text)
    result.errors.extend(errors)
    result.warnings.extend(warnings)


def check_topic_names(
    root: Path, changes: list[Change], contents: dict[str, bytes], result: CheckResult
) -> None:
    """A topic this commit adds or changes that goes by the name of another topic of the
    commit's tree: the loader keeps one topic a name (the file named after it, else the
    first; topics/loader.py), so a file added with `name: deploy` silenced
    topics/deploy.md, or itself, and the commit went ahead. Refused, naming both."""
    from autopoiesis.formats.topic import topic_name

    def is_topic(path: str) -> bool:
        return path.startswith("topics/") and path.endswith(".md")

    changed: dict[str, str] = {}
    for c in changes:
        raw = contents.get(c.path)
        if c.status != "D" and is_topic(c.path) and raw is not None:
            name = topic_name(c.path, raw.decode("utf-8", "replace"))
            if name is not None:
                changed[c.path] = name
    if not changed:
        return
    gone = {c.path for c in changes if c.status == "D"} | {
        c.old_path for c in changes if c.status[:1] == "R" and c.old_path
    }
    kept = sorted(p for p in ls_tree(root, "HEAD", ["topics"]) if is_topic(p))
    kept = [p for p in kept if p not in gone and p not in changed]
    names: dict[str, list[str]] = {}
    for path, blob in cat_file_batch(root, [f"HEAD:{p}" for p in kept]).items():
        name = topic_name(path[5:], (blob or b"").decode("utf-8", "replace"))
        if name is not None:
            names.setdefault(name, []).append(path[5:])
    for path, name in sorted(changed.items()):
        names.setdefault(name, []).append(path)
    for name, paths in names.items():
        if len(paths) < 2:
            continue
        owner = next((p for p in sorted(paths) if PurePosixPath(p).stem == name), None)
        for path in sorted(paths):
            if path in changed and path != owner:
                others = ", ".join(p for p in sorted(paths) if p != path)
                result.errors.append(
                    f"{path}: name {name!r} is already used by {others}; a name is one "
                    "topic's. Give it another `name:` (or rename the file), then `git add` it."
                )


def check_knowledge(
    path: str, text: str, result: CheckResult, before: Callable[[], str] | None = None
) -> None:
    """A knowledge file's frontmatter, and its entries' ids: two live entries with one
    id (a copy-pasted entry) are refused, unless BEFORE (the file's committed text, read
    only when needed) held them already: a memory an older version left so is not locked
    out of every later commit to that file."""
    error = _frontmatter_error(path, text)
    if error:
        result.errors.append(f"{error} Fix it so readers and the index can parse the file.")
    from autopoiesis.formats.knowledge import repeated_ids

    repeats = repeated_ids(text)
    if repeats and before is not None:
        committed = {entry_id for entry_id, _, _ in repeated_ids(before())}
        repeats = [r for r in repeats if r[0] not in committed]
    for entry_id, first, other in repeats:
        result.errors.append(
            f"{path}: lines {first} and {other} are two entries with one id ({{id: {entry_id}}}); "
            "an id names one fact. If line "
            f"{other} is a copy, delete it; if it says another fact, remove its "
            f"`{{id: {entry_id}}}` (it stays as a hand-written line). Then `git add {path}`."
        )


def staged_modes(root: Path, paths: list[str]) -> dict[str, str]:
    """The index's file mode of each of PATHS where autopoiesis reads (the memory folders,
    shared/, the files at the top that steer it: history.READ_SCOPE)."""
    mine = [p for p in paths if in_read_scope(p)]
    if not mine:
        return {}
    modes = {}
    for entry in decode(git(root, "ls-files", "--stage", "-z", "--", *mine)).split("\x00"):
        meta, _, path = entry.partition("\t")
        if path:
            modes[path] = meta.split(" ", 1)[0]
    return modes


def _refuse_links(modes: dict[str, str], result: CheckResult) -> None:
    """What `history.misplaced` names is refused (a symbolic link or gitlink in the memory
    folders or at memory-config.yaml, anything under shared/ but a team's mount): a memory
    is shared, and `knowledge/notes.md -> ~/.aws/credentials` would be read on every
    machine that pulls it."""
    for path, mode in modes.items():
        why = misplaced(path, mode)
        if why:
            result.errors.append(
                f"{path}: {why}; a memory holds regular files there. "
                f"Undo with `git rm --cached {path}`."
            )


def _refuse_odd_names(root: Path, changes: list[Change], result: CheckResult) -> None:
    """A file under the memory folders whose name is not UTF-8 is refused: the index
    cannot hold it (SQLite stores UTF-8 text) and another machine may not read it. So is
    one whose name holds a control character (ODD_NAME): a line break in a name ends a
    line of every listing that shows it, and a hostile name posed as a section of a
    compiled context; and one whose name holds a secret (secrets_in_names), shown without
    it."""
    named = [c for c in changes if c.status != "D" and c.path.split("/", 1)[0] in CONTENT_DIRS]
    # only a name this commit brings (an added, renamed or copied file): a modified file's
    # name was checked when it came, and a commit of edits pays for no redactor (~30 ms)
    secret = secrets_in_names(
        root, [c.path for c in named if c.status[:1] in "ARC" and not c.path.startswith("raw/")]
    )
    for c in named:
        masked = secret.get(c.path)
        if masked is not None:
            result.errors.append(
                f"{masked}: its name holds what looks like a secret; a name is committed and "
                "pushed as it is. Undo with `git rm --cached` of it (`git status` lists it), "
                "and rename it without the secret."
            )
            continue
        shown = ascii(c.path)[1:-1]
        if not is_utf8(c.path):
            result.errors.append(
                f"{shown}: its name is not UTF-8 (`git status` shows it quoted); a memory's "
                "file names are UTF-8 text. Undo with `git rm --cached` of it, and rename it."
            )
        elif ODD_NAME.search(c.path):
            result.errors.append(
                f"{shown}: its name holds a control character (a line break, a tab, an "
                "escape); a memory's file names are one line of text. Undo with `git rm "
                "--cached` of it (as `git status` quotes it), and rename it."
            )


def _refuse_transcript_changes(
    changes: list[Change], committed: set[str], result: CheckResult
) -> None:
    """A committed transcript renamed, modified, deleted or changed in type is refused."""
    for c in changes:
        letter, path, old = c.status, c.path, c.old_path
        if letter in "RC" and old and old.startswith("raw/") and old in committed:
            result.errors.append(
                f"{old}: transcripts under raw/ are immutable; it may not be renamed (to {path}). "
                f"Undo with `git restore --staged --worktree -- {old} {path}` or `git mv {path} "
                f"{old}`."
            )
        if path.startswith("raw/") and path in committed and letter in "MDT":
            verb = {"M": "modified", "D": "deleted", "T": "changed"}[letter]
            result.errors.append(
                f"{path}: transcripts under raw/ are immutable; it may not be {verb}. "
                f"Undo with `git restore --staged --worktree -- {path}`."
            )


def _is_checked(path: str) -> bool:
    """Whether the pre-commit hook reads PATH's staged content to check its format."""
    if path.startswith("raw/conversations/") or path.startswith(("topics/", "knowledge/")):
        return path.endswith(".md")
    return path == MEMORY_FILE


def _is_ciphertext(data: bytes) -> bool:
    from autopoiesis.core.private import is_ciphertext  # only for a file that may be one

    return is_ciphertext(data)


def _work_tree_text(root: Path, path: str) -> bytes | None:
    """The work tree's PATH when it is readable text, for a file staged as ciphertext."""
    try:
        data = (root / path).read_bytes()
    except OSError:
        return None
    return None if _is_ciphertext(data) else data


def pre_commit(root: Path) -> CheckResult:
    """The checks of what is staged (the pre-commit hook)."""
    changes = staged_changes(root)
    if not changes:
        return CheckResult()
    raw_touched = [
        p
        for c in changes
        for p in ((c.old_path,) if c.old_path else ()) + (c.path,)
        if p.startswith("raw/")
    ]
    committed = ls_tree(root, "HEAD", sorted(set(raw_touched)))
    modes = staged_modes(root, [c.path for c in changes if c.status != "D"])
    to_read = [c.path for c in changes if c.status != "D" and _is_checked(c.path)]
    blobs = cat_file_batch(root, [f":{p}" for p in to_read])
    contents = {}
    for path in to_read:
        raw = blobs.get(f":{path}") or b""
        if raw[:1] == b"\x00" and _is_ciphertext(raw):  # git-crypt's: check the text it encrypted
            plain = _work_tree_text(root, path)
            if plain is None:
                continue  # the text is not here to check
            raw = plain
        contents[path] = raw
    return check_changes(root, changes, committed, modes, contents)


def check_changes(
    root: Path,
    changes: list[Change],
    committed: set[str],
    modes: dict[str, str],
    contents: dict[str, bytes],
) -> CheckResult:
    """What pre-commit checks, of any commit about to be made: CHANGES against HEAD,
    COMMITTED the raw/ paths among them that HEAD holds, MODES the new file modes, and
    CONTENTS the new text of each changed file that `_is_checked` (one left out is not
    checked: git-crypt's ciphertext whose text is not in the work tree). The hook passes
    what is staged; a commit made through git's plumbing (git/direct_commit.py) passes
    the files it commits, so both refuse the same things."""
    result = CheckResult()
    _refuse_links(modes, result)
    _refuse_odd_names(root, changes, result)
    _refuse_transcript_changes(changes, committed, result)
    new_transcripts: dict[str, str] = {}
    # where HEAD holds each file: its old name for a rename (None: a new file)
    committed_as = {
        c.path: (c.old_path or c.path) if c.status[:1] in "MRT" else None for c in changes
    }
    for path in [c.path for c in changes if c.status != "D" and _is_checked(c.path)]:
        raw = contents.get(path)
        if raw is None:
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            why = utf8_problem(raw, path) or f"{path}: not UTF-8 text"
            result.errors.append(f"{why}; then `git add {path}` and commit again.")
            continue
        if path.startswith("raw/conversations/"):
            if path not in committed and check_transcript(path, text, result):
                new_transcripts[path] = text
            continue
        if "\x00" in text:
            line = text.count("\n", 0, text.index("\x00")) + 1
            result.errors.append(
                f"{path}: line {line} holds a NUL byte, which makes the file binary to git "
                "(no diff, no merge by entry) and to search (left out whole); memory files "
                "are UTF-8 Markdown. Delete that byte, then `git add` the file."
            )
            continue
        check_conflict_markers(path, text, result)
        if path.startswith("topics/"):
            check_topic(path, text, result)
            continue
        check_knowledge(path, text, result, before=_committed_text(root, committed_as[path]))
        if path == MEMORY_FILE:
            cap = MemoryRepo(root).config.lifecycle.memory_line_cap
            check_memory(text, cap, result)
    check_topic_names(root, changes, contents, result)
    if new_transcripts:
        _refuse_second_files(root, new_transcripts, result)
    return result


def post_commit(root: Path) -> int:
    """Hand the commit's changes to the index, as the shell shim does: a detached
    `python -m autopoiesis.index.sync` when the repo has a search index. Never fails the
    commit, and imports nothing of the index here (the hook stays on the light path)."""
    import subprocess

    repo = MemoryRepo(root)
    if not repo.index_path.exists():
        return 0
    try:
        with repo.open_state_log("index_sync_log") as out:
            subprocess.Popen(
                [sys.executable, "-m", "autopoiesis.index.sync", "--root", str(repo.root)],
                cwd=repo.root,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=out,
                start_new_session=True,
            )
    except OSError as exc:  # the commit already happened; say so and move on
        print(
            f"autopoiesis post-commit: index not updated ({exc}); run `autopoiesis index rebuild`.",
            file=sys.stderr,
        )
    return 0


# {env}: verify.ALLOW_REWRITE_ENV (verify is imported only by the hooks that need it)
REFUSED_HINT = (
    "autopoiesis: transcripts under raw/ are immutable, so git did not move the branch. The "
    "command may have left "
    "its changes in the index and work tree: `git reset --merge` puts them back (`git rebase "
    "--abort` or "
    "`git am --abort` when one is in progress). `autopoiesis verify` checks the history. A "
    "sanctioned rewrite "
    "(`autopoiesis forget`) sets {env}=1."
)


def reference_transaction(root: Path, state: str, updates: str) -> int:
    """Refuse (exit 1 in the "prepared" state) a transaction that would alter a
    transcript's history; see git.ref_updates."""
    if state != "prepared":
        return 0
    from autopoiesis.git.ref_updates import check_ref_updates
    from autopoiesis.git.verify import ALLOW_REWRITE_ENV

    errors = check_ref_updates(MemoryRepo(root), updates.splitlines())
    for e in errors:
        print(f"autopoiesis: error: {e}", file=sys.stderr)
    if errors:
        print(REFUSED_HINT.format(env=ALLOW_REWRITE_ENV), file=sys.stderr)
        return 1
    return 0


def pre_push(root: Path, updates: str) -> int:
    """Refuse to push a history that fails verify (stdin: `<local ref> <local sha>
    <remote ref> <remote sha>` lines)."""
    from autopoiesis.git.crypt import push_refusal
    from autopoiesis.git.replacements import replacement_findings
    from autopoiesis.git.verify import verify

    repo = MemoryRepo(root)
    failed = False
    for line in updates.splitlines():
        parts = line.split()
        if len(parts) != 4 or not parts[1].strip("0"):
            continue
        local_ref, local_sha = parts[0], parts[1]
        if local_ref.startswith("refs/replace/"):
            found = replacement_findings(root)
            print(
                f"autopoiesis: error: refusing to push {local_ref}: a `git replace` object makes "
                "git show other "
                "content than the history holds." + "".join(f"\n  {f}" for f in found),
                file=sys.stderr,
            )
            failed = True
            continue
        ref = local_ref if local_ref.startswith("refs/heads/") else "HEAD"
        refusal = push_refusal(root, repo.private_patterns(), local_sha, parts[3])
        if not refusal:
            from autopoiesis.git.rewrite import resurrected

            back = resurrected(repo, local_sha, parts[3])
            if back:
                refusal = (
                    f"it holds history `autopoiesis forget` removed (commit {back[0][:12]}): "
                    "this clone merged the old history back. Re-clone the memory and carry "
                    "over its new transcripts (docs/sync.md, after forget)."
                )
        if refusal:
            print(f"autopoiesis: error: refusing to push {local_ref}: {refusal}", file=sys.stderr)
            failed = True
            continue
        result = verify(repo, ref=ref, tip=local_sha)
        if not result.ok:
            failed = True
            print(
                f"autopoiesis: error: refusing to push {local_ref}: {result.summary()}",
                file=sys.stderr,
            )
            for f in result.findings:
                print(f"  {f}", file=sys.stderr)
    if failed:
        print(
            "autopoiesis: push refused by the pre-push hook. Inspect the history with "
            "`autopoiesis verify`.",
            file=sys.stderr,
        )
        return 1
    return 0


def after_rewrite(root: Path, name: str) -> int:
    """post-merge / post-rewrite: verify the branch and say what is wrong (git has already
    moved it; the exit status changes nothing)."""
    from autopoiesis.git.verify import verify

    result = verify(MemoryRepo(root))
    if result.ok:
        return 0
    what = "merge" if name == "post-merge" else "rewrite"
    print(f"autopoiesis: warning: after this {what}, {result.summary()}:", file=sys.stderr)
    for f in result.findings:
        print(f"  {f}", file=sys.stderr)
    print(
        "autopoiesis: `git reflog` shows where the branch was before; `git reset --keep <that "
        "commit>` returns it there. "
        "`autopoiesis verify` repeats this check.",
        file=sys.stderr,
    )
    return 1


def run(name: str, root: Path | None = None, args: list[str] | None = None) -> int:
    # git runs hooks at the root of the work tree, so the hook needs no rev-parse call
    root = root or Path.cwd()
    args = args or []
    if name in HOOK_NAMES and not is_memory(root):
        return 0  # a hooks folder shared with other repositories: not ours to check
    if name == "reference-transaction":
        return reference_transaction(root, args[0] if args else "", sys.stdin.read())
    if name == "pre-push":
        return pre_push(root, sys.stdin.read())
    if name in ("post-merge", "post-rewrite"):
        return after_rewrite(root, name)
    if name == "pre-commit":
        result = pre_commit(root)
        for w in result.warnings:
            print(f"autopoiesis: warning: {w}", file=sys.stderr)
        for e in result.errors:
            print(f"autopoiesis: error: {e}", file=sys.stderr)
        if not result.ok:
            print("autopoiesis: commit rejected by the pre-commit hook.", file=sys.stderr)
            return 1
        return 0
    if name == "post-commit":
        return post_commit(root)
    print(
        f"autopoiesis: unknown hook {name!r}; use one of {', '.join(HOOK_NAMES)}.", file=sys.stderr
    )
    return 2


# ── installation ──
# What makes a folder a memory, as the hooks see it: the shims test the same in shell
# before they do anything, so a hook that ends up in another repository (a hooks folder
# shared by every repository of the user) does nothing there. The folders a memory holds,
# and its settings file or its state folder: a commit pulled from a collaborator may
# delete memory-config.yaml (the defaults then hold), never this clone's .autopoiesis/,
# so the checks of every later commit stay.
MEMORY_MARKERS = ("raw", "knowledge")
MEMORY_OWN = ("memory-config.yaml", ".autopoiesis")


def is_memory(root: Path) -> bool:
    """Whether ROOT (where git runs a hook) is a memory repository's work tree."""
    return all((root / f).is_dir() for f in MEMORY_MARKERS) and any(
        os.path.lexists(root / f) for f in MEMORY_OWN
    )


def hooks_dir(root: Path) -> Path:
    """Where git looks for hooks (honours core.hooksPath)."""
    out = git(root, "rev-parse", "--git-path", "hooks").decode().strip()
    path = Path(out)
    return path if path.is_absolute() else (root / path)


def _shared_hooks_path(root: Path) -> str | None:
    """The core.hooksPath that applies to ROOT from a setting for every repository (the
    global or system git config), or None when it is unset or ROOT's own."""
    out = git(root, "config", "--show-scope", "--get", "core.hooksPath", check=False)
    scope, _, value = decode(out).strip().partition("\t")
    return value if value and scope in ("global", "system") else None


def _own_hooks_folder(root: Path) -> Path:
    """ROOT's own hooks folder (in its common git folder, so its linked worktrees share it)."""
    common = decode(git(root, "rev-parse", "--path-format=absolute", "--git-common-dir")).strip()
    return Path(common) / "hooks"


def _claim_hooks_folder(root: Path) -> list[str]:
    """Make ROOT's hooks folder its own. A core.hooksPath in the global or system git
    config names a folder every repository of the user runs its hooks from: the memory's
    hooks there would check and index every repository's commits. ROOT's own
    core.hooksPath (its .git/config, which outranks those) then names its own hooks
    folder; the setting is an absolute path, so a memory moved elsewhere gets it again
    here (`autopoiesis git-hooks install`)."""
    shared = _shared_hooks_path(root)
    own = _own_hooks_folder(root)
    local = decode(git(root, "config", "--local", "--get", "core.hooksPath", check=False)).strip()
    moved = local.endswith("/.git/hooks") and Path(local) != own  # ours, from before a move
    if not (shared and not local) and not moved:
        return []
    git(root, "config", "--local", "core.hooksPath", str(own))
    if moved:
        return [f"core.hooksPath now names this memory's own hooks folder {own} (was {local})"]
    return [
        f"core.hooksPath of your git config ({shared}) is used by every repository; this "
        f"memory's hooks go in its own folder {own} (its .git/config sets core.hooksPath), "
        f"so the hooks in {shared} no longer run in this repository"
    ]


def is_ours(path: Path) -> bool:
    try:
        return SHIM_MARKER in path.read_text(encoding="utf-8", errors="replace").split("\n", 3)[1]
    except (OSError, IndexError):
        return False


def install_hooks(root: Path, *, chain: bool = False) -> list[str]:
    """Put the shims in place, in a hooks folder of ROOT's own (_claim_hooks_folder). A
    foreign hook is never overwritten silently: without CHAIN it is an error; with CHAIN
    it is kept as `<hook>.local` and run first."""
    from autopoiesis.errors import HookInstallError

    messages = _claim_hooks_folder(root)
    target = hooks_dir(root)
    target.mkdir(parents=True, exist_ok=True)
    python = sys.executable
    for name in HOOK_NAMES:
        shim = (
            (template_dir("hooks") / name).read_text(encoding="utf-8").replace("@PYTHON@", python)
        )
        dest = target / name
        if dest.exists() and not is_ours(dest):
            if not chain:
                raise HookInstallError(
                    f"{dest} already exists and is not an autopoiesis hook. Re-run with --chain "
                    "to keep it as "
                    f"{name}.local (run before ours), or remove it."
                )
            local = dest.with_name(name + ".local")
            if local.exists():
                raise HookInstallError(
                    f"{local} exists too; merge the two hooks by hand, then retry."
                )
            os.replace(dest, local)
            messages.append(f"kept the existing {name} hook as {local.name}")
        if dest.exists() and dest.read_text(encoding="utf-8") == shim:
            messages.append(f"{name}: already installed")
            continue
        dest.write_text(shim, encoding="utf-8")
        dest.chmod(0o755)
        messages.append(f"{name}: installed in {dest}")
    return messages


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv:
        print(
            f"usage: python -m autopoiesis.git.hooks {'|'.join(HOOK_NAMES)} [ARGS]", file=sys.stderr
        )
        return 2
    try:
        return run(argv[0], args=argv[1:])
    except (GitCommandError, GitError) as exc:
        print(f"autopoiesis: git failed in the {argv[0]} hook: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
