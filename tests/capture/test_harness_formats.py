"""Every harness log format together: each shared sample goes to its importer and no other claims it; empty files, re-imports and the CLI's refusal name the real --format names."""

from __future__ import annotations

from pathlib import Path

import pytest

from autopoiesis.capture.importers import (
    ImportReport,
    detect_format,
    import_files,
    read_sessions,
    read_text,
)
from autopoiesis.core.paths import MemoryRepo
from autopoiesis.errors import ImportFormatError
from tests.conftest import Cli

MINE = {
    "codex",
    "openai-responses",
    "cursor",
    "cursor-md",
    "gemini",
    "chatgpt",
    "copilot",
    "claude-ai",
}


FOLDER_FORMAT = {
    "codex": "codex",
    "cursor": "cursor",
    "gemini": "gemini",
    "chatgpt": "chatgpt",
    "copilot": "copilot",
    "claude-ai": "claude-ai",
    "qwen": "qwen-code",
    "kimi": "kimi",
}


# ── detection across every shared sample ──
def test_each_shared_sample_goes_to_its_importer_and_no_other_format_is_claimed(
    shared_data: Path,
) -> None:
    from autopoiesis.capture.importers import importers

    folders = sorted(p for p in (shared_data / "harness-logs").iterdir() if p.is_dir())
    assert {p.name for p in folders} >= set(FOLDER_FORMAT) | {"claude-code", "opencode", "aider"}
    for folder in folders:
        for f in sorted(folder.iterdir()):
            text = read_text(f)
            if folder.name in FOLDER_FORMAT:
                assert detect_format(f, text).name == FOLDER_FORMAT[folder.name], f
            else:  # another helper's formats: none of these importers may take them
                claimed = {n for n, i in importers().items() if n in MINE and i.detect(f, text) > 0}
                assert claimed == set(), (f, claimed)
    for f in sorted((shared_data / "claude-code").glob("*.jsonl")):
        assert detect_format(f, read_text(f)).name == "claude-code"


# ── every format: empty files, re-imports, the CLI ──
@pytest.mark.parametrize("fmt", sorted(MINE))
def test_an_empty_file_is_refused_with_its_reason(
    memory_repo: MemoryRepo, tmp_path: Path, fmt: str
) -> None:
    f = tmp_path / (
        "empty.md"
        if fmt == "cursor-md"
        else "empty.jsonl"
        if fmt in ("codex", "cursor", "copilot")
        else "empty.json"
    )
    f.write_text("")
    report = import_files(memory_repo, [f], fmt)
    assert report.imported == [] and len(report.refused) == 1
    assert str(f) in report.refused[0] and (
        "nothing to import" in report.refused[0] or "not valid JSON" in report.refused[0]
    )


def test_every_shared_sample_reimports_as_a_noop(
    memory_repo: MemoryRepo, shared_data: Path, git
) -> None:
    files = [
        f for name in FOLDER_FORMAT for f in sorted((shared_data / "harness-logs" / name).iterdir())
    ]
    first = import_files(memory_repo, files)
    head = git(memory_repo.root, "rev-parse", "HEAD").stdout
    again = import_files(memory_repo, files)
    assert again.imported == [] and sorted(again.skipped_duplicates) == sorted(first.imported)
    assert git(memory_repo.root, "rev-parse", "HEAD").stdout == head


def test_cli_refuses_a_log_without_conversation_and_names_real_formats(
    memory_repo: MemoryRepo, shared_data: Path, tmp_path: Path, cli: Cli
) -> None:
    legacy = shared_data / "harness-logs" / "codex" / "agent-sessions__codex_050_legacy.jsonl"
    out = cli("import", str(legacy), repo=memory_repo)
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert "holds no user or agent message" in out.stderr
    prose = tmp_path / "notes.txt"
    prose.write_text("just prose")
    with pytest.raises(ImportFormatError) as exc:
        read_sessions(prose, "auto", ImportReport())
    assert all(name in str(exc.value) for name in MINE)  # the advice lists the real --format names
    # a log passed with the wrong --format is refused with the format it is in
    gemini = shared_data / "harness-logs" / "gemini" / "agent-sessions__small.json"
    report = import_files(memory_repo, [gemini], "chatgpt")
    assert report.imported == [] and report.refused[0].endswith(
        "It reads as gemini: pass --format gemini (or auto)."
    )
