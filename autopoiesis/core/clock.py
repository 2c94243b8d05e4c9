"""The one clock: UTC now, and parsing and formatting of every timestamp kind.

Every time autopoiesis stores is UTC. A timestamp from outside (a harness event, an
imported log, a frontmatter field) goes through `parse_ts`, which refuses what cannot be
a real time of a conversation (NaN, infinities, years before 1970 or after 2200) with a
message saying how to write it, instead of letting a far-off value overflow later.

A time a conversation says it happened at (a captured event's, an imported turn's) must
pass more before it may date a file: `said_time` also refuses one more than FUTURE_SLACK
after now (a clock set years ahead would file the session, its journal and MEMORY.md's
`updated` under that year). One without a time zone is read as UTC, as parse_ts reads
it: a log replayed through `capture` keeps its own chronology (its arrival time would
date every turn of a conversation of last year today). The
capture and the importers' session builder, the owners of "when did this happen", keep
the event under another time with a warning when it fails (docs/harnesses.md).
"""

from __future__ import annotations

import math
import re
from datetime import UTC, date, datetime, timedelta
from typing import Any

from autopoiesis.errors import TimestampError

MIN_YEAR = 1970
MAX_YEAR = 2200
_MIN = datetime(MIN_YEAR, 1, 1, tzinfo=UTC)
_MAX = datetime(MAX_YEAR, 12, 31, 23, 59, 59, tzinfo=UTC)
_HINT = "write it like 2026-02-16T18:45:00Z"


def utc_now() -> datetime:
    """Now, aware, in UTC."""
    return datetime.now(UTC)


def today() -> date:
    """Today's date in UTC (the day every ledger, journal and tag is counted in)."""
    return utc_now().date()


def utc(dt: datetime) -> datetime:
    """DT as an aware UTC datetime (naive values are taken to be UTC)."""
    if dt.tzinfo is None:
        return dt.replace(tzinfo=UTC)
    return dt.astimezone(UTC)


def format_ts(dt: datetime) -> str:
    """2026-02-16T18:45:00Z (seconds precision)."""
    return utc(dt).replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")


def format_ts_micro(dt: datetime | None = None) -> str:
    """2026-02-16T18:45:00.123456Z, for logs whose lines must order within a second."""
    return utc(dt or utc_now()).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def format_minute(dt: datetime) -> str:
    """2026-02-16T18:45Z, the precision of a transcript turn."""
    return utc(dt).strftime("%Y-%m-%dT%H:%MZ")


_MS_FROM = 1e12  # the least number read as milliseconds (2001-09-09)


def _checked(dt: datetime, value: Any, field_name: str) -> datetime:
    # a YAML timestamp arrives as a datetime: said as written, not as its repr
    shown = value.isoformat() if isinstance(value, datetime) else repr(value)
    try:
        out = utc(dt)
    except (OverflowError, ValueError):
        raise TimestampError(f"{field_name} {shown} is out of range; {_HINT}.") from None
    if not _MIN <= out <= _MAX:
        raise TimestampError(
            f"{field_name} {shown} is outside {MIN_YEAR}-{MAX_YEAR}, which no conversation can "
            f"be; {_HINT}."
        )
    return out


_EPOCH_TEXT = re.compile(r"\d{9,13}(?:\.\d{1,9})?")


