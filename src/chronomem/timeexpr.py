"""Relative time expressions → absolute UTC periods and validity intervals.

The extractor asks the model for the time expression *as said* ("last
Sunday", "from 2016 to 2021", "for three years"); this module resolves it in
code against the timestamp of the message it came from.  Everything here is a
pure function of ``(expression, reference time)``.

Two steps:

* :func:`resolve` parses an expression into a :class:`Resolved` — what kind of
  temporal statement it is (a point, "since", "until", a range, a duration)
  and the absolute period(s) it denotes;
* :func:`validity` turns that into a fact's half-open ``[valid_from, valid_to)``
  (``None`` = open/unknown), given whether the fact states an *ending*.

Granularity rules (documented contract, tested in ``tests/test_timeexpr.py``):

* A named period is the half-open calendar span it names, in UTC:
  ``day`` ("yesterday", "8 May 2023", "last Sunday"), ``weekend`` (Saturday
  00:00 → Monday 00:00), ``week`` (ISO weeks, Monday 00:00 → next Monday),
  ``month``, ``season`` (northern-hemisphere meteorological seasons: spring
  Mar–May, summer Jun–Aug, autumn Sep–Nov, winter Dec–Feb; "winter 2020" is
  Dec 2020 – Feb 2021), ``year``, ``decade``; an ISO datetime with a clock
  time is an ``instant`` (one second wide).
* Offsets ("two years ago", "in 3 months", "a week ago") are day-resolution
  points computed by calendar arithmetic and flagged ``approximate``.
* "last X" is the most recent X that has *ended* by the reference time
  ("last summer" said in July 2023 is summer 2022; "last Sunday" said on a
  Sunday is a week ago), "next X" is the first X that *starts* after it,
  "this X" is the X containing it (for weekdays and weekends: in the current
  ISO week), and a bare X ("in May", "on Sunday", "on 8 May") is the most
  recent X that has *started* by then — statements about the past dominate
  conversations; a future date needs "next" or an explicit year.
* "last week / month / year" are the previous calendar week / month / year;
  "the past N units" and "for N units" are durations ending at the reference.
* A state change dated by a period happens at the *start* of that period
  ("moved to Berlin last week" → ``valid_from`` = Monday of last week; "sold
  the car in 2021" → ``valid_to`` = 2021-01-01).  The end of a range or of
  "until" is the *end* of the named period ("from 2016 to 2021" includes 2021;
  "before 2020" ends at 2020-01-01).  Overlaps this creates between
  single-valued facts are settled by the graph's update rules, not here.
* No expression, or one that cannot be resolved ("recently", "when I was a
  kid") → the fact takes the message time (``valid_from`` = reference), or for
  an ending, ``valid_to`` = reference (it had ended by the time it was said).
* So does a time before year 1 or after 9999, which no ``datetime`` holds ("last year" said in year 1,
  "next year" in 9999): :func:`resolve` gives ``None`` rather than raising.  A period that begins in
  9999 and would end after it ends at datetime's last instant.
* So does a date no calendar has: "Feb 29, 2023" (2023 is not a leap year), "29 February 2019",
  "Feb 30", "April 31, 2022", "2023-02-29".  The whole expression is unreadable, like "2023-13": no
  part of it is taken instead (not the "Feb 29" of another year, nor the year 2023 alone), since a
  slip in the day says nothing sure about the rest.  A bare "29 February" is the latest one begun
  (a leap year's), as any bare day is.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass, replace
from datetime import date, datetime, time, timedelta, timezone
from typing import Callable, Literal

from dateutil.relativedelta import relativedelta

UTC = timezone.utc

Granularity = Literal["instant", "day", "weekend", "week", "month", "season", "year", "decade"]
Kind = Literal["point", "since", "until", "range", "duration"]

__all__ = [
    "Period",
    "Resolved",
    "resolve",
    "resolve_period",
    "validity",
    "resolve_validity",
]


@dataclass(frozen=True, slots=True)
class Period:
    """A half-open absolute span ``[start, end)`` in UTC at some granularity."""

    start: datetime
    end: datetime
    granularity: Granularity
    approximate: bool = False


@dataclass(frozen=True, slots=True)
class Resolved:
    """A parsed time expression.

    ``start``/``end`` bound what the expression denotes (``None`` = unbounded):

    * ``point``: the period itself ("yesterday", "in 2019");
    * ``since``: ``[period.start, None)``;
    * ``until``: ``[None, end)``;
    * ``range``: ``[first.start, last.end)``;
    * ``duration``: ``[reference - length, reference)``.
    """

    kind: Kind
    start: datetime | None
    end: datetime | None
    granularity: Granularity
    approximate: bool = False
    text: str = ""
    # "until May": a month or season named without its year, which resolves to the latest one begun;
    # :func:`validity` takes the next one instead when the fact still holds ("I'm in Lisbon until May")
    floating: bool = False


# ---------------------------------------------------------------- vocabulary

_MONTHS = {
    name: i
    for i, names in enumerate(
        [
            (),
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ]
    )
    for name in names
}
_WEEKDAYS = {
    name: i
    for i, names in enumerate(
        [
            ("monday", "mon"),
            ("tuesday", "tue", "tues"),
            ("wednesday", "wed"),
            ("thursday", "thu", "thur", "thurs"),
            ("friday", "fri"),
            ("saturday", "sat"),
            ("sunday", "sun"),
        ]
    )
    for name in names
}
_SEASONS = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12}  # first month
_NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
    "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17,
    "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50,
    "a couple of": 2, "a couple": 2, "couple of": 2, "couple": 2, "a few": 3, "few": 3, "several": 3,
}  # fmt: skip
_UNITS = {
    "day": "days", "days": "days", "week": "weeks", "weeks": "weeks",
    "month": "months", "months": "months", "year": "years", "years": "years",
    "decade": "decades", "decades": "decades",
}  # fmt: skip

_MONTH_RE = "|".join(sorted(_MONTHS, key=len, reverse=True))
#: every month name and abbreviation, longest first, as a regex alternation (for patterns elsewhere)
MONTH_ALTERNATION = _MONTH_RE
_WEEKDAY_RE = "|".join(sorted(_WEEKDAYS, key=len, reverse=True))
_SEASON_RE = "|".join(_SEASONS)
#: the season words as a regex alternation ("spring|summer|…")
SEASON_ALTERNATION = _SEASON_RE
_NUM_RE = "|".join(sorted((re.escape(k) for k in _NUMBERS), key=len, reverse=True)) + r"|\d+"
_UNIT_RE = "|".join(sorted(_UNITS, key=len, reverse=True))

_UNRESOLVABLE = {
    "", "none", "null", "n/a", "na", "unknown", "unspecified", "not specified", "no",
    "recently", "lately", "the other day", "a while ago", "a while back", "long ago",
    "a long time ago", "before", "once", "sometimes", "always", "never", "ever",
    "soon", "someday", "one day", "in the future", "in the past", "future", "past",
}  # fmt: skip
_NOW = {
    "now", "today", "tonight", "right now", "currently", "current", "present", "at present",
    "presently", "these days", "nowadays", "this morning", "this afternoon", "this evening",
    "ongoing", "at the moment", "still",
}  # fmt: skip


# ---------------------------------------------------------------- helpers


class _ImpossibleDate(Exception):
    """A day-month date no calendar has ("Feb 30", "29 February 2019"): the whole expression is
    unreadable (:func:`resolve` gives ``None``), not just that part of it.  Not a ``ValueError``, so that
    no fallback that reads a part of the expression swallows it."""


#: the most days each month has (February: in a leap year)
_MONTH_DAYS = (0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def _calendar_date(year: int | None, month: int, day: int) -> None:
    """Raise :class:`_ImpossibleDate` if ``day`` is in no ``month`` ("30 February", "0 May"), or, with a
    ``year``, not in that month of that year ("29 February 2023").  A year datetime cannot hold is not
    checked here (see :func:`_within_range`)."""
    if 1 <= month <= 12 and not 1 <= day <= _MONTH_DAYS[month]:
        raise _ImpossibleDate
    if year is not None and month == 2 and day == 29 and not calendar.isleap(year):
        raise _ImpossibleDate


_LAST_INSTANT = datetime.max.replace(tzinfo=UTC)


def _after(start: datetime, length: timedelta | relativedelta) -> datetime:
    """The end of a period that begins at ``start``: ``start + length``, or datetime's last instant where
    that is past the year 9999 (the half-open end of 31 December 9999, 10000-01-01, does not exist).
    A period that would *begin* outside datetime's range raises instead: see :func:`_within_range`."""
    try:
        return start + length
    except (ValueError, OverflowError):  # "year 10000 is out of range", "date value out of range"
        return _LAST_INSTANT


