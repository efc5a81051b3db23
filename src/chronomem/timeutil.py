"""Time parsing and conversion.

chronomem stores every time as a timezone-aware UTC ``datetime``.  Naive or
date-only input means 00:00 UTC (naive datetimes are read as UTC).  Inside the
stores times are integers: microseconds since the Unix epoch.  A turn's time
keeps the UTC offset it was given with (``Message.timestamp``; the stores keep
the offset beside the instant), so its time words are read on its speaker's clock.

A string is ISO 8601 as ``datetime.fromisoformat`` reads it: a date ("2020-06-01"), a datetime with
or without an offset ("2020-06-01T09:30:00", "…+02:00", "…Z").  The reduced-precision forms "2020"
and "2020-06" name a year or a month, not an instant, and are taken only where a fact's validity
starts or ends (``valid_from``, ``valid_to``, ``stated_to``; see :data:`PERIOD_FIELDS`): there they
mean the first instant of that year or month, 00:00 UTC, as a date means its day's first instant.
So ``valid_from="2020"`` is 2020-01-01, and ``valid_to="2020"`` is also 2020-01-01: intervals are
half-open, the fact ended as 2020 began, the reading :mod:`chronomem.timeexpr` gives "sold my car in
2020" (a change dated by a period happens at its start); a fact that held through 2020 ends at
"2021".  Every other time (``as_of``, ``now``, a turn's ``timestamp``, ``ended_at`` …) is an instant,
and "as of 2020" could mean its first day, its last or the whole year: those refuse the reduced
forms with a :class:`ValidationError` that names the dates to write instead.
"""

from __future__ import annotations

import calendar
import re
from datetime import date, datetime, timedelta, timezone
from typing import Any

from .errors import ValidationError

UTC = timezone.utc
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_ONE_MICROSECOND = timedelta(microseconds=1)

#: the fields that take a reduced-precision date ("2020", "2020-06") as that year's or month's first
#: instant: where a fact's validity starts or ends (a field's last part: "facts[0].valid_from" counts)
PERIOD_FIELDS = frozenset({"valid_from", "valid_to", "stated_to"})
_REDUCED = re.compile(r"(\d{4})(?:-(\d{1,2}))?")  # a year, or a year and a month ("2020-6": to say what is wrong)
_FORMS = "an ISO-8601 date or datetime: 2024-05-01, 2024-05-01T09:30:00 or 2024-05-01T09:30:00+02:00 (Z: UTC)"


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
            dt = _reduced(text, value, field)
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


def _reduced(text: str, value: Any, field: str) -> datetime:
    """A reduced-precision ISO-8601 date, "2020" or "2020-06", as its first instant where ``field``
    takes one (module doc); otherwise a :class:`ValidationError` that says what to write instead."""
    period = field.rsplit(".", 1)[-1] in PERIOD_FIELDS
    accepted = _FORMS + (", or 2024 / 2024-05 for the start of that year / month" if period else "")
    m = _REDUCED.fullmatch(text)
    if m is None:
        if (d := re.match(r"(\d{4})-(\d{2})-(\d{2})", text)) and 1 <= int(d.group(2)) <= 12 and int(d.group(1)):
            y, mo = int(d.group(1)), int(d.group(2))
            days = calendar.monthrange(y, mo)[1]
            if not 1 <= int(d.group(3)) <= days:  # "2023-02-29"
                raise ValidationError(field, value, f"no such date: {calendar.month_name[mo]} {y} has {days} "
                                                    f"days; expected {accepted}")
        raise ValidationError(field, value, f"expected {accepted}")
    year, month_s = int(m.group(1)), m.group(2)
    month = int(month_s or 1)
    if not 1 <= month <= 12:
        raise ValidationError(field, value, f"{month_s} is not a month (01 to 12); expected {accepted}")
    if month_s is not None and len(month_s) != 2:
        raise ValidationError(field, value, f"write the month with two digits ({year:04d}-{month:02d}); "
                                            f"expected {accepted}")
    if year < 1:
        raise ValidationError(field, value, "out of range: the time must fall between the years 1 and 9999 "
                                            "in UTC")
    if not period:
        first, last = (f"{year:04d}-01-01", f"{year:04d}-12-31") if month_s is None else (
            f"{year:04d}-{month:02d}-01", f"{year:04d}-{month:02d}-{calendar.monthrange(year, month)[1]:02d}")
        raise ValidationError(field, value, f"a {'year' if month_s is None else 'month'} is not an instant: write "
                                            f"{first} for its start or {last} for its last day (expected {_FORMS}; "
                                            f"a bare year or month is taken only as a fact's valid_from or valid_to)")
    return datetime(year, month, 1)


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
