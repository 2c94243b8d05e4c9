"""The project a folder belongs to: the git repository it is in, named by its `origin`
remote's repository name (else by its top-level folder's name), as a slug.

A subfolder, a linked worktree (`git worktree add`) and a submodule's checkout each say
where their repository is; a linked worktree belongs to its main repository's project, so
every checkout of one codebase files its sessions and knowledge under one name, unless
the worktree declares its own (a sub-agent's checkout of a memory: `CHECKOUT_PROJECT` in
its git folder, memory/subagents.py). A folder in no git repository belongs to no project
(None: global), whatever its name.

A log may name a folder that is not on this machine: it was recorded on another one (a
laptop's sessions imported on a server, a public log, a capture stream converted from an
export) or the checkout is gone. Its path is the only evidence left, and people keep
their checkouts in a few well-worn places, so the project is the first folder under the
home folder and the folders that hold checkouts (`~/code/NAME/src` -> NAME,
`~/go/src/github.com/OWNER/NAME`, `C:\\Users\\me\\source\\repos\\NAME`, `/workspaces/NAME`);
a home folder, a folder of checkouts and a temporary folder are none (foreign_project).

Read from the files under `.git` without spawning git: the prompt hook asks on every
prompt, and a `git rev-parse` costs milliseconds where reading two small files costs
microseconds.
"""

from __future__ import annotations

import os
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from autopoiesis.core.gitdirs import common_git_dir, git_entry, gitdir_of, read_git_file
from autopoiesis.core.text import slugify

PROJECT_SLUG_LEN = 40  # a folder name under knowledge/projects/, not a title
_SECTION = re.compile(r"^\s*\[([^\]]+)\]")
_ENTRY = re.compile(r"^\s*([A-Za-z][\w-]*)\s*=\s*(.*?)\s*$")
# The project a linked worktree declares, in its own git folder (.git/worktrees/NAME/).
CHECKOUT_PROJECT = "autopoiesis-project"


@dataclass(frozen=True)
class Project:
    name: str  # the slug: knowledge/projects/<name>/, a transcript's `project:`
    root: str  # the main repository's top-level folder (absolute)
    remote: str | None  # the `origin` remote's URL, when there is one
    # the repository's common git folder (which checkouts are of one repository), and
    # whether the worktree itself named the project (CHECKOUT_PROJECT); where a project
    # was found, not what it is: left out of comparisons
    git_dir: str = field(default="", compare=False)
    declared: bool = field(default=False, compare=False)


def project_slug(text: str) -> str:
    """TEXT as a project name: lower-case ASCII words joined by '-' ('' when nothing is
    left), e.g. 'My_Repo' -> 'my-repo'. A name in another script is transliterated
    first (anyascii: 'проект' -> 'proekt', '项目' -> 'xiangmu'), where dropping what is
    not ASCII would leave nothing, or a stray digit, to name the project by."""
    if not text.isascii():
        from anyascii import anyascii

        text = anyascii(unicodedata.normalize("NFC", text))
    return slugify(text, PROJECT_SLUG_LEN)


def current_folder() -> str | None:
    """The current folder, or None when it is gone (deleted under the shell that runs the
    command): a folder that no longer exists is in no project."""
    try:
        return os.getcwd()
    except OSError:
        return None


def project_of(path: str | os.PathLike[str]) -> Project | None:
    """The project of PATH (a folder or a file in one), or None when PATH is in no git
    repository or its repository's name slugs to nothing. Symbolic links are followed: a
    repository reached through a link is the same one. A path no folder can have (a hook's
    `cwd` a broken harness sent: a NUL byte, a lone surrogate of a JSON `\\ud800` that no
    file name can be written with, past the system's length for a path) is in no
    repository: a prompt's context is compiled without a project, not lost."""
    try:
        if "\x00" in os.fsdecode(path):
            return None
        found = git_entry(Path(os.path.realpath(path)))
    except (OSError, ValueError):  # ENAMETOOLONG, ELOOP; UnicodeEncodeError is a ValueError
        return None
    if found is None:
        return None
    top, dot_git = found
    common = common_git_dir(dot_git)
    if common is None:
        return None
    if dot_git.is_file():
        declared = _declared(dot_git)
        if declared:
            return Project(declared, str(top), None, str(common), declared=True)
        # A linked worktree's or a submodule's checkout: the main repository's top level
        # is the folder holding its common git folder (when that is a `.git` folder; a
        # submodule's lives under the superproject's .git/modules/ and keeps its own top).
        if common.name == ".git":
            top = common.parent
        elif _is_bare(common / "config"):
            top = common  # a worktree of a bare repository (`tool.git`): named after it
    remote = _origin_url(common / "config")
    name = remote_project_name(remote) if remote else ""
    name = name or project_slug(top.name.removesuffix(".git") if top == common else top.name)
    if not name:
        return None
    return Project(name=name, root=str(top), remote=remote, git_dir=str(common))