def _day_start(d: date) -> datetime:
    return datetime.combine(d, time(0), tzinfo=UTC)


def _day(d: date, approximate: bool = False) -> Period:
    s = _day_start(d)
    return Period(s, _after(s, timedelta(days=1)), "day", approximate)


def _month(y: int, m: int) -> Period:
    s = datetime(y, m, 1, tzinfo=UTC)
    return Period(s, _after(s, relativedelta(months=1)), "month")


def _year(y: int) -> Period:
    s = datetime(y, 1, 1, tzinfo=UTC)
    return Period(s, _after(s, relativedelta(years=1)), "year")


def _decade(y: int) -> Period:
    s = datetime(y, 1, 1, tzinfo=UTC)
    return Period(s, _after(s, relativedelta(years=10)), "decade")


def _season(y: int, first_month: int) -> Period:
    s = datetime(y, first_month, 1, tzinfo=UTC)
    return Period(s, _after(s, relativedelta(months=3)), "season")


def _week_of(d: date) -> Period:
    s = _day_start(d - timedelta(days=d.weekday()))
    return Period(s, _after(s, timedelta(days=7)), "week")


def _weekend_of(d: date) -> Period:
    """The weekend of the ISO week containing ``d``."""
    s = _day_start(d - timedelta(days=d.weekday()) + timedelta(days=5))
    return Period(s, _after(s, timedelta(days=2)), "weekend")


