"""A team's memory left unattended (issue 26): three clones of one memory, a real daemon
each (`autopoiesis daemon run`: commits and syncs every minute, after commits and
extraction too), one bare remote served over HTTP by git's http-backend on loopback.

For the run's length a driver works the three clones at random: sessions captured from
mixed channels (`autopoiesis capture`, which extracts each one; the same projects'
launch dates stated on every clone, later ones moving them), extraction by hand
(`autopoiesis extract --pending`), hand edits (a clone's own notes file; the text of an
entry extracted from the clone's own sessions). All along, every clone's `daemon status`
is compared with what is true: the daemon runs, and its sync is shown stopped exactly
when its last sync failed.

At the end the daemons get a few minutes to bring the clones together, are stopped, and
the figures are read: conflicts that needed a person, push races and their retries,
transcripts and entries lost or duplicated (every entry id the remote's history ever
held, against the clones' final knowledge/ and archive/), subjects with two live values,
`git gc` and `git maintenance run`, `autopoiesis verify`.

    python bench/run.py team --quick     # 3 minutes of work
    python bench/run.py team             # 20 minutes
    python bench/bench_team.py --minutes 60
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

CLONES = ("a", "b", "c")
CHANNELS = ("cli", "slack", "webchat", "email")
PROJECTS = ("atlas", "borealis", "cirrus")
TECH = ("Postgres", "SQLite", "Redis", "Kafka", "NATS", "DuckDB", "Caddy", "nginx")
COMPONENTS = ("store", "queue", "cache", "gateway", "scheduler")
MONTHS = ("June", "July", "August", "September")
CONFIG = {
    "auto_push: false": "auto_push: true",
    "commit_interval_minutes: 30": "commit_interval_minutes: 1",
    'condensation_schedule: "0 23 * * *"': 'condensation_schedule: "*/10 * * * *"',
    'pruning_schedule: "0 0 * * 0"': 'pruning_schedule: "*/15 * * * *"',
}


def _env(home: Path, who: str) -> dict[str, str]:
    return {
        **os.environ,
        "HOME": str(home),
        "GIT_AUTHOR_NAME": f"clone {who}",
        "GIT_AUTHOR_EMAIL": f"{who}@team.example",
        "GIT_COMMITTER_NAME": f"clone {who}",
        "GIT_COMMITTER_EMAIL": f"{who}@team.example",
        "GIT_CONFIG_NOSYSTEM": "1",
        "AUTOPOIESIS_NO_DAEMON": "1",  # the driver's own calls run by themselves
    }


def _ap(
    root: Path | None,
    env: dict[str, str],
    *args: str,
    stdin: str | None = None,
    timeout: float = 600,
) -> subprocess.CompletedProcess[str]:
    """`autopoiesis -C ROOT ARGS` in a process of its own (no -C when ROOT is None)."""
    where = ["-C", str(root)] if root is not None else []
    return subprocess.run(
        [sys.executable, "-m", "autopoiesis", *where, *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        check=False,
    )


def _git(
    root: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", *args], cwd=root, capture_output=True, text=True, env=env, check=False
    )


class Team:
    """The three clones, their daemons, the remote, and what the driver did."""

    def __init__(self, tmp: Path, seed: int):
        from autopoiesis.testing.git_http import GitHTTPServer

        self.tmp = tmp
        self.rng = random.Random(seed)
        self.home = tmp / "home"
        self.home.mkdir()
        self.roots = {who: tmp / who for who in CLONES}
        self.envs = {who: _env(self.home, who) for who in CLONES}
        self.server = GitHTTPServer(tmp / "srv").start()
        self.remote = tmp / "srv" / "memory.git"
        self.daemons: dict[str, subprocess.Popen[bytes]] = {}
        self.captured: dict[str, str] = {}  # session id -> transcript path
        self.counts: Counter[str] = Counter()
        self.dates: dict[str, int] = {p: 0 for p in PROJECTS}  # the latest day stated
        self.status_checks = 0
        self.status_untrue: list[str] = []
        self.errors: list[str] = []
        self._stop = threading.Event()

    # ── set-up ──
    def start(self) -> None:
        a = self.roots["a"]
        done = _ap(None, self.envs["a"], "init", str(a))
        assert done.returncode == 0, done.stderr
        config = a / "memory-config.yaml"
        text = config.read_text(encoding="utf-8")
        for old, new in CONFIG.items():
            assert old in text, old
            text = text.replace(old, new)
        config.write_text(text, encoding="utf-8")
        _git(a, "commit", "-qam", "maintenance: a team's settings", env=self.envs["a"])
        subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(self.remote)], check=True)
        url = self.server.url("memory.git")
        _git(a, "remote", "add", "origin", url)
        done = _ap(a, self.envs["a"], "sync")
        assert done.returncode == 0, done.stderr
        for who in CLONES[1:]:
            subprocess.run(
                ["git", "clone", "-q", url, str(self.roots[who])], check=True, env=self.envs[who]
            )
            done = _ap(None, self.envs[who], "init", str(self.roots[who]))
            assert done.returncode == 0, done.stderr
        for who in CLONES:  # this machine's settings: no harness folders to watch
            local = self.roots[who] / ".git" / "autopoiesis" / "config.yaml"
            local.parent.mkdir(parents=True, exist_ok=True)
            local.write_text("daemon:\n  session_globs: []\n", encoding="utf-8")
            log = open(self.tmp / f"daemon-{who}.log", "wb")
            self.daemons[who] = subprocess.Popen(
                [sys.executable, "-m", "autopoiesis", "-C", str(self.roots[who]), "daemon", "run"],
                env=self.envs[who],
                stdout=log,
                stderr=subprocess.STDOUT,
            )

    # ── the work ──
    def _sentence(self, who: str) -> str:
        project = self.rng.choice(PROJECTS)
        kind = self.rng.random()
        if kind < 0.3:
            self.dates[project] += self.rng.randint(1, 3)
            day = self.dates[project]
            when = f"{MONTHS[min(day // 28, 3)]} {day % 28 + 1}"
            verb = "was moved to" if day > 3 else "is planned for"
            return f"The {project} launch {verb} {when}."
        if kind < 0.6:
            return (
                f"We decided to use {self.rng.choice(TECH)} for the {project} "
                f"{self.rng.choice(COMPONENTS)}."
            )
        if kind < 0.8:
            return f"Remember that the {project} API runs on port {self.rng.randint(2000, 9999)}."
        return f"Lesson learned: always run the {project} migrations before deploying from {who}."

    def capture(self, who: str) -> None:
        n = self.counts[f"capture {who}"]
        sid = f"ses-{who}-{n:04d}"
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        said = " ".join(self._sentence(who) for _ in range(self.rng.randint(1, 3)))
        events = [
            {
                "event": "session_start",
                "session_id": sid,
                "started": now,
                "channel": self.rng.choice(CHANNELS),
            },
            {"event": "message", "role": "user", "content": said, "timestamp": now},
            {"event": "message", "role": "agent", "content": "Noted.", "timestamp": now},
            {"event": "session_end"},
        ]
        done = _ap(
            self.roots[who],
            self.envs[who],
            "capture",
            stdin="\n".join(json.dumps(e) for e in events) + "\n",
        )
        self.counts[f"capture {who}"] += 1
        self.counts["captures"] += 1
        for line in done.stdout.splitlines():
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if event.get("event") == "committed" and event.get("path"):
                self.captured[sid] = event["path"]
        if done.returncode != 0 or sid not in self.captured:
            self.errors.append(f"capture {sid}: exit {done.returncode}: {done.stderr[-300:]}")

    def extract(self, who: str) -> None:
        done = _ap(self.roots[who], self.envs[who], "extract", "--pending")
        self.counts["extractions by hand"] += 1
        if done.returncode != 0:
            self.errors.append(f"extract on {who}: {done.stderr[-300:]}")

    def hand_edit(self, who: str) -> None:
        from autopoiesis.formats import knowledge as kf

        root = self.roots[who]
        if self.rng.random() < 0.5:
            notes = root / "knowledge" / "reference" / f"notes-{who}.md"
            if not notes.exists():
                notes.write_text(f"# Notes kept on {who}\n\n", encoding="utf-8")
            with open(notes, "a", encoding="utf-8") as fh:
                fh.write(f"- noted by hand on {who}, {datetime.now(UTC):%H:%M:%S}\n")
            self.counts["hand edits (own notes)"] += 1
            return
        mine = re.compile(rf"\(via ses-{who}-\d+\)")
        for path in sorted((root / "knowledge" / "reference").glob("*.md")):
            if path.name.startswith("notes-"):
                continue
            text = path.read_text(encoding="utf-8")
            doc = kf.parse(text)
            for si, section in enumerate(doc.sections):
                for li, line in enumerate(section.lines):
                    if (
                        isinstance(line, kf.Entry)
                        and line.active
                        and mine.search(line.render())
                        and "(checked)" not in line.text
                    ):
                        edited = kf.Entry(
                            line.id,
                            line.text.rstrip(".") + " (checked).",
                            line.date,
                            line.source,
                            line.at,
                            line.tags,
                        )
                        if kf.parse_line(edited.render()) == edited:
                            path.write_text(
                                kf.render(doc.replace_line(si, li, edited)), encoding="utf-8"
                            )
                            self.counts["hand edits (entry text)"] += 1
                            return

    def drive(self, seconds: float, pause: tuple[float, float]) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            who = self.rng.choice(CLONES)
            roll = self.rng.random()
            if roll < 0.65:
                self.capture(who)
            elif roll < 0.75:
                self.extract(who)
            else:
                self.hand_edit(who)
            time.sleep(self.rng.uniform(*pause))

    # ── daemon status, against what is true ──
    def watch_status(self, every: float) -> None:
        last: dict[str, tuple[bool, bool] | None] = {who: None for who in CLONES}
        while not self._stop.wait(every):
            for who in CLONES:
                if self._stop.is_set():
                    return
                done = _ap(
                    self.roots[who], self.envs[who], "daemon", "status", "--json", timeout=120
                )
                try:
                    shown = json.loads(done.stdout)
                except ValueError:
                    self.status_untrue.append(f"{who}: no JSON ({done.stderr[-200:]})")
                    continue
                self.status_checks += 1
                alive = self.daemons[who].poll() is None
                if shown.get("running") != alive:
                    self.status_untrue.append(
                        f"{who}: running={shown.get('running')}, alive={alive}"
                    )
                stopped = bool((shown.get("sync") or {}).get("problem"))
                if (done.returncode == 1) != stopped:
                    self.status_untrue.append(f"{who}: exit {done.returncode}, stopped={stopped}")
                job = (shown.get("jobs") or {}).get("sync") or {}
                if job.get("state") == "running" or not job.get("last_result"):
                    last[who] = None
                    continue
                failed = job["last_result"] in ("failed", "timeout")
                # the job's record and the health file are written a moment apart: a
                # disagreement counts when two looks in a row see it
                agree = failed == stopped
                if not agree and last[who] == (failed, stopped):
                    self.status_untrue.append(
                        f"{who}: sync job {job['last_result']}, status says "
                        f"{'stopped' if stopped else 'working'}"
                    )
                last[who] = (failed, stopped) if not agree else None

    # ── the end ──
    def settle(self, limit: float) -> float:
        """Wait (at most LIMIT s) for the daemons to bring every clone to the remote's tip
        with nothing left to commit; the seconds it took."""
        started = time.monotonic()
        while time.monotonic() - started < limit:
            tips = {_git(r, "rev-parse", "HEAD").stdout.strip() for r in self.roots.values()}
            remote = _git(self.remote, "rev-parse", "main").stdout.strip()
            clean = all(
                not _git(r, "status", "--porcelain", "--", "knowledge", "archive", "raw").stdout
                for r in self.roots.values()
            )
            if tips == {remote} and clean:
                return time.monotonic() - started
            time.sleep(5)
        return -1.0

    def stop_watching(self) -> None:
        self._stop.set()

    def stop(self) -> None:
        self._stop.set()
        for proc in self.daemons.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.daemons.values():
            try:
                proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                proc.kill()
        self.server.stop()


def _log_rows(root: Path) -> list[dict[str, Any]]:
    path = root / ".autopoiesis" / "logs" / "daemon.jsonl"
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines() if path.exists() else []:
        try:
            rows.append(json.loads(line))
        except ValueError:
            pass
    return rows


def _ids_in_history(remote: Path) -> set[str]:
    out = _git(remote, "log", "--all", "-p", "--format=", "--", "knowledge", "archive").stdout
    return set(re.findall(r"^\+.*\{id: (\d{8}-\d{4}-[0-9a-f]{6})\}", out, re.M))


def _final_entries(root: Path) -> tuple[set[str], int, list[str]]:
    """(every entry id in knowledge/ and archive/, duplicates, subjects with two live values)."""
    from autopoiesis.formats import knowledge as kf

    ids: set[str] = set()
    duplicates = 0
    live_by_subject: dict[str, set[str]] = {}
    for top in ("knowledge", "archive"):
        for path in sorted((root / top).rglob("*.md")):
            rel = path.relative_to(root).as_posix()
            doc = kf.parse(path.read_text(encoding="utf-8"))
            seen: set[str] = set()
            facts: Counter[str] = Counter()
            for _, e in doc.entries():
                duplicates += e.id in seen
                seen.add(e.id)
                ids.add(e.id)
                if e.active and kf.is_current_state(rel):
                    facts[kf.normalize_fact(e.text)] += 1
                    if e.subject:
                        live_by_subject.setdefault(e.subject, set()).add(e.id)
            duplicates += sum(n - 1 for n in facts.values() if n > 1)
    two = sorted(s for s, found in live_by_subject.items() if len(found) > 1)
    return ids, duplicates, two


def _sync_figures(team: Team) -> dict[str, Any]:
    """What the daemons' logs say of their sync rounds."""
    syncs = [
        r
        for root in team.roots.values()
        for r in _log_rows(root)
        if r.get("job") == "sync" and r.get("event") in ("finished", "failed", "timeout")
    ]
    failed = [r for r in syncs if r.get("event") != "finished"]
    races = re.compile(r"failed to update ref|fetch first|failed to lock|cannot lock ref")
    seconds = [float(r["seconds"]) for r in syncs if r.get("event") == "finished"]
    return {
        "rounds": len(syncs),
        "failed": failed,
        "conflicts": sum("conflict" in str(r.get("message", "")) for r in failed),
        "unretried": sum(bool(races.search(str(r.get("message", "")))) for r in failed),
        "retries": sum(int((r.get("data") or {}).get("push_retries") or 0) for r in syncs),
        "settled": sum(
            int(m.group(1))
            for r in syncs
            for line in (r.get("data") or {}).get("settled") or []
            for m in [re.match(r"(\d+) earlier value", str(line))]
            if m
        ),
        "seconds": seconds,
    }


