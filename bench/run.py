"""Run the benchmarks and print one table.

python bench/run.py            # everything
python bench/run.py --quick    # smaller sizes, for a smoke run
python bench/run.py --large    # also the largest sizes (search: 100k notes)
python bench/run.py capture search   # only these (module names without bench_)
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def fmt(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 1000 else f"{value:,.0f}"
    return str(value)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("only", nargs="*", help="benchmark modules to run (default: all)")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument(
        "--large", action="store_true", help="also the largest sizes, where a module has them"
    )
    args = parser.parse_args()
    names = args.only or sorted(p.stem[6:] for p in HERE.glob("bench_*.py"))
    rows: list[dict] = []
    for name in names:
        module = importlib.import_module(f"bench_{name}")
        started = time.perf_counter()
        try:
            params = inspect.signature(module.run).parameters  # not co_varnames: locals too
            kwargs = {
                k: v for k, v in (("quick", args.quick), ("large", args.large)) if k in params
            }
            got = module.run(**kwargs)
        except Exception as exc:  # one failing benchmark must not hide the others
            got = [{"bench": name, "metric": "error", "value": repr(exc), "unit": "", "target": ""}]
        for row in got:
            row.setdefault("bench", name)
            row.setdefault("metric", row.get("name", ""))
            rows.append(row)
        print(f"[{name}: {time.perf_counter() - started:.1f} s]", file=sys.stderr)
    print_table(rows)
    return 0


def print_table(rows: list[dict]) -> None:
    """ROWS (bench, metric, value, unit, target) as an aligned table on stdout."""
    headers = ("bench", "metric", "value", "unit", "target")
    table = [[fmt(r.get(h, "")) for h in headers] for r in rows]
    widths = [
        max(len(h), *(len(row[i]) for row in table)) if table else len(h)
        for i, h in enumerate(headers)
    ]
    print("  ".join(h.ljust(w) for h, w in zip(headers, widths)))
    print("  ".join("-" * w for w in widths))
    for row in table:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths)))


if __name__ == "__main__":
    sys.exit(main())
