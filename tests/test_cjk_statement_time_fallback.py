"""A Japanese or Chinese statement the model wrote without its line's time words is dated by the line's.

The local 1.5B model often writes "マヤ lives_in リスボン" for "マヤは先月リスボンに引っ越しました" (said on 1 March
2021): the statement has no time words, and the fact was dated the day it was said instead of February 2021.
The cited line's time phrase is read now (:func:`chronomem.extract.observations.cjk_line_time`): the clause
naming the object, else its sentence, else the line when it holds one phrase only; English statements from
English lines are read exactly as before.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import pytest

from chronomem import Memory
from chronomem.extract import observations
from chronomem.extract.observations import cjk_line_time

from test_extract_line_observations import SlotLLM, fact

SAID = "2021-03-01T10:00:00Z"
AT = datetime(2021, 3, 1, 10, tzinfo=timezone.utc)
FEBRUARY = datetime(2021, 2, 1, tzinfo=timezone.utc)


def stored(script: dict[str, dict[str, Any]], speaker: str, *lines: str) -> dict[str, Any]:
    """The facts of ``speaker`` the default method (v10) stores from ``lines``, its model answering by ``script``,
    by object."""
    llm = type("ScriptedLLM", (SlotLLM,), {"SCRIPT": script})()
    with Memory(":memory:", llm=llm) as mem:
        turns = [{"id": f"t{i}", "speaker": speaker, "text": text} for i, text in enumerate(lines)]
        assert mem.add(turns, user_id="u1", session_id="s1", timestamp=SAID).ok
        return {f.object: f for f in mem.facts(user_id="u1", subject=speaker)}


def test_a_japanese_statement_without_the_lines_time_words_is_dated_by_them() -> None:
    line = "マヤは先月リスボンに引っ越しました。"
    facts = stored({line: fact("マヤはリスボンに住んでいます。", "マヤ", "lives_in", "リスボン")}, "マヤ", line)
    lisbon = facts["リスボン"]
    assert (lisbon.relation, lisbon.valid_from, lisbon.valid_to) == ("lives_in", FEBRUARY, None)
    assert lisbon.text == "マヤはリスボンに住んでいます。"  # the statement says no time: no date is written into it


@pytest.mark.parametrize("line, statement, obj, since", [
    ("我上个月搬到了上海。", "李明现在住在上海。", "上海", FEBRUARY),
    ("我2019年搬到了北京,一直住在那里。", "李明现在住在北京。", "北京", datetime(2019, 1, 1, tzinfo=timezone.utc)),
    ("我去年夏天搬到了广州。", "李明现在住在广州。", "广州", datetime(2020, 6, 1, tzinfo=timezone.utc)),  # a season
    ("我二〇一八年十月搬到了杭州。", "李明现在住在杭州。", "杭州", datetime(2018, 10, 1, tzinfo=timezone.utc)),
])
def test_a_chinese_statement_without_the_lines_time_words_is_dated_by_them(
        line: str, statement: str, obj: str, since: datetime) -> None:
    facts = stored({line: fact(statement, "李明", "lives_in", obj)}, "李明", line)
    assert facts[obj].valid_from == since


def test_an_english_statement_of_a_japanese_line_is_dated_by_the_line() -> None:
    line = "マヤは先月リスボンに引っ越しました。"
    facts = stored({line: fact("Maya moved to リスボン.", "マヤ", "lives_in", "リスボン")}, "マヤ", line)
    assert facts["リスボン"].valid_from == FEBRUARY


def test_the_clause_that_names_the_object_picks_among_the_lines_times() -> None:
    line = "2019年からポルトで働いていて、先月リスボンに引っ越しました。"
    facts = stored({line: fact("マヤはリスボンに住んでいます。", "マヤ", "lives_in", "リスボン")}, "マヤ", line)
    assert facts["リスボン"].valid_from == FEBRUARY  # not 2019: that clause is about Porto
    assert cjk_line_time(line, ["ポルト"]) == "since 2019"


def test_a_line_with_two_different_times_and_no_clause_naming_the_object_is_not_guessed() -> None:
    line = "去年仕事を辞めて、先月引っ越しました。新しい家はリスボンにあります。"
    facts = stored({line: fact("マヤはリスボンに住んでいます。", "マヤ", "lives_in", "リスボン")}, "マヤ", line)
    assert facts["リスボン"].valid_from == AT  # last year or last month: nothing tells, so the day it was said
    assert cjk_line_time(line, ["リスボン"]) == ""
    assert cjk_line_time("新しい家はリスボンにあります。先月引っ越しました。", ["リスボン"]) == "last month"  # one time: read


def test_a_statement_with_time_words_of_its_own_keeps_them() -> None:
    line = "2019年からポルトに住んでいて、先月リスボンに引っ越しました。"
    facts = stored({line: fact("マヤは2019年からポルトに住んでいました。", "マヤ", "lives_in", "ポルト")}, "マヤ", line)
    assert facts["ポルト"].valid_from == datetime(2019, 1, 1, tzinfo=timezone.utc)


def test_an_english_statement_of_an_english_line_is_untouched(monkeypatch: pytest.MonkeyPatch) -> None:
    read: list[str] = []
    monkeypatch.setattr(observations, "cjk_line_time", lambda line, names: read.append(line) or "last year")
    line = "We adopted a puppy named Rex last month, he's a handful."
    facts = stored({line: fact("Maya has a puppy named Rex.", "Maya", "has_pet", "Rex")}, "Maya", line)
    assert facts["Rex"].valid_from == AT and facts["Rex"].text == "Maya has a puppy named Rex."
    assert read == []  # the line reading is never reached for English
