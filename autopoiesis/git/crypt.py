"""git-crypt, run as a subprocess (the Debian/Homebrew package `git-crypt`), and the check
that no private file leaves in clear.

git-crypt encrypts the files `.gitattributes` gives its filter when they are staged, and
decrypts them on checkout in a clone that holds the key: a symmetric key (`git-crypt
export-key FILE`, handed over out of band) or a GPG user's (`git-crypt add-gpg-user ID`,
which commits the key encrypted to that user under `.git-crypt/`).

`plaintext_private` is the pre-push hook's (and sync's) check: every version of a private
path in the commits about to leave must be ciphertext. A private file committed in clear
(its `.gitattributes` rule missing when it was added, or added by a tool without filters)
is named with its commit, and nothing is pushed.

Light path (stdlib only): the pre-push hook imports it.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from autopoiesis.core.private import MAGIC, is_ciphertext
from autopoiesis.errors import PrivateKnowledgeError
from autopoiesis.git.runner import call, cat_file_batch, decode, repository_env, split_z

INSTALL_HINT = (
    "git-crypt is not installed: install it with `apt-get install git-crypt` (Debian, "
    "Ubuntu), `brew install git-crypt` (macOS) or `dnf install git-crypt` (Fedora), then "
    "run the command again"
)


def executable() -> str | None:
    """The git-crypt program on PATH, or None."""
    return shutil.which("git-crypt")


def run(root: Path, *args: str, input: bytes | None = None) -> str:
    """Run `git-crypt ARGS` in ROOT; its output, or PrivateKnowledgeError with its message."""
    program = executable()
    if program is None:
        raise PrivateKnowledgeError(INSTALL_HINT + ".")
    done = subprocess.run(
        [program, *args],
        cwd=root,
        capture_output=True,
        input=input,
        check=False,
        env=repository_env(root),  # git-crypt runs git on ROOT
    )
    if done.returncode != 0:
        why = (done.stderr or done.stdout).decode("utf-8", "replace").strip()
        raise PrivateKnowledgeError(f"git-crypt {args[0]} failed: {why}")
    return decode(done.stdout)


def status(root: Path) -> list[tuple[str, bool]]:
    """(path, encrypted) of every tracked file git-crypt's attributes name (`git-crypt
    status -e`), and the files it warns about (not encrypted though they should be)."""
    out = run(root, "status", "-e")
    found = []
    for line in out.splitlines():
        text = line.strip()
        if text.startswith("encrypted:"):
            found.append((text.split(":", 1)[1].strip().split(" ***")[0], True))
    return found


def _private_pathspecs(patterns: Sequence[str]) -> list[str]:
    """PATTERNS (.gitattributes') as git pathspecs: one without `/` is a name at any depth."""
    return [
        f":(glob){p.lstrip('/')}" if "/" in p.strip("/") else f":(glob)**/{p}" for p in patterns
    ]


def plaintext_private(
    root: Path, tip: str, patterns: Sequence[str], exclude: Sequence[str] = ("--remotes",)
) -> list[tuple[str, str]]:
    """(commit, path) of each version of a private path that TIP's history holds in clear
    and EXCLUDE does not reach (default: what no remote-tracking branch holds yet, the
    commits a push sends)."""
    if not patterns:
        return []
    revs = call(root, "rev-list", "--reverse", tip, "--not", *exclude)
    if revs.returncode != 0:
        revs = call(root, "rev-list", "--reverse", tip)
    commits = decode(revs.stdout).split()
    if not commits:
        return []
    diff = call(
        root,
        "diff-tree",
        "--stdin",
        "-r",
        "--root",
        "--no-renames",
        "-z",
        "--diff-filter=AMT",
        "--",
        *_private_pathspecs(patterns),
        input=("\n".join(commits) + "\n").encode(),
    )
    # `--stdin` output: for each commit, its id line, then ":old new oldsha newsha S\0path\0"
    blobs: list[tuple[str, str, str]] = []
    commit = ""
    tokens = split_z(diff.stdout)
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok.startswith(":"):
            meta = tok[1:].split()
            if len(meta) >= 4 and meta[1] != "160000" and i + 1 < len(tokens):
                blobs.append((commit, tokens[i + 1], meta[3]))
            i += 2
            continue
        commit = tok.strip()
        i += 1
    if not blobs:
        return []
    heads = cat_file_batch(root, sorted({b for _, _, b in blobs}))
    return [
        (c, path) for c, path, blob in blobs if not is_ciphertext((heads.get(blob) or b"")[:16])
    ]


def push_refusal(root: Path, patterns: Sequence[str], tip: str, remote_tip: str = "") -> str | None:
    """Why pushing TIP must not happen (private files in clear in what it sends), or None.
    REMOTE_TIP: what the remote holds now, when known."""
    from autopoiesis.core.private import is_locked

    exclude = ["--remotes", *([remote_tip] if remote_tip.strip("0") else [])]
    found = plaintext_private(root, tip, patterns, exclude)
    return refuse_plaintext_message(found, locked=is_locked(root)) if found else None


def key_opens(root: Path, key_file: Path, ciphertext: bytes) -> bool:
    """Whether KEY_FILE decrypts CIPHERTEXT (a blob git-crypt encrypted in ROOT's memory),
    asked before `git-crypt unlock` installs it: unlocking with another memory's key
    installs that key, then fails half-way, with the private files deleted from the work
    tree and every later commit encrypting with the wrong key."""
    program = executable()
    if program is None:
        raise PrivateKnowledgeError(INSTALL_HINT + ".")
    done = subprocess.run(
        [program, "smudge", f"--key-file={key_file}"],
        cwd=root,
        input=ciphertext,
        capture_output=True,
        env=repository_env(root),
    )
    return done.returncode == 0 and not is_ciphertext(done.stdout)


# ── forget, through the encryption ──
def decrypt(root: Path, data: bytes) -> bytes | None:
    """The plain text of git-crypt's ciphertext DATA (None when this clone has no key)."""
    program = executable()
    if program is None:
        return None
    done = subprocess.run(
        [program, "smudge"], cwd=root, input=data, capture_output=True, env=repository_env(root)
    )
    out = done.stdout
    return out if done.returncode == 0 and not is_ciphertext(out) else None


def forget_callback(pattern: bytes, flags: int, replacement: bytes) -> str:
    """A git-filter-repo `--blob-callback` body: a ciphertext blob is decrypted, PATTERN
    (a regex, FLAGS) replaced, and encrypted again (git-crypt's encryption is deterministic:
    an untouched file keeps its blob)."""
    return (
        "import re, subprocess\n"
        f"if blob.data.startswith({MAGIC!r}):\n"
        "    plain = subprocess.run(['git-crypt', 'smudge'], input=blob.data, "
        "capture_output=True, check=True).stdout\n"
        f"    new = re.compile({pattern!r}, {flags}).sub({replacement!r}, plain)\n"
        "    if new != plain:\n"
        "        blob.data = subprocess.run(['git-crypt', 'clean'], input=new, "
        "capture_output=True, check=True).stdout\n"
    )


def refuse_plaintext_message(found: Sequence[tuple[str, str]], *, locked: bool = False) -> str:
    """Why FOUND ((commit, path) of private files in clear) is not pushed, and what to do:
    in a LOCKED clone (git-crypt set up, no key here) its filter could not encrypt them,
    and `private init` would make a second key; the key is what is missing."""
    shown = "\n".join(f"  {path} (commit {commit[:12]})" for commit, path in found[:10])
    more = f"\n  … and {len(found) - 10} more" if len(found) > 10 else ""
    head = (
        "private files would leave this clone in clear (not encrypted by git-crypt):\n"
        f"{shown}{more}\n"
    )
    if locked:
        return head + (
            "Nothing was pushed. This clone is locked (git-crypt holds no key here), so "
            "they were committed without being encrypted. Unlock it with the memory's key "
            "(`autopoiesis private unlock KEYFILE`), then take the clear copies out of the "
            "history: reset the commits (`git reset --soft <the commit before>`) and commit "
            "again, which encrypts them, or `autopoiesis forget --reason private '<a line "
            "of the file>'`."
        )
    return head + (
        "Nothing was pushed. Run `autopoiesis private init` (it adds the .gitattributes rules "
        "that encrypt them), then take the clear copies out of the history with "
        "`autopoiesis forget --reason private '<a line of the file>'`, or reset the commits "
        "(`git reset --soft <the commit before>`) and commit again."
    )


__all__ = [
    "INSTALL_HINT",
    "decrypt",
    "forget_callback",
    "MAGIC",
    "executable",
    "key_opens",
    "plaintext_private",
    "push_refusal",
    "refuse_plaintext_message",
    "run",
    "status",
]
