"""`autopoiesis init`: lay out a memory repository (docs/design.md#repo-layout,
docs/design.md#knowledge-files) and commit it.

Idempotent: a second run writes nothing and says so. Inside an existing git repository
it adds the layout and never touches a file it did not create (.gitignore and
.gitattributes only gain the lines they lack).
"""

from __future__ import annotations

import fnmatch
import os
import shlex
import shutil
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from autopoiesis.core.config import CONFIG_FILENAME, template_text
from autopoiesis.core.paths import (
    KNOWLEDGE_DIRS,
    PACKAGE_DIR,
    STATE_DIR,
    MemoryRepo,
    in_git_folder,
    links_on_the_way,
)
from autopoiesis.errors import AutopoiesisError, HookInstallError
from autopoiesis.git.runner import toplevel as git_toplevel

if TYPE_CHECKING:
    from autopoiesis.git.repo import MemoryGit

FILES_DIR = PACKAGE_DIR / "_files"
FIRST_BUILD_SECONDS = 5.0  # how long init indexes before it leaves the rest to the background
KEEP_DIRS = ("raw/conversations", "attachments", "archive") + tuple(
    f"knowledge/{d}" for d in KNOWLEDGE_DIRS
)


@dataclass
class InitReport:
    root: Path
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    hooks: list[str] = field(default_factory=list)
    merge_driver: list[str] = field(
        default_factory=list
    )  # what registering the merge driver changed
    warnings: list[str] = field(default_factory=list)
    commit: str | None = None
    new_git_repo: bool = False
    checked_out: str | None = None  # the remote's memory branch an empty clone was given
    git_settings: list[str] = field(default_factory=list)  # git.scale.tune's changes
    index: str | None = None  # what building the search index said

    @property
    def changed(self) -> bool:
        return bool(self.created or self.updated)


def _refuse_links(root: Path, rels: Iterable[str]) -> None:
    """Refuse, before a file is written, to write RELS through a symbolic link (see
    links_on_the_way), naming each link and how to be rid of it."""
    links = links_on_the_way(root, rels)
    if not links:
        return
    names = " ".join(shlex.quote(link.split(" -> ", 1)[0]) for link in links)
    raise AutopoiesisError(
        f"{root} holds symbolic links where autopoiesis writes its own files: "
        + "; ".join(links)
        + ". A memory holds no links (one pulled from a collaborator may name any file of "
        "this machine), so none of them was followed and no file was written. Remove them "
        f"(`git -C {shlex.quote(str(root))} rm -q -- {names}`) and run "
        f"`autopoiesis init {shlex.quote(str(root))}` again: it puts its own files in their place."
    )


def _merge_lines(root: Path, rel: str, template: str, report: InitReport) -> None:
    """Give ROOT's REL the TEMPLATE's lines it lacks (or the template whole, if it is not
    there); never through a link."""
    _refuse_links(root, [rel])
    path = root / rel
    wanted = [l for l in template.splitlines() if l.strip() and not l.startswith("#")]
    if not path.exists():
        path.write_text(template, encoding="utf-8")
        report.created.append(rel)
        return
    text = path.read_text(encoding="utf-8")
    have = set(text.splitlines())
    missing = [l for l in wanted if l not in have]
    if missing:
        with path.open("a", encoding="utf-8") as fh:
            fh.write(
                ("" if text.endswith("\n") or not text else "\n")
                + "\n# added by autopoiesis\n"
                + "\n".join(missing)
                + "\n"
            )
        report.updated.append(rel)


def merge_gitattributes(root: Path, report: InitReport) -> None:
    """Give ROOT's .gitattributes the template's lines it lacks (the merge driver's among
    them): `init` does it, and `sync` does it for a repo made before the driver existed."""
    _merge_lines(
        root, ".gitattributes", (FILES_DIR / "gitattributes").read_text(encoding="utf-8"), report
    )


def _attribute_lines(text: str) -> list[str]:
    """TEXT's rules (.gitattributes), each with its spaces collapsed; comments and blank
    lines left out."""
    return [
        " ".join(line.split())
        for line in text.splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]


