"""A memory on a read-only file system (a read-only bind mount, as a backup or a shared
volume may be): a command that must write says so as every other one does ("Read-only
file system (PATH)"), and a check that only reads still runs."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys

import pytest

from autopoiesis.core.paths import MemoryRepo
from tests.conftest import PROJECT_ROOT


def _read_only(repo: MemoryRepo, *commands: str) -> list[subprocess.CompletedProcess[str]]:
    """Run each `autopoiesis -C REPO COMMAND` with REPO mounted read-only over itself (in a
    mount namespace of its own); skipped where this process may not make one."""
    root = shlex.quote(str(repo.root))
    mount = f"mount --bind {root} {root} && mount -o remount,bind,ro {root}"
    probe = subprocess.run(
        ["unshare", "-m", "sh", "-c", f"{mount} && ! touch {root}/.probe 2>/dev/null"],
        capture_output=True,
    )
    if probe.returncode != 0:
        pytest.skip("no read-only bind mount here (needs root and unshare)")
    env = {
        **os.environ,
        "AUTOPOIESIS_NO_DAEMON": "1",
        "PYTHONPATH": os.pathsep.join(
            filter(None, [str(PROJECT_ROOT), os.environ.get("PYTHONPATH")])
        ),
    }
    python = shlex.quote(sys.executable)
    out = []
    for command in commands:
        script = f"{mount} && exec {python} -P -m autopoiesis -C {root} {command}"
        out.append(
            subprocess.run(
                ["unshare", "-m", "sh", "-c", script],
                capture_output=True,
                text=True,
                env=env,
                timeout=120,
            )
        )
    return out


def test_extract_on_a_read_only_memory_says_so(memory_repo: MemoryRepo, cli) -> None:
    """`extract --pending` died with SQLite's OperationalError "unable to open database
    file" (its state database cannot be put in WAL mode there): core.sqlite.open_db now
    says what the file system said, as the CLI says it for any file."""
    assert cli("extract", "--pending", repo=memory_repo).returncode == 0  # its state exists
    (done,) = _read_only(memory_repo, "extract --pending")
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert "error: Read-only file system (" in done.stderr
    assert "extract.sqlite" in done.stderr


def test_verify_on_a_read_only_memory_checks_and_says_the_bookmark_was_not_saved(
    memory_repo: MemoryRepo, git
) -> None:
    """`verify` failed ("Could not read the history … objects intact (`git fsck`)?") when
    only writing its bookmark ref failed. The check runs and passes; a warning says the
    bookmark was not saved and why, and doctor's history check says the same."""
    git(memory_repo, "update-ref", "-d", "refs/autopoiesis/verified/main", check=False)
    verified, doctor = _read_only(memory_repo, "verify", "doctor --check history")
    assert verified.returncode == 0, verified.stderr
    assert verified.stdout.startswith("ok: ")
    assert "bookmark could not be saved (Read-only file system" in verified.stderr
    assert "git fsck" not in verified.stderr
    assert doctor.returncode == 0, doctor.stdout
    assert "checked, but its bookmark could not be saved" in doctor.stdout