def _number(token: str) -> int | None:
    token = token.strip()
    if token.isdigit():
        return int(token)
    return _NUMBERS.get(token)


def _offset(unit: str, n: int) -> relativedelta:
    unit = _UNITS[unit]
    if unit == "decades":
        return relativedelta(years=10 * n)
    return relativedelta(**{unit: n})


def _pick(
    instance: Callable[[int], Period], ref: datetime, which: str
) -> Period | None:  # instance is indexed by an integer "cycle"
    """Choose an instance of a recurring period relative to ``ref``.

    ``instance(k)`` returns the k-th occurrence (k an integer cycle index
    around ``ref``, increasing with time).  ``which``: "last" = latest that
    ended by ref; "next" = first that starts after ref; "bare" = latest that
    started by ref.  ``None`` when no occurrence qualifies.
    """
    candidates: list[Period] = []
    for k in range(-4, 3):  # four back: "on 29 February" said on 28 February 2024 is 2020's
        try:
            candidates.append(instance(k))
        except (ValueError, OverflowError):
            # an occurrence that does not exist: before year 1 or after 9999 (said near datetime's ends),
            # or a 29 February in a common year; the others can still be the one meant
            continue
    if which == "last":
        return max((p for p in candidates if p.end <= ref), key=lambda p: p.start, default=None)
    if which == "next":
        return min((p for p in candidates if p.start > ref), key=lambda p: p.start, default=None)
    return max((p for p in candidates if p.start <= ref), key=lambda p: p.start, default=None)


# ---------------------------------------------------------------- normalisation

_LEADING = re.compile(
    r"^(?:(?:sometime|some time|around|about|approximately|approx\.?|roughly|circa|ca\.?|"
    r"on|in|at|during|by|of|the|early|late|mid|middle of|the middle of|the end of|end of|"
    r"the beginning of|beginning of|the start of|start of|earlier|later)\s+|mid-)+"
)
_TRAILING = re.compile(r"\s+(?:morning|afternoon|evening|night|now|or so|ish)$")


#: the short forms of units typed in chat ("2 yrs ago", "last yr", "3 wks"), spelled out
_UNIT_SHORT = {"yr": "year", "yrs": "years", "wk": "week", "wks": "weeks", "mos": "months", "mo": "month"}
_UNIT_SHORT_RE = re.compile(r"\b(" + "|".join(_UNIT_SHORT) + r")\b")


