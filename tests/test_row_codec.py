"""The store's row codec: the fast paths of ``row_to_fact`` read back exactly what was written."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest

from chronomem.model import Fact, Intent, LaterDate, Origin
from chronomem.store.sql import FACT_COLS, HEAD_COLS, _id_list, _order_of, fact_to_row, row_to_fact

ODD_IDS = [
    [],
    ["m1"],
    ["m1", "m2", "m3"],
    ['say "hi"', "x"],  # quotes are escaped: the JSON parser reads it
    ['a", "b'],  # the separator inside an id
    ["back\\slash"],
    ["naïve", "東京"],  # non-ASCII is escaped by json.dumps
    ["", " ", ","],
    ["a, b", '"'],
]


@pytest.mark.parametrize("ids", ODD_IDS)
def test_id_list_reads_back_what_json_dumps_wrote(ids: list[str]) -> None:
    assert _id_list(json.dumps(ids)) == ids


@pytest.mark.parametrize("text,ids", [('["a","b"]', ["a", "b"]), ('[ "a" ]', ["a"]), ('["a",\n"b"]', ["a", "b"])])
def test_id_list_reads_other_json_spellings(text: str, ids: list[str]) -> None:
    # an import or a hand-edited row need not use json.dumps's separators
    assert _id_list(text) == ids


def test_row_round_trip_keeps_every_field() -> None:
    t0 = datetime(2020, 5, 1, 12, 30, 15, 250, tzinfo=timezone.utc)
    f = Fact(id="f1", user_id="u", subject="Maya", relation="lives_in", object="Porto",
             valid_from=t0, valid_to=t0 + timedelta(days=400), confidence=0.75, intent=Intent.FACT,
             origin=Origin.STATED, recorded_at=t0 + timedelta(days=1), source_ids=['m"1', "m2"],
             session_id="s1", text="Maya lived in Porto", agent_id="a", closed_by="f2",
             stated_to=t0 + timedelta(days=500), ended_by=["m9"], started_by=["m0"], text_from=["m3"],
             confirmations=[(0.6, ["m1"]), (0.75, ["m2"])], other_words=[(["m2", "m4"], 'Maya "still" in Porto')],
             later_starts=[LaterDate(t0 + timedelta(days=30), t0 + timedelta(days=31), ["m2"])],
             later_ends=[LaterDate(t0 + timedelta(days=600), t0 + timedelta(days=2), ["m5", "m6"])],
             subject_id="e1", object_id="e2")
    row = fact_to_row(f)
    assert row_to_fact(row) == f
    # read twice, the memoised time conversion hands out equal, timezone-aware datetimes
    again = row_to_fact(row)
    assert again == f and again.valid_from is not None and again.valid_from.tzinfo is not None


def test_fact_order_is_the_stores_order_by() -> None:
    """``ORDER BY valid_from IS NOT NULL, valid_from, recorded_at, id``: unknown starts first."""
    def row(fid: str, start: int | None, recorded: int) -> tuple[object, ...]:
        r: list[object] = [None] * 27
        r[1], r[7], r[13] = fid, start, recorded
        return tuple(r)

    rows = [row("b", 5, 1), row("a", 5, 1), row("c", None, 9), row("d", 3, 7), row("e", None, 2), row("f", 5, 0)]
    assert [r[1] for r in sorted(rows, key=_order_of(FACT_COLS))] == ["e", "c", "d", "f", "a", "b"]
    heads = [(r[1], None, "", "", None, "", r[7], r[13]) for r in rows]  # the same order over a head's columns
    assert [h[0] for h in sorted(heads, key=_order_of(HEAD_COLS))] == ["e", "c", "d", "f", "a", "b"]
