"""Time words in text: finding the phrases :mod:`chronomem.timeexpr` resolves, and writing their dates.

The write path uses it to recover the time a statement says ("… yesterday") and to write the
resolved date into a fact's text (:func:`date_label`); the read path to date the time words of a
quoted turn (:func:`dated_text`, ``SearchConfig.date_quotes``).  Pure functions over a text and the
time it was said.
"""

from __future__ import annotations

import re
from datetime import datetime

from . import timeexpr
from .cjk import has_cjk
from .cjk_time import find_cjk_time_phrase

_WEEKDAY = r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
_MONTH = rf"(?:{timeexpr.MONTH_ALTERNATION})"
#: a phrase :mod:`~chronomem.timeexpr` may resolve: "yesterday", "last summer", "two years ago",
#: "in 2019", "in May", "on 8 May", "on Friday" (seasons with a preposition: :data:`SEASON_PHRASE`)
TIME_PHRASE = re.compile(
    r"\b(?:"
    r"(?:the )?day before yesterday|yesterday|today|tonight|tomorrow|this (?:morning|afternoon|evening)|"
    r"(?:last|next|this|past|this past) (?:(?:few|couple of|\w+) )?(?:week|weekend|month|year|summer|winter|spring|"
    r"fall|autumn|night|days|weeks|months|years|" + _WEEKDAY + r")|"
    r"(?:a|an|one|two|three|four|five|six|seven|eight|nine|ten|a few|a couple of|few|several|\d+) "
    r"(?:days?|weeks?|months?|years?|decades?) ago|"
    r"(?:in|since|during|from) (?:(?:early|late|mid) )?(?:19|20)\d\d|"
    r"(?:in|since|during|on|this|last|next) " + _MONTH + r"(?: \d{1,2}(?:st|nd|rd|th)?)?(?:,? (?:19|20)\d\d)?|"
    r"on (?:the )?\d{1,2}(?:st|nd|rd|th)? (?:of )?" + _MONTH + r"(?:,? (?:19|20)\d\d)?|"
    r"on " + _WEEKDAY +
    r")\b",
    re.IGNORECASE,
)


#: a season with a preposition ("in spring 2016", "in the spring", "since summer 2019"): read under the
#: state rules only (session 28), so that the older rule sets replay as they were measured
SEASON_PHRASE = re.compile(
    r"\b(?:in|since|during|from|by) (?:the )?(?:(?:early|late|mid)[ -])?(?:spring|summer|autumn|fall|winter)"
    r"(?:(?: of)?,? (?:19|20)\d\d)?\b", re.IGNORECASE)


#: "in March last year", "since spring last year": the month or season of last year, not the last one
#: (months: session 29; seasons: session 33)
_OF_LAST_YEAR = re.compile(
    rf"(?:in|since|during|from|by) (?:the )?(?:{_MONTH}|{timeexpr.SEASON_ALTERNATION})(?: of)? "
    r"(?:last|this|next) year\b", re.IGNORECASE)

_UNIT = r"(?:days?|weeks?|wks?|months?|mos|years?|yrs?|decades?)"
#: time as it is typed in chat, read with the seasons (state rules only, session 33): short units ("2 yrs
#: ago", "last yr"), "couple years ago", "the summer before last"
CHAT_TIME_PHRASE = re.compile(
    r"\b(?:"
    r"(?:a|an|one|two|three|four|five|six|seven|eight|nine|ten|a few|(?:a )?couple(?: of)?|few|several|\d+) "
    + _UNIT + r" ago|"
    r"(?:last|next|this|past) (?:yr|wk)|"
    r"(?:(?:in|since|during|from) )?(?:the )?(?:week|month|year|yr|summer|winter|spring|fall|autumn|weekend|"
    + _WEEKDAY + r") before last"
    r")\b",
    re.IGNORECASE,
)

#: "the next year", "the year after", "that summer": a time counted from a year the text names, not from
#: when it was said
_COUNTED_YEAR = re.compile(r"\bthe (?:next|following) year\b|\bthe year after\b|"
                           r"\bthat (?:year|spring|summer|autumn|fall|winter)\b", re.IGNORECASE)


def _counted_label(phrase: str, year: int) -> str:
    """What a counted phrase stands for, given the year named before it: "the year after" → "2018" (for
    2017), "that summer" → "summer 2017"."""
    words = phrase.lower().split()
    if words[0] == "that":
        return str(year) if words[1] == "year" else f"{words[1]} {year}"
    return str(year + 1)