def _normalise(text: str) -> str:
    s = text.strip().lower()
    s = s.replace("–", "-").replace("—", "-").replace("’", "'")
    s = re.sub(r"[.!?;]+$", "", s)
    s = re.sub(r"\s+", " ", s).strip()
    return _UNIT_SHORT_RE.sub(lambda m: _UNIT_SHORT[m.group(1)], s)


def _strip_modifiers(s: str) -> str:
    prev = None
    while prev != s:
        prev = s
        s = _LEADING.sub("", s).strip()
        s = _TRAILING.sub("", s).strip()
        s = s.strip(" ,")
    return s


# ---------------------------------------------------------------- point parsing


def _iso(s: str) -> Period | None:
    if re.fullmatch(r"\d{4}", s):
        y = int(s)
        return _year(y) if 1000 <= y <= 2999 else None
    m = re.fullmatch(r"(\d{4})-(\d{1,2})", s)
    if m:
        y, mo = int(m.group(1)), int(m.group(2))
        return _month(y, mo) if 1 <= mo <= 12 else None
    m = re.fullmatch(r"(\d{4})[-/](\d{1,2})[-/](\d{1,2})", s)
    if m:
        _calendar_date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
        try:
            return _day(date(int(m.group(1)), int(m.group(2)), int(m.group(3))))
        except ValueError:
            return None
    if m := re.match(r"(\d{4})-(\d{2})-(\d{2})[t ]\d", s):
        _calendar_date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
        text = s.upper().replace(" ", "T", 1)
        if text.endswith("Z"):
            text = text[:-1] + "+00:00"
        try:
            dt = datetime.fromisoformat(text)
        except ValueError:
            return None
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=UTC)
        dt = dt.astimezone(UTC)
        return Period(dt, _after(dt, timedelta(seconds=1)), "instant")
    return None


def _year_token(tok: str | None, ref: datetime) -> int | None:
    if tok is None:
        return None
    tok = tok.strip(" ,'")
    if re.fullmatch(r"\d{4}", tok):
        return int(tok)
    return None


def _day_month(s: str, ref: datetime) -> Period | None:
    """"8 may 2023", "may 8th, 2023", "the 8th of may", "may 8"."""
    ordinal = r"(\d{1,2})(?:st|nd|rd|th)?"
    patterns = [
        rf"^{ordinal}(?: of)? ({_MONTH_RE}),?(?: (\d{{4}}))?$",
        rf"^({_MONTH_RE}) {ordinal},?(?: (\d{{4}}))?$",
    ]
    for i, pat in enumerate(patterns):
        m = re.fullmatch(pat, s)
        if not m:
            continue
        if i == 0:
            day_s, mon_s, year_s = m.group(1), m.group(2), m.group(3)
        else:
            mon_s, day_s, year_s = m.group(1), m.group(2), m.group(3)
        mon, day_n = _MONTHS[mon_s], int(day_s)
        year = _year_token(year_s, ref)
        _calendar_date(year, mon, day_n)  # "Feb 29, 2023" is no date, not the next leap year's 29 February
        try:
            if year is not None:
                return _day(date(year, mon, day_n))
            return _pick(lambda k: _day(date(ref.year + k, mon, day_n)), ref, "bare")
        except ValueError:
            return None
    return None


def _month_phrase(s: str, ref: datetime, which: str) -> Period | None:
    m = re.fullmatch(rf"({_MONTH_RE})(?:,| of)? ?(\d{{4}}|(?:last|this|next) year)?", s)
    if not m:
        return None
    mon = _MONTHS[m.group(1)]
    if m.group(2) and m.group(2).endswith(" year"):  # "march last year" (session 29)
        return _month(ref.year + {"last": -1, "this": 0, "next": 1}[m.group(2).split()[0]], mon)
    year = _year_token(m.group(2), ref)
    if year is not None:
        return _month(year, mon)
    if which == "this":
        return _month(ref.year, mon)
    return _pick(lambda k: _month(ref.year + k, mon), ref, which)


