"""The strict fidelity check over every real sample of every claimed format
(autopoiesis.testing.fidelity): the public samples of ../shared/data and the samples under
tests/, and any folders given on the command line (real logs of your own).

    python bench/bench_fidelity.py [FOLDER...]      # prints the table

A row per file: its format and harness version, its messages, the tool results found on
their own call, and the texts found in a turn of their role.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

SHARED = HERE.parent.parent / "shared" / "data"
SUFFIXES = (".json", ".jsonl", ".md")


def samples(extra: list[str]) -> list[Path]:
    roots = [
        SHARED / "harness-logs",
        SHARED / "claude-code",
        HERE.parent / "tests" / "integrations",
    ]
    roots += [Path(e) for e in extra]
    found = []
    for root in roots:
        if not root.exists():
            continue
        for p in sorted(root.rglob("*")):
            in_tests = "tests" in p.parts and "samples" not in p.parts
            if p.is_file() and p.suffix in SUFFIXES and not in_tests and p.name != "PROVENANCE.md":
                found.append(p)
    return found


def run(quick: bool = False, extra: list[str] | None = None) -> list[dict]:
    from autopoiesis.core.paths import MemoryRepo
    from autopoiesis.memory.initialize import init_memory_repo
    from autopoiesis.testing.fidelity import check_files, table

    with tempfile.TemporaryDirectory(prefix="ap-bench-fidelity-") as d:
        repo = MemoryRepo(init_memory_repo(Path(d) / "m", build_index=False).root)
        rows = check_files(repo, samples(extra or []))
    print(table(rows), file=sys.stderr)
    for r in rows:
        for miss in r.misses[:5]:
            print(f"  {r.file}: {miss}", file=sys.stderr)
    return [
        {
            "bench": "fidelity",
            "metric": f"{r.file} ({r.fmt} {r.version or ''})".replace(" )", ")"),
            "value": f"results {r.results_on_call}/{r.results}, text {r.texts_in_role}/{r.texts}",
            "unit": "faithful" if r.faithful else "NOT faithful",
            "target": "all",
        }
        for r in rows
    ]


if __name__ == "__main__":
    run(extra=sys.argv[1:])
