"""What one sync round did (SyncReport) and the messages a round stops with: what
happened and what to run (memory/sync.py runs the round)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from autopoiesis.core.paths import CONVERSATIONS_DIR


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
