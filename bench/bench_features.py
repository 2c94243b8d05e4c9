"""Search and the git hooks on a memory that uses linked notes, private knowledge and a
team mount, beside the same memory without them (issue 24: no slower on a repo that uses
them).

One corpus of knowledge notes (2,000; 500 with --quick), five copies:

* plain: the notes as they are;
* links: every note links three others (`[[note-00042]]`, with an alias, with a heading);
* private: a tenth of the notes under knowledge/private/, encrypted by git-crypt (unlocked);
* team: a team repository of a fifth as many notes mounted at shared/team/ (a submodule);
* all: the three at once.

For each: one cold `autopoiesis search` process (its wall time, median), a search in
process with its catch-up (the git status, and the mount's), and `git commit` of one
changed note with the hooks installed (pre-commit, reference-transaction, post-commit).
The variants are run in turn, round after round (alternate runs), so a busy machine slows
them alike. With `--callgrind`, the instructions of one cold search and of the pre-commit
hook are counted under valgrind instead (`Collected`).

    python bench/bench_features.py [--quick] [--callgrind]
"""

from __future__ import annotations

import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from corpus import make_corpus, queries

ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
VARIANTS = ("plain", "links", "private", "team", "all")
ROUNDS = 5


def git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "core.hooksPath=/dev/null", *args],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def _notes(root: Path) -> list[Path]:
    return sorted((root / "knowledge").rglob("note-*.md"))


def add_links(root: Path) -> None:
    notes = _notes(root)
    for i, path in enumerate(notes):
        a, b, c = (notes[(i * 7 + k) % len(notes)].stem for k in (1, 2, 3))
        text = path.read_text(encoding="utf-8")
        path.write_text(
            text + f"\n- See [[{a}]], [[{b}|the other note]] and [[{c}#Notes]].\n",
            encoding="utf-8",
        )
    git(root, "add", "-A")
    git(root, "commit", "-qm", "bench: links")


def add_private(root: Path) -> None:
    from autopoiesis.core.paths import MemoryRepo
    from autopoiesis.memory.private import PrivateKnowledge

    PrivateKnowledge(MemoryRepo(root)).init()
    for path in _notes(root)[::10]:
        target = root / "knowledge" / "private" / path.name
        target.parent.mkdir(parents=True, exist_ok=True)
        git(root, "mv", str(path), str(target))
    # `git mv` moves the index entry as it was (clear text): staged again, through git-crypt
    git(root, "add", "--renormalize", "knowledge/private")
    git(root, "commit", "-qm", "bench: private notes")


def add_team(root: Path, tmp: Path, n: int) -> None:
    team = tmp / "team-src"
    if not team.exists():
        subprocess.run(["git", "init", "-q", "-b", "main", str(team)], check=True)
        make_corpus(team, n, seed=19)  # committed there
    subprocess.run(
        [
            "git",
            "-c",
            "protocol.file.allow=always",
            "submodule",
            "add",
            "-q",
            str(team),
            "shared/team",
        ],
        cwd=root,
        check=True,
        capture_output=True,
    )
    git(root, "commit", "-qm", "bench: team mount")


def build(tmp: Path, n: int) -> dict[str, Path]:
    from autopoiesis.core.paths import MemoryRepo
    from autopoiesis.index import SearchIndex
    from autopoiesis.memory.initialize import init_memory_repo

    base = tmp / "base"
    init_memory_repo(base, build_index=False)
    make_corpus(base, n)
    roots = {}
    for name in VARIANTS:
        root = tmp / name
        shutil.copytree(base, root, symlinks=True)
        if name in ("links", "all"):
            add_links(root)
        if name in ("private", "all"):
            add_private(root)
        if name in ("team", "all"):
            add_team(root, tmp, max(50, n // 5))
        with SearchIndex(MemoryRepo(root)) as index:
            index.rebuild_full()
        roots[name] = root
    return roots


def cold_search(root: Path, query: str) -> float:
    t = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "autopoiesis", "-C", str(root), "search", query],
        capture_output=True,
        check=True,
        env=ENV,
    )
    return (time.perf_counter() - t) * 1000


