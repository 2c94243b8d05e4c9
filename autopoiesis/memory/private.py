"""`autopoiesis private`: private knowledge, encrypted in git with git-crypt (core/private.py
says which paths are private, git/crypt.py runs git-crypt).

* `init`: git-crypt's key made (once), `.gitattributes` rules for every private pattern
  (`PATTERN filter=git-crypt diff=git-crypt -text merge=binary`: no end-of-line conversion
  and no line merge of ciphertext), the files already tracked there staged again so their
  next version is encrypted, one `maintenance:` commit.
* `add-key`: the symmetric key written to a file for another clone (`export-key`), or a
  GPG user added (`add-gpg-user`, which commits the key encrypted to them).
* `unlock` / `lock`: git-crypt's, then the index re-reads the private files (git sees no
  change, the files on disk do).
* `status`: is git-crypt there, set up, unlocked; each private file and whether git holds
  it encrypted.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autopoiesis.core.paths import MemoryRepo
from autopoiesis.core.private import (
    ATTRIBUTES,
    CRYPT_ATTRIBUTES,
    attribute_patterns,
    file_is_ciphertext,
    is_ciphertext,
    is_locked,
    is_unlocked,
    matches,
)
from autopoiesis.core.text import counted, noun
from autopoiesis.errors import PrivateKnowledgeError

RULE_SUFFIX = f"{CRYPT_ATTRIBUTES} -text merge=binary"


@dataclass
class PrivateStatus:
    """What `autopoiesis private status` shows."""

    installed: bool
    set_up: bool  # .gitattributes gives some paths git-crypt's filter
    unlocked: bool
    patterns: list[str]
    files: list[tuple[str, bool]] = field(default_factory=list)  # (path, encrypted in git)
    problems: list[str] = field(default_factory=list)

    @property
    def locked(self) -> bool:
        return self.set_up and not self.unlocked

    def to_dict(self) -> dict[str, Any]:
        return {
            "installed": self.installed,
            "set_up": self.set_up,
            "unlocked": self.unlocked,
            "locked": self.locked,
            "patterns": self.patterns,
            "files": [{"path": p, "encrypted": e} for p, e in self.files],
            "problems": self.problems,
        }


class PrivateKnowledge:
    """The private knowledge of one memory repo (`Memory.private`)."""

    def __init__(self, repo: MemoryRepo):
        self.repo = repo

    @property
    def root(self) -> Path:
        return self.repo.root

    # ── setting up ──
    def init(self, patterns: list[str] | None = None) -> tuple[list[str], str | None]:
        """Set git-crypt up for PATTERNS (default: the private paths of the config) and
        commit the rules. Returns (the rules added, the commit)."""
        from autopoiesis.git import crypt
        from autopoiesis.git.repo import MemoryGit

        if crypt.executable() is None:
            raise PrivateKnowledgeError(crypt.INSTALL_HINT + ".")
        if not is_unlocked(self.root):
            if attribute_patterns(self.root):
                raise PrivateKnowledgeError(
                    "this clone is locked: git-crypt was set up where it was cloned from. "
                    "Unlock it with `autopoiesis private unlock KEYFILE` (or, as a GPG user, "
                    "`autopoiesis private unlock`)."
                )
            crypt.run(self.root, "init")
        wanted = patterns or list(self.repo.private_patterns())
        have = set(attribute_patterns(self.root))
        added = [p for p in dict.fromkeys(wanted) if p not in have]
        if added:
            path = self.root / ATTRIBUTES
            text = path.read_text(encoding="utf-8") if path.exists() else ""
            if text and not text.endswith("\n"):
                text += "\n"
            text += "# Private knowledge: encrypted in git by git-crypt (`autopoiesis private`)\n"
            text += "".join(f"{p} {RULE_SUFFIX}\n" for p in added)
            path.write_text(text, encoding="utf-8")
        clear = self._tracked_in_clear()
        git = MemoryGit(self.repo)
        if clear:
            git.run("add", "--renormalize", "--", *clear)
        message = (
            "maintenance: private knowledge encrypted by git-crypt\n\n"
            + "".join(f"- {p}\n" for p in wanted)
            + (
                f"\n{counted(len(clear), 'tracked file')} encrypted from this commit on.\n"
                if clear
                else ""
            )
        )
        done = git.commit_paths([ATTRIBUTES, *clear], message)
        return added, done.sha

    def _tracked_in_clear(self) -> list[str]:
        """Tracked private files whose committed version is not ciphertext."""
        from autopoiesis.git.runner import cat_file_batch, decode
        from autopoiesis.git.runner import run as git

        patterns = self.repo.private_patterns()
        tracked = decode(git(self.root, "ls-files", "-z")).split("\x00")
        mine = [p for p in tracked if p and matches(p, patterns)]
        blobs = cat_file_batch(self.root, [f"HEAD:{p}" for p in mine])
        return [p for p in mine if not is_ciphertext(blobs.get(f"HEAD:{p}") or b"")]

    def add_key(self, *, export_to: str | None = None, gpg_user: str | None = None) -> str:
        """Write the symmetric key to EXPORT_TO (mode 600), or add GPG_USER (git-crypt
        commits the key encrypted to them). Returns what was done."""
        from autopoiesis.git import crypt

        if bool(export_to) == bool(gpg_user):
            raise PrivateKnowledgeError("give either --export FILE or --gpg-user ID.")
        if not is_unlocked(self.root):
            raise PrivateKnowledgeError(
                "this clone holds no key: run `autopoiesis private init` (or unlock it) first."
            )
        if gpg_user:
            crypt.run(self.root, "add-gpg-user", gpg_user)
            return f"added GPG user {gpg_user} (committed under .git-crypt/)"
        target = Path(os.path.expanduser(str(export_to))).resolve()
        if target.exists():
            raise PrivateKnowledgeError(f"{target} exists already; name a new file.")
        crypt.run(self.root, "export-key", str(target))
        target.chmod(0o600)
        return f"wrote the key to {target}: hand it over out of band, never commit it"

    # ── locking ──
    def unlock(self, key_file: str | None = None) -> list[str]:
        """Decrypt the private files here (a key file, else this user's GPG key); the
        index then holds them. Returns the private files now readable."""
        from autopoiesis.git import crypt

        args: list[str] = []
        if key_file:
            key = Path(os.path.expanduser(key_file)).resolve()
            self._check_key(key)
            args = [str(key)]
        crypt.run(self.root, "unlock", *args)
        return self._reindex()

    def _check_key(self, key: Path) -> None:
        """Refuse KEY unless it is a file that decrypts a private file this memory
        committed encrypted: git-crypt installs any key it is given before it decrypts,
        so a wrong one left the clone counted unlocked, its private files deleted from
        the work tree, and a second unlock refused as the work tree was not clean."""
        from autopoiesis.git import crypt

        if not key.is_file():
            raise PrivateKnowledgeError(
                f"{key} is no key file; give the file `autopoiesis private add-key --export` "
                "wrote in an unlocked clone."
            )
        sample = self._encrypted_sample()
        if sample is not None and not crypt.key_opens(self.root, key, sample[1]):
            raise PrivateKnowledgeError(
                f"{key} is not this memory's key: it does not decrypt {sample[0]}. Nothing "
                "was changed; give the key exported from an unlocked clone of this memory."
            )

    def _encrypted_sample(self) -> tuple[str, bytes] | None:
        """(path, ciphertext) of one private file HEAD holds encrypted, or None."""
        from autopoiesis.git.runner import call, cat_file_batch, decode

        listed = call(self.root, "ls-tree", "-r", "-z", "--name-only", "HEAD")
        patterns = self.repo.private_patterns()
        names = decode(listed.stdout).split("\x00") if listed.returncode == 0 else []
        mine = [p for p in names if p and matches(p, patterns)]
        blobs = cat_file_batch(self.root, [f"HEAD:{p}" for p in mine])
        for path in mine:
            blob = blobs.get(f"HEAD:{path}") or b""
            if is_ciphertext(blob):
                return path, blob
        return None

    def lock(self) -> list[str]:
        """Encrypt the private files in this clone again (`git-crypt lock`: the work tree
        must be clean) and take them out of the index. Returns the files locked."""
        from autopoiesis.git import crypt

        crypt.run(self.root, "lock")
        return self._reindex()

    def _reindex(self) -> list[str]:
        """Re-read the private files in the index: git sees no change when git-crypt
        decrypts or encrypts them, the files on disk did change."""
        files = self.private_files()
        if self.repo.index_path.exists():
            from autopoiesis.index import SearchIndex

            with SearchIndex(self.repo) as index:
                for path in files:
                    index.index_file(path)  # a ciphertext file is removed (not memory text)
        return files

    # ── looking ──
    def private_files(self) -> list[str]:
        """The Markdown files of the work tree under the private patterns."""
        patterns = self.repo.private_patterns()
        return [
            rel
            for rel in (self.repo.rel(p) for p in self.repo.iter_markdown())
            if matches(rel, patterns)
        ]

    def locked_files(self) -> list[str]:
        """The private files this clone cannot read (ciphertext on disk)."""
        return [p for p in self.private_files() if file_is_ciphertext(self.root / p)]

    def status(self) -> PrivateStatus:
        from autopoiesis.git import crypt

        patterns = self.repo.private_patterns()
        st = PrivateStatus(
            installed=crypt.executable() is not None,
            set_up=bool(attribute_patterns(self.root)),
            unlocked=is_unlocked(self.root),
            patterns=patterns,
        )
        files = self.private_files()
        in_clear = set(self._tracked_in_clear()) if st.set_up else set(files)
        st.files = [(p, p not in in_clear) for p in files]
        uncovered = [p for p in patterns if p not in attribute_patterns(self.root)]
        if uncovered and files:
            st.problems.append(
                f"private paths without a git-crypt rule in .gitattributes: "
                f"{', '.join(uncovered)}; run `autopoiesis private init`"
            )
        if not st.installed and st.set_up:
            st.problems.append(crypt.INSTALL_HINT)
        if is_locked(self.root) and files:
            st.problems.append(
                f"{counted(len(files), 'private file')} locked: not searched; "
                f"`autopoiesis private unlock KEYFILE` decrypts {noun(len(files), 'it', 'them')}"
            )
        return st


__all__ = ["PrivateKnowledge", "PrivateStatus", "RULE_SUFFIX"]
