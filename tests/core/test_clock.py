"""Timestamps (autopoiesis.core.clock): parsed to UTC, absurd ones refused with a hint."""

from __future__ import annotations

import math
from datetime import UTC, date, datetime

import pytest

from autopoiesis.core import clock
from autopoiesis.errors import TimestampError


@pytest.mark.parametrize(
    "bad",
    [
        math.nan,
        math.inf,
        -math.inf,
        1e20,
        253402300800,  # year 10000 in seconds (a "never" sentinel), not 1978 in milliseconds
        99999999999,
        "99999999999",  # as text: the same number, refused the same way
        "0001-01-01T00:00:00+01:00",
        "9999-12-31T23:59:59-05:00",
        "yesterday",
        "",
        True,
        None,
        [1],
    ],
)
def test_absurd_timestamps_are_refused_with_a_hint(bad: object) -> None:
    with pytest.raises(TimestampError, match="2026-02-16T18:45:00Z"):
        clock.parse_ts(bad, "started")


def test_timestamps_parse_to_utc() -> None:
    assert clock.parse_ts("2026-02-16T19:45:00+01:00") == datetime(2026, 2, 16, 18, 45, tzinfo=UTC)
    assert clock.parse_ts(1771267500) == datetime(2026, 2, 16, 18, 45, tzinfo=UTC)
    assert clock.parse_ts(1771267500000) == datetime(
        2026, 2, 16, 18, 45, tzinfo=UTC
    )  # milliseconds
    assert clock.parse_ts(date(2026, 2, 16)) == datetime(2026, 2, 16, tzinfo=UTC)
    # epoch seconds or milliseconds quoted as text (a log that quotes every value) were
    # refused, and the message they stamped with them; eight digits stay an ISO day
    assert clock.parse_ts("1771267500") == datetime(2026, 2, 16, 18, 45, tzinfo=UTC)
    assert clock.parse_ts(" 1771267500000 ") == datetime(2026, 2, 16, 18, 45, tzinfo=UTC)
    assert clock.parse_ts("1771267500.5") == datetime(2026, 2, 16, 18, 45, 0, 500000, tzinfo=UTC)
    assert clock.parse_ts("20260216") == datetime(2026, 2, 16, tzinfo=UTC)
    assert clock.format_ts(datetime(2026, 2, 16, 18, 45, 9, 500)) == "2026-02-16T18:45:09Z"
    assert clock.iso_week(date(2026, 2, 16)) == "2026-W08"
    assert clock.utc_now().tzinfo == UTC
