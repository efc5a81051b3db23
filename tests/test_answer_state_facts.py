"""answer() puts the typed facts that answer a state question first, and reads a question's time window
as the asked time even when the caller gives ``as_of``.

The evolving-state benchmark (benchmarks/bench_evolving.py) found ``facts()`` right where ``answer()``
was wrong: "Where does Lena work now?" → "Basel" with ``Lena works_at Novartis`` in the evidence (the
turn "we moved to Basel for the job" ranked high), and "Where did Lena work in 2015?" → "Not mentioned"
when asked with an explicit ``as_of`` (the window stayed in the question's words).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from chronomem import Memory, SearchConfig, SearchOptions
from chronomem.errors import ValidationError
from chronomem.providers.base import CallUsage, ChatResult
from chronomem.registry import RelationRegistry
from chronomem.retrieve.answer import organisation_hint
from chronomem.retrieve.lookup import asks_the_past, render_state_facts, state_relations

BLOCK = "Facts that answer the question directly:"
NOW = "2026-12-04T00:00:00+00:00"


class PromptLLM:
    """Answers with the first state fact it is shown (else "Not mentioned") and keeps every prompt."""

    name = "prompt-recorder"
    context_window = 8192

    def __init__(self) -> None:
        self.prompts: list[str] = []

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def chat(self, messages: list[dict[str, str]], **kw: Any) -> ChatResult:
        user = messages[-1]["content"]
        self.prompts.append(user)
        lines = user.splitlines()
        text = lines[lines.index(BLOCK) + 1] if BLOCK in lines else "Not mentioned"
        return ChatResult(text=text, usage=CallUsage(prompt_tokens=len(user.split()), completion_tokens=3,
                                                     latency_s=0.0, purpose=kw.get("purpose", "")))


@pytest.fixture
def lena(tmp_path: Path) -> tuple[Memory, PromptLLM]:
    llm = PromptLLM()
    mem = Memory(tmp_path / "m.db", llm=llm, embedder=False)
    mem.add_facts([
        {"subject": "Lena", "relation": "works_at", "object": "Ridgeway High", "valid_from": "2019-03-01",
         "text": "Lena teaches chemistry at Ridgeway High."},
        {"subject": "Lena", "relation": "works_at", "object": "Novartis", "valid_from": "2021-06-01",
         "text": "Lena left Ridgeway High in June and joined Novartis as a lab scientist."},
        {"subject": "Lena", "relation": "works_at", "object": "a bakery in York", "valid_from": "2014-01-01",
         "valid_to": "2017-01-01", "text": "Lena worked at a bakery in York from 2014 to 2016."},
        {"subject": "Lena", "relation": "lives_in", "object": "Basel", "valid_from": "2021-07-01",
         "text": "Lena moved to Basel in July for the job."},
        {"subject": "Lena", "relation": "married_to", "object": "Jonas", "valid_from": "2018-07-01"},
        {"subject": "Lena", "relation": "sibling_of", "object": "Felix", "valid_from": "2019-01-01"},
        {"subject": "Lena", "relation": "parent_of", "object": "Mia", "valid_from": "2022-05-01"},
        {"subject": "Lena", "relation": "studies_at", "object": "University of York", "valid_from": "2010-09-01",
         "valid_to": "2014-07-01"},
        {"subject": "Lena", "relation": "likes", "object": "baking bread", "valid_from": "2023-02-14"},
    ], user_id="u1")
    yield mem, llm
    mem.close()


def test_a_state_question_gets_its_typed_facts_first(lena: tuple[Memory, PromptLLM]) -> None:
    mem, llm = lena
    ans = mem.answer("Where does Lena work now?", user_id="u1", as_of=NOW, method="real")
    assert ans.text.startswith("- Lena works at Novartis [1 June 2021 -> now)")
    block = ans.context.split("\n\n")[0].splitlines()
    assert block[0] == BLOCK and len(block) == 2  # the closed jobs do not hold now
    assert ans.evidence[0].object == "Novartis"
    assert "state fact" in " ".join(ans.trace.notes)


def test_the_question_window_is_the_asked_time_with_an_explicit_as_of(lena: tuple[Memory, PromptLLM]) -> None:
    mem, llm = lena
    ans = mem.answer("Where did Lena work in 2015?", user_id="u1", as_of=NOW, method="real")
    assert ans.text.startswith("- Lena works at a bakery in York [1 January 2014 -> 1 January 2017)")
    prompt = llm.prompts[-1]
    assert "Question: Where did Lena work?" in prompt and "as of 2 July 2015" in prompt
    # one "as of" heads the prompt: the evidence below it, searched as of NOW, is not dated again
    assert prompt.count("as of") == 1 and '\nEvidence ([from -> to), "now" = still holds' in prompt
    assert "4 December 2026" not in prompt
    plain = mem.answer("Where does Lena work now?", user_id="u1", as_of=NOW, method="real")
    assert "Evidence (as of 4 December 2026;" in plain.context and llm.prompts[-1].count("as of 4 December 2026") == 2


def test_a_past_question_without_a_time_gets_the_last_state_that_ended(lena: tuple[Memory, PromptLLM]) -> None:
    mem, llm = lena
    ans = mem.answer("Where did Lena study?", user_id="u1", as_of=NOW, method="real")
    assert ans.text.startswith("- Lena studied at University of York [1 September 2010 -> 1 July 2014)")
    mem.answer("Where does Lena study?", user_id="u1", as_of=NOW, method="real")
    assert BLOCK not in llm.prompts[-1]  # asked in the present: nothing holds now
    assert asks_the_past("Who was Aiko dating?") and not asks_the_past("Who is Jonas married to?")


def test_relations_read_from_the_other_side(lena: tuple[Memory, PromptLLM]) -> None:
    mem, _ = lena
    assert mem.answer("Who is Jonas married to?", user_id="u1", as_of=NOW, method="real").text.startswith(
        "- Jonas's spouse is Lena [1 July 2018 -> now)")
    felix = mem.answer("Who is Felix's sister?", user_id="u1", as_of=NOW, method="real")
    assert felix.text.startswith("- Felix's sibling is Lena") and "derived:symmetry" in felix.text
    assert felix.evidence[0].support_ids  # the reading names the stored fact
    # a relation between people reads as the subject's relative, in the question's shape
    assert mem.answer("Who is Mia's mother?", user_id="u1", as_of=NOW, method="real").text.startswith(
        "- Mia's parent is Lena [1 May 2022 -> now)")
    assert mem.answer("Who is Lena's daughter?", user_id="u1", as_of=NOW, method="real").text.startswith(
        "- Lena's child is Mia")


def test_other_questions_get_no_state_block(lena: tuple[Memory, PromptLLM]) -> None:
    mem, llm = lena
    for q in ("What does Lena like?", "When did Lena move to Basel?", "Where did Lena work before?"):
        mem.answer(q, user_id="u1", as_of=NOW, method="real")
        assert BLOCK not in llm.prompts[-1], q
    off = mem.answer("Where does Lena work now?", user_id="u1", as_of=NOW, method="real",
                     options=SearchOptions(state_facts=0))
    assert BLOCK not in off.context and BLOCK not in llm.prompts[-1]


def test_state_relations_are_typed_relations_of_the_question() -> None:
    reg = RelationRegistry()
    assert state_relations({"wh": "where", "relation_groups": {"work": ["job_title", "works_at"]}}, reg) == [
        "job_title", "works_at"]
    assert state_relations({"wh": "what", "relation_groups": {"like": ["likes"]}}, reg) == []
    assert state_relations({"wh": "when", "relation_groups": {"live": ["lives_in"]}}, reg) == []
    assert state_relations({"wh": "where", "history": True, "relation_groups": {"live": ["lives_in"]}}, reg) == []
    assert state_relations({"wh": "where"}, reg) == [] and render_state_facts([]) == ""


def test_a_bad_state_facts_setting_is_named() -> None:
    with pytest.raises(ValidationError) as e:
        SearchConfig(state_facts=-1)
    assert e.value.field == "config.state_facts"


def test_a_where_question_about_work_or_study_asks_the_model_for_the_organisation(
        lena: tuple[Memory, PromptLLM]) -> None:
    """The 1.5B model answered "where did X work/study" with the town (Patras, Iloilo, Doha) with the
    employer or school in front of it; the question it sees now says which one is wanted."""
    mem, llm = lena
    ans = mem.answer("Where did Lena work in 2015?", user_id="u1", as_of=NOW, method="real")
    assert "Question: Where did Lena work? Name the employer (company or organisation), not the town it is in.\n" \
        in llm.prompts[-1]
    assert any("organisation" in n for n in ans.trace.notes)
    mem.answer("Where did Lena study?", user_id="u1", as_of=NOW, method="real")
    assert "Question: Where did Lena study? Name the school or university, not the town it is in.\n" in llm.prompts[-1]
    for q in ("Where does Lena live?", "Where did Lena move for the job?", "Who does Lena work for?"):
        mem.answer(q, user_id="u1", as_of=NOW, method="real")
        assert f"Question: {q}\n" in llm.prompts[-1], q  # a place, or not a "where" question: as asked
    off = SearchConfig(organisation_hint=False)  # the ablation
    ans = mem.answer("Where did Lena study?", user_id="u1", as_of=NOW, method="real", config=off)
    assert "Question: Where did Lena study?\n" in llm.prompts[-1]
    assert not any("organisation" in n for n in ans.trace.notes)
    with pytest.raises(ValidationError, match="organisation_hint"):
        SearchConfig(organisation_hint="yes")  # type: ignore[arg-type]


def test_organisation_hint_follows_the_registry_object_types() -> None:
    reg = RelationRegistry()
    hint = organisation_hint
    assert hint({"wh": "where", "relation_groups": {"employed": ["works_at"]}}, reg) == \
        "Name the employer (company or organisation), not the town it is in."
    assert hint({"wh": "where", "relation_groups": {"work": ["job_title", "works_at"]}}, reg) is not None
    # a place among the question's relations wins: "where did she move for work" asks for a town
    assert hint({"wh": "where", "relation_groups": {"move": ["lives_in"], "work": ["works_at"]}}, reg) is None
    assert hint({"wh": "who", "relation_groups": {"work": ["works_at"]}}, reg) is None
    assert hint({"wh": "where", "relation_groups": {}}, reg) is None and hint({}, reg) is None
    # a relation the user defined with organisation objects gets the generic wording
    reg.define("volunteers_at", object_type="organisation")
    assert hint({"wh": "where", "relation_groups": {"volunteer": ["volunteers_at"]}}, reg) == \
        "Name the organisation, not the town it is in."