def foreign_attribute_changes(git: MemoryGit, ours: str, theirs: str) -> list[str]:
    """What merging THEIRS would change of how git treats this clone's files through a
    `.gitattributes` (at the top or in any folder), as "FILE: +RULE" and "FILE: -RULE": a
    rule THEIRS added that autopoiesis never writes (its template's, and the git-crypt
    rules of `autopoiesis private init` at the top), or one of OURS that THEIRS took away
    since the two parted. Such a rule can switch the knowledge merge driver off, merge
    transcripts line by line, rewrite line endings, or stop encrypting private files; it
    comes from whoever can push, so `sync` leaves it to a person (memory/sync.py)."""
    from autopoiesis.core.private import DEFAULT_PRIVATE
    from autopoiesis.memory.private import RULE_SUFFIX

    private = {DEFAULT_PRIVATE, *git.repo.config.private.paths}
    base = git.run("merge-base", ours, theirs, check=False).stdout.strip() or ours
    changed = git.run(
        "diff",
        "--name-only",
        "-z",
        base,
        theirs,
        "--",
        ".gitattributes",
        ":(glob)**/.gitattributes",
    ).stdout.split("\0")
    template = set(_attribute_lines((FILES_DIR / "gitattributes").read_text(encoding="utf-8")))

    def rules(commit: str, path: str) -> list[str]:
        proc = git.run("show", f"{commit}:{path}", check=False)
        return _attribute_lines(proc.stdout) if proc.returncode == 0 else []

    out: list[str] = []
    for path in filter(None, changed):
        before, here, theirs_rules = rules(base, path), rules(ours, path), rules(theirs, path)
        there = set(theirs_rules)
        for rule in dict.fromkeys(theirs_rules):
            # git-crypt's rule for a private folder `private init` writes: its pattern one of
            # this clone's private paths (a rule of the same attributes over knowledge/**
            # would turn the merge driver off and every note private)
            pattern, _, attributes = rule.partition(" ")
            known = path == ".gitattributes" and (
                rule in template or (attributes == RULE_SUFFIX and pattern in private)
            )
            if rule not in here and not known:
                out.append(f"{path}: +{rule}")
        out += [f"{path}: -{rule}" for rule in here if rule in before and rule not in there]
    return out


def _ignored_by_template(path: str, patterns: list[str]) -> bool:
    """Whether one of PATTERNS (the lines of the .gitignore template: names, `*`
    wildcards, folders with a trailing `/`; none negated) ignores PATH, as git reads them:
    a pattern without a slash matches a name at any depth, a folder pattern any folder on
    the way, and one with a slash is anchored at the top. A folder pattern also matches an
    entry of its name itself, which git would not ignore: a link or a file committed as
    `.autopoiesis` takes the place of the state folder (a pulled `.autopoiesis -> DIR`
    made a merge delete this clone's state and every later command write it into DIR)."""
    parts = path.split("/")
    for pattern in patterns:
        name = pattern.strip("/")
        if "/" in pattern.rstrip("/"):  # anchored: the first parts of the path
            depth = name.count("/") + 1
            if len(parts) >= depth and fnmatch.fnmatchcase("/".join(parts[:depth]), name):
                return True
        elif any(fnmatch.fnmatchcase(n, name) for n in parts):
            return True
    return False


def ignored_arrivals(git: MemoryGit, ours: str, theirs: str) -> list[str]:
    """The paths THEIRS adds or changes since it and OURS parted that the memory's
    .gitignore template ignores (memory.db, the state folder .autopoiesis/, secrets):
    files a memory never tracks, which a merge would write over this clone's own untracked
    ones (a collaborator's force-added memory.db replaced the search index and, tracked
    from then on, blocked every later sync). The template, not the clone's .gitignore:
    that one travels with the repository too."""
    base = git.run("merge-base", ours, theirs, check=False).stdout.strip() or ours
    changed = git.run(
        "diff", "--name-only", "-z", "--no-renames", "--diff-filter=d", base, theirs
    ).stdout.split("\0")
    patterns = [
        line.strip()
        for line in (FILES_DIR / "gitignore").read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.lstrip().startswith(("#", "!"))
    ]
    return [p for p in changed if p and _ignored_by_template(p, patterns)]


