"""The manual in docs/: the site builds strictly, the pages cog generates from the code are
current, every CLI command is in the reference, the README stays the short front page, no
page names a path outside the repository, and every design citation has its section."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
README = ROOT / "README.md"
PAGES = sorted(DOCS.glob("*.md"))
GENERATED = [p for p in PAGES if "[[[cog" in p.read_text(encoding="utf-8")]
PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```$", flags=re.S | re.M)


def hostile_env(home: Path) -> dict[str, str]:
    """An environment that would change the help text if anything leaked into it: another
    home, a wide terminal, rich help and colours asked for."""
    env = {
        **os.environ,
        "HOME": str(home),
        "COLUMNS": "200",
        "TERMINAL_WIDTH": "200",
        "TYPER_USE_RICH": "1",
        "FORCE_COLOR": "1",
        "AUTOPOIESIS_REPO": str(home),
    }
    env.pop("NO_COLOR", None)
    return env


@pytest.mark.slow
def test_generated_pages_are_current(tmp_path: Path) -> None:
    """`cog --check` would change nothing: the CLI reference and the default configuration
    are what the code says today, whatever the environment cog runs in."""
    if importlib.util.find_spec("cogapp") is None:
        pytest.skip("cogapp is not installed (pip install -e '.[test]')")
    assert {p.name for p in GENERATED} >= {"cli.md", "configuration.md"}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "cogapp",
            "--check",
            "--diff",
            "--check-fail-msg=regenerate with: cog -r docs/cli.md docs/configuration.md",
            *(str(p.relative_to(ROOT)) for p in GENERATED),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=hostile_env(tmp_path),
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def cli_commands() -> list[str]:
    """Every command and subcommand of the CLI, as typed after `autopoiesis`."""
    import typer

    from autopoiesis.cli import app

    def walk(command: Any, path: list[str]) -> Iterator[list[str]]:
        yield path
        for name, sub in getattr(command, "commands", {}).items():
            if not sub.hidden:  # an old name kept for compatibility
                yield from walk(sub, [*path, name])

    return [" ".join(path) for path in walk(typer.main.get_command(app), [])]


def test_every_command_is_in_the_cli_reference() -> None:
    text = (DOCS / "cli.md").read_text(encoding="utf-8")
    headings = re.findall(r"^#{2,3} `autopoiesis ?([^`]*)` \{#[a-z0-9-]+\}$", text, flags=re.M)
    commands = cli_commands()
    assert len(commands) > 50
    missing = [c or "(the top level)" for c in commands if c not in headings]
    assert not missing, f"not in docs/cli.md (run: cog -r docs/cli.md): {missing}"
    no_help = [c for c in commands if f"Usage: {' '.join(['autopoiesis', c]).strip()} " not in text]
    assert not no_help, f"no help text in docs/cli.md for: {no_help}"
    assert len(headings) == len(set(headings)) == len(commands)


@pytest.mark.slow
def test_the_site_builds_strictly(tmp_path: Path) -> None:
    if importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("material") is None:
        pytest.skip("mkdocs-material is not installed (pip install -e '.[test]')")
    site = tmp_path / "site"
    # not --quiet: it hides the warnings that --strict counts
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mkdocs",
            "build",
            "--strict",
            "--config-file",
            str(ROOT / "mkdocs.yml"),
            "--site-dir",
            str(site),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (site / "index.html").is_file() and (site / "cli" / "index.html").is_file()


def test_every_page_is_in_the_navigation() -> None:
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert [p.name for p in PAGES if f": {p.name}" not in nav] == []


def test_readme_is_the_short_front_page() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 250
    # the two commands, byte for byte: .ci/run runs the second one
    ci_command = (ROOT / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()[-1]
    assert f"```sh\n{ci_command}\n```" in text
    assert "pip install -e . && autopoiesis demo\n```" in text
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    local = [link for link in links if "://" not in link]
    assert {f"docs/{p.name}" for p in PAGES} <= set(local), "the README links every page"
    assert [link for link in local if not (ROOT / link).exists()] == []


def test_readme_architecture_names_every_package() -> None:
    """The README's Architecture section says who owns what: every package and top-level
    module of autopoiesis/ is named there, and nothing it names is gone."""
    text = README.read_text(encoding="utf-8")
    section = text.split("## Architecture\n", 1)[1].split("\n## ", 1)[0]
    package = ROOT / "autopoiesis"
    present = {
        f"{p.name}/" if p.is_dir() else p.name
        for p in package.iterdir()
        if (p.is_dir() and (p / "__init__.py").exists()) or p.suffix == ".py"
    }
    named = set(re.findall(r"`([A-Za-z_]+(?:/|\.py))`", section))
    assert present - named == set(), "packages the README's Architecture does not name"
    assert named - present == set(), "names in the README's Architecture that are gone"


def test_no_page_names_a_path_outside_the_repository() -> None:
    """Examples run from a plain clone: no `../` anywhere in the README or the pages."""
    found = [
        f"{page.relative_to(ROOT)}:{n}: {line.strip()}"
        for page in [README, *PAGES]
        for n, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1)
        if "../" in line
    ]
    assert found == []


def test_python_examples_of_the_pages_are_the_readme_ones() -> None:
    """tests/test_readme.py runs the README's Python examples; a page may only repeat them."""
    readme_blocks = set(PYTHON_BLOCK.findall(README.read_text(encoding="utf-8")))
    for page in PAGES:
        for block in PYTHON_BLOCK.findall(page.read_text(encoding="utf-8")):
            assert block in readme_blocks, f"{page.name}: a Python example the tests do not run"