def _end_figures(team: Team) -> dict[str, Any]:
    """The clones at the end: tips, transcripts, entries, subjects, gc, maintenance, verify."""
    remote_tip = _git(team.remote, "rev-parse", "main").stdout.strip()
    at_tip = sum(
        _git(r, "rev-parse", "HEAD").stdout.strip() == remote_tip for r in team.roots.values()
    )
    lost_t = unequal_t = 0
    for path in set(team.captured.values()):
        blobs = [_git(r, "rev-parse", f"HEAD:{path}") for r in team.roots.values()]
        lost_t += any(b.returncode != 0 for b in blobs)
        unequal_t += len({b.stdout for b in blobs}) > 1
    history = _ids_in_history(team.remote)
    lost_e: set[str] = set()
    duplicated = 0
    two_live: set[str] = set()
    for root in team.roots.values():
        ids, dup, two = _final_entries(root)
        lost_e |= history - ids
        duplicated = max(duplicated, dup)
        two_live |= set(two)
    return {
        "at_tip": at_tip,
        "lost_t": lost_t,
        "unequal_t": unequal_t,
        "history": history,
        "lost_e": lost_e,
        "duplicated": duplicated,
        "two_live": two_live,
        "gc": sum(_git(r, "gc", "--quiet").returncode == 0 for r in team.roots.values()),
        "maintenance": sum(
            _git(r, "maintenance", "run").returncode == 0 for r in team.roots.values()
        ),
        "verify": sum(
            _ap(r, team.envs[w], "verify").returncode == 0 for w, r in team.roots.items()
        ),
    }