def parse_ts(value: Any, field_name: str = "timestamp") -> datetime:
    """An ISO-8601 string, epoch seconds or milliseconds, a date or a datetime, as aware UTC.

    Raises TimestampError (naming FIELD_NAME and how to write it) for anything else,
    including NaN, infinities and times outside 1970-2200."""
    if isinstance(value, datetime):
        return _checked(value, value, field_name)
    if isinstance(value, date):
        return _checked(datetime(value.year, value.month, value.day, tzinfo=UTC), value, field_name)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if isinstance(value, float) and not math.isfinite(value):
            raise TimestampError(f"{field_name} {value!r} is not a time; {_HINT}.")
        # JavaScript harnesses send milliseconds: 13 digits since 2001 (10^12 ms). A
        # smaller number is seconds, so 253402300800 (year 10000, a "never" sentinel) is
        # refused, not read as milliseconds of 1978.
        seconds = value / 1000 if abs(value) >= _MS_FROM else value
        try:
            dt = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(seconds=float(seconds))
        except (OverflowError, ValueError):
            raise TimestampError(f"{field_name} {value!r} is out of range; {_HINT}.") from None
        return _checked(dt, value, field_name)
    if isinstance(value, str):
        text = value.strip()
        if text[-1:] in ("Z", "z"):
            text = text[:-1] + "+00:00"
        try:
            parsed = datetime.fromisoformat(text)
        except ValueError:
            # epoch seconds or milliseconds sent as a string ("1772359500"): a log that
            # quotes every value; eight digits or fewer stay ISO's (20260301 is a day)
            if _EPOCH_TEXT.fullmatch(text):
                number = float(text)
                try:
                    return parse_ts(number, field_name)
                except TimestampError:
                    pass
        else:
            return _checked(parsed, value, field_name)
    raise TimestampError(f"{field_name} {value!r} is not an ISO-8601 timestamp; {_HINT}.")


# How far ahead of now a conversation's time may lie: clocks drift, and a harness on another
# machine may run a little ahead; a day more is a clock set wrong, not a conversation.
FUTURE_SLACK = timedelta(days=1)


def said_time(
    value: Any, field_name: str = "timestamp", *, now: datetime | None = None
) -> datetime:
    """VALUE, the time a conversation says one of its events happened at, as aware UTC,
    when it can be trusted to date what is filed: parse_ts's checks, and also refused
    (TimestampError, saying why) when it lies more than FUTURE_SLACK after NOW (default:
    now)."""
    dt = parse_ts(value, field_name)
    shown = value.isoformat() if isinstance(value, datetime) else repr(value)
    latest = utc(now or utc_now()) + FUTURE_SLACK
    if dt > latest:
        raise TimestampError(
            f"{field_name} {shown} is in the future (now is {format_ts(utc(now or utc_now()))}): "
            "the clock that wrote it is wrong."
        )
    return dt


def parse_day(value: str, field_name: str = "date") -> date:
    """YYYY-MM-DD as a date, with the same range as parse_ts."""
    try:
        day = date.fromisoformat(value.strip())
    except (ValueError, AttributeError):
        raise TimestampError(
            f"{field_name} {value!r} is not a date; write it like 2026-02-16."
        ) from None
    return parse_ts(day, field_name).date()


def iso_week(day: date) -> str:
    """2026-W07."""
    year, week, _ = day.isocalendar()
    return f"{year}-W{week:02d}"


# ── cron schedules (croniter, imported lazily: a tenth of a second) ──
_CRON_HINT = (
    'write five fields (minute hour day-of-month month day-of-week, in UTC), e.g. "0 23 * * *" for '
    'every day at 23:00, "*/30 * * * *" for every half hour, "0 0 * * 0" for Sundays at midnight'
)


def check_cron(schedule: object) -> str | None:
    """None when SCHEDULE is a cron expression that fires (five fields, or an alias such as
    @daily), else why not and what to write. The one check of cron syntax: the config's
    schedules and the topics' cron triggers both use it."""
    from croniter import croniter
    from croniter.croniter import CroniterBadDateError

    if not isinstance(schedule, str) or not schedule.strip():
        return f"is not a cron expression; {_CRON_HINT}"
    text = schedule.strip()
    if not text.startswith("@") and len(text.split()) != 5:
        return f"is not a cron expression of five fields; {_CRON_HINT}"
    if not croniter.is_valid(text):
        return f"is not a cron expression; {_CRON_HINT}"
    try:
        croniter(text, datetime(2026, 1, 1, tzinfo=UTC)).get_next(datetime)
    except CroniterBadDateError:
        return f"never fires (no such date); {_CRON_HINT}"
    return None


def cron_next(schedule: str, after: datetime) -> datetime:
    """The first time SCHEDULE fires strictly after AFTER (UTC, aware)."""
    from croniter import croniter

    return utc(croniter(schedule.strip(), utc(after)).get_next(datetime))