def cited_sources() -> Iterator[tuple[Path, str]]:
    for folder in ("autopoiesis", "tests", "scripts", "bench"):
        for path in sorted((ROOT / folder).rglob("*")):
            if path.suffix in (".py", ".md", ".yaml", ".toml") and path.is_file():
                yield path, path.read_text(encoding="utf-8", errors="replace")
    yield ROOT / "pyproject.toml", (ROOT / "pyproject.toml").read_text(encoding="utf-8")


def test_design_citations_have_their_section() -> None:
    """A citation `§5.4` needs the numbered section in docs/design.md; a citation
    `docs/design.md#ANCHOR` needs the anchor. Numbered sections keep explicit anchors."""
    design = (DOCS / "design.md").read_text(encoding="utf-8")
    numbered = re.findall(r"^#{2,3} (\d+(?:\.\d+)?) .*$", design, flags=re.M)
    unanchored = [
        h
        for h in re.findall(r"^#{2,3} \d.*$", design, flags=re.M)
        if not re.search(r"\{#[a-z0-9-]+\}$", h)
    ]
    assert unanchored == []
    anchors = set(re.findall(r"\{#([a-z0-9-]+)\}", design))
    bad = []
    for path, text in cited_sources():
        for number in re.findall(r"§(\d+(?:\.\d+)?)", text):
            if number not in numbered:
                bad.append(f"{path.relative_to(ROOT)}: §{number}")
        for anchor in re.findall(r"docs/design\.md#([a-z0-9-]+)", text):
            if anchor not in anchors:
                bad.append(f"{path.relative_to(ROOT)}: docs/design.md#{anchor}")
    assert bad == []


def stray_table_rows(text: str) -> list[int]:
    """The line numbers of table rows (`| a | b |`) outside a code fence that belong to no
    table: Markdown starts a table only at a header row followed by its `|---|` line, so a
    row after a paragraph renders as a line of text with pipes in it."""
    stray = []
    in_table = in_fence = False
    lines = text.splitlines()
    for n, line in enumerate(lines, 1):
        if line.startswith("```"):
            in_fence = not in_fence
        if in_fence or not line.startswith("|"):
            in_table = False
            continue
        if not in_table:
            following = lines[n] if n < len(lines) else ""
            in_table = bool(re.match(r"^\|[\s:|-]+\|\s*$", following))
            if not in_table:
                stray.append(n)
    return stray


def test_stray_table_rows_are_found() -> None:
    table = "| a | b |\n|---|---|\n| 1 | 2 |\n"
    assert stray_table_rows(table) == []
    assert stray_table_rows(table + "\nA paragraph.\n| 3 | 4 |\n") == [6]


def test_every_table_row_is_in_a_table() -> None:
    bad = [
        f"{page.relative_to(ROOT)}:{n}"
        for page in [README, *PAGES]
        for n in stray_table_rows(page.read_text(encoding="utf-8"))
    ]
    assert bad == []