def _declared(dot_git: Path) -> str | None:
    """The project a linked worktree's own git folder declares (CHECKOUT_PROJECT), if any."""
    gitdir = gitdir_of(dot_git)
    if gitdir is None:
        return None
    text = read_git_file(gitdir / CHECKOUT_PROJECT)
    if text is None:
        return None
    return project_slug(text.strip()) or None


def in_memory(found: Project, memory_root: Path | None) -> str | None:
    """The name FOUND goes by in the memory at MEMORY_ROOT: None (global) when it is that
    memory repository itself or a worktree of it (a session run there is about the memory,
    not about a codebase), unless the worktree declares its project (a sub-agent's
    checkout, CHECKOUT_PROJECT); else the name the memory has filed that checkout under
    since it first met it (core/project_names: two codebases of one name are two
    projects, and a remote added later renames none)."""
    if memory_root is None:
        return found.name
    mine = common_git_dir(memory_root / ".git")
    same = mine is not None and Path(found.git_dir or "/").resolve() == mine.resolve()
    if same or Path(found.root).resolve() == memory_root.resolve():
        return found.name if found.declared else None
    if found.declared:
        return found.name
    from autopoiesis.core.project_names import name_in_memory  # a prompt's path: on demand

    return name_in_memory(found, memory_root)


def project_name(folder: str | None, memory_root: Path | None = None) -> str | None:
    """The name of the project of FOLDER, a working folder as a log or a hook reports it;
    None for none, for a relative path (relative to what?), for a folder of this machine
    in no git repository and for the memory at MEMORY_ROOT itself (in_memory). A folder
    this machine does not have is named by its path (foreign_project)."""
    if not folder:
        return None
    if _WINDOWS_PATH.match(folder):  # recorded on Windows: no folder of this machine
        return foreign_project(folder)
    if not os.path.isabs(folder):
        return None
    try:
        here = os.path.exists(folder)
        if not here:
            named = foreign_project(folder)
            if named is not None and not _exists_up_to(folder, named):
                # a checkout this machine does not have (a log of another one, a deleted
                # clone): its path names it, not a repository that holds the place it
                # would be (a home folder kept in git), while a gone subfolder of a
                # checkout that is here still belongs to it
                return named
        project = project_of(folder)
        if project is not None:
            return in_memory(project, memory_root)
    except (OSError, ValueError):  # a name too long, a NUL: a folder no machine has
        return None
    return None if here else foreign_project(folder)


def _exists_up_to(folder: str, name: str) -> bool:
    """Whether FOLDER's first component that slugs to NAME is a folder of this machine."""
    parts = folder.split(os.sep)
    for i, part in enumerate(parts):
        if part and project_slug(part) == name:
            return os.path.isdir(os.sep.join(parts[: i + 1]) or os.sep)
    return False