def warm_search(root: Path, qs: list[str]) -> float:
    from autopoiesis.core.paths import MemoryRepo
    from autopoiesis.index import SearchIndex

    with SearchIndex(MemoryRepo(root)) as index:
        index.search(qs[0])
        t = time.perf_counter()
        for q in qs:
            index.search(q)
        return (time.perf_counter() - t) * 1000 / len(qs)


def hooked_commit(root: Path, n: int) -> float:
    note = _notes(root)[1]
    with note.open("a", encoding="utf-8") as fh:
        fh.write(f"- change {n}\n")
    subprocess.run(["git", "add", str(note)], cwd=root, check=True)
    t = time.perf_counter()
    subprocess.run(
        ["git", "commit", "-qm", f"memory: change {n}"],
        cwd=root,
        check=True,
        env=ENV,
        capture_output=True,
    )
    return (time.perf_counter() - t) * 1000


def collected(cmd: list[str], cwd: Path) -> int:
    """Instructions valgrind's callgrind counts for CMD and every process it starts (git
    among them: the sum of their `Collected` lines)."""
    done = subprocess.run(
        [
            "valgrind",
            "--tool=callgrind",
            "--trace-children=yes",
            "--callgrind-out-file=/dev/null",
            *cmd,
        ],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=ENV,
    )
    found = re.findall(r"Collected : (\d+)", done.stderr)
    return sum(int(x) for x in found) if found else -1


def callgrind_rows(roots: dict[str, Path]) -> list[dict]:
    rows = []
    q = queries(1, seed=3)[0]
    for name, root in roots.items():
        search = collected(
            [sys.executable, "-m", "autopoiesis", "-C", str(root), "search", q], root
        )
        note = _notes(root)[2]
        with note.open("a", encoding="utf-8") as fh:
            fh.write("- counted\n")
        subprocess.run(["git", "add", str(note)], cwd=root, check=True)
        hook = collected([sys.executable, "-m", "autopoiesis.git.hooks", "pre-commit"], root)
        git(root, "reset", "-q")
        for metric, value in (("cold search", search), ("pre-commit hook", hook)):
            rows.append(
                {"metric": f"{metric}, {name} (callgrind)", "value": value / 1e6, "unit": "M instr"}
            )
    return rows


def run(quick: bool = False, callgrind: bool = False) -> list[dict]:
    n = 500 if quick else 2000
    rounds = 3 if quick else ROUNDS
    qs = queries(20, seed=3)
    with tempfile.TemporaryDirectory(prefix="ap-bench-features-") as tmp:
        roots = build(Path(tmp), n)
        if callgrind:
            return callgrind_rows(roots)
        cold: dict[str, list[float]] = {v: [] for v in VARIANTS}
        warm: dict[str, list[float]] = {v: [] for v in VARIANTS}
        commit: dict[str, list[float]] = {v: [] for v in VARIANTS}
        for r in range(rounds):
            for name in VARIANTS:  # alternate runs: each round visits every variant
                cold[name].append(cold_search(roots[name], qs[r % len(qs)]))
                warm[name].append(warm_search(roots[name], qs))
                commit[name].append(hooked_commit(roots[name], r))
        rows = []
        for name in VARIANTS:
            for metric, values in (
                ("cold `search` CLI call (median)", cold[name]),
                ("search in process, with its catch-up (median)", warm[name]),
                ("`git commit` of one note, hooks on (median)", commit[name]),
            ):
                rows.append(
                    {
                        "metric": f"{metric}, {name}, {n} notes",
                        "value": statistics.median(values),
                        "unit": "ms",
                    }
                )
        return rows


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    for row in run(quick="--quick" in sys.argv, callgrind="--callgrind" in sys.argv):
        print(f"{row['metric']:<70} {row['value']:>10.2f} {row['unit']}")
