"""The times workspace files record (a review decision's and a cached judge answer's `at`): ISO 8601
in UTC, written with a `Z`."""
from __future__ import annotations

from datetime import datetime, timezone
from typing import Any


def parse_time(value: Any) -> datetime | None:
    """An ISO-8601 time in UTC (``2026-11-30T14:02:11Z`` or ``+00:00``), else None."""
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None or moment.utcoffset() != timezone.utc.utcoffset(None):
        return None
    return moment.astimezone(timezone.utc)


def format_time(moment: datetime) -> str:
    """A decision's `at`: ISO-8601 in UTC with a `Z`, to the second, or to the millisecond when it has them."""
    spec = "milliseconds" if moment.microsecond else "seconds"
    return moment.astimezone(timezone.utc).replace(tzinfo=None).isoformat(timespec=spec) + "Z"


def now() -> str:
    """The current time as a decision's `at`, to the millisecond (a verdict recorded in the same second is
    still before or after it)."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
