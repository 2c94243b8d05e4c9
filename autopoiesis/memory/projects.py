"""The projects a memory repo knows (`autopoiesis projects`): each name with its
transcripts (their `project:`) and its knowledge files (under knowledge/projects/<name>/),
read from the files themselves, not the index (which may be behind or missing), and the
folders of this machine filed under it."""

from __future__ import annotations

from dataclasses import dataclass, field

from autopoiesis.core.paths import MemoryRepo
from autopoiesis.core.project_names import checkouts_by_name
from autopoiesis.index.projects import file_project

# A transcript's frontmatter mostly fits in this many bytes; `project:` is near its top.
_HEAD_BYTES = 4096


@dataclass(frozen=True)
class ProjectCount:
    name: str
    transcripts: int
    knowledge_files: int
    # the folders of this machine filed under the name (core/project_names): which `app`
    checkouts: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "transcripts": self.transcripts,
            "knowledge_files": self.knowledge_files,
            "checkouts": list(self.checkouts),
        }


def project_counts(repo: MemoryRepo) -> list[ProjectCount]:
    """Every project named by a transcript or a knowledge/projects/<name>/ folder, by name."""
    transcripts = _transcripts(repo)
    knowledge = _knowledge_files(repo)
    folders = checkouts_by_name(repo.root)
    return [
        ProjectCount(
            name, transcripts.get(name, 0), knowledge.get(name, 0), tuple(folders.get(name, ()))
        )
        for name in sorted(transcripts.keys() | knowledge.keys())
    ]


def _transcripts(repo: MemoryRepo) -> dict[str, int]:
    """The transcripts of each project their `project:` names."""
    transcripts: dict[str, int] = {}
    for path in repo.iter_markdown("raw/conversations"):
        try:
            with path.open("rb") as f:
                head = f.read(_HEAD_BYTES)
                # a long frontmatter (many tags, a long topic) puts `project:` further in
                while head.startswith(b"---") and head.find(b"\n---", 3) < 0:
                    more = f.read(len(head))
                    if not more:
                        break
                    head += more
        except OSError:
            continue
        name = file_project(
            path.relative_to(repo.root).as_posix(), "conversation", head.decode("utf-8", "replace")
        )
        if name is not None:
            transcripts[name] = transcripts.get(name, 0) + 1
    return transcripts


def _knowledge_files(repo: MemoryRepo) -> dict[str, int]:
    """The Markdown files under each knowledge/projects/<name>/ folder."""
    knowledge: dict[str, int] = {}
    projects_dir = repo.knowledge_dir / "projects"
    if projects_dir.is_dir():
        for folder in projects_dir.iterdir():
            if folder.is_dir() and file_project(f"knowledge/projects/{folder.name}/", "", ""):
                knowledge[folder.name] = sum(1 for p in folder.rglob("*.md") if p.is_file())
    return knowledge