def session_project(
    named: str | None,
    cwd: str | None,
    redact: Callable[[str], str],
    memory_root: Path | None = None,
    repository: str | None = None,
) -> str | None:
    """The project of a session whose log NAMES one, else of its working folder CWD (none
    for the memory at MEMORY_ROOT itself: project_name), else of the REPOSITORY the log
    records (Codex's remote, Copilot's `repository`: remote_repository_name). A folder of
    this machine in a repository is asked before the repository a log names: it goes by
    the name the memory filed its checkout under (core/project_names), which the
    repository's name is not when two codebases share it; the repository names the
    project of a folder this machine does not have, before its path does.

    Each is read through REDACT like every field of a transcript (core/redact.py): a
    name that holds a secret (or slugs to nothing) names none, and a folder with a secret
    in its path is named from the path with the secret cut out (foreign_project), so no
    folder under knowledge/projects/ and no `project:` is ever named after a secret. (A
    project's name is a slug, lower case: a secret in it would no longer be found by its
    pattern, so the check comes first.)"""

    def clean_slug(name: str | None) -> str:
        return project_slug(name) if name and redact(name) == name else ""

    slug = clean_slug(named)
    if slug:
        return slug
    if cwd and redact(cwd) == cwd and _of_this_machine(cwd) and project_of(cwd) is not None:
        return project_name(cwd, memory_root)  # a checkout here: None for the memory's own
    slug = clean_slug(repository)
    if slug:
        return slug
    if not cwd:
        return None
    clean = redact(cwd)
    if clean == cwd:
        return project_name(cwd, memory_root)
    return foreign_project(clean) if os.path.isabs(clean) or _WINDOWS_PATH.match(clean) else None


def _of_this_machine(folder: str) -> bool:
    """Whether FOLDER, a session's working folder, is a folder of this machine."""
    try:
        return os.path.isabs(folder) and os.path.isdir(folder)
    except (OSError, ValueError):
        return False


_WINDOWS_PATH = re.compile(r"^(?:[A-Za-z]:|\\\\[^\\/]+)[\\/]")  # C:\..., C:/..., \\server\...
# Folders that hold checkouts rather than being one, compared in lower case: the project
# is a folder below them, never one of them (~/code/NAME, /opt/NAME, ~/.cursor/worktrees/NAME).
_PLACES = frozenset(
    """code coding projects project proj src source sources repos repo repositories git
    github gitlab bitbucket dev devel development developer work workspace workspaces ws
    documents desktop downloads sandbox playground clones checkouts worktrees personal
    private oss opensource open-source go lib libs apps tools sites www htdocs public_html
    opt srv usr local share mnt media data volumes net""".split()
)
# No project's: at the root, the system's and temporary folders (/tmp, macOS's /private/var,
# /etc, C:\Windows); under the home folder, the temporary and applications' ones.
_SYSTEM = frozenset(
    {"tmp", "temp", "var", "private", "etc", "bin", "sbin", "proc", "sys", "boot", "windows"}
)
_APPLICATIONS = frozenset({"tmp", "temp", "library", "appdata"})
_HOMES = frozenset({"home", "users"})  # /home/NAME, /Users/NAME, C:\Users\NAME
# Where a container mounts the repository it works on: alone at the root (`/project`,
# `/app`) such a folder is the checkout itself, named by its own name.
_MOUNTS = frozenset({"app", "project", "proj", "code", "src", "workspace", "repo", "work"})
_HOST = re.compile(r"^[\w-]+(?:\.[\w-]+)+$")  # github.com, git.example.org (Go's layout)


def foreign_project(folder: str) -> str | None:
    """The project a working folder of another machine names by its path: its first folder
    below the home folder (/home/NAME, /Users/NAME, C:\\Users\\NAME, WSL's /mnt/c/Users/NAME,
    /root) that is no place for checkouts (_PLACES, a dot folder, a host folder such as
    github.com with its owner below it: Go's layout). Agents mostly run at a repository's
    top level and sometimes below it, so the folder nearest the home folder is the
    repository's, the deeper ones its parts. A container's mount alone at the root
    (`/project`, `/app`: _MOUNTS) is the checkout. None for a home folder, a place for
    checkouts, a system's, temporary or application's folder, a path that climbs (`..`)."""
    parts = [p for p in re.split(r"[\\/]+", folder.strip()) if p and p != "."]
    if parts and _WINDOWS_PATH.match(folder):
        parts = parts[1:] if re.fullmatch(r"[A-Za-z]:", parts[0]) else parts[2:]
    if len(parts) > 2 and parts[0] == "mnt" and re.fullmatch(r"[A-Za-z]", parts[1]):
        parts = parts[2:]  # WSL: /mnt/c/Users/NAME/...
    if ".." in parts or (parts and parts[0].lower() in _SYSTEM):
        return None  # where it lands is not known; a folder of the system's
    if len(parts) == 1 and parts[0].lower() in _MOUNTS:
        return project_slug(parts[0])  # a container's mount: /project, /app
    if parts and parts[0].lower() in _HOMES:
        parts = parts[2:]
    elif parts[:1] == ["root"]:
        parts = parts[1:]
    if parts and parts[0].lower() in _APPLICATIONS:
        return None
    while parts:
        if _HOST.fullmatch(parts[0]) and len(parts) > 2:
            parts = parts[2:]  # github.com/OWNER/NAME
        elif parts[0].lower() in _PLACES or parts[0].startswith("."):
            parts = parts[1:]
        elif "[redacted:" in parts[0]:
            return None  # a secret stood there (session_project)
        else:
            return project_slug(parts[0]) or None
    return None