def _season_phrase(s: str, ref: datetime, which: str) -> Period | None:
    m = re.fullmatch(rf"({_SEASON_RE})(?:,| of)? ?(\d{{4}}|(?:last|this|next) year)?", s)
    if not m:
        return None
    first = _SEASONS[m.group(1)]
    if m.group(2) and m.group(2).endswith(" year"):  # "spring last year": the spring of last year
        return _season(ref.year + {"last": -1, "this": 0, "next": 1}[m.group(2).split()[0]], first)
    year = _year_token(m.group(2), ref)
    if year is not None:
        return _season(year, first)
    if which == "this":
        if first == 12 and ref.month < 3:  # Jan/Feb belong to the winter that began last December
            return _season(ref.year - 1, 12)
        return _season(ref.year, first)
    return _pick(lambda k: _season(ref.year + k, first), ref, which)


def _weekday_phrase(s: str, ref: datetime, which: str) -> Period | None:
    if s not in _WEEKDAYS:
        return None
    wd = _WEEKDAYS[s]
    today = ref.date()
    monday = today - timedelta(days=today.weekday())
    if which == "this":
        return _day(monday + timedelta(days=wd))
    return _pick(lambda k: _day(monday + timedelta(days=7 * k + wd)), ref, which)


def _weekend_phrase(s: str, ref: datetime, which: str) -> Period | None:
    if s not in ("weekend", "week-end"):
        return None
    today = ref.date()
    if which == "this":
        return _weekend_of(today)
    return _pick(lambda k: _weekend_of(today + timedelta(days=7 * k)), ref, which)


