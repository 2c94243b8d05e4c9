"""What one sync round did (SyncReport), the messages a round stops with (what happened
and what to run), and the clone's sync health: when a sync last worked, and since when
and why they stop (`record_health`, `sync_health`; memory/sync.py runs the round).

The health is what keeps an unattended clone honest: a daemon's sync that hits a
conflict undoes the merge, and without a record the clone would look idle while it has
stopped syncing. `daemon status` and `doctor` read it and say so (and exit 1)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from autopoiesis.core.clock import format_ts, utc_now
from autopoiesis.core.paths import CONVERSATIONS_DIR, MemoryRepo, atomic_write


@dataclass
class SyncReport:
    """What one sync round did."""

    remote: str
    url: str
    branch: str
    committed: list[str] = field(
        default_factory=list
    )  # "sha subject" of commits made before pulling
    setup: list[str] = field(default_factory=list)  # what registering the merge driver changed
    fetched: bool = False
    merge: str = "skipped"  # skipped | no remote branch | up-to-date | fast-forward | merged
    merge_commit: str | None = None
    incoming: list[str] = field(default_factory=list)  # files the pull changed
    capped: list[str] = field(default_factory=list)  # what re-applying the caps did
    settled: list[str] = field(default_factory=list)  # subjects given one live value
    pushed: list[str] = field(default_factory=list)  # refs the push moved
    push_retries: int = 0  # pushes another clone's push beat (fetched, merged, pushed again)
    forced: list[str] = field(default_factory=list)  # refs force-pushed after a forget
    warnings: list[str] = field(default_factory=list)

    @property
    def incoming_transcripts(self) -> int:
        return sum(
            p.startswith(CONVERSATIONS_DIR + "/") and p.endswith(".md") for p in self.incoming
        )

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "incoming_transcripts": self.incoming_transcripts}

    def lines(self) -> list[str]:
        out = [f"sync {self.branch} with {self.remote} ({self.url})"]
        out += [f"  {s}" for s in self.setup]
        out += [f"  committed {c[:10]} {c[41:]}" for c in self.committed]
        out += [f"  force-pushed after forget: {r}" for r in self.forced]
        if self.merge == "skipped":
            pass
        elif self.merge in ("fast-forward", "merged"):
            others = len(self.incoming) - self.incoming_transcripts
            what = (
                f"{count_of(self.incoming_transcripts, 'transcript')}, "
                f"{count_of(others, 'other file')}"
            )
            how = "fast-forwarded" if self.merge == "fast-forward" else "merged"
            out.append(
                f"  pulled: {how} {what}"
                + (f" -> {self.merge_commit[:10]}" if self.merge_commit else "")
            )
        else:
            out.append(f"  pulled: {self.merge}")
        out += [f"  settled: {c}" for c in self.settled]
        out += [f"  cap: {c}" for c in self.capped]
        if self.pushed:
            again = (
                f" (after {self.push_retries} {'retry' if self.push_retries == 1 else 'retries'}: "
                "another clone pushed first)"
                if self.push_retries
                else ""
            )
            out.append(f"  pushed: {', '.join(self.pushed)}{again}")
        elif self.merge != "skipped" or self.fetched:
            out.append("  pushed: nothing new")
        return out


def count_of(n: int, what: str) -> str:
    return f"{n} {what}{'' if n == 1 else 's'}"


def unreachable_message(name: str, url: str, verb: str, exc: Exception) -> str:
    return (
        f"could not {verb} {name} ({url}): {exc}\nCheck the address (`git remote -v`; change it "
        "with `git remote "
        f"set-url {name} URL`), the network and your credentials (a key or token git can use "
        "without asking). "
        "Nothing was lost: your commits stay here and go out with the next `autopoiesis sync`."
    )


def conflict_message(
    name: str, branch: str, paths: Sequence[str], *, aborted: bool, resumed: bool = False
) -> str:
    shown = "\n".join(f"  {p}" for p in paths)
    if aborted:
        return (
            f"merging {name}/{branch} gives conflicts in text both sides changed (not entries, "
            "which merge by id):\n"
            f"{shown}\nThe merge was undone: this clone is as it was, and nothing was pushed. Run "
            "`autopoiesis sync` "
            "yourself to merge and resolve them."
        )
    lead = (
        "the merge in progress still has conflicts in:"
        if resumed
        else f"merging {name}/{branch} left conflicts that need a person, in text both sides "
        "changed (entries merged by id):"
    )
    return (
        f"{lead}\n{shown}\nTo finish:\n"
        "  1. edit each file: keep the right text between <<<<<<< ours (this clone) and >>>>>>> "
        "theirs "
        f"({name}/{branch}), and delete the markers\n"
        f"  2. git add {' '.join(paths)}\n"
        "  3. autopoiesis sync     (commits the merge, re-applies the caps, pushes)\n"
        "Or give this merge up for now: git merge --abort (nothing is lost; the next sync merges "
        "again). Until the "
        "merge is finished or aborted, git allows no other commit: finished transcripts wait and "
        "are committed by "
        "the next sync or `autopoiesis commit`."
    )


# ── the clone's sync health ──
def sync_health(repo: MemoryRepo) -> dict[str, Any]:
    """{"last_ok": when a round last worked (or None), "failing": None, or {"since", "last",
    "attempts", "kind" ("conflict" or "stopped"), "paths", "message"}}."""
    try:
        data = json.loads(repo.state_file("sync_health", create=False).read_text("utf-8"))
    except (OSError, ValueError):
        data = {}
    if not isinstance(data, dict):
        data = {}
    failing = data.get("failing")
    return {
        "last_ok": data.get("last_ok"),
        "failing": failing if isinstance(failing, dict) else None,
    }


def record_health(repo: MemoryRepo, error: Exception | None) -> None:
    """Note how a round ended: ERROR None clears what stopped the syncs; else it is kept,
    with the time of the first round it stopped (`since`) and how many since."""
    now = format_ts(utc_now())
    health = sync_health(repo)
    if error is None:
        health = {"last_ok": now, "failing": None}
    else:
        before = health["failing"] or {}
        health["failing"] = {
            "since": before.get("since") or now,
            "last": now,
            "attempts": int(before.get("attempts") or 0) + 1,
            "kind": "conflict" if getattr(error, "paths", None) else "stopped",
            "paths": list(getattr(error, "paths", []) or []),
            "message": str(error)[:4000],
        }
    try:
        atomic_write(repo.state_file("sync_health"), json.dumps(health, indent=1))
    except OSError:
        pass  # a full disk: the error itself still reaches the caller


def health_problem(health: dict[str, Any]) -> str | None:
    """One line saying that the clone stopped syncing, since when and what to do; None
    while its syncs work."""
    failing = health.get("failing")
    if not failing:
        return None
    what = (
        f"a conflict in {', '.join(failing.get('paths') or [])} needs a person"
        if failing.get("kind") == "conflict"
        else str(failing.get("message") or "").splitlines()[0][:200]
    )
    attempts = count_of(int(failing.get("attempts") or 1), "attempt")
    return (
        f"sync stopped since {failing.get('since')} ({attempts}; last worked: "
        f"{health.get('last_ok') or 'never'}): {what}. Run `autopoiesis sync` to see it and "
        "finish it."
    )
