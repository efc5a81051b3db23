"""The fused read path: reciprocal rank fusion (pure) and ``SearchConfig.fused_turns`` on a real store."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from chronomem import Memory
from chronomem.errors import ModelError, ValidationError
from chronomem.model import Message
from chronomem.providers.base import CallUsage, ChatResult
from chronomem.retrieve import SearchConfig
from chronomem.retrieve.fusion import pick_groups_within_budget, reciprocal_rank_fusion
from chronomem.retrieve.serialize import SEARCH_HEADER, approx_tokens, quote_line

U = "u1"


# -- pure parts ------------------------------------------------------------------------------------
def test_rrf_rewards_items_ranked_well_by_several_lists() -> None:
    # b is second in both lists, a first in one only: 2/(k+2) > 1/(k+1) for any k >= 0
    assert reciprocal_rank_fusion([["a", "b", "c"], ["d", "b"]], k=10)[0] == "b"
    assert reciprocal_rank_fusion([["a", "b"], ["b", "a"]]) == ["a", "b"]  # a tie keeps first-seen order
    assert reciprocal_rank_fusion([]) == []


def test_rrf_weights_and_repeats() -> None:
    ranked = reciprocal_rank_fusion([["x", "y"], ["y", "x"]], weights=[1.0, 0.0])
    assert ranked == ["x", "y"]  # a zero weight list contributes nothing but its items are kept
    assert reciprocal_rank_fusion([["x", "x", "y"]]) == ["x", "y"]  # a repeat counts once, at its best rank
    with pytest.raises(ValueError, match="one weight per ranking"):
        reciprocal_rank_fusion([["x"]], weights=[1.0, 2.0])


def test_pick_within_budget_skips_what_does_not_fit() -> None:
    def pick(ranked: list[str], costs: list[int], budget: int, limit: int) -> list[str]:
        return pick_groups_within_budget([(x,) for x in ranked], dict(zip(ranked, costs)), budget, limit)

    assert pick(["a", "b", "c", "d"], [5, 20, 4, 1], budget=10, limit=3) == ["a", "c", "d"]
    assert pick(["a", "b", "c"], [1, 1, 1], budget=10, limit=2) == ["a", "b"]
    assert pick([], [], budget=10, limit=2) == []


def test_fused_config_is_validated() -> None:
    with pytest.raises(ValidationError, match="fused_turns"):
        SearchConfig(fused_turns=-1)
    with pytest.raises(ValidationError, match="fused_weights"):
        SearchConfig(fused_weights=(1.0, -1.0, 0.0))
    with pytest.raises(ValidationError, match="fused_weights"):
        SearchConfig(fused_weights=(1.0, 1.0))  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="fused_turns_first"):
        SearchConfig(fused_turns_first=1)  # type: ignore[arg-type]


# -- on a memory -----------------------------------------------------------------------------------
T0 = datetime(2023, 5, 1, 10, 0, tzinfo=timezone.utc)


@pytest.fixture()
def mem() -> Memory:
    m = Memory(":memory:", embedder=False)
    turns = [("s1", "Rui", "What did you do on the weekend?"),          # m0
             ("s1", "Maya", "Went to a pottery class, made a bowl."),    # m1: the reply, no question word
             ("s1", "Rui", "Cool. Anything else?"),                      # m2
             ("s2", "Maya", "I moved to Porto in April."),               # m3: a fact's source
             ("s2", "Rui", "How is the new flat?"),                      # m4
             ("s3", "Maya", "Another pottery weekend, a vase this time.")]  # m5: said after as_of
    for i, (sid, who, text) in enumerate(turns):
        when = T0 + timedelta(days=30 * int(sid[1:]), minutes=i)
        m.store.ensure_session(U, sid, started_at=when)
        m.store.add_messages(U, [Message(id=f"m{i}", user_id=U, session_id=sid, speaker=who, text=text,
                                         timestamp=when, recorded_at=when, seq=i)])
    m.add_facts([{"subject": "Maya", "relation": "lives_in", "object": "Porto", "valid_from": "2023-04-01",
                  "source_ids": ["m3"], "text": "Maya moved to Porto in April 2023"},
                 {"subject": "Maya", "relation": "made", "object": "a bowl", "valid_from": "2023-05-31",
                  "source_ids": ["m1"], "text": "Maya made a bowl at a pottery class on the weekend"}], user_id=U)
    yield m
    m.close()


FUSED = SearchConfig(embeddings=False, evaluator=False, fused_turns=4, context_tokens=600)
AS_OF = T0 + timedelta(days=75)  # sessions 1 and 2


def test_fused_turns_rank_by_fusion_and_show_in_the_order_said(mem: Memory) -> None:
    res = mem.search("What did Maya do on the weekend?", user_id=U, as_of=AS_OF, config=FUSED)
    # the reply m1 comes through its own fact, the graph and the turn before it: first in rank
    assert res.quoted_ids[0] == "m1"
    assert "m5" not in res.quoted_ids  # said after as_of
    assert len(res.quoted_ids) <= 4
    order = {m.id: (m.timestamp, m.seq) for m in mem.store.messages(U)}
    lines = [ln for ln in res.context.splitlines() if ln.startswith("[")]  # "[date] id Speaker: text"
    shown = [next(w for w in ln.split() if w in order) for ln in lines]
    assert sorted(shown) == sorted(res.quoted_ids)
    assert shown == sorted(shown, key=lambda i: order[i])  # the order they were said
    assert any("rank fusion" in n for n in res.trace.notes)


def test_fused_context_keeps_to_its_budget_and_is_off_by_default(mem: Memory) -> None:
    small = SearchConfig(embeddings=False, evaluator=False, fused_turns=10, context_tokens=120,
                         fused_graph_tokens=60)
    res = mem.search("What did Maya do on the weekend?", user_id=U, as_of=AS_OF, config=small)
    assert res.context_tokens <= 120
    plain = mem.search("What did Maya do on the weekend?", user_id=U, as_of=AS_OF,
                       config=SearchConfig(embeddings=False, evaluator=False))
    assert plain.quoted_ids == []


def test_when_questions_get_the_dated_graph_evidence_first(mem: Memory) -> None:
    when = mem.search("When did Maya move to Porto?", user_id=U, as_of=AS_OF, config=FUSED)
    assert when.context.startswith("Evidence")
    what = mem.search("What did Maya make at the pottery class?", user_id=U, as_of=AS_OF, config=FUSED)
    assert what.context.startswith("Source turns:") and "Evidence" in what.context


def test_fused_turns_without_graph_evidence_are_the_whole_context(mem: Memory) -> None:
    res = mem.search("Which vase or bowl was made at a class?", user_id=U, as_of=AS_OF, config=FUSED)
    assert res.quoted_ids and res.quoted_ids[0] == "m1"


def test_turn_questions_show_a_reply_with_the_question_it_answers(mem: Memory) -> None:
    q = "Which bowl was made at a class?"
    plain = mem.search(q, user_id=U, as_of=AS_OF, config=FUSED)
    asked = mem.search(q, user_id=U, as_of=AS_OF, config=replace(FUSED, turn_questions=True))
    assert "m1" in plain.quoted_ids and "m0" not in plain.quoted_ids
    # m1 replies to Rui's "What did you do on the weekend?": shown right before it, its id after the hits
    assert asked.quoted_ids[0] == "m1" and "m0" in asked.quoted_ids
    hits = [i for i in asked.quoted_ids if i != "m0"]
    assert asked.quoted_ids == [*hits, "m0"] and hits == [i for i in plain.quoted_ids if i in hits]
    lines = [ln for ln in asked.context.splitlines() if ln.startswith("[")]
    at = next(k for k, ln in enumerate(lines) if " m1 " in ln)
    assert " m0 Rui: What did you do on the weekend?" in lines[at - 1]


def test_turn_questions_charge_the_pair_to_the_budget(mem: Memory) -> None:
    """A reply whose question does not fit goes out with it; what fits alone may still come in."""
    q = "Which bowl was made at a class?"
    costs = {m.id: approx_tokens(quote_line(m)) + 1 for m in mem.store.messages(U)}
    header = approx_tokens(SEARCH_HEADER)
    tight = replace(FUSED, turn_questions=True, context_tokens=header + costs["m1"] + costs["m0"] - 1,
                    fused_graph_tokens=0)
    res = mem.search(q, user_id=U, as_of=AS_OF, config=tight)
    assert "m1" not in res.quoted_ids and res.context_tokens <= tight.context_tokens
    roomy = replace(tight, context_tokens=header + costs["m1"] + costs["m0"] + 2)
    assert {"m0", "m1"} <= set(mem.search(q, user_id=U, as_of=AS_OF, config=roomy).quoted_ids)


def test_a_turn_that_opens_its_session_comes_alone(mem: Memory) -> None:
    res = mem.search("Where did Maya move in April?", user_id=U, as_of=AS_OF,
                     config=replace(FUSED, turn_questions=True))
    assert "m3" in res.quoted_ids
    assert mem.store.previous_messages(U, ["m3"]) == {}
    assert SearchConfig(turn_questions=True).turn_questions
    with pytest.raises(ValidationError, match="turn_questions"):
        SearchConfig(turn_questions="yes")  # type: ignore[arg-type]


def test_date_quotes_write_the_date_a_turn_s_time_words_stand_for(mem: Memory) -> None:
    q = "When did Maya move to Porto?"
    plain = mem.search(q, user_id=U, as_of=AS_OF, config=FUSED)
    dated = mem.search(q, user_id=U, as_of=AS_OF, config=replace(FUSED, date_quotes=True))
    assert "Maya: I moved to Porto in April." in plain.context
    assert "Maya: I moved to Porto in April [April 2023]." in dated.context  # said on 30 June 2023
    assert dated.quoted_ids == plain.quoted_ids and dated.context_tokens > plain.context_tokens
    assert any("asks for a date" in n for n in dated.trace.notes)
    # the layout without fusion (the facts' own source turns) dates them too
    sources = replace(FUSED, fused_turns=0, quote_sources=2, date_quotes=True)
    assert "in April [April 2023]." in mem.search(q, user_id=U, as_of=AS_OF, config=sources).context
    # a question that does not ask "when" keeps the turns as they were said
    where = mem.search("Where did Maya move in April?", user_id=U, as_of=AS_OF, config=replace(FUSED, date_quotes=True))
    assert "Maya: I moved to Porto in April." in where.context and "[April 2023]" not in where.context
    with pytest.raises(ValidationError, match="date_quotes"):
        SearchConfig(date_quotes="yes")  # type: ignore[arg-type]


def test_pick_groups_takes_a_group_whole_or_not_at_all() -> None:
    costs = {"q": 4, "a": 4, "b": 3, "c": 2}
    assert pick_groups_within_budget([("q", "a"), ("b",), ("c",)], costs, budget=7, limit=5) == ["b", "c"]
    assert pick_groups_within_budget([("q", "a"), ("q", "b")], costs, budget=11, limit=5) == ["q", "a", "b"]
    assert pick_groups_within_budget([("q", "a"), ("b",), ("c",)], costs, budget=99, limit=2) == ["q", "a", "b"]
    assert pick_groups_within_budget([], costs, budget=9, limit=2) == []


# -- expand_query: a guessed reply searches the turns too ------------------------------------------
class GuessingLLM:
    """Answers the expansion prompt with a fixed guess; counts what it was asked."""

    name = "guessing"
    context_window = 4096

    def __init__(self, guess: str = "We went camping and swimming at the lake with the kids.",
                 fail: bool = False) -> None:
        self.guess, self.fail, self.purposes = guess, fail, []  # type: ignore[var-annotated]

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def chat(self, messages: list[dict[str, str]], **kw: Any) -> ChatResult:
        self.purposes.append(kw.get("purpose"))
        if self.fail:
            raise ModelError("the model is down")
        assert "Question: What activities does Mel do with her family?" in messages[-1]["content"]
        return ChatResult(text=self.guess + "\nand more", usage=CallUsage(prompt_tokens=80, completion_tokens=14,
                                                                        purpose=kw.get("purpose", "")))


def _family_memory(llm: Any) -> Memory:
    m = Memory(":memory:", embedder=False, llm=llm)
    said = [("Rui", "What do you and your family like doing together?"), ("Mel", "Mostly outdoorsy stuff!"),
            ("Rui", "Nice. Anything else new with your family?"), ("Mel", "My family is fine, thanks."),
            ("Mel", "Last week we went camping by the lake, the kids loved swimming."),
            ("Rui", "Activities sound fun. I prefer my activities indoors.")]
    for i, (who, text) in enumerate(said):
        when = T0 + timedelta(minutes=i)
        m.store.ensure_session(U, "s1", started_at=T0)
        m.store.add_messages(U, [Message(id=f"f{i}", user_id=U, session_id="s1", speaker=who, text=text,
                                         timestamp=when, recorded_at=when, seq=i)])
    return m


EXPAND = SearchConfig(embeddings=False, evaluator=False, fused_turns=2, context_tokens=400, expand_query=True)
QUESTION = "What activities does Mel do with her family?"


def test_a_guessed_reply_finds_the_turn_the_question_shares_no_word_with() -> None:
    llm = GuessingLLM()
    with _family_memory(llm) as m:
        plain = m.search(QUESTION, user_id=U, config=replace(EXPAND, expand_query=False))
        assert "f4" not in plain.quoted_ids  # "family"/"activities" turns outrank the camping one
        assert llm.purposes == []  # off: no call
        res = m.search(QUESTION, user_id=U, config=EXPAND)
    assert "f4" in res.quoted_ids
    assert llm.purposes == ["expand"]
    assert res.trace.budget["llm_calls"] == 1
    # one line of guess: what the model wrote after a line break is not searched
    assert any(n == "query expansion: We went camping and swimming at the lake with the kids." for n in res.trace.notes)


@pytest.mark.parametrize("llm, note", [(GuessingLLM(fail=True), "query expansion failed"),
                                       (False, "query expansion skipped: no model (ConfigError)")])
def test_without_a_model_the_question_alone_searches(llm: Any, note: str) -> None:
    with _family_memory(llm) as m:
        res = m.search(QUESTION, user_id=U, config=EXPAND)
        plain = m.search(QUESTION, user_id=U, config=replace(EXPAND, expand_query=False))
    assert res.quoted_ids == plain.quoted_ids
    assert any(n.startswith(note) for n in res.trace.notes)


def test_expansion_keeps_to_the_call_budget_and_is_validated() -> None:
    llm = GuessingLLM()
    with _family_memory(llm) as m:
        res = m.search(QUESTION, user_id=U, config=replace(EXPAND, max_llm_calls=0))
    assert llm.purposes == [] and any("query expansion skipped: budget" in n for n in res.trace.notes)
    with pytest.raises(ValidationError, match="expand_query"):
        SearchConfig(expand_query="yes")  # type: ignore[arg-type]


TURNS_FIRST = replace(FUSED, fused_turns_first=True, context_tokens=600)


def test_turns_first_unless_time_or_state(mem: Memory) -> None:
    # "what did Maya make": neither time nor a changing state — the turns come first, in the whole budget
    what = mem.search("What did Maya make at the pottery class?", user_id=U, as_of=AS_OF, config=TURNS_FIRST)
    assert what.context.startswith("Other turns that match the question:")
    assert "m1" in what.quoted_ids
    assert what.facts  # the graph search still ran: its facts come back to the caller
    assert any("turns first" in n for n in what.trace.notes)
    # this memory is small: the graph evidence fills the room the turns leave
    assert "Evidence (as of" in what.context and what.context_fact_ids
    assert what.context.index("Other turns") < what.context.index("Evidence (as of")
    assert what.context_tokens <= 600
    # where Maya lives is a state that changes: the graph evidence keeps its share, first
    where = mem.search("Where does Maya live?", user_id=U, as_of=AS_OF, config=TURNS_FIRST)
    assert "Porto" in where.context and not any("turns first" in n for n in where.trace.notes)
    when = mem.search("When did Maya move to Porto?", user_id=U, as_of=AS_OF, config=TURNS_FIRST)
    assert when.context.startswith("Evidence (as of")


def test_turns_first_leaves_the_graph_no_room_when_the_turns_fill_the_budget(mem: Memory) -> None:
    tight = replace(TURNS_FIRST, context_tokens=40)
    what = mem.search("What did Maya make at the pottery class?", user_id=U, as_of=AS_OF, config=tight)
    assert what.quoted_ids and what.context_fact_ids == [] and "Evidence (as of" not in what.context
    assert what.context_tokens <= 40


def test_turns_first_without_turns_is_the_graph_alone() -> None:
    with Memory(":memory:", embedder=False) as m:  # facts loaded directly: no turn to quote
        m.add_facts([{"subject": "Maya", "relation": "made", "object": "a bowl", "valid_from": "2023-05-31"}],
                    user_id=U)
        res = m.search("What did Maya make?", user_id=U, as_of=AS_OF, config=TURNS_FIRST)
        assert res.quoted_ids == [] and res.context.startswith("Evidence (as of") and "a bowl" in res.context
