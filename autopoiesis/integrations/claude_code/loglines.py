"""The `{"loglines": [...]}` JSON of simonw's claude-code-transcripts: Claude Code log
lines (`type`, `timestamp`, `message`, optionally `isCompactSummary`, `sessionId`,
`uuid`), as its `json` command or the Claude Code web API gives a session.

The lines are read exactly as a Claude Code log's (importer.parse_records). Lines
without a `sessionId` belong to the file's session: the id of its other lines, else the
file's name when that is a valid session id, else a hash of the first line.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from autopoiesis.capture.importers.base import (
    ImportReport,
    SessionDraft,
    json_probe,
    load_json,
    looks_like_jsonl,
)
from autopoiesis.errors import ImportFormatError
from autopoiesis.formats import transcript as tf
from autopoiesis.integrations.claude_code.importer import parse_records


class LoglinesImporter:
    name = "loglines"
    description = 'claude-code-transcripts JSON ({"loglines": [...]})'

    def detect(self, path: Path, text: str) -> float:
        if looks_like_jsonl(path, text) or not text.lstrip().startswith("{"):
            return 0.0
        probe = json_probe(text)
        return 1.0 if isinstance(probe, dict) and isinstance(probe.get("loglines"), list) else 0.0

    def read(self, path: Path, text: str, report: ImportReport) -> list[SessionDraft]:
        try:
            data = load_json(text)
        except ValueError as exc:
            raise ImportFormatError(f"{path}: not valid JSON ({exc}).") from None
        lines = data.get("loglines") if isinstance(data, dict) else None
        if not isinstance(lines, list):
            raise ImportFormatError(f'{path}: expected an object with a "loglines" list.')
        records: list[tuple[int, dict[str, Any]]] = []
        for n, line in enumerate(lines, 1):
            if isinstance(line, dict):
                records.append((n, line))
            else:
                report.skip_line(
                    str(path),
                    n,
                    f"loglines[{n - 1}] is a JSON {type(line).__name__}, not an object",
                )
        drafts = parse_records(
            records, str(path), report, default_session=_session_id(path, records)
        )
        for draft in drafts:
            draft.channel = "claude-code"
            draft.source = f"loglines:{path.name}"
        return drafts


def _session_id(path: Path, records: list[tuple[int, dict[str, Any]]]) -> str:
    for _, line in records:
        if isinstance(line.get("sessionId"), str) and tf.SESSION_ID_RE.match(line["sessionId"]):
            return str(line["sessionId"])
    if tf.SESSION_ID_RE.match(path.stem):
        return path.stem
    first = json.dumps(records[0][1] if records else {}, sort_keys=True, default=str).encode(
        "utf-8", "surrogatepass"
    )
    return f"cct_{hashlib.sha256(first).hexdigest()[:16]}"
