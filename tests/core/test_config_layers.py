"""Where settings come from (core/config_layers.py): the shared memory-config.yaml, this
machine's approvals, this machine's own file; and a shared file that cannot be used
never stops capture or the sync that repairs it. Real repos, the real CLI."""

from __future__ import annotations

import json

import pytest

from autopoiesis.core.approval import held_back
from autopoiesis.core.config import Config, load_config, local_config_path
from autopoiesis.core.paths import MemoryRepo
from tests.conftest import Cli

CONFLICT = (
    "<<<<<<< ours\nlifecycle:\n  memory_line_cap: 150\n=======\n"
    "lifecycle:\n  memory_line_cap: 90\n>>>>>>> theirs\n"
)


def _events(sid: str) -> str:
    return "\n".join(
        json.dumps(e)
        for e in (
            {"event": "session_start", "session_id": sid, "started": "2026-03-01T09:00:00Z"},
            {"event": "message", "role": "user", "content": f"session {sid} says hello"},
            {"event": "session_end"},
        )
    )


def test_this_machines_file_is_laid_over_the_shared_one_and_needs_no_approval(
    memory_repo: MemoryRepo, git
) -> None:
    shared = memory_repo.root / "memory-config.yaml"
    shared.write_text(
        "lifecycle:\n  memory_line_cap: 150\n  journal_retention_days: 30\n"
        "llm:\n  provider: openai\n  base_url: http://collaborator.example/v1\n"
    )
    mine = local_config_path(memory_repo.root)
    assert mine == memory_repo.root / ".git" / "autopoiesis" / "config.yaml"
    assert load_config(memory_repo.root).llm.provider == "offline"  # theirs: held back
    assert held_back(memory_repo.root)  # ...and said so
    mine.parent.mkdir(parents=True, exist_ok=True)
    mine.write_text(
        "lifecycle:\n  memory_line_cap: 120\n"
        "llm:\n  provider: openai\n  base_url: http://localhost:11434/v1\n"
    )
    config = load_config(memory_repo.root)
    assert config.lifecycle.memory_line_cap == 120  # this machine's value wins
    assert config.lifecycle.journal_retention_days == 30  # the shared one where it says none
    assert (config.llm.provider, config.llm.base_url) == ("openai", "http://localhost:11434/v1")
    assert held_back(memory_repo.root) == {}  # this machine's own choice needs no approval
    status = git(memory_repo, "status", "--porcelain", "--ignored").stdout.splitlines()
    assert sorted(status) == [" M memory-config.yaml", "!! .autopoiesis/"]  # not in the tree
    mine.write_text("lifecycle:\n  memory_line_cap: 121\n")  # an edit is read at once
    assert load_config(memory_repo.root).lifecycle.memory_line_cap == 121


def test_a_local_file_that_cannot_be_used_is_left_out_with_a_warning(
    memory_repo: MemoryRepo,
) -> None:
    mine = local_config_path(memory_repo.root)
    mine.parent.mkdir(parents=True, exist_ok=True)
    mine.write_text("lifecycle:\n  memory_line_cap: lots\n")
    with pytest.warns(UserWarning, match="memory_line_cap"):
        assert load_config(memory_repo.root) == load_config_of_shared(memory_repo)


def load_config_of_shared(repo: MemoryRepo) -> Config:
    from autopoiesis.core.config import load_tracked_config

    return load_tracked_config(repo.root)


def test_a_shared_file_left_in_conflict_keeps_its_last_valid_settings(
    memory_repo: MemoryRepo,
) -> None:
    shared = memory_repo.root / "memory-config.yaml"
    shared.write_text("lifecycle:\n  memory_line_cap: 140\n")
    assert load_config(memory_repo.root).lifecycle.memory_line_cap == 140  # cached as valid
    shared.write_text(shared.read_text() + CONFLICT)
    with pytest.warns(UserWarning, match=r"conflict markers \(line 3\).*git add memory-config"):
        assert load_config(memory_repo.root).lifecycle.memory_line_cap == 140
    (memory_repo.root / ".autopoiesis/cache/config.json").unlink()  # no last valid settings
    with pytest.warns(UserWarning, match="the defaults are used"):
        assert load_config(memory_repo.root) == Config()


