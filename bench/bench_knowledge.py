"""What offline extraction keeps of LoCoMo (../shared/data/locomo, issue 11's figures).

Each conversation goes into its own memory repo through the real import path, then the
offline extractors, the daily journals and the weekly rollups run (what the hooks and
cron would have done). Reported, for category 1-4 questions with an answer:

* answer recall in knowledge/: the share of questions whose answer words all stand in
  one live line of the current-state files (MEMORY.md, projects, people, procedures,
  reference; journals, identity, superseded entries and raw/ left out), and the mean
  share of answer words found anywhere in those files; beside them the same two over
  the raw turns, the ceiling;
* knowledge size as a fraction of raw: bytes of knowledge/ (identity left out) and of
  the current-state files alone, over the bytes of raw/conversations/.

The computation is `autopoiesis.eval.knowledge_recall` (the eval command reuses it).

    python bench/bench_knowledge.py [--quick]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from autopoiesis.eval.knowledge_recall import locomo_knowledge

DATA = (
    Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "locomo" / "locomo-dev.json"
)


def run(quick: bool = False) -> list[dict]:
    """Rows {bench, metric, value, unit, target} for bench/run.py."""
    if not DATA.exists():
        return [
            {
                "bench": "knowledge",
                "metric": "skipped (no ../shared/data/locomo)",
                "value": None,
                "unit": "",
                "target": None,
            }
        ]
    res = locomo_knowledge(DATA, quick=quick)
    k, raw, size = res["knowledge"], res["raw"], res["size"]
    return [
        {
            "bench": "knowledge (LoCoMo)",
            "metric": "answer recall, one live line (raw ceiling)",
            "value": f"{k['line']:.3f} ({raw['line']:.3f})",
            "unit": "",
            "target": "report",
        },
        {
            "bench": "knowledge (LoCoMo)",
            "metric": "answer words found in current-state files (raw ceiling)",
            "value": f"{k['words']:.3f} ({raw['words']:.3f})",
            "unit": "",
            "target": "report",
        },
        {
            "bench": "knowledge (LoCoMo)",
            "metric": "knowledge / raw bytes (current-state only)",
            "value": f"{size['fraction']:.3f} ({size['current_state_fraction']:.3f})",
            "unit": "",
            "target": "report",
        },
        {
            "bench": "knowledge (LoCoMo)",
            "metric": "questions; conversations; seconds",
            "value": f"{k['questions']}; {res['conversations']}; {res['seconds']}",
            "unit": "",
            "target": None,
        },
    ]


if __name__ == "__main__":
    if not DATA.exists():
        sys.exit(f"no LoCoMo data at {DATA}")
    print(json.dumps(locomo_knowledge(DATA, quick="--quick" in sys.argv[1:]), indent=2))
