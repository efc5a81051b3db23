"""Time parsing and conversion.

chronomem stores every time as a timezone-aware UTC ``datetime``.  Naive or
date-only input means 00:00 UTC (naive datetimes are read as UTC).  Inside the
stores times are integers: microseconds since the Unix epoch.  A turn's time
keeps the UTC offset it was given with (``Message.timestamp``; the stores keep
the offset beside the instant), so its time words are read on its speaker's clock.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone
from typing import Any

from .errors import ValidationError

UTC = timezone.utc
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_ONE_MICROSECOND = timedelta(microseconds=1)


def utcnow() -> datetime:
    return datetime.now(UTC)


def parse_time(value: Any, field: str = "time", *, keep_offset: bool = False) -> datetime:
    """Turn a ``datetime``, ``date`` or ISO-8601 string into an aware UTC datetime.

    ``keep_offset``: an aware value keeps its own UTC offset (the same instant, on the speaker's
    clock: a turn's time words are read in its speaker's day).  Raises :class:`ValidationError`
    naming ``field`` when the value cannot be read.
    """
    if isinstance(value, datetime):
        dt = value
    elif isinstance(value, date):
        dt = datetime(value.year, value.month, value.day)
    elif isinstance(value, str):
        text = value.strip()
        if not text:
            raise ValidationError(field, value, "empty time string")
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        try:
            dt = datetime.fromisoformat(text)
        except ValueError:
            raise ValidationError(field, value, "not an ISO-8601 date or datetime") from None
    else:
        raise ValidationError(field, value, "expected a datetime, date or ISO-8601 string")
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    try:
        utc = dt.astimezone(UTC)
        return at_offset(utc, local_offset(dt)) if keep_offset else utc  # a fixed offset, as stored
    except OverflowError:  # "9999-12-31T23:00:00-05:00" is past datetime's last instant in UTC
        raise ValidationError(field, value, "out of range: the time must fall between the years 1 and 9999 "
                                            "in UTC") from None


def local_offset(dt: datetime) -> int | None:
    """Minutes east of UTC that ``dt`` carries (``None`` for UTC or a naive time)."""
    off = dt.utcoffset()
    return int(off.total_seconds() // 60) if off else None


def at_offset(dt: datetime, minutes: int | None) -> datetime:
    """``dt`` (aware) on a clock ``minutes`` east of UTC (``None``: UTC)."""
    return dt.astimezone(timezone(timedelta(minutes=minutes)) if minutes else UTC)


def parse_optional_time(value: Any, field: str) -> datetime | None:
    return None if value is None else parse_time(value, field)


def to_micros(dt: datetime) -> int:
    if dt.tzinfo is None:  # naive: local time, as astimezone reads it
        dt = dt.astimezone(UTC)
    return (dt - _EPOCH) // _ONE_MICROSECOND  # exact integer arithmetic, any offset


def from_micros(us: int) -> datetime:
    return _EPOCH + timedelta(microseconds=us)


def iso(dt: datetime | None) -> str | None:
    return None if dt is None else dt.astimezone(UTC).isoformat()