def _rows(team: Team, minutes: float, wall: float, settled: float) -> list[dict]:
    sync, end = _sync_figures(team), _end_figures(team)
    edits = team.counts["hand edits (own notes)"] + team.counts["hand edits (entry text)"]
    seconds = sync["seconds"]
    figures = [
        (
            "length of the run: driving / whole (set-up and settling too)",
            f"{minutes:g} / {wall / 60:.1f}",
            "min",
            "",
        ),
        (
            "sessions captured / extractions by hand / hand edits",
            f"{team.counts['captures']} / {team.counts['extractions by hand']} / {edits}",
            "",
            "",
        ),
        (
            "sync rounds run by the daemons (failed)",
            f"{sync['rounds']} ({len(sync['failed'])})",
            "",
            "",
        ),
        ("sync rounds stopped by a conflict that needs a person", sync["conflicts"], "", "0"),
        (
            "push races retried / races left unretried",
            f"{sync['retries']} / {sync['unretried']}",
            "",
            "all / 0",
        ),
        (
            "daemon sync round, median (max)",
            f"{statistics.median(seconds):.1f} ({max(seconds):.1f})" if seconds else "-",
            "s",
            "",
        ),
        (
            "clones at the remote's tip after settling (seconds to settle)",
            f"{end['at_tip']}/3 ({settled:.0f})",
            "",
            "3/3",
        ),
        (
            "transcripts captured / lost / not byte-identical on every clone",
            f"{len(team.captured)} / {end['lost_t']} / {end['unequal_t']}",
            "",
            "n / 0 / 0",
        ),
        (
            "entry ids the history ever held / lost / duplicated at the end",
            f"{len(end['history'])} / {len(end['lost_e'])} / {end['duplicated']}",
            "",
            "n / 0 / 0",
        ),
        (
            "earlier values of a subject superseded by a merge / subjects left with two live",
            f"{sync['settled']} / {len(end['two_live'])}",
            "",
            "n / 0",
        ),
        (
            "daemon status looks / untrue",
            f"{team.status_checks} / {len(team.status_untrue)}",
            "",
            "n / 0",
        ),
        (
            "clones where git gc / git maintenance run / verify pass",
            f"{end['gc']} / {end['maintenance']} / {end['verify']}",
            "",
            "3 / 3 / 3",
        ),
        ("driver errors (capture or extract that failed)", len(team.errors), "", "0"),
    ]
    notes = team.status_untrue + team.errors + [str(r.get("message"))[:300] for r in sync["failed"]]
    notes += [f"lost id {i}" for i in sorted(end["lost_e"])] + sorted(end["two_live"])
    for note in notes[:12]:
        print(f"  note: {note}", file=sys.stderr)
    return [
        {"bench": "team", "metric": m, "value": v, "unit": u, "target": t} for m, v, u, t in figures
    ]


def run(quick: bool = False, large: bool = False, minutes: float | None = None) -> list[dict]:
    minutes = minutes if minutes is not None else (3.0 if quick else (60.0 if large else 20.0))
    pause = (2.0, 6.0) if quick else (4.0, 12.0)
    with tempfile.TemporaryDirectory(prefix="ap-team-") as d:
        team = Team(Path(d), seed=26)
        started = time.monotonic()
        try:
            team.start()
            watcher = threading.Thread(target=team.watch_status, args=(10.0,), daemon=True)
            watcher.start()
            team.drive(minutes * 60, pause)
            settled = team.settle(limit=600)
            team.stop_watching()
            watcher.join(timeout=300)
        finally:
            team.stop()
        return _rows(team, minutes, time.monotonic() - started, settled)


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--minutes", type=float, default=None)
    ns = parser.parse_args()
    for r in run(quick=ns.quick, minutes=ns.minutes):
        print(f"{r['metric']:<72} {r['value']!s:<22} {r['unit']:<4} {r['target']}")