def _calendar_unit(unit: str, ref: datetime, delta: int) -> Period | None:
    """"last/this/next week|month|year|decade" as calendar periods."""
    today = ref.date()
    if unit == "week":
        return _week_of(today + timedelta(days=7 * delta))
    if unit == "month":
        first = date(today.year, today.month, 1) + relativedelta(months=delta)
        return _month(first.year, first.month)
    if unit == "year":
        return _year(today.year + delta)
    if unit == "decade":
        return _decade((today.year // 10 + delta) * 10)
    return None


_PART = re.compile(r"^(?:(?:sometime|some time|around|about|roughly|in|at|during|by|until|till) )*(?:the )?"
                   r"(early|late|mid|middle of|end of|beginning of|start of)(?: |-)(?:of )?")
# which part of a year, decade or month "early", "mid" and "late" name: (first, last) in months of a
# year, years of a decade, or days of a month; "end of 2019" is its last month, "end of May" its last third
_PARTS: dict[str, dict[str, tuple[int, int]]] = {
    "year": {"early": (1, 4), "beginning of": (1, 4), "start of": (1, 4), "mid": (5, 8), "middle of": (5, 8),
             "late": (9, 12), "end of": (12, 12)},
    "decade": {"early": (0, 3), "beginning of": (0, 3), "start of": (0, 3), "mid": (3, 6), "middle of": (3, 6),
               "late": (7, 9), "end of": (7, 9)},
    "month": {"early": (1, 10), "beginning of": (1, 10), "start of": (1, 10), "mid": (11, 20),
              "middle of": (11, 20), "late": (21, 31), "end of": (21, 31)},
}


def _part_of(p: Period, part: str) -> Period:
    """The part of ``p`` that "early", "mid", "late", "the end of" … name ("late 2019": Sep–Dec 2019)."""
    parts = _PARTS.get(p.granularity)
    if parts is None:
        return p
    first, last = parts[part]
    if p.granularity == "year":
        start = p.start.replace(month=first)
        return Period(start, _after(p.start, relativedelta(months=last)), "month", approximate=True)
    if p.granularity == "decade":
        return Period(p.start.replace(year=p.start.year + first), _after(p.start, relativedelta(years=last + 1)),
                      "year", approximate=True)
    end = min(_after(p.start, timedelta(days=last)), p.end)
    return Period(p.start + timedelta(days=first - 1), end, "day", approximate=True)


def _point(text: str, ref: datetime) -> Period | None:
    """Parse an expression that names one period; ``None`` if it does not.  "early", "mid", "late",
    "the end of" … narrow a year, decade or month to that part of it (:func:`_part_of`)."""
    p = _whole_point(text, ref)
    m = _PART.match(_normalise(text))
    return _part_of(p, m.group(1)) if p is not None and m else p


def _whole_point(text: str, ref: datetime) -> Period | None:
    raw = _normalise(text)
    today = ref.date()
    if raw in _NOW:
        return _day(today)
    if raw in ("last night", "yesterday night", "yesterday morning", "yesterday afternoon",
               "yesterday evening"):  # fmt: skip
        return _day(today - timedelta(days=1))
    s = _strip_modifiers(raw)
    if not s:
        return None
    iso = _iso(s)
    if iso is not None:
        return iso
    if s in _NOW:
        return _day(today)
    if s in ("yesterday", "last night", "yesterday night"):
        return _day(today - timedelta(days=1))
    if s in ("day before yesterday", "the day before yesterday"):
        return _day(today - timedelta(days=2))
    if s == "tomorrow":
        return _day(today + timedelta(days=1))
    if s in ("day after tomorrow", "the day after tomorrow"):
        return _day(today + timedelta(days=2))

    # offsets: "two years ago", "in 3 months", "3 weeks from now"
    m = re.fullmatch(rf"(?:in|within) ({_NUM_RE}) ({_UNIT_RE})(?: time| from now)?", raw) or (
        re.fullmatch(rf"(?:in )?({_NUM_RE}) ({_UNIT_RE}) (?:from now|later|hence)", raw)
    )
    if m and (n := _number(m.group(1))) is not None:
        return _day((ref + _offset(m.group(2), n)).date(), approximate=True)
    m = re.fullmatch(rf"({_NUM_RE}) ({_UNIT_RE}) (?:ago|back|earlier|before)", s)
    if m and (n := _number(m.group(1))) is not None:
        return _day((ref - _offset(m.group(2), n)).date(), approximate=True)

    # decades: "the 90s", "1990s", "'90s"
    m = re.fullmatch(r"'?(\d{2}|\d{4})'?s", s)
    if m:
        y = int(m.group(1))
        if y < 100:
            y += 1900 if y >= 30 else 2000
        return _decade(y) if y % 10 == 0 else None

    # "the summer before last": the last summer before the last one
    m = re.fullmatch(r"(.+) before last", s)
    if m:
        last = _point(f"last {m.group(1)}", ref)
        return None if last is None else _point(f"last {m.group(1)}", last.start)

    # "last/this/next/past/coming X"
    which = "bare"
    m = re.fullmatch(r"(last|this|next|past|previous|coming|upcoming|the following) (.+)", s)
    if m:
        which = {"past": "last", "previous": "last", "coming": "next", "upcoming": "next",
                 "the following": "next"}.get(m.group(1), m.group(1))  # fmt: skip
        s = _strip_modifiers(m.group(2))
        unit = {"week": "week", "month": "month", "year": "year", "decade": "decade"}.get(s)
        if unit:
            return _calendar_unit(unit, ref, {"last": -1, "this": 0, "next": 1}[which])
    for parse in (_weekday_phrase, _weekend_phrase, _month_phrase, _season_phrase):
        p = parse(s, ref, which)
        if p is not None:
            return p
    if which == "bare":
        p = _day_month(s, ref)
        if p is not None:
            return p
    return None


# ---------------------------------------------------------------- compound forms

_RANGE_SPLITS = (
    re.compile(r"^(?:from )(.+?) (?:to|until|till|til|through|thru|-) (.+)$"),
    re.compile(r"^(?:between )(.+?) and (.+)$"),
    re.compile(r"^(.+?) (?:to|until|till|through|thru) (.+)$"),
    re.compile(r"^(.+?) ?- ?(.+)$"),
)


def _range(s: str, ref: datetime) -> Resolved | None:
    for pat in _RANGE_SPLITS:
        m = pat.fullmatch(s)
        if not m:
            continue
        left, right = m.group(1).strip(), m.group(2).strip()
        if right in _NOW or right in ("the present", "date", "this day"):
            a = _point(left, ref)
            if a is None:
                continue
            return Resolved("since", a.start, None, a.granularity, a.approximate)
        b = _point(right, ref)
        if b is None:
            continue
        a = _point(left, ref)
        # "from May to July 2022": the first part takes the year of the second
        lm = re.fullmatch(rf"({_MONTH_RE}|{_SEASON_RE})", _strip_modifiers(left))
        if lm and re.search(r"\d{4}", right):
            a = _point(f"{_strip_modifiers(left)} {b.start.year}", ref)
            if a is not None and a.start > b.start:
                a = _point(f"{_strip_modifiers(left)} {b.start.year - 1}", ref)
        if a is not None and a.start >= b.end and lm and not re.search(r"\d{4}", left):
            # "from December to February" said in January: the December before that February
            a = _point(f"{_strip_modifiers(left)} {b.start.year - 1}", ref)
        if a is None or a.start >= b.end:
            continue
        gran = a.granularity if _RANK[a.granularity] >= _RANK[b.granularity] else b.granularity
        return Resolved("range", a.start, b.end, gran, a.approximate or b.approximate)
    return None


_RANK = {"instant": 0, "day": 1, "weekend": 2, "week": 3, "month": 4, "season": 5, "year": 6,
         "decade": 7}  # fmt: skip


_DUR_TAIL = r"(?: now| already| so far| or so)?"


def _duration(s: str, ref: datetime) -> Resolved | None:
    """"for three years", "for the past 3 months", "over the last week", "3 years now"."""
    m = re.fullmatch(rf"(?:for|since) ({_NUM_RE}) ({_UNIT_RE}){_DUR_TAIL}", s) or re.fullmatch(
        rf"({_NUM_RE}) ({_UNIT_RE}) now", s
    )
    n_tok: str | None
    if m:
        n_tok, unit_tok = m.group(1), m.group(2)
    else:
        m = re.fullmatch(
            rf"((?:for|over|in|during|within) )?(the )?(?:past|last|previous) "
            rf"(?:({_NUM_RE}) )?({_UNIT_RE}){_DUR_TAIL}",
            s,
        )
        if not m:
            return None
        n_tok, unit_tok = m.group(3), m.group(4)
        if n_tok is None and not (m.group(1) or m.group(2)):
            return None  # "last week" is the calendar week, not a duration
    n = 1 if n_tok is None else _number(n_tok)
    if n is None:
        return None
    unit = _UNITS[unit_tok]
    start = (ref - _offset(unit_tok, n)).replace(hour=0, minute=0, second=0, microsecond=0)
    grans: dict[str, Granularity] = {"days": "day", "weeks": "week", "months": "month",
                                     "years": "year", "decades": "decade"}  # fmt: skip
    gran = grans[unit]
    return Resolved("duration", start, ref, gran, approximate=True)


def resolve(expression: str | None, ref: datetime) -> Resolved | None:
    """Parse ``expression`` relative to ``ref`` (an aware datetime).

    Returns ``None`` when there is no expression or it cannot be resolved; the
    caller then uses the message time.
    """
    if expression is None:
        return None
    try:
        return _resolve(expression, ref)
    except _ImpossibleDate:  # "Feb 29, 2023": unreadable as a whole (module doc)
        return None


def _resolve(expression: str, ref: datetime) -> Resolved | None:
    if ref.tzinfo is None:
        ref = ref.replace(tzinfo=UTC)
    # calendar words are the speaker's: "this year" said at 20:00 on 31 December in New York is that
    # year.  The periods are the speaker's calendar dates, written as UTC like every date chronomem
    # stores (a day is 00:00 UTC to 00:00 UTC, whatever the offset), so "since 1 January 2023" reads
    # as that date everywhere, as an all-day date does in a calendar.
    # (the wall clock read as UTC: the UTC instant plus the offset, which cannot leave datetime's range
    # as converting 0001-01-01T00:00+01:00 to UTC first would)
    ref = ref.replace(tzinfo=UTC)
    s = _normalise(expression)
    if s in _UNRESOLVABLE:
        return None
    out = _within_range(s, ref)
    if out is None:
        # the model sometimes annotates: "last sunday (may 7, 2023)", "2019, in berlin"
        # an impossible date anywhere in it ("last sunday (feb 29, 2023)") makes the whole unreadable:
        # each bracketed part is read whole first (raising :class:`_ImpossibleDate`), commas and all
        for part in re.split(r"[();]", s):
            part = part.strip()
            if "," in part and part != s:
                _within_range(part, ref)
        for part in re.split(r"[(),;]", s):
            part = part.strip()
            if part and part != s and part not in _UNRESOLVABLE:
                read = _within_range(part, ref)
                out = read if out is None else out  # the first part that resolves; the others only checked
    if out is None:
        return None
    return replace(out, text=expression)


def _within_range(s: str, ref: datetime) -> Resolved | None:
    """:func:`_resolve_normalised`, or ``None`` where the time it names falls outside the years 1 to 9999
    that a ``datetime`` holds ("last year" said in year 1, "tomorrow" on 31 December 9999): such a time
    is no time chronomem can store, so the phrase is ignored, as one it cannot read is."""
    try:
        return _resolve_normalised(s, ref)
    except (ValueError, OverflowError):  # datetime's "year 0 is out of range", "date value out of range"
        return None


def _resolve_normalised(s: str, ref: datetime) -> Resolved | None:
    p = _point(s, ref)
    if p is not None:
        return Resolved("point", p.start, p.end, p.granularity, p.approximate)
    d = _duration(s, ref)
    if d is not None:
        return d
    m = re.fullmatch(r"(?:ever since|since|starting(?: in| on| from)?|from|as of|beginning(?: in)?) (.+?)(?: on(?:wards?)?)?", s)
    if m:
        p = _point(m.group(1), ref)
        if p is not None:
            return Resolved("since", p.start, None, p.granularity, p.approximate)
    m = re.fullmatch(r"(?:after) (.+)", s)
    if m:
        p = _point(m.group(1), ref)
        if p is not None:
            return Resolved("since", p.end, None, p.granularity, p.approximate)
    m = re.fullmatch(r"(?:until|till|til|up to|up until|through|thru) (.+)", s)
    if m:
        p = _point(m.group(1), ref)
        if p is not None:
            bare = re.fullmatch(rf"(?:{_MONTH_RE}|{_SEASON_RE})", _strip_modifiers(m.group(1))) is not None
            return Resolved("until", None, p.end, p.granularity, p.approximate, floating=bare)
    m = re.fullmatch(r"(?:before|prior to) (.+)", s)
    if m:
        p = _point(m.group(1), ref)
        if p is not None:
            return Resolved("until", None, p.start, p.granularity, p.approximate)
    return _range(s, ref)


def resolve_period(expression: str | None, ref: datetime) -> Period | None:
    """The single period a point expression names ("last summer" → Jun–Aug), else ``None``."""
    r = resolve(expression, ref)
    if r is None or r.kind != "point" or r.start is None or r.end is None:
        return None
    return Period(r.start, r.end, r.granularity, r.approximate)


def validity(
    resolved: Resolved | None, ref: datetime, *, ended: bool = False
) -> tuple[datetime | None, datetime | None]:
    """A fact's ``(valid_from, valid_to)`` from a resolved expression (see module doc)."""
    if ref.tzinfo is None:
        ref = ref.replace(tzinfo=UTC)
    ref = ref.astimezone(UTC)
    if resolved is None:
        return (None, ref) if ended else (ref, None)
    k = resolved.kind
    if k == "point":
        return (None, resolved.start) if ended else (resolved.start, None)
    if k == "since":
        return (resolved.start, ref) if ended else (resolved.start, None)
    if k == "until":
        end = resolved.end
        if not ended and resolved.floating and end is not None and end <= ref:
            try:
                end += relativedelta(years=1)  # still holds: "until May" said in January is the coming May
            except ValueError:  # the coming May is past year 9999: no time, as in :func:`_within_range`
                return (ref, None)
        return (None, end)
    if k == "range":
        return (resolved.start, resolved.end)
    # duration: "I've lived here for three years" — ongoing, started that long ago;
    # "I lived in Oslo for three years" (ended) — over by the time it was said, start unknown
    return (None, ref) if ended else (resolved.start, None)


def resolve_validity(
    expression: str | None, ref: datetime, *, ended: bool = False
) -> tuple[datetime | None, datetime | None]:
    """Shorthand: :func:`validity` of :func:`resolve`."""
    return validity(resolve(expression, ref), ref, ended=ended)