def counts_from_a_named_year(phrase: str) -> bool:
    """Whether ``phrase`` holds "the next year", "the year after", "that summer" …: a time counted from a
    year said before it, which the time a line was said cannot resolve."""
    return bool(_COUNTED_YEAR.search(phrase))


def _phrase_matches(text: str, seasons: bool) -> list[re.Match[str]]:
    """The time phrases of ``text`` by position (overlaps possible; not yet checked to resolve)."""
    found = [*TIME_PHRASE.finditer(text)]
    if seasons:  # "in March last year" is March of last year, not the last March (session 29, state rules only)
        found += [*SEASON_PHRASE.finditer(text), *CHAT_TIME_PHRASE.finditer(text)]
        found = [_OF_LAST_YEAR.match(text, m.start()) or m for m in found]
        found += [*_COUNTED_YEAR.finditer(text)]
    found = [m for m in found if not _figurative(text, m)]
    # where two start together, the longest first ("in spring last year" before "in spring")
    return sorted(found, key=lambda m: (m.start(), -m.end()))


#: "feels like (just) yesterday", "as if it was only yesterday": a way of saying time flew, not a date
_LIKE_BEFORE = re.compile(r"\b(?:like|as if|as though)\s+(?:it\s+(?:was|were|is)\s+)?(?:just\s+|only\s+)?$",
                          re.IGNORECASE)
_FIGURATIVE_WORD = re.compile(r"(?:yesterday|today|tomorrow)", re.IGNORECASE)


def _figurative(text: str, m: re.Match[str]) -> bool:
    """Whether the phrase ``m`` of ``text`` is a figure of speech ("it feels like yesterday")."""
    return bool(_FIGURATIVE_WORD.fullmatch(m.group(0))) and bool(_LIKE_BEFORE.search(text, 0, m.start()))


def find_time_phrase(text: str, *, seasons: bool = False, before: str = "") -> str:
    """The first time expression in ``text`` that :mod:`~chronomem.timeexpr` resolves, else ``""``;
    ``seasons``: "in spring 2016", "2 yrs ago" and "the year after" count too.

    "The next year", "the year after" and "that summer" count from the last year named before them, in
    ``text`` or in ``before`` (what the line said before ``text``); they come back as the time they stand
    for ("in 2018", "in summer 2017"), and are skipped when no year was named (the year after the one the
    line was said in is not what they mean).

    >>> find_time_phrase("we moved to Blenheim the year after", seasons=True, before="we got married in 2017 and")
    'in 2018'
    >>> find_time_phrase("he moved there 2 yrs ago", seasons=True)
    '2 yrs ago'
    """
    if has_cjk(text):  # a statement the model wrote in Japanese or Chinese: "先月リスボンに引っ越しました"
        if phrase := find_cjk_time_phrase(text):
            return phrase
    ref = datetime(2000, 1, 1, tzinfo=timeexpr.UTC)
    for m in _phrase_matches(text, seasons):
        if seasons and _counted(text, m):
            year = _year_before(before + " " + text[:m.start()])
            if year is not None and _COUNTED_YEAR.fullmatch(m.group(0)):
                return f"in {_counted_label(m.group(0), year)}"
            continue
        if timeexpr.resolve(m.group(0), ref) is not None:
            return m.group(0)
    return ""


def _counted(text: str, m: re.Match[str]) -> bool:
    """Whether the phrase ``m`` counts a year from one named before it: "the next year", "the year
    after" (and the "next year" inside "the next year")."""
    return bool(_COUNTED_YEAR.fullmatch(m.group(0))) or (
        bool(_THE_BEFORE.search(text, 0, m.start())) and m.group(0).lower().startswith(("next", "following")))


def _year_before(text: str) -> int | None:
    """The last year ``text`` names ("… in 2017 and"), else ``None``."""
    years = _YEAR.findall(text)
    return int(years[-1]) if years else None


#: a year said after a phrase that does not take it in ("in early spring last year"; "since spring last year"
#: is one phrase since session 33): dated by neither
_YEAR_AFTER = re.compile(r"\s+(?:of )?(?:last|this|next) year\b", re.IGNORECASE)
_DEICTIC = re.compile(r"\b(?:last|this|next|past|ago|yesterday|today|tonight|tomorrow)\b", re.IGNORECASE)
_YEAR = re.compile(r"\b(?:19|20)\d\d\b")
_THE_BEFORE = re.compile(r"\bthe\s+$", re.IGNORECASE)  # "the next year": searched up to the phrase


