"""Reduced-precision ISO dates ("2020", "2020-06") and impossible calendar dates ("Feb 29, 2021").

* :func:`chronomem.timeutil.parse_time`: a fact's ``valid_from`` / ``valid_to`` take "2020" and
  "2020-06" as the first instant of that year or month (an end is exclusive: ``valid_to="2020"`` ended
  as 2020 began, as "sold my car in 2020" is read); an instant such as ``as_of`` refuses them with an
  error that names the field and the dates to write instead.  Full-precision strings read as before.
* :func:`chronomem.timeexpr.resolve`: a date no calendar has resolves to nothing, whatever its
  spelling; never to another year's 29 February, nor to the year alone.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from chronomem import Memory
from chronomem.errors import ValidationError
from chronomem.timeexpr import resolve, resolve_validity
from chronomem.timeutil import parse_time

UTC = timezone.utc


def d(y: int, m: int = 1, day: int = 1, *rest: int, tz: timezone = UTC) -> datetime:
    return datetime(y, m, day, *rest, tzinfo=tz)


# ------------------------------------------------------------------ parse_time

FULL_PRECISION = [
    ("2020-06-01", d(2020, 6, 1)),
    ("2020-06-01T09:30:00", d(2020, 6, 1, 9, 30)),
    ("2020-06-01T09:30:00Z", d(2020, 6, 1, 9, 30)),
    ("2020-06-01T09:30:00+02:00", d(2020, 6, 1, 7, 30)),
    ("2020-06-01T09:30:00-05:00", d(2020, 6, 1, 14, 30)),
    ("2020-06-01 09:30", d(2020, 6, 1, 9, 30)),
    ("2024-02-29", d(2024, 2, 29)),  # a leap day
    ("2000-02-29", d(2000, 2, 29)),  # divisible by 400: a leap year
    ("20200601", d(2020, 6, 1)),  # ISO basic format, as fromisoformat reads it
    ("2020-W01", d(2019, 12, 30)),  # an ISO week: its Monday, as fromisoformat reads it
]


@pytest.mark.parametrize("field", ["valid_from", "valid_to", "facts[0].valid_from", "as_of", "now", "time"])
@pytest.mark.parametrize(("text", "expected"), FULL_PRECISION)
def test_full_precision_reads_as_fromisoformat_does(text: str, expected: datetime, field: str) -> None:
    got = parse_time(text, field)
    assert got == expected and got.tzinfo is UTC
    raw = datetime.fromisoformat(text.replace("Z", "+00:00"))  # unchanged: exactly what it was before
    assert got == (raw if raw.tzinfo else raw.replace(tzinfo=UTC)).astimezone(UTC)
    kept = parse_time(text, field, keep_offset=True)
    assert kept == expected and kept.utcoffset() == (raw.utcoffset() or timedelta(0))


def test_date_and_datetime_objects_unchanged() -> None:
    assert parse_time(date(2020, 6, 1), "as_of") == d(2020, 6, 1)
    assert parse_time(datetime(2020, 6, 1, 9), "as_of") == d(2020, 6, 1, 9)
    assert parse_time(d(2020, 6, 1, 9, tz=timezone(timedelta(hours=2))), "as_of") == d(2020, 6, 1, 7)


PERIOD_FIELDS = ["valid_from", "valid_to", "stated_to", "facts[0].valid_from", "facts[12].valid_to",
                 "data.tables.facts[3].valid_to"]


@pytest.mark.parametrize("field", PERIOD_FIELDS)
@pytest.mark.parametrize(("text", "expected"), [
    ("2020", d(2020)), ("2020-06", d(2020, 6)), ("2020-12", d(2020, 12)), (" 1999 ", d(1999)),
    ("0001", d(1)), ("9999", d(9999)), ("9999-12", d(9999, 12)), ("2024-02", d(2024, 2)),
])
def test_a_validity_bound_takes_a_year_or_month_as_its_first_instant(field: str, text: str,
                                                                     expected: datetime) -> None:
    assert parse_time(text, field) == expected
    assert parse_time(text, field).tzinfo is UTC


@pytest.mark.parametrize("field", ["as_of", "now", "timestamp", "messages[0].timestamp", "ended_at", "window",
                                   "recorded_at", "time"])
@pytest.mark.parametrize(("text", "first", "last"), [
    ("2020", "2020-01-01", "2020-12-31"), ("2020-06", "2020-06-01", "2020-06-30"),
    ("2024-02", "2024-02-01", "2024-02-29"), ("2023-02", "2023-02-01", "2023-02-28"),
])
def test_an_instant_refuses_a_year_or_month_naming_what_to_write(field: str, text: str, first: str,
                                                                 last: str) -> None:
    with pytest.raises(ValidationError) as e:
        parse_time(text, field)
    assert e.value.field == field and e.value.value == text
    msg = str(e.value)
    assert msg.startswith(f"invalid {field}=")
    assert f"write {first} for its start or {last} for its last day" in msg
    assert "ISO-8601" in msg and "2024-05-01T09:30:00+02:00" in msg and "valid_from" in msg


@pytest.mark.parametrize("field", ["valid_from", "as_of"])
@pytest.mark.parametrize(("text", "says"), [
    ("2020-6", "write the month with two digits (2020-06)"),
    ("2020-13", "13 is not a month (01 to 12)"),
    ("2020-00", "00 is not a month (01 to 12)"),
    ("2021-02-29", "no such date: February 2021 has 28 days"),
    ("2019-02-29T10:00:00", "no such date: February 2019 has 28 days"),
    ("1900-02-29", "no such date: February 1900 has 28 days"),  # divisible by 100, not 400: common
    ("2023-02-30", "no such date: February 2023 has 28 days"),
    ("2022-04-31", "no such date: April 2022 has 30 days"),
    ("0000", "out of range"),
    ("20201", "expected an ISO-8601 date or datetime"),
    ("2020-", "expected an ISO-8601 date or datetime"),
    ("Feb 29, 2021", "expected an ISO-8601 date or datetime"),
    ("29 February 2019", "expected an ISO-8601 date or datetime"),
    ("soon", "expected an ISO-8601 date or datetime"),
])
def test_bad_forms_are_refused_naming_the_field_and_the_accepted_forms(field: str, text: str, says: str) -> None:
    with pytest.raises(ValidationError) as e:
        parse_time(text, field)
    assert e.value.field == field and says in str(e.value)
    if says != "out of range":
        assert "2024-05-01, 2024-05-01T09:30:00 or 2024-05-01T09:30:00+02:00" in str(e.value)
        # the year and month forms are offered only where they are taken
        assert ("2024 / 2024-05" in str(e.value)) == (field == "valid_from")


# ------------------------------------------------------------------ Memory round trip


@pytest.fixture
def mem(tmp_path: Path) -> Any:
    m = Memory(str(tmp_path / "m.db"), llm=False, embedder=False)
    yield m
    m.close()


def fact(obj: str, **times: str) -> dict[str, Any]:
    return {"subject": "Maya", "relation": "lives_in", "object": obj, **times}


def lives(mem: Memory, as_of: Any) -> list[str]:
    return [f.object for f in mem.facts(user_id="u", subject="Maya", relation="lives_in", as_of=as_of)]


def test_round_trip_with_a_year_and_a_month(mem: Memory) -> None:
    mem.add_facts([fact("Lisbon", valid_from="2016", valid_to="2020"),
                   fact("Porto", valid_from="2020-06")], user_id="u")
    hist = {f.object: f for f in mem.history(user_id="u", subject="Maya", relation="lives_in")}
    assert (hist["Lisbon"].valid_from, hist["Lisbon"].valid_to) == (d(2016), d(2020))
    assert (hist["Porto"].valid_from, hist["Porto"].valid_to) == (d(2020, 6), None)
    assert lives(mem, "2016-01-01") == ["Lisbon"]
    assert lives(mem, "2019-12-31T23:59:59") == ["Lisbon"]
    assert lives(mem, "2020-01-01") == []  # valid_to is exclusive: Lisbon ended as 2020 began
    assert lives(mem, "2020-05-31T23:59:59+00:00") == []
    assert lives(mem, "2020-06-01") == ["Porto"]
    assert lives(mem, "2020-06-01T01:00:00+02:00") == []  # 2020-05-31T23:00 UTC
    assert lives(mem, date(2021, 1, 1)) == ["Porto"]


def test_a_year_means_what_the_same_first_day_means(tmp_path: Path) -> None:
    """valid_from="2020" and valid_from="2020-01-01" store the same fact, as do "2020-06" and "2020-06-01"."""
    stored = []
    for i, (start, end) in enumerate([("2018", "2020-06"), ("2018-01-01", "2020-06-01"),
                                      ("2018-01-01T00:00:00Z", "2020-06-01T00:00:00+00:00")]):
        m = Memory(str(tmp_path / f"m{i}.db"), llm=False, embedder=False)
        try:
            m.add_facts([fact("Lisbon", valid_from=start, valid_to=end)], user_id="u")
            (f,) = m.history(user_id="u")
            stored.append((f.valid_from, f.valid_to, f.stated_to))
        finally:
            m.close()
    assert stored[0] == stored[1] == stored[2] == (d(2018), d(2020, 6), d(2020, 6))


def test_the_same_string_as_start_and_end_in_one_batch(mem: Memory) -> None:
    """A start and an end given as the same year meet there (the batch's time cache cannot mix readings)."""
    mem.add_facts([fact("Lisbon", valid_from="2015", valid_to="2019"),
                   fact("Porto", valid_from="2019", valid_to="2022")], user_id="u")
    assert lives(mem, "2018-12-31") == ["Lisbon"]
    assert lives(mem, "2019-01-01") == ["Porto"]
    assert lives(mem, "2022-01-01") == []


@pytest.mark.parametrize("as_of", ["2020", "2020-06", "2020-6", "2020-13", "2021-02-29", "Feb 29, 2021"])
def test_facts_as_of_refuses_reduced_and_bad_forms(mem: Memory, as_of: str) -> None:
    mem.add_facts([fact("Lisbon", valid_from="2016")], user_id="u")
    with pytest.raises(ValidationError) as e:
        mem.facts(user_id="u", as_of=as_of)
    assert e.value.field == "as_of" and "ISO-8601" in str(e.value)
    assert lives(mem, "2020-06-01") == ["Lisbon"]  # nothing lost


@pytest.mark.parametrize(("key", "value", "says"), [
    ("valid_from", "2020-13", "13 is not a month"),
    ("valid_from", "2020-6", "two digits (2020-06)"),
    ("valid_to", "2021-02-29", "no such date: February 2021 has 28 days"),
    ("valid_from", "29 February 2019", "expected an ISO-8601 date or datetime"),
    ("valid_to", "Feb 29, 2021", "expected an ISO-8601 date or datetime"),
    ("valid_from", "0000", "out of range"),
])
def test_a_bad_fact_date_names_its_field_and_writes_nothing(mem: Memory, key: str, value: str, says: str) -> None:
    mem.add_facts([fact("Lisbon", valid_from="2016")], user_id="u")
    before = mem.history(user_id="u")
    with pytest.raises(ValidationError) as e:
        mem.add_facts([fact("Berlin", valid_from="2019"), fact("Porto", **{key: value})], user_id="u")
    assert e.value.field == f"facts[1].{key}" and says in str(e.value)
    assert mem.history(user_id="u") == before  # the batch is refused whole; what was stored stays
    assert lives(mem, "2020-06-01") == ["Lisbon"]


def test_leap_day_round_trip(mem: Memory) -> None:
    mem.add_facts([fact("Lisbon", valid_from="2024-02-29", valid_to="2028-02-29")], user_id="u")
    assert lives(mem, "2024-02-28T23:59:59") == []
    assert lives(mem, "2024-02-29") == ["Lisbon"]
    assert lives(mem, "2028-02-28") == ["Lisbon"]
    assert lives(mem, "2028-02-29") == []
    with pytest.raises(ValidationError, match="February 2027 has 28 days"):
        mem.facts(user_id="u", as_of="2027-02-29")


# ------------------------------------------------------------------ timeexpr: impossible dates

REF = d(2025, 6, 1, 12)


@pytest.mark.parametrize("expr", [
    "Feb 29, 2021", "on Feb 29, 2023", "February 29, 2021", "February 29 2021", "29 February 2019",
    "on the 29th of February, 2019", "feb 29th, 2023", "29 Feb, 2023",
    "Feb 30", "on Feb 30, 2023", "30 February 2024", "April 31, 2022", "on April 31st", "31 June 2020",
    "Sept 31, 2020", "on May 32, 2020", "0 May 2020",
    "2023-02-29", "2023/02/29", "2023-04-31", "2023-02-29T10:00:00", "1900-02-29",
    # annotated or compound: an impossible date makes the whole expression unreadable
    "last sunday (feb 29, 2023)", "feb 29, 2023 (a wednesday)", "2023-02-29, in berlin",
    "since Feb 29, 2023", "until April 31, 2022", "from Feb 29, 2021 to March 2022",
    "between 29 February 2019 and 2020", "before Feb 30, 2023", "after 2021-02-29",
])
def test_an_impossible_date_resolves_to_nothing(expr: str) -> None:
    assert resolve(expr, REF) is None
    # the fact then takes the message time, as for any expression that cannot be read
    assert resolve_validity(expr, REF) == (REF, None)
    assert resolve_validity(expr, REF, ended=True) == (None, REF)


@pytest.mark.parametrize(("expr", "start"), [
    ("Feb 29, 2024", d(2024, 2, 29)), ("on 29 February 2024", d(2024, 2, 29)),
    ("29th of february, 2000", d(2000, 2, 29)), ("2024-02-29", d(2024, 2, 29)),
    ("2024/02/29", d(2024, 2, 29)), ("feb 28, 2023", d(2023, 2, 28)), ("March 1, 2023", d(2023, 3, 1)),
    ("April 30, 2022", d(2022, 4, 30)), ("31 December 2019", d(2019, 12, 31)),
    # bare 29 February: the latest one begun (a leap year's), as any bare day is
    ("on 29 February", d(2024, 2, 29)), ("feb 29", d(2024, 2, 29)),
])
def test_real_dates_still_resolve_to_their_day(expr: str, start: datetime) -> None:
    r = resolve(expr, REF)
    assert r is not None and (r.kind, r.start, r.end, r.granularity) == ("point", start, start + timedelta(days=1),
                                                                         "day")


@pytest.mark.parametrize(("expr", "start", "end"), [
    ("in February 2023", d(2023, 2), d(2023, 3)),
    ("2023", d(2023), d(2024)),
    ("2020-06", d(2020, 6), d(2020, 7)),
    ("since Feb 28, 2023", d(2023, 2, 28), None),
    ("from Feb 29, 2024 to March 2025", d(2024, 2, 29), d(2025, 4)),
    ("last sunday (may 25, 2025)", d(2025, 5, 25), d(2025, 5, 26)),
])
def test_neighbouring_forms_unchanged(expr: str, start: datetime, end: datetime | None) -> None:
    r = resolve(expr, REF)
    assert r is not None and (r.start, r.end) == (start, end)


def test_a_leap_day_said_in_a_leap_year() -> None:
    ref = d(2024, 3, 10)
    r = resolve("on Feb 29", ref)
    assert r is not None and r.start == d(2024, 2, 29)
    assert resolve("Feb 29, 2025", ref) is None
    r = resolve("on Feb 29", d(2024, 2, 28))  # not begun yet: the one before, 2020's
    assert r is not None and r.start == d(2020, 2, 29)


def test_time_words_in_turns_skip_an_impossible_date() -> None:
    """The write path's phrase finder and the read path's date writer (:mod:`chronomem.timewords`) go
    through :func:`resolve`: an impossible date is no time phrase, and no date is written after it."""
    from chronomem.timewords import dated_text, find_time_phrase

    for text in ["I moved to Porto on Feb 29, 2023.", "Since Feb 30, 2023 I live here", "We met on 29 February 2019."]:
        assert find_time_phrase(text) == "" and find_time_phrase(text, seasons=True) == ""
        assert dated_text(text, REF) == text
    assert find_time_phrase("I moved on Feb 28, 2023.") == "on Feb 28, 2023"
    # a bare 29 February is a time phrase (found four years back from the finder's reference, 2000-01-01)
    assert find_time_phrase("on February 29 we had a party") == "on February 29"
    assert dated_text("on February 29 we had a party", REF) == "on February 29 [29 February 2024] we had a party"


def test_rest_takes_a_year_where_the_library_does(tmp_path: Path) -> None:
    """A fact's correction over REST reads its validity as ``Memory.correct`` does; ``as_of`` refuses a year."""
    from fastapi.testclient import TestClient

    from chronomem.server import create_app

    with Memory(tmp_path / "m.db", llm=False, embedder=False) as m, TestClient(create_app(m)) as c:
        added = c.post("/v1/users/u1/facts", json={"facts": [
            {"subject": "Maya", "relation": "lives_in", "object": "Porto", "valid_from": "2018"}]}).json()["added"]
        assert added[0]["valid_from"] == "2018-01-01T00:00:00+00:00"
        r = c.patch(f"/v1/users/u1/facts/{added[0]['id']}", json={"valid_to": "2021-06"})
        assert r.status_code == 200, r.text
        assert r.json()["fact"]["valid_to"] == "2021-06-01T00:00:00+00:00"
        r = c.patch(f"/v1/users/u1/facts/{r.json()['fact']['id']}", json={"valid_to": "2021-13"})
        assert (r.status_code, r.json()["field"]) == (422, "valid_to") and "not a month" in r.json()["detail"]
        r = c.get("/v1/users/u1/facts", params={"as_of": "2020"})
        assert (r.status_code, r.json()["field"]) == (422, "as_of") and "not an instant" in r.json()["detail"]
