"""Relative time expressions resolved against a message timestamp (pure, no model)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from chronomem.timeexpr import resolve, resolve_period, resolve_validity, validity

UTC = timezone.utc
# Wednesday 10 May 2023, 14:00 UTC
REF = datetime(2023, 5, 10, 14, 0, tzinfo=UTC)


def d(y: int, m: int, day: int) -> datetime:
    return datetime(y, m, day, tzinfo=UTC)


@pytest.mark.parametrize(
    ("expr", "start", "end", "gran"),
    [
        ("yesterday", d(2023, 5, 9), d(2023, 5, 10), "day"),
        ("Yesterday.", d(2023, 5, 9), d(2023, 5, 10), "day"),
        ("last night", d(2023, 5, 9), d(2023, 5, 10), "day"),
        ("yesterday afternoon", d(2023, 5, 9), d(2023, 5, 10), "day"),
        ("the day before yesterday", d(2023, 5, 8), d(2023, 5, 9), "day"),
        ("today", d(2023, 5, 10), d(2023, 5, 11), "day"),
        ("this morning", d(2023, 5, 10), d(2023, 5, 11), "day"),
        ("tomorrow", d(2023, 5, 11), d(2023, 5, 12), "day"),
        # weekdays: "last" = latest that has ended, bare = latest that has started
        ("last Sunday", d(2023, 5, 7), d(2023, 5, 8), "day"),
        ("on Sunday", d(2023, 5, 7), d(2023, 5, 8), "day"),
        ("last Wednesday", d(2023, 5, 3), d(2023, 5, 4), "day"),
        ("on Wednesday", d(2023, 5, 10), d(2023, 5, 11), "day"),
        ("next Sunday", d(2023, 5, 14), d(2023, 5, 15), "day"),
        ("this Friday", d(2023, 5, 12), d(2023, 5, 13), "day"),
        ("last weekend", d(2023, 5, 6), d(2023, 5, 8), "weekend"),
        ("this weekend", d(2023, 5, 13), d(2023, 5, 15), "weekend"),
        # calendar units
        ("last week", d(2023, 5, 1), d(2023, 5, 8), "week"),
        ("this week", d(2023, 5, 8), d(2023, 5, 15), "week"),
        ("next week", d(2023, 5, 15), d(2023, 5, 22), "week"),
        ("last month", d(2023, 4, 1), d(2023, 5, 1), "month"),
        ("next month", d(2023, 6, 1), d(2023, 7, 1), "month"),
        ("last year", d(2022, 1, 1), d(2023, 1, 1), "year"),
        ("this year", d(2023, 1, 1), d(2024, 1, 1), "year"),
        ("earlier this year", d(2023, 1, 1), d(2024, 1, 1), "year"),
        ("next year", d(2024, 1, 1), d(2025, 1, 1), "year"),
        # absolute
        ("in 2019", d(2019, 1, 1), d(2020, 1, 1), "year"),
        ("2019", d(2019, 1, 1), d(2020, 1, 1), "year"),
        # a part of a year, decade or month: "early", "mid", "late", "the end of" narrow it
        ("early 2020", d(2020, 1, 1), d(2020, 5, 1), "month"),
        ("mid-2018", d(2018, 5, 1), d(2018, 9, 1), "month"),
        ("late 2019", d(2019, 9, 1), d(2020, 1, 1), "month"),
        ("at the end of last year", d(2022, 12, 1), d(2023, 1, 1), "month"),
        ("in early May 2022", d(2022, 5, 1), d(2022, 5, 11), "day"),
        ("the end of May 2022", d(2022, 5, 21), d(2022, 6, 1), "day"),
        ("the late 90s", d(1997, 1, 1), d(2000, 1, 1), "year"),
        ("in May 2022", d(2022, 5, 1), d(2022, 6, 1), "month"),
        ("May of 2022", d(2022, 5, 1), d(2022, 6, 1), "month"),
        ("2022-05", d(2022, 5, 1), d(2022, 6, 1), "month"),
        ("2023-05-08", d(2023, 5, 8), d(2023, 5, 9), "day"),
        ("8 May 2023", d(2023, 5, 8), d(2023, 5, 9), "day"),
        ("on May 8th, 2023", d(2023, 5, 8), d(2023, 5, 9), "day"),
        ("the 8th of May", d(2023, 5, 8), d(2023, 5, 9), "day"),
        ("the 90s", d(1990, 1, 1), d(2000, 1, 1), "decade"),
        ("in the 1980s", d(1980, 1, 1), d(1990, 1, 1), "decade"),
        # months: bare = latest started, last = latest ended, next = first to start
        ("in May", d(2023, 5, 1), d(2023, 6, 1), "month"),
        ("last May", d(2022, 5, 1), d(2022, 6, 1), "month"),
        ("in June", d(2022, 6, 1), d(2022, 7, 1), "month"),
        ("next May", d(2024, 5, 1), d(2024, 6, 1), "month"),
        ("last April", d(2023, 4, 1), d(2023, 5, 1), "month"),
        # seasons (northern meteorological)
        ("last summer", d(2022, 6, 1), d(2022, 9, 1), "season"),
        ("this summer", d(2023, 6, 1), d(2023, 9, 1), "season"),
        ("next summer", d(2023, 6, 1), d(2023, 9, 1), "season"),
        ("last winter", d(2022, 12, 1), d(2023, 3, 1), "season"),
        ("winter 2020", d(2020, 12, 1), d(2021, 3, 1), "season"),
        ("the summer of 2020", d(2020, 6, 1), d(2020, 9, 1), "season"),
        ("in the fall", d(2022, 9, 1), d(2022, 12, 1), "season"),
        # a season of a year said relative to now: "spring last year" is not the last spring (session 33)
        ("in spring last year", d(2022, 3, 1), d(2022, 6, 1), "season"),
        ("the summer of last year", d(2022, 6, 1), d(2022, 9, 1), "season"),
        ("winter this year", d(2023, 12, 1), d(2024, 3, 1), "season"),
        # "X before last": the last X before the last one
        ("the summer before last", d(2021, 6, 1), d(2021, 9, 1), "season"),
        ("the year before last", d(2021, 1, 1), d(2022, 1, 1), "year"),
        ("the week before last", d(2023, 4, 24), d(2023, 5, 1), "week"),
        # units as typed in chat
        ("last yr", d(2022, 1, 1), d(2023, 1, 1), "year"),
        ("last wk", d(2023, 5, 1), d(2023, 5, 8), "week"),
    ],
)
def test_point_expressions(expr: str, start: datetime, end: datetime, gran: str) -> None:
    r = resolve(expr, REF)
    assert r is not None, expr
    assert (r.kind, r.start, r.end, r.granularity) == ("point", start, end, gran)
    assert r.text == expr


@pytest.mark.parametrize(
    ("expr", "day"),
    [
        ("two years ago", d(2021, 5, 10)),
        ("2 years ago", d(2021, 5, 10)),
        ("a week ago", d(2023, 5, 3)),
        ("a couple of weeks ago", d(2023, 4, 26)),
        ("three months ago", d(2023, 2, 10)),
        ("in 3 months", d(2023, 8, 10)),
        ("in two weeks", d(2023, 5, 24)),
        ("a year from now", d(2024, 5, 10)),
        ("2 yrs ago", d(2021, 5, 10)),
        ("couple years ago", d(2021, 5, 10)),
        ("3 mos ago", d(2023, 2, 10)),
        ("a yr ago", d(2022, 5, 10)),
    ],
)
def test_offsets_are_approximate_days(expr: str, day: datetime) -> None:
    r = resolve(expr, REF)
    assert r is not None and r.kind == "point"
    assert r.start == day and r.granularity == "day" and r.approximate


def test_since_a_season_of_last_year() -> None:
    r = resolve("since spring last year", REF)
    assert r is not None and (r.kind, r.start, r.granularity) == ("since", d(2022, 3, 1), "season")


def test_short_units_stand_alone_only() -> None:
    # "mo" / "yr" are read as units only as whole words: a name that contains them is not a time
    assert resolve("Mosul", REF) is None
    assert resolve("yrs", REF) is None


def test_last_weekday_said_on_that_weekday_is_a_week_ago() -> None:
    sunday = datetime(2023, 5, 7, 12, tzinfo=UTC)
    assert resolve_period("last Sunday", sunday).start == d(2023, 4, 30)  # type: ignore[union-attr]
    assert resolve_period("Sunday", sunday).start == d(2023, 5, 7)  # type: ignore[union-attr]


def test_last_summer_after_summer_is_this_years() -> None:
    october = datetime(2023, 10, 2, tzinfo=UTC)
    assert resolve_period("last summer", october).start == d(2023, 6, 1)  # type: ignore[union-attr]


def test_this_winter_in_january_is_the_one_that_began_in_december() -> None:
    jan = datetime(2023, 1, 15, tzinfo=UTC)
    assert resolve_period("this winter", jan).start == d(2022, 12, 1)  # type: ignore[union-attr]


def test_last_month_in_january_crosses_the_year() -> None:
    jan = datetime(2024, 1, 3, tzinfo=UTC)
    p = resolve_period("last month", jan)
    assert p is not None and (p.start, p.end) == (d(2023, 12, 1), d(2024, 1, 1))


def test_iso_datetime_is_an_instant_in_utc() -> None:
    r = resolve("2023-05-08T15:56:00+02:00", REF)
    assert r is not None and r.granularity == "instant"
    assert r.start == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)


@pytest.mark.parametrize(
    ("expr", "kind", "start", "end"),
    [
        ("since 2021", "since", d(2021, 1, 1), None),
        ("ever since last year", "since", d(2022, 1, 1), None),
        ("since March", "since", d(2023, 3, 1), None),
        ("after 2020", "since", d(2021, 1, 1), None),
        ("from 2019 until now", "since", d(2019, 1, 1), None),
        ("until 2020", "until", None, d(2021, 1, 1)),
        ("before 2020", "until", None, d(2020, 1, 1)),
        ("from 2016 to 2021", "range", d(2016, 1, 1), d(2022, 1, 1)),
        ("between 2016 and 2021", "range", d(2016, 1, 1), d(2022, 1, 1)),
        ("2016-2021", "range", d(2016, 1, 1), d(2022, 1, 1)),
        ("2016–2021", "range", d(2016, 1, 1), d(2022, 1, 1)),
        ("from May to July 2022", "range", d(2022, 5, 1), d(2022, 8, 1)),
        ("from November to February 2022", "range", d(2021, 11, 1), d(2022, 3, 1)),
        ("for three years", "duration", d(2020, 5, 10), REF),
        ("for the past 6 months", "duration", d(2022, 11, 10), REF),
        ("over the last week", "duration", d(2023, 5, 3), REF),
        ("3 years now", "duration", d(2020, 5, 10), REF),
    ],
)
def test_compound_expressions(
    expr: str, kind: str, start: datetime | None, end: datetime | None
) -> None:
    r = resolve(expr, REF)
    assert r is not None, expr
    assert (r.kind, r.start, r.end) == (kind, start, end)


@pytest.mark.parametrize(
    "expr", [None, "", "none", "unknown", "recently", "when I was a kid", "the other day", "blah"]
)
def test_unresolvable_gives_none(expr: str | None) -> None:
    assert resolve(expr, REF) is None


def test_annotated_expression_falls_back_to_a_part() -> None:
    r = resolve("last Sunday (May 7, 2023)", REF)
    assert r is not None and r.start == d(2023, 5, 7)


def test_invalid_dates_do_not_raise() -> None:
    assert resolve("2023-02-30", REF) is None
    assert resolve("31 February", REF) is None
    assert resolve("2023-13", REF) is None


def test_naive_reference_is_read_as_utc() -> None:
    r = resolve("yesterday", datetime(2023, 5, 10, 14))
    assert r is not None and r.start == d(2023, 5, 9)


# ------------------------------------------------------------- validity rules


def test_no_expression_takes_the_message_time() -> None:
    assert resolve_validity(None, REF) == (REF, None)
    assert resolve_validity("recently", REF) == (REF, None)


def test_ending_without_time_ends_at_the_message_time() -> None:
    assert resolve_validity(None, REF, ended=True) == (None, REF)


def test_point_starts_a_state_at_the_period_start() -> None:
    assert resolve_validity("last week", REF) == (d(2023, 5, 1), None)


def test_point_ending_closes_at_the_period_start() -> None:
    assert resolve_validity("in 2021", REF, ended=True) == (None, d(2021, 1, 1))


def test_range_gives_a_closed_interval() -> None:
    assert resolve_validity("from 2016 to 2021", REF) == (d(2016, 1, 1), d(2022, 1, 1))
    assert resolve_validity("from 2016 to 2021", REF, ended=True) == (d(2016, 1, 1), d(2022, 1, 1))


def test_since_and_until() -> None:
    assert resolve_validity("since 2021", REF) == (d(2021, 1, 1), None)
    assert resolve_validity("until 2020", REF) == (None, d(2021, 1, 1))


def test_duration_ongoing_vs_ended() -> None:
    assert resolve_validity("for three years", REF) == (d(2020, 5, 10), None)
    # "I lived in Oslo for three years": over by now, start unknown
    assert resolve_validity("for three years", REF, ended=True) == (None, REF)


def test_validity_of_none_resolved_is_message_time() -> None:
    assert validity(None, REF) == (REF, None)


def test_a_range_of_bare_months_may_cross_new_year() -> None:
    said = datetime(2023, 1, 15, tzinfo=UTC)  # the last February is 2022's, so December is 2021's
    r = resolve("from December to February", said)
    assert r is not None and (r.kind, r.start, r.end) == ("range", d(2021, 12, 1), d(2022, 3, 1))


def test_the_part_of_a_period_decides_an_ending() -> None:
    # "I left at the end of 2019": before, the modifier was dropped and the stay ended in January 2019
    assert resolve_validity("at the end of 2019", REF, ended=True) == (None, d(2019, 12, 1))


def test_until_a_month_is_the_coming_one_while_the_fact_holds() -> None:
    said = datetime(2023, 1, 15, tzinfo=UTC)
    # "I'm in Lisbon until May": before, last May, so the stay read as over when it was mentioned
    assert resolve_validity("until May", said) == (None, d(2023, 6, 1))
    assert resolve_validity("until May", said, ended=True) == (None, d(2022, 6, 1))  # "I lived there until May"
    assert resolve_validity("until May 2022", said) == (None, d(2022, 6, 1))  # a year given is kept
    assert resolve_validity("until September", datetime(2023, 7, 15, tzinfo=UTC)) == (None, d(2023, 10, 1))


def test_time_words_are_read_on_the_speakers_clock() -> None:
    new_york = timezone(timedelta(hours=-5))
    eve = datetime(2022, 12, 31, 20, 0, tzinfo=new_york)  # already 1 January 2023 in UTC
    # the speaker's dates, stored as dates are (00:00 UTC): "since 2022" reads as 2022 everywhere
    assert resolve_validity("this year", eve) == (d(2022, 1, 1), None)
    assert resolve_validity("yesterday", eve) == (d(2022, 12, 30), None)
    assert resolve_validity("this year", eve.astimezone(UTC)) == (d(2023, 1, 1), None)  # UTC's reading