def _check_out_a_cloned_memory(git: MemoryGit, report: InitReport) -> None:
    """A repository with no commit yet whose remote holds a memory: check that memory out
    rather than start a second one beside it. A clone of a remote whose HEAD names a branch
    it lacks (a plain `git init --bare` says master) has no commit; started afresh, it would
    sync forever without exchanging anything with the remote's memory."""
    from autopoiesis.memory.sync_push import remote_memory_branches

    if git.head() is not None:
        return
    found = [(r, b) for r in git.remote_names() for b in remote_memory_branches(git, r)]
    if not found:
        return
    if len(found) > 1:
        listed = ", ".join(f"{r}/{b}" for r, b in found)
        raise AutopoiesisError(
            f"{git.root} has no commit yet, and its remotes hold memories on {listed}. Nothing "
            "was changed: check out the one to use (`git switch BRANCH`), then run "
            "`autopoiesis init` again."
        )
    remote, branch = found[0]
    git.run("checkout", "-q", "-b", branch, "--track", f"{remote}/{branch}")
    report.checked_out = branch
    report.warnings.append(
        f"{git.root} had no branch checked out ({remote}'s HEAD names a branch it lacks); "
        f"checked out the memory on {remote}/{branch} instead of starting another one"
    )


def _refuse_a_home_or_root(root: Path) -> None:
    """Refuse the user's home folder and the file system's root, unless either is a git
    repository already: made one, every unversioned folder under it would lie in the
    memory's repository (a project in `~/code/app` would report the home folder as its
    git top level, and be taken for part of the memory)."""
    resolved = root.resolve()
    home = Path.home().resolve() if os.environ.get("HOME") else None
    if resolved not in {Path(resolved.anchor), home} or (resolved / ".git").exists():
        return
    what = "your home folder" if resolved == home else "the file system's root"
    raise AutopoiesisError(
        f"{resolved} is {what}: a memory repository there would take in every folder under "
        "it. Nothing was changed. Give the memory a folder of its own, e.g. "
        "`autopoiesis init ~/memory`."
    )