# packed-refs holds a line a ref: a repository of very many refs has megabytes of them
PACKED_REFS_MAX = 64 << 20


def read_head(folder: Path) -> str | None:
    """The commit checked out in the repository at FOLDER (its `.git` folder or file), read
    from HEAD and the refs without running git; None when it cannot be read."""
    dot_git = folder / ".git"
    gitdir = gitdir_of(dot_git) if dot_git.is_file() else dot_git
    if gitdir is None:
        return None
    common = common_git_dir(dot_git) or gitdir
    head = read_git_file(gitdir / "HEAD")
    if head is None:
        return None
    head = head.strip()
    if not head.startswith("ref:"):
        return head or None
    ref = head[4:].strip()
    for base in (gitdir, common):
        found = read_git_file(base / ref)
        if found is not None:
            return found.strip() or None
    packed = read_git_file(common / "packed-refs", PACKED_REFS_MAX)
    if packed is None:
        return None
    for line in packed.splitlines():
        sha, _, name = line.partition(" ")
        if name.strip() == ref:
            return sha
    return None


def _is_bare(config: Path) -> bool:
    """Whether the git config file CONFIG says `bare = true` in its [core] section."""
    return (_config_value(config, "core", "bare") or "").lower() == "true"


def _origin_url(config: Path) -> str | None:
    """The `url` of `[remote "origin"]` in the git config file CONFIG (None when absent)."""
    return _config_value(config, 'remote "origin"', "url")


def _config_value(config: Path, section: str, key: str) -> str | None:
    """KEY's value in SECTION of the git config file CONFIG, or None when absent. Git's
    section and key names are read in any case, a subsection (`"origin"`) as written."""
    text = read_git_file(config)
    if text is None:
        return None
    inside = False
    for line in text.splitlines():
        found = _SECTION.match(line)
        if found:
            name, _, sub = found.group(1).strip().partition(" ")
            inside = f"{name.lower()} {sub}".strip() == section
            continue
        if inside:
            entry = _ENTRY.match(line)
            if entry and entry.group(1).lower() == key:
                return entry.group(2).strip('"') or None
    return None


def remote_repository_name(url: str) -> str:
    """The repository a remote URL names, as written: its last path component without
    `.git` ('git@github.com:me/My_Repo.git' -> 'My_Repo', '/srv/git/tool/' -> 'tool'; ''
    for none). A log that records its repository's remote (Codex's session_meta, Copilot's
    `repository`) names its project so: the name, not its slug, goes to session_project,
    which reads it for secrets before it is lower-cased."""
    tail = re.split(r"[/:\\]", without_query(url).rstrip("/\\"))[-1]
    return tail[:-4] if tail.endswith(".git") else tail


def without_query(url: str) -> str:
    """URL, stripped, without the query and fragment of a URL that has a scheme
    (`https://host/acme/app.git?token=SECRET#main` -> `https://host/acme/app.git`): they
    say nothing of which repository it is, and a query may carry a credential, which
    became the project's name (`app-git-token-secret`) and the record's key for it."""
    text = url.strip()
    return re.split(r"[?#]", text, maxsplit=1)[0] if "://" in text else text


def remote_project_name(url: str) -> str:
    """The project a remote URL names: the slug of remote_repository_name ('' for none)."""
    return project_slug(remote_repository_name(url))