def test_a_shared_value_refused_says_its_last_valid_settings_stand_until_it_is_fixed(
    memory_repo: MemoryRepo,
) -> None:
    """The warning said "(its last valid settings are used until then)", with nothing
    before it for "then" to name: it says until what now."""
    shared = memory_repo.root / "memory-config.yaml"
    shared.write_text("lifecycle:\n  memory_line_cap: 140\n")
    assert load_config(memory_repo.root).lifecycle.memory_line_cap == 140  # cached as valid
    shared.write_text("lifecycle:\n  memory_line_cap: 1.5\n")
    with pytest.warns(
        UserWarning, match=r"not 1\.5\. \(its last valid settings are used until it is fixed\)"
    ):
        assert load_config(memory_repo.root).lifecycle.memory_line_cap == 140


@pytest.mark.filterwarnings("ignore:.*conflict markers:UserWarning")
def test_capture_search_and_sync_work_while_the_shared_file_is_in_conflict(
    memory_repo: MemoryRepo, cli: Cli, git, tmp_path
) -> None:
    """A conflict in memory-config.yaml used to break every command: capture (the session
    was lost, exit 1) and the `sync` its message said to run."""
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    git(memory_repo, "remote", "add", "origin", str(remote))
    assert cli("sync", repo=memory_repo).returncode == 0
    shared = memory_repo.root / "memory-config.yaml"
    shared.write_text(shared.read_text() + CONFLICT)

    done = cli("capture", repo=memory_repo, input=_events("conflicted1"))
    assert done.returncode == 0, done.stderr
    assert "conflict markers" in done.stderr and "Traceback" not in done.stderr
    assert "conflicted1" in git(memory_repo, "log", "-1", "--format=%s", "--stat").stdout
    assert cli("search", "says hello", repo=memory_repo).returncode == 0
    doctor = cli("doctor", repo=memory_repo)
    assert doctor.returncode == 1 and "config:" in doctor.stdout
    synced = cli("sync", repo=memory_repo)  # the capture's commit goes out
    assert synced.returncode == 0, synced.stderr
    assert "conflicted1" in git(remote, "log", "-1", "--stat", "main").stdout


@pytest.mark.filterwarnings("ignore:.*conflict markers:UserWarning")
def test_approving_reads_the_shared_file_as_written_never_its_last_valid_settings(
    memory_repo: MemoryRepo, cli: Cli
) -> None:
    shared = memory_repo.root / "memory-config.yaml"
    shared.write_text("llm:\n  provider: openai\n  base_url: http://localhost:1/v1\n")
    assert load_config(memory_repo.root).llm.provider == "offline"  # cached as valid, held back
    shared.write_text(shared.read_text() + CONFLICT)
    done = cli("llm", "approve", "--yes", repo=memory_repo)
    assert done.returncode == 1 and "Nothing was approved" in done.stderr
    assert held_back(memory_repo.root)  # still held back: nothing recorded


def test_the_shared_file_is_never_read_through_a_link_nor_past_a_sane_size(
    memory_repo: MemoryRepo, tmp_path
) -> None:
    """A pulled `memory-config.yaml -> /dev/zero` was read to the end of memory on every
    command (MemoryError after ~2.6 GB, ~3 GB per prompt hook), and a link to any file of
    this machine was parsed as the settings. Now a link, or a file over a MiB, is refused
    with a warning naming it, and the last valid settings are used."""
    from autopoiesis.core.config import check_tracked_config
    from autopoiesis.core.config_layers import MAX_CONFIG_BYTES

    shared = memory_repo.root / "memory-config.yaml"
    shared.write_text("lifecycle:\n  memory_line_cap: 140\n")
    assert load_config(memory_repo.root).lifecycle.memory_line_cap == 140  # cached as valid
    elsewhere = tmp_path / "elsewhere.yaml"
    elsewhere.write_text("lifecycle:\n  memory_line_cap: 90\n")
    shared.unlink()
    shared.symlink_to(elsewhere)
    with pytest.warns(UserWarning, match="memory-config.yaml is a symbolic link"):
        assert load_config(memory_repo.root).lifecycle.memory_line_cap == 140
    assert "is a symbolic link" in (check_tracked_config(memory_repo.root) or "")
    shared.unlink()
    shared.write_text("lifecycle:\n  memory_line_cap: 90\n" + "#\n" * MAX_CONFIG_BYTES)
    with pytest.warns(UserWarning, match="memory-config.yaml is over 1024 KiB"):
        assert load_config(memory_repo.root).lifecycle.memory_line_cap == 140