def _anchored_elsewhere(text: str, m: re.Match[str]) -> bool:
    """Whether the phrase ``m`` of ``text`` counts from a time the text names, not from when it was said:
    "the next year" (the year after one just told), or a month, season or weekday without a year
    after a year was named ("we separated in 2021 and I came back in the autumn")."""
    if _counted(text, m):
        return True
    phrase = m.group(0)
    return not _DEICTIC.search(phrase) and not _YEAR.search(phrase) and bool(_YEAR.search(text, 0, m.start()))


def dated_text(text: str, ref: datetime) -> str:
    """``text`` (said at ``ref``) with the date each of its relative time phrases stands for written after
    it, in brackets: "we got married in May last year [May 2016]".  Pure.

    A small model reads the date a turn was said, not the date its words mean: asked "in what year
    did Enkhjin move back?" over "[18 May 2024] Enkhjin: … moved to Ulaanbaatar two years ago" it
    answers 2024.  "The next year" / "the year after" count from the last year the turn names ("in 2017
    … the year after [2018]").  Phrases that already name their date ("in 2007", "in August 2022"), those
    that mean the day the turn was said ("today") and those that count from a time the turn names
    without a year of their own ("in the autumn" after "in 2021"; "the next year" when no year was
    named) are left as they are.

    >>> from datetime import datetime, timezone
    >>> said = datetime(2017, 9, 2, 20, tzinfo=timezone.utc)
    >>> dated_text("We got married in May last year, and Temuulen moved in 2015.", said)
    'We got married in May last year [May 2016], and Temuulen moved in 2015.'
    >>> dated_text("I went yesterday, and today I rest.", said)
    'I went yesterday [1 September 2017], and today I rest.'
    """
    out: list[str] = []
    end = 0
    today = _d(ref).lower()
    for m in _phrase_matches(text, seasons=True):
        if m.start() < end:
            continue
        if _COUNTED_YEAR.fullmatch(m.group(0)) and (year := _year_before(text[:m.start()])) is not None:
            out.append(f"{text[end:m.end()]} [{_counted_label(m.group(0), year)}]")  # "in 2017 … the year after [2018]"
            end = m.end()
            continue
        if _YEAR_AFTER.match(text, m.end()) or _anchored_elsewhere(text, m):
            continue
        if _YEAR.search(m.group(0)) and not _DEICTIC.search(m.group(0)):
            continue  # "in the spring of 2021" names its date
        r = timeexpr.resolve(m.group(0), ref)
        label = date_label(r) if r is not None else ""
        if not label or label.lower() in m.group(0).lower() or label.lower() == today:
            continue
        out.append(f"{text[end:m.end()]} [{label}]")
        end = m.end()
    return "".join(out) + text[end:]


def _d(dt: datetime) -> str:
    return f"{dt.day} {dt:%B %Y}"


def date_label(r: timeexpr.Resolved) -> str:
    """A human date for a resolved expression: "19 January 2023", "the week of 9 January 2023",
    "January 2023", "2022", "summer 2022"; ranges and since/until say so."""

    def period(start: datetime, gran: str) -> str:
        if gran in ("day", "instant"):
            return _d(start)
        if gran == "week":
            return f"the week of {_d(start)}"
        if gran == "weekend":
            return f"the weekend of {_d(start)}"
        if gran == "month":
            return f"{start:%B %Y}"
        if gran == "season":
            name = {12: "winter", 1: "winter", 2: "winter", 3: "spring", 6: "summer", 9: "autumn"}.get(start.month, "")
            return f"{name} {start.year}".strip()
        if gran == "decade":
            return f"the {start.year}s"
        return str(start.year)

    approx = "about " if r.approximate and r.granularity not in ("year", "decade") else ""
    if r.kind == "point" and r.start is not None:
        return approx + period(r.start, r.granularity)
    if r.kind == "since" and r.start is not None:
        return "since " + approx + period(r.start, r.granularity)
    if r.kind == "until" and r.end is not None:
        return f"until {_d(r.end)}"
    if r.kind == "range" and r.start is not None and r.end is not None:
        return f"{_d(r.start)} to {_d(r.end)}"
    if r.kind == "duration" and r.start is not None:
        return f"since about {_d(r.start)}"
    return ""
