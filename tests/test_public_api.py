"""The public API: every exported name resolves to its owner, the typed imports and the
run-time table agree, and importing the package stays light."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import autopoiesis


def test_every_exported_name_resolves() -> None:
    for name in autopoiesis.__all__:
        assert getattr(autopoiesis, name) is not None, name


def test_typed_imports_match_the_runtime_table() -> None:
    tree = ast.parse(Path(autopoiesis.__file__).read_text(encoding="utf-8"))
    block = next(
        n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING"
    )
    typed = {
        alias.name: node.module
        for node in block.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    assert typed == autopoiesis._EXPORTS


def test_importing_the_package_loads_no_heavy_library() -> None:
    code = "import autopoiesis, sys; print(','.join(m for m in ('numpy', 'sklearn', 'openai', 'git', 'typer') if m in sys.modules))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == ""
