"""Japanese and Chinese time phrases, put in the English words :mod:`chronomem.timeexpr` reads.

The time words of a question ("2020年に", "去年", "2010年から2013年まで", "3年前": its window,
:mod:`chronomem.retrieve.cjk_questions`) and of a statement the model wrote in Japanese or Chinese
("先月リスボンに引っ越しました": when it happened, :func:`chronomem.timewords.find_time_phrase`) are read by
turning them into the English ones ("in 2020", "last year", "from 2010 to 2013", "3 years ago", "last month")
that :func:`~chronomem.timeexpr.resolve` resolves; the resolution rules stay in one place.  Text without such
characters never reaches this module.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime

from .timeexpr import UTC, resolve

_MONTH_NAMES = ("January", "February", "March", "April", "May", "June", "July", "August", "September",
                "October", "November", "December")
_CJK_RELATIVE: dict[str, str | None] = {
    "去年": "last year", "昨年": "last year", "今年": "this year", "来年": "next year", "明年": "next year",
    "先月": "last month", "上个月": "last month", "上月": "last month", "今月": "this month",
    "这个月": "this month", "本月": "this month", "来月": "next month", "下个月": "next month",
    "先週": "last week", "上周": "last week", "上星期": "last week", "上个星期": "last week", "今週": "this week",
    "这周": "this week", "本周": "this week", "来週": "next week", "下周": "next week",
    "昨日": "yesterday", "昨天": "yesterday", "今日": "today", "今天": "today",
    "一昨年": "the year before last", "一昨日": "the day before yesterday", "前天": "the day before yesterday",
    "今日本": None,  # a word that holds one of those and is not it: "now Japan"
}
_KANJI_DIGITS = {"〇": 0, "零": 0, "一": 1, "二": 2, "两": 2, "兩": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7,
                 "八": 8, "九": 9}
_CJK_UNITS = {"年": "years", "周": "weeks", "星期": "weeks", "週間": "weeks", "日": "days", "天": "days"}
_SEASONS = {"春": "spring", "夏": "summer", "秋": "autumn", "冬": "winter"}
_SEASON_YEARS = {"去年": "last year", "昨年": "last year", "今年": "this year", "来年": "next year", "明年": "next year"}
# numbers as digits or in kanji: a year digit by digit (二〇二〇), a month, a day or a count with 十 and 百 (二十三)
_YEAR_N = r"(?:\d{4}|[〇零一二三四五六七八九]{4})"
_MONTH_N = r"(?:\d{1,2}|十[一二]?|[一二三四五六七八九])"
_DAY_N = r"(?:\d{1,2}|[二三]?十[一二三四五六七八九]?|[一二三四五六七八九])"
_FEW = "数數几幾"  # "a few": 数年前, 几天前
_COUNT = rf"(?:\d{{1,3}}|[一二两兩三四五六七八九十百]{{1,4}}|[{_FEW}])"
_YEAR, _MONTH, _DAY = rf"{_YEAR_N}\s*年", rf"{_MONTH_N}\s*月", rf"{_DAY_N}\s*[日号號]"
_CJK_DATE = rf"{_YEAR}(?:\s*{_MONTH}(?:\s*{_DAY})?)?|{_MONTH}(?:\s*{_DAY})?"
_CJK_AGO = rf"{_COUNT}\s*(?:年|[かヶカヵケ个個]月|週間|周|星期|日|天)\s*前"
# a season with its year ("去年の夏", "2020年夏天"), or alone where a particle or 天/季 says it is one ("夏に",
# "夏天"; not "秋葉原", nor the season of another year word: "一昨年の夏" is read as the year, "前年夏天" not at all)
_CJK_SEASON = (rf"(?:(?:{_YEAR}|{'|'.join(_SEASON_YEARS)})の?)[春夏秋冬](?:天|季)?"
               r"|(?<![の年])[春夏秋冬](?:天|季|(?=から|以来|まで|には|に))")
_CJK_WORD = "|".join(re.escape(w) for w in sorted(_CJK_RELATIVE, key=len, reverse=True))
_CJK_TIME = re.compile(rf"(?P<pre>自从|自從|从|從|自|直到|到|在)?(?P<t>{_CJK_SEASON}|{_CJK_DATE}|{_CJK_AGO}|{_CJK_WORD})"
                       r"(?P<post>から|以来|以降|以後|以后|之后|之後|より後|より前|以前|之前|まで|には|に)?")
_CJK_SPAN = re.compile(rf"(?:从|從|自)?(?P<a>{_CJK_DATE})\s*(?:から|到|至|〜|~|-)\s*(?P<b>{_CJK_DATE})"
                       r"(?:まで|为止|為止)?")
# 以前 and 以後 hold the date they follow ("2019年以前": 2019 and before), as 以降 does; より前 and 之前 do not
_CJK_MODIFIERS = {"自从": "since", "自從": "since", "从": "since", "從": "since", "自": "since", "から": "since",
                  "以来": "since", "以降": "since", "以後": "since", "直到": "until", "到": "until", "まで": "until",
                  "以前": "until", "以后": "after", "之后": "after", "之後": "after", "より後": "after",
                  "より前": "before", "之前": "before", "在": "in", "には": "in", "に": "in"}
_CJK_DATE_PARTS = re.compile(rf"(?:(?P<y>{_YEAR_N})\s*年)?\s*(?:(?P<m>{_MONTH_N})\s*月(?:\s*(?P<d>{_DAY_N})\s*[日号號])?)?")


def cjk_number(text: str) -> int | None:
    """A number written in digits or in kanji: "23", "二十三", "十五", "百", a year digit by digit ("二〇二〇");
    ``None`` when ``text`` is no such number.  Pure.

    >>> [cjk_number(t) for t in ("2020", "二〇二〇", "二十三", "十", "十二", "百十", "两", "十十", "二二十")]
    [2020, 2020, 23, 10, 12, 110, 2, None, None]
    """
    text = text.strip()
    if text.isdecimal():
        return int(text)
    if text and all(c in _KANJI_DIGITS for c in text):  # digit by digit: 二〇二〇, 三
        return int("".join(str(_KANJI_DIGITS[c]) for c in text))
    total, digit, seen = 0, None, ""
    for c in text:
        if c in _KANJI_DIGITS and digit is None:
            digit = _KANJI_DIGITS[c]
        elif c in ("十", "百") and c not in seen and not (c == "百" and "十" in seen):
            total += (1 if digit is None else digit) * (10 if c == "十" else 100)
            digit, seen = None, seen + c
        else:
            return None
    return total + (digit or 0) if seen or digit is not None else None


def cjk_time_in_english(phrase: str) -> str | None:
    """A Japanese or Chinese time phrase (no modifier) in the English words :func:`chronomem.timeexpr.resolve`
    reads: "2020年5月" → "May 2020", "去年" → "last year", "3年前" → "3 years ago".  Pure.

    >>> [cjk_time_in_english(p) for p in ("2020年5月3日", "12月", "先月", "三年前", "2か月前", "一昨年", "2020年13月")]
    ['3 May 2020', 'December', 'last month', '3 years ago', '2 months ago', 'the year before last', None]
    >>> [cjk_time_in_english(p) for p in ("去年の夏", "2020年冬", "春天", "二十年前", "数年前", "二〇一九年十月")]
    ['summer last year', 'winter 2020', 'spring', '20 years ago', 'a few years ago', 'October 2019']
    """
    if phrase in _CJK_RELATIVE:
        return _CJK_RELATIVE[phrase]
    bare = phrase.rstrip("天季")  # 夏天, 夏季: 夏
    if bare[-1:] in _SEASONS:  # a season, of a year or alone
        season = _SEASONS[bare[-1]]
        year = bare[:-1].removesuffix("の").strip()
        if not year:
            return season
        of = _SEASON_YEARS.get(year) or cjk_number(year.removesuffix("年"))
        return None if of is None else f"{season} {of}"
    if phrase.endswith("前"):  # an offset: a count, a unit, 前
        body = phrase[:-1].strip()
        count = re.match(_COUNT, body)
        unit = body[count.end():].strip() if count else ""
        n = None if count is None else "a few" if count.group() in _FEW else cjk_number(count.group())
        name = "months" if unit.endswith("月") else _CJK_UNITS.get(unit)
        return None if n is None or name is None else f"{n} {name} ago"
    date = _CJK_DATE_PARTS.fullmatch(phrase)
    if date is None or not (date["y"] or date["m"]):
        return None
    y, m, d = (cjk_number(date[k]) if date[k] else None for k in ("y", "m", "d"))  # ２０２０ and 二〇二〇 as 2020
    if m is not None and not 1 <= m <= 12 or d is not None and not 1 <= d <= 31:
        return None
    return " ".join(str(p) for p in (d, _MONTH_NAMES[m - 1] if m else None, y) if p)


def _phrases(text: str) -> Iterator[tuple[str, str, int, int]]:
    """Each Japanese or Chinese time phrase of ``text`` as the English :func:`~chronomem.timeexpr.resolve` may
    read (a span first, then each phrase with its modifier, then without), with the phrase as written and
    where it starts and ends."""
    for m in _CJK_SPAN.finditer(text):
        a, b = cjk_time_in_english(m.group("a")), cjk_time_in_english(m.group("b"))
        if a and b:
            yield f"from {a} to {b}", m.group(0), m.start(), m.end()
    for m in _CJK_TIME.finditer(text):
        english = cjk_time_in_english(m.group("t"))
        if english is None:
            continue
        modifier = _CJK_MODIFIERS.get(m.group("post") or m.group("pre") or "")
        if modifier:
            yield f"{modifier} {english}", m.group(0), m.start(), m.end()
        yield english, m.group(0), m.start(), m.end()


def _reads(english: str) -> bool:
    """Does :func:`~chronomem.timeexpr.resolve` read ``english`` as a time (a start or an end)?"""
    r = resolve(english, datetime(2000, 1, 1, tzinfo=UTC))
    return r is not None and (r.start is not None or r.end is not None)


def find_cjk_time_window(text: str, ref: datetime) -> tuple[tuple[datetime | None, datetime | None], str] | None:
    """The question's window, as :func:`chronomem.retrieve.intents.find_time_window` reads an English one: its
    first time phrase ("2020年に", "去年", "2010年から2013年まで", "3年前") resolved against ``ref``, and the phrase
    as written.  Pure.

    >>> from datetime import datetime, timezone
    >>> (start, end), phrase = find_cjk_time_window("マヤは2020年にどこに住んでいましたか?",
    ...                                             datetime(2026, 1, 1, tzinfo=timezone.utc))
    >>> start.year, end.year, phrase
    (2020, 2021, '2020年に')
    """
    for english, written, _, _ in _phrases(text):
        r = resolve(english, ref)
        if r is not None and (r.start is not None or r.end is not None) and (
                not english.startswith("from ") or r.start is not None and r.end is not None):
            return (r.start, r.end), written
    return None


def find_cjk_time_phrase(text: str) -> str:
    """The first Japanese or Chinese time phrase of ``text`` that :func:`~chronomem.timeexpr.resolve` reads, in
    its English words (``""`` when none), as :func:`chronomem.timewords.find_time_phrase` returns an English
    one for a statement: "マヤは先月リスボンに引っ越しました" → "last month", resolved later against the turn's
    time.  Pure.

    >>> find_cjk_time_phrase("マヤは先月リスボンに引っ越しました"), find_cjk_time_phrase("2020年からリスボンに住んでいます")
    ('last month', 'since 2020')
    """
    return next((english for english, _, _, _ in _phrases(text) if _reads(english)), "")


def find_cjk_time_phrases(text: str) -> list[str]:
    """Every Japanese or Chinese time phrase of ``text`` that :func:`~chronomem.timeexpr.resolve` reads, in its
    English words as :func:`find_cjk_time_phrase` gives the first, in order: one per phrase as written (a span
    "2010年から2013年まで" is one, not three).  Pure.

    >>> find_cjk_time_phrases("2019年からポルトに住んでいて、先月リスボンに引っ越しました")
    ['since 2019', 'last month']
    >>> find_cjk_time_phrases("2010年から2013年までパリにいました")
    ['from 2010 to 2013']
    """
    found: dict[int, str] = {}  # where each phrase read starts: its first reading
    read: list[tuple[int, int]] = []  # where each starts and ends
    for english, _, start, end in _phrases(text):
        if start not in found and not any(a <= start < b for a, b in read) and _reads(english):
            found[start] = english
            read.append((start, end))
    return [found[start] for start in sorted(found)]
