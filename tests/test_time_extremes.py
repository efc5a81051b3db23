"""Time words said at the ends of datetime's range (years 1 and 9999): a time that falls outside it
resolves to no time, on the read path (search, answer, dated quotes) and the write path (extraction),
instead of raising."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from chronomem import Memory
from chronomem.extract.observations import with_date
from chronomem.retrieve.intents import find_time_window
from chronomem.timeexpr import resolve, validity
from chronomem.timewords import dated_text

UTC = timezone.utc
FIRST = datetime(1, 1, 1, tzinfo=UTC)
LAST = datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)

_NAMED = ("week", "weekend", "month", "year", "decade", "monday", "sunday", "january", "may", "december",
          "spring", "summer", "winter")
_COUNTS = ("a", "two", "3", "a few", "several")
_UNITS = ("days", "weeks", "months", "years", "decades", "yrs")
_BASE = (
    "today", "tonight", "now", "this morning", "yesterday", "last night", "yesterday evening",
    "the day before yesterday", "tomorrow", "the day after tomorrow", "in may", "on sunday", "on 8 may",
    "may 8th", "on 29 february", "the 8th of december", "the weekend", "3 years now", "for the past week",
    "the past 3 months", "from may to july", "from december to february", "between last year and next year",
    "last year to next year", "since 2019", "march last year", "spring next year", "december this year",
)
#: every kind of phrase :mod:`chronomem.timeexpr` resolves, built from its vocabulary
PHRASES = sorted({
    *_BASE,
    *(f"{w} {x}" for w in ("last", "this", "next", "past", "previous", "coming") for x in _NAMED),
    *(f"the {x} before last" for x in _NAMED),
    *(f"{p} {x}" for p in ("early", "mid", "late", "the end of", "the beginning of")
      for x in ("last year", "next year", "this month", "next month", "last decade", "next decade")),
    *(f"{k} {x}" for k in ("since", "until", "before", "after", "from", "up to")
      for x in ("last year", "next year", "yesterday", "tomorrow", "last week", "may", "winter", "next decade")),
    *(form.format(n=n, u=u) for n in _COUNTS for u in _UNITS
      for form in ("{n} {u} ago", "in {n} {u}", "{n} {u} from now", "for {n} {u}", "for the past {n} {u}",
                   "over the last {n} {u}")),
})

# times near both ends (where a phrase can fall off the range), and anywhere in it
REFS = st.one_of(
    st.datetimes(min_value=FIRST.replace(tzinfo=None), max_value=datetime(12, 12, 31), timezones=st.just(UTC)),
    st.datetimes(min_value=datetime(9988, 1, 1), max_value=LAST.replace(tzinfo=None), timezones=st.just(UTC)),
    st.datetimes(min_value=FIRST.replace(tzinfo=None), max_value=LAST.replace(tzinfo=None), timezones=st.just(UTC)),
)


@given(ref=REFS, phrase=st.sampled_from(PHRASES), ended=st.booleans())
@example(ref=FIRST, phrase="last year", ended=False)
@example(ref=FIRST, phrase="yesterday", ended=False)
@example(ref=LAST, phrase="next year", ended=False)
@example(ref=LAST, phrase="until may", ended=False)  # the coming May of an "until" is in year 10000
def test_resolving_a_time_word_never_raises_anywhere_in_the_range(ref: datetime, phrase: str, ended: bool) -> None:
    r = resolve(phrase, ref)
    if r is not None:
        assert r.start is None or r.end is None or r.start <= r.end
    if r is None:  # no time: the fact takes the time it was said
        assert validity(r, ref, ended=ended) == ((None, ref) if ended else (ref, None))
    else:
        validity(r, ref, ended=ended)
    # the callers that resolve time words in text: the question's window, a quoted turn's dates, a fact's text
    find_time_window(f"Where did Maya live {phrase}?", ref)
    assert dated_text(f"I moved {phrase}.", ref).startswith("I moved ")
    assert with_date("Maya moved.", phrase, ref)[0].startswith("Maya moved")


@given(ref=REFS, phrase=st.sampled_from(PHRASES), hours=st.integers(-14, 14))
def test_a_time_word_on_a_speakers_clock_never_raises(ref: datetime, phrase: str, hours: int) -> None:
    # a turn keeps its UTC offset; its wall clock can lie a day past either end when read in UTC
    local = ref.replace(tzinfo=timezone(timedelta(hours=hours)))
    r = resolve(phrase, local)
    assert r is None or r.start is None or r.end is None or r.start <= r.end


@pytest.mark.parametrize(("phrase", "ref", "start"), [
    ("last year", datetime(1, 6, 1, tzinfo=UTC), None),  # year 0 is no year
    ("last year", datetime(2, 6, 1, tzinfo=UTC), datetime(1, 1, 1, tzinfo=UTC)),
    ("yesterday", FIRST, None),
    ("two years ago", datetime(1, 12, 31, tzinfo=UTC), None),
    ("last week", FIRST, None),
    ("next year", datetime(9999, 1, 1, tzinfo=UTC), None),
    ("today", LAST, datetime(9999, 12, 31, tzinfo=UTC)),  # it ends at the last instant, not 10000-01-01
    ("next year", datetime(9998, 1, 1, tzinfo=UTC), datetime(9999, 1, 1, tzinfo=UTC)),
    # a recurring period picks among the occurrences that exist
    ("last summer", datetime(1, 12, 31, tzinfo=UTC), datetime(1, 6, 1, tzinfo=UTC)),
    ("in may", datetime(9999, 12, 31, tzinfo=UTC), datetime(9999, 5, 1, tzinfo=UTC)),
    ("last summer", datetime(9999, 1, 1, tzinfo=UTC), datetime(9998, 6, 1, tzinfo=UTC)),
    ("on 29 february", datetime(2024, 3, 1, tzinfo=UTC), datetime(2024, 2, 29, tzinfo=UTC)),
])
def test_a_time_outside_the_range_is_no_time_and_one_inside_it_resolves(phrase: str, ref: datetime,
                                                                         start: datetime | None) -> None:
    r = resolve(phrase, ref)
    assert (None if r is None else r.start) == start


def test_until_a_month_whose_coming_one_is_past_9999_takes_the_message_time() -> None:
    ref = datetime(9999, 6, 1, tzinfo=UTC)
    assert validity(resolve("until may", ref), ref) == (ref, None)


def _fact_since_year_one(mem: Memory, city: str) -> None:
    mem.add_facts([{"subject": "Maya", "relation": "lives_in", "object": city, "valid_from": "0001-01-01"}],
                  user_id="u1")


@pytest.mark.parametrize(("question", "as_of"), [
    ("Where did Maya live last year?", "0001-01-01"),
    ("Where did Maya live yesterday?", "0001-01-01T00:00:00Z"),
    ("Where did Maya live two years ago?", "0001-12-31"),
    ("Where did Maya live last week?", "0001-01-01"),
    ("Where will Maya live next year?", "9999-01-01"),
    ("Where will Maya live next year?", "9999-12-31T23:59:59.999999Z"),
])
def test_search_near_the_ends_of_the_range_ignores_a_time_word_it_cannot_place(tmp_path, question: str,
                                                                                as_of: str) -> None:
    with Memory(tmp_path / "m.db", llm=False, embedder=False) as mem:
        _fact_since_year_one(mem, "Porto")
        res = mem.search(question, user_id="u1", as_of=as_of)
        assert [f.object for f in res.facts] == ["Porto"]  # the state at as_of, no window


def test_answer_at_year_one_with_last_year(tmp_path) -> None:
    from test_memory_sessions import SessionLLM

    with Memory(tmp_path / "m.db", llm=SessionLLM(), embedder=False) as mem:
        _fact_since_year_one(mem, "Munich")
        ans = mem.answer("Where did Maya live last year?", user_id="u1", as_of="0001-01-01")
        assert ans.text == "Munich" and [f.object for f in ans.evidence] == ["Munich"]


@pytest.mark.parametrize(("text", "time", "said"), [
    ("I live in Oslo since last year.", "since last year", "0001-01-01T00:00:00Z"),
    ("Yesterday I moved to Oslo.", "yesterday", "0001-01-01T00:00:00Z"),
    ("Next year I will live in Oslo.", "next year", "9999-12-31T23:59:59Z"),
])
def test_a_turn_said_at_an_end_of_the_range_keeps_its_fact(tmp_path, monkeypatch, text: str, time: str,
                                                           said: str) -> None:
    import test_extract_pipeline
    from test_memory_sessions import SessionLLM

    monkeypatch.setitem(test_extract_pipeline.SCRIPT, text, [("lives_in", "Oslo", time, False, "certain")])
    with Memory(tmp_path / "m.db", llm=SessionLLM(), embedder=False) as mem:
        res = mem.add([{"speaker": "Maya", "text": text, "timestamp": said}], user_id="u1", session_id="s1")
        assert [(f.object, f.valid_from, f.valid_to) for f in res.added] == [
            ("Oslo", datetime.fromisoformat(said.replace("Z", "+00:00")), None)]  # the time word: no time
        assert not res.failed_chunks
