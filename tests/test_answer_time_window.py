"""answer() asks a question with a time window as of one point of it only where the state facts are the
same all through the window.

An adversarial test found "Did Maya live in Porto in 2019?" sent as "Did Maya live in Porto?" as of
2 July 2019 (the year's middle, session 46), with only Lisbon (from April 2019) under "Facts that answer
the question directly": the model said no, though she lived in Porto until April.  "Where did Bob live in
2020?" with Oslo only from September 2020 got no direct fact at all.  Where a value starts or ends inside
the window the question now keeps its words, every state fact of the window is listed, and it is asked as
of the window's end; where one value holds throughout, the prompt is as before.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from chronomem import Memory
from chronomem.answering import ask_in_window, holds_throughout, question_window
from chronomem.model import Fact, Intent, Origin
from chronomem.providers.base import CallUsage, ChatResult
from test_answer_state_facts import BLOCK, NOW
from test_answer_state_facts import PromptLLM as StateFactsPromptLLM

UTC = timezone.utc
Y2019 = {"window_text": "in 2019", "window": ["2019-01-01T00:00:00+00:00", "2020-01-01T00:00:00+00:00"]}


def _t(year: int, month: int, day: int, hour: int = 0) -> datetime:
    return datetime(year, month, day, hour, tzinfo=UTC)


class PromptLLM(StateFactsPromptLLM):
    """Says "Not mentioned" and keeps every answer prompt (the search's own calls are not answers)."""

    def chat(self, messages: list[dict[str, str]], **kw: Any) -> ChatResult:
        user = messages[-1]["content"]
        if kw.get("purpose") == "answer":
            self.prompts.append(user)
        return ChatResult(text="Not mentioned", usage=CallUsage(prompt_tokens=len(user.split()), completion_tokens=3,
                                                                latency_s=0.0, purpose=kw.get("purpose", "")))


@pytest.fixture
def movers(tmp_path: Path) -> Iterator[tuple[Memory, PromptLLM]]:
    llm = PromptLLM()
    mem = Memory(tmp_path / "m.db", llm=llm, embedder=False)
    mem.add_facts([{"subject": "Maya", "relation": "lives_in", "object": "Porto", "valid_from": "2015-01-01"}],
                  user_id="u1")
    mem.add_facts([{"subject": "Maya", "relation": "lives_in", "object": "Lisbon", "valid_from": "2019-04-01"}],
                  user_id="u1")
    mem.add_facts([{"subject": "Bob", "relation": "lives_in", "object": "Oslo", "valid_from": "2020-09-01"}],
                  user_id="u1")
    yield mem, llm
    mem.close()


def _direct(prompt: str) -> list[str]:
    """The lines of the prompt's "Facts that answer the question directly" block."""
    lines = prompt.splitlines()
    if BLOCK not in lines:
        return []
    out = []
    for line in lines[lines.index(BLOCK) + 1:]:
        if not line.startswith("- "):
            break
        out.append(line)
    return out


def _question(prompt: str) -> str:
    return next(line for line in prompt.splitlines() if line.startswith("Question: "))


@pytest.mark.parametrize("as_of", [None, NOW])
def test_a_value_that_changes_inside_the_year_keeps_the_year_and_lists_both(
        movers: tuple[Memory, PromptLLM], as_of: str | None) -> None:
    mem, llm = movers
    ans = mem.answer("Did Maya live in Porto in 2019?", user_id="u1", as_of=as_of, method="real")
    prompt = llm.prompts[-1]
    assert _question(prompt) == "Question: Did Maya live in Porto in 2019?"
    assert _direct(prompt) == ["- Maya lives in Lisbon [1 April 2019 -> now) c=1.00",
                               "- Maya lived in Porto [1 January 2015 -> 1 April 2019) c=1.00"]
    assert prompt.startswith("Memory (as of 31 December 2019 23:59)")
    assert prompt.count("as of") == 1  # the evidence header is not dated a second time
    assert [f.object for f in ans.evidence[:2]] == ["Lisbon", "Porto"]
    assert any("change within 'in 2019'" in n for n in ans.trace.notes)

    mem.answer("Where did Maya live in 2019?", user_id="u1", as_of=as_of, method="real")
    prompt = llm.prompts[-1]
    assert _question(prompt) == "Question: Where did Maya live in 2019?"
    assert {line.split(" [")[0] for line in _direct(prompt)} == {"- Maya lives in Lisbon", "- Maya lived in Porto"}


def test_a_value_that_starts_inside_the_year_is_a_direct_fact(movers: tuple[Memory, PromptLLM]) -> None:
    mem, llm = movers
    mem.answer("Where did Bob live in 2020?", user_id="u1", as_of=NOW, method="real")
    prompt = llm.prompts[-1]
    assert _question(prompt) == "Question: Where did Bob live in 2020?"
    assert _direct(prompt) == ["- Bob lives in Oslo [1 September 2020 -> now) c=1.00"]
    assert prompt.startswith("Memory (as of 31 December 2020 23:59)")


def test_one_value_held_all_year_is_asked_as_of_the_middle_as_before(movers: tuple[Memory, PromptLLM]) -> None:
    """Session 46's gain stays: a small model asked "… in 2017?" looks for "2017" in the evidence."""
    mem, llm = movers
    ans = mem.answer("Where did Maya live in 2017?", user_id="u1", as_of=NOW, method="real")
    prompt = llm.prompts[-1]
    assert _question(prompt) == "Question: Where did Maya live?"
    assert prompt.startswith("Memory (as of 2 July 2017 12:00)")
    assert _direct(prompt) == ["- Maya lives in Porto [1 January 2015 -> 1 April 2019) c=1.00"]
    assert not any("change within" in n for n in ans.trace.notes)
    # and a year in which she lived in Lisbon throughout
    mem.answer("Where did Maya live in 2021?", user_id="u1", as_of=NOW, method="real")
    assert _question(llm.prompts[-1]) == "Question: Where did Maya live?"
    assert _direct(llm.prompts[-1]) == ["- Maya lives in Lisbon [1 April 2019 -> now) c=1.00"]


def test_the_callers_as_of_cuts_the_window(movers: tuple[Memory, PromptLLM]) -> None:
    """Asked as of 1 March 2019, the window is January to 1 March, all of it in Porto."""
    mem, llm = movers
    mem.answer("Did Maya live in Porto in 2019?", user_id="u1", as_of="2019-03-01T00:00:00+00:00", method="real")
    prompt = llm.prompts[-1]
    assert _question(prompt) == "Question: Did Maya live in Porto?"
    assert _direct(prompt) == ["- Maya lives in Porto [1 January 2015 -> 1 April 2019) c=1.00"]


def test_a_span_lists_every_value_of_the_span(tmp_path: Path) -> None:
    """"between 2010 and 2013" kept its words before; its direct facts were only those of its last day."""
    llm = PromptLLM()
    mem = Memory(tmp_path / "m.db", llm=llm, embedder=False)
    mem.add_facts([
        {"subject": "Lena", "relation": "works_at", "object": "Bosch", "valid_from": "2008-01-01",
         "valid_to": "2012-03-01"},
        {"subject": "Lena", "relation": "works_at", "object": "Siemens", "valid_from": "2012-03-01",
         "valid_to": "2016-01-01"},
        {"subject": "Lena", "relation": "works_at", "object": "SAP", "valid_from": "2016-01-01"},
    ], user_id="u1")
    mem.answer("Where did Lena work between 2010 and 2013?", user_id="u1", as_of=NOW, method="real")
    prompt = llm.prompts[-1]
    assert _question(prompt).startswith("Question: Where did Lena work between 2010 and 2013? Name the employer")
    assert [line.split(" [")[0] for line in _direct(prompt)] == ["- Lena works at Siemens", "- Lena worked at Bosch"]
    mem.close()


# the rule itself, pure


def _fact(obj: str, start: datetime | None, end: datetime | None, closed_by: str | None = None) -> Fact:
    return Fact(id=obj, user_id="u1", subject="Maya", relation="lives_in", object=obj, valid_from=start,
                valid_to=end, confidence=1.0, intent=Intent.FACT, origin=Origin.STATED,
                recorded_at=_t(2026, 1, 1), closed_by=closed_by)


def test_holds_throughout() -> None:
    year = (_t(2019, 1, 1), _t(2020, 1, 1))
    assert holds_throughout([], year)
    assert holds_throughout([_fact("Porto", _t(2015, 1, 1), None)], year)
    assert holds_throughout([_fact("Porto", None, _t(2020, 1, 1))], year)
    assert holds_throughout([_fact("Porto", _t(2019, 1, 1), _t(2021, 1, 1)), _fact("Faro", None, None)], year)
    assert not holds_throughout([_fact("Porto", _t(2015, 1, 1), _t(2019, 4, 1))], year)
    assert not holds_throughout([_fact("Oslo", _t(2019, 9, 1), None)], year)
    assert holds_throughout([_fact("Oslo", _t(2019, 1, 20), None)], year)  # within an eighth of its start
    assert not holds_throughout([_fact("Oslo", _t(2019, 1, 20), None)], year, edge=0)
    assert not holds_throughout([_fact("Porto", _t(2015, 1, 1), None, closed_by="x")], year)  # superseded
    # an open start ("before 2021") is held throughout only by a fact without a start
    before = (None, _t(2021, 1, 1))
    assert holds_throughout([_fact("Porto", None, None)], before)
    assert not holds_throughout([_fact("Porto", _t(2015, 1, 1), None)], before)


def test_question_window_is_cut_at_the_callers_time() -> None:
    now = _t(2026, 1, 1)
    assert question_window("Where did Maya live in 2019?", Y2019, now) == (_t(2019, 1, 1), _t(2020, 1, 1))
    march = _t(2019, 3, 1)
    assert question_window("Where did Maya live in 2019?", Y2019, march) == (_t(2019, 1, 1),
                                                                             march + timedelta(microseconds=1))
    assert question_window("Where did Maya live in 2019?", Y2019, _t(2018, 6, 1)) is None  # after the as_of
    assert question_window("Where does Maya live?", {}, now) is None
    assert question_window("Where did Maya live last year?", Y2019, now) is None  # its words are not there
    since = {"window_text": "since 2015", "window": ["2015-01-01T00:00:00+00:00", None]}
    assert question_window("Where has Lena worked since 2015?", since, now) == (
        _t(2015, 1, 1), now + timedelta(microseconds=1))


def test_ask_in_window() -> None:
    now = _t(2026, 1, 1)
    q = "Did Maya live in Porto in 2019?"
    porto, lisbon = _fact("Porto", _t(2015, 1, 1), _t(2019, 4, 1)), _fact("Lisbon", _t(2019, 4, 1), None)
    # one value all year (or none known): the middle of the year, without its words — as before
    assert ask_in_window(q, Y2019, now, [_fact("Lisbon", _t(2018, 1, 1), None)]) == (
        "Did Maya live in Porto?", _t(2019, 7, 2, 12))
    assert ask_in_window(q, Y2019, now, []) == ("Did Maya live in Porto?", _t(2019, 7, 2, 12))
    # the value changes inside the year: its words kept, as of its end
    end = _t(2020, 1, 1) - timedelta(microseconds=1)
    assert ask_in_window(q, Y2019, now, [lisbon, porto]) == (q, end)
    # bounded by the caller's time
    june = _t(2019, 6, 1)
    assert ask_in_window(q, Y2019, june, [lisbon, porto]) == (q, june)
    # a question without a window is not touched
    assert ask_in_window("Where does Maya live?", {}, now, [lisbon, porto]) == ("Where does Maya live?", now)



def test_a_fact_at_the_edge_of_a_window_is_not_one_of_its_values() -> None:
    """"late 2019" is read as September to December: a job that ended on 14 September is not its answer."""
    from chronomem.answering import window_values

    late = (_t(2019, 9, 1), _t(2020, 1, 1))
    bosch, sbs = _fact("Bosch", _t(2012, 11, 10), _t(2019, 9, 14)), _fact("SBS", _t(2019, 9, 14), None)
    assert window_values([sbs, bosch], late) == [sbs]
    assert holds_throughout(window_values([sbs, bosch], late), late)  # SBS began two weeks in: at its edge
    year = (_t(2019, 1, 1), _t(2020, 1, 1))
    porto = _fact("Porto", _t(2015, 1, 1), _t(2019, 4, 1))
    assert window_values([porto], year) == [porto]  # a quarter of the year is one of its values
    assert window_values([porto], (None, _t(2021, 1, 1))) == [porto]