def init_memory_repo(
    root: Path, *, install_hooks: bool = True, commit: bool = True, build_index: bool = True
) -> InitReport:
    from autopoiesis.core.paths import template_dir
    from autopoiesis.git.hooks import install_hooks as _install
    from autopoiesis.git.repo import MemoryGit

    root = Path(root).expanduser()
    if root.is_symlink() and not root.exists():  # a loop, or a folder that is gone
        raise AutopoiesisError(
            f"{root} is a symbolic link that leads to no folder (a loop, or one that is "
            "gone); nothing was changed. Name the memory's folder itself."
        )
    if root.exists() and not root.is_dir():
        raise AutopoiesisError(
            f"{root} exists and is not a folder; pick another path for the memory repo."
        )
    # before anything is made: a memory inside a git folder (a bare repository, a `.git`)
    # would nest a repository there that hides the one git keeps (its refs, its remote)
    git_folder = in_git_folder(root)
    if git_folder is not None:
        raise AutopoiesisError(f"Nothing was changed: {git_folder}")
    _refuse_a_home_or_root(root)
    try:
        root.mkdir(parents=True, exist_ok=True)
        # a new file of a name no one chose: one named in advance may be a link in a clone
        probe, probe_path = tempfile.mkstemp(prefix=".autopoiesis-write-test-", dir=root)
        os.close(probe)
        os.unlink(probe_path)
    except OSError as exc:
        raise AutopoiesisError(
            f"cannot create a memory repository at {root}: {exc.strerror or exc}. "
            "Pick a writable folder, e.g. `autopoiesis init ~/memory`."
        ) from None
    root = root.resolve()
    top = git_toplevel(root)
    if top is not None and top.resolve() != root:
        raise AutopoiesisError(
            f"{root} is inside the git repository at {top}. Run `autopoiesis init {top}` to add "
            "the layout "
            "there, or pick a folder outside it."
        )
    repo = MemoryRepo(root)
    git = MemoryGit(repo)
    report = InitReport(root=root)
    if top is None:
        git.init()
        report.new_git_repo = True
    else:
        _check_out_a_cloned_memory(git, report)

    templates = {
        f"{name}/{src.relative_to(template_dir(name)).as_posix()}": src
        for name in ("raw", "knowledge", "topics")
        for src in sorted(template_dir(name).rglob("*"))
        if src.is_file()
    }
    # every path init writes, checked before the first is: a clone holds what a collaborator
    # pushed, and a link there would have init write wherever it points
    _refuse_links(
        root,
        [
            *templates,
            *(f"{d}/.gitkeep" for d in KEEP_DIRS),
            "scratch",
            STATE_DIR,
            CONFIG_FILENAME,
            ".gitignore",
            ".gitattributes",
        ],
    )
    for rel, src in templates.items():
        dest = root / rel
        if dest.exists():
            continue
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dest)
        report.created.append(rel)
    for d in KEEP_DIRS:
        folder = root / d
        folder.mkdir(parents=True, exist_ok=True)
        if not any(folder.iterdir()):
            (folder / ".gitkeep").write_text("", encoding="utf-8")
            report.created.append(f"{d}/.gitkeep")
    (root / "scratch").mkdir(exist_ok=True)
    config = root / CONFIG_FILENAME
    if not config.exists():
        config.write_text(template_text(), encoding="utf-8")
        report.created.append(CONFIG_FILENAME)
    _merge_lines(root, ".gitignore", (FILES_DIR / "gitignore").read_text(encoding="utf-8"), report)
    merge_gitattributes(root, report)

    links = repo.links()
    if links:  # never followed (capture, import and the writers refuse them); said here first
        shown = ", ".join(links[:5]) + (" ..." if len(links) > 5 else "")
        report.warnings.append(
            f"{len(links)} symbolic link{'s' if len(links) != 1 else ''} in the memory "
            f"folders: {shown}. A memory holds none (one pulled from a collaborator may "
            "name any file of this machine): nothing is read or written through them, and "
            "a session whose folder is one is refused. Remove them with `git rm` "
            "(`autopoiesis verify` lists them)."
        )
    if install_hooks:
        try:
            report.hooks = [m for m in _install(root) if not m.endswith("already installed")]
        except HookInstallError as exc:
            report.warnings.append(f"hooks not installed: {exc}")
    # knowledge files merge entry by entry when two clones sync (app/merge_driver.py)
    from autopoiesis.git.merge_driver import install as install_merge_driver

    report.merge_driver = install_merge_driver(root)
    from autopoiesis.git.scale import tune

    report.git_settings = tune(root)
    if commit and report.changed:
        paths = sorted(set(report.created + report.updated))
        message = (
            "maintenance: initialize memory repository\n\nLayout, identity templates, "
            "example topics and configuration.\n"
        )
        report.commit = git.commit_paths(paths, message).sha
    if build_index and not repo.index_path.exists():
        report.index = _build_index(repo, report)
    return report


def _build_index(repo: MemoryRepo, report: InitReport) -> str | None:
    """Build memory.db: with it in place the post-commit hook keeps it fresh from the first
    capture on, and search is hybrid from the start (not the git grep fallback). A clone of
    a large memory gets its first files here (the knowledge, the newest transcripts) and
    the rest in the background (index/build.py), so its first search need not wait."""
    try:
        from autopoiesis.index.background import spawn_background
        from autopoiesis.index.searchindex import SearchIndex

        with SearchIndex(repo) as index:
            built = index.rebuild_full(seconds=FIRST_BUILD_SECONDS)
            under_way = index.building()
        if under_way is None:
            return f"search index built ({built.indexed} files)"
        spawn_background(repo, build=True)
        return (
            f"search index: {under_way['done']:,} of {under_way['total']:,} files indexed, "
            "the rest in the background (`autopoiesis index status`); searches answer from "
            "what is indexed meanwhile"
        )
    except Exception as exc:  # init must not fail for the cache; search falls back to git grep
        report.warnings.append(
            f"search index not built ({exc}); run `autopoiesis index rebuild` later"
        )
        return None
