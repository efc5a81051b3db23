"""Post-processing rules 7 and extraction methods as frozen recipes (v3 = rules 6, v4 = rules 7).

The rules are pure functions over the model's statements; each test shows a statement the 1.5B
model wrote (conv-30's replies or the bundled demo conversation) and what v4 keeps of it.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pydantic
import pytest
from slot_replies import as_reply

from chronomem import Config, Memory
from chronomem.bench.memory_methods import IngestConfig
from chronomem.extract.line_observations import LineObservationExtractor, parse_line_observations
from chronomem.extract.observations import (
    POSTPROCESS_VERSION,
    RULE_VERSIONS,
    clause_facts,
    parse_observations,
    postprocess_observations,
    says_ended,
    says_residence,
    small_talk,
)
from chronomem.extract.pipeline import DEFAULT_METHOD, METHOD_RECIPES, METHODS, method_versions
from chronomem.extract.schema import parse_output
from chronomem.providers.base import CallUsage, ChatResult

from test_extract_observations import msg

SPEAKERS = ["Gina", "Jon"]


@pytest.mark.parametrize("statement", [
    "Gina is cheering Jon on.",
    "Jon is always there for Gina.",
    "Gina said she was always around for Jon.",
    "Gina said she was rooting for Jon.",
    "Gina is encouraging Jon to keep going and chase his dreams.",
    "Gina expressed her gratitude and support for Jon.",
    "Gina thanked Jon (20 January 2023).",
])
def test_content_free_support_and_thanks_are_small_talk(statement: str) -> None:
    assert small_talk(statement, SPEAKERS)


@pytest.mark.parametrize("statement", [
    "Gina is encouraging Jon to succeed in the competition.",  # says what for: LoCoMo records it
    "Gina is proud of Jon for starting his own business.",
    "Jon feels supported by all of you.",  # not support given: how Jon feels
    "Gina is inspired by Jon's success and encourages him to keep going.",
    "Jon lost his job as a banker.",
    "Sam expressed his excitement about Paris.",  # names a place: kept (as did, see below)
])
def test_support_that_names_something_and_news_are_not_small_talk(statement: str) -> None:
    assert not small_talk(statement, SPEAKERS + ["Sam"])


def test_rehome_ends_a_state_under_rules_7_only() -> None:
    s = "Maya had to rehome Pixel because her new landlord does not allow dogs."
    assert says_ended(s) and says_ended(s, 7)
    assert not says_ended(s, 6)  # v3 as measured
    assert says_ended("Maya rehomed Pixel.", 6)


def test_a_residence_needs_living_or_moving() -> None:
    assert says_residence("Maya moved to Munich last month.")
    assert says_residence("Maya lives in Berlin and works at Acme.")
    assert not says_residence("Sam expressed his excitement about Paris.")


@pytest.mark.parametrize("statement, relation, obj, extra", [
    ("Maya lives in Berlin and works at Acme as a data analyst.", "lives_in", "Berlin", [("works_at", "Acme")]),
    ("Maya works at Acme and lives in Berlin.", "works_at", "Acme", [("lives_in", "Berlin")]),
    ("Jon studies at Columbia University and works for Door Dash.", "studies_at", "Columbia University",
     [("works_at", "Door Dash")]),
    ("Maya lives in Berlin.", "lives_in", "Berlin", []),  # the typed fact itself
    ("Maya no longer works at Acme and lives in Berlin.", "lives_in", "Berlin", []),  # negated clause
    ("Maya might move to Paris and work at Globex.", "did", "Paris", []),  # hedged
    ("Jon works at a bank.", "works_at", "bank", []),  # no name: the typed fact is all there is
])
def test_clause_facts_are_the_other_named_registry_facts(statement: str, relation: str, obj: str,
                                                         extra: list[tuple[str, str]]) -> None:
    assert clause_facts(statement, relation, obj) == extra


DEMO = {
    0: msg(0, "Sam", "Hi Maya, good to see you! How is life?"),
    1: msg(1, "Maya", "Hi Sam! Life is good. I live in Berlin and I work at Acme as a data analyst."),
    2: msg(2, "Sam", "Paris would be exciting!"),
    3: msg(3, "Maya", "We had to rehome Pixel because my new landlord does not allow dogs."),
    4: msg(4, "Gina", "I'm always there for you."),
}
SLOTS = {"lines": [
    {"line": 0, "fact": None},
    {"line": 1, "fact": {"statement": "Maya lives in Berlin and works at Acme as a data analyst.", "subject": "Maya",
                         "relation": "lives_in", "object": "Berlin", "ended": False}},
    {"line": 2, "fact": {"statement": "Sam expressed his excitement about Paris.", "subject": "Sam",
                         "relation": "lives_in", "object": "Paris", "ended": False}},
    {"line": 3, "fact": {"statement": "Maya had to rehome Pixel because her landlord does not allow dogs.",
                         "subject": "Maya", "relation": "has_pet", "object": "Pixel", "ended": True}},
    {"line": 4, "fact": {"statement": "Gina is always there for Sam.", "subject": "Gina",
                         "relation": "friend_of", "object": "Sam", "ended": False}},
]}


def _facts(rules: int) -> set[tuple[str, str, str, bool]]:
    cands, _ = postprocess_observations(parse_line_observations(SLOTS), DEMO, trust_turn=True, rules=rules)
    return {(c.subject, c.relation, c.object, c.valid_to is not None) for c in cands}


def test_rules_7_against_rules_6_on_the_demo_slots() -> None:
    v6, v7 = _facts(6), _facts(7)
    assert v6 == {("Maya", "lives_in", "Berlin", False), ("Sam", "lives_in", "Paris", False),
                  ("Maya", "has_pet", "Pixel", False), ("Gina", "friend_of", "Sam", False)}
    assert v7 == {("Maya", "lives_in", "Berlin", False), ("Maya", "works_at", "Acme", False),
                  ("Sam", "did", "Paris", False), ("Maya", "has_pet", "Pixel", True)}


def test_an_unknown_rule_set_is_refused() -> None:
    assert RULE_VERSIONS[-1] == POSTPROCESS_VERSION == 15
    with pytest.raises(ValueError, match="rules must be one of"):
        postprocess_observations([], DEMO, rules=5)
    with pytest.raises(ValueError, match="rules must be one of"):
        LineObservationExtractor(object(), rules=16)  # type: ignore[arg-type]


def test_methods_are_frozen_recipes_and_the_default_is_v10() -> None:
    assert METHODS == tuple(METHOD_RECIPES) == ("v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9", "v10", "v11", "v12", "v13")
    assert method_versions("v3") == ("observe_lines_v1", 6)  # as #21's held-out run writes its memories
    assert method_versions("v4") == ("observe_lines_v1", 7)
    assert method_versions("v5") == ("observe_lines_v1", 8)
    assert method_versions("v6") == ("observe_lines_v1", 9)
    assert method_versions("v7") == ("observe_lines_v1", 10)
    assert method_versions("v8") == ("observe_lines_v1", 11)
    assert method_versions("v9") == ("observe_lines_v1", 12)
    assert method_versions("v10") == ("observe_lines_v1", 13)
    assert method_versions("v11") == ("observe_lines_v1", 14)
    assert method_versions("v12") == ("observe_lines_v1", 15)
    # v13 is v10's prompt and rules reading lowercase turns cased: a benchmark memory of its own all the same
    assert method_versions("v13") == method_versions("v10") and METHOD_RECIPES["v13"].casing
    assert not any(r.casing for m, r in METHOD_RECIPES.items() if m != "v13")

    class Named:
        name = "local:qwen2.5-coder-1.5b-instruct-q4_k_m"

    assert IngestConfig.for_llm(Named(), "v13").key() != IngestConfig.for_llm(Named(), "v10").key()  # type: ignore[arg-type]
    assert DEFAULT_METHOD == Config().extraction == "v10"  # v4 with the state rules (rules 13)
    with pytest.raises(Exception, match="unknown extraction method"):
        method_versions("v99")


def test_a_benchmark_memory_written_by_v3_keeps_its_key() -> None:
    class Named:
        name = "local:qwen2.5-coder-1.5b-instruct-q4_k_m"

    v3 = IngestConfig.for_llm(Named(), "v3")  # type: ignore[arg-type]
    assert (v3.extract_prompt, v3.postprocess) == ("observe_lines_v1", 6)
    # the held-out run's memory files (bench-out/final-answer/memories/conv-43-aeee1b37ed…), written
    # before the store keyed the catch-all relation by its statement (graph.FACT_IDENTITY 1)
    assert replace(v3, identity=1).key() == "aeee1b37ed"
    assert v3.identity == 2 and v3.key() != "aeee1b37ed"  # the same method writes other memories now
    assert v3.key() != IngestConfig.for_llm(Named(), "v4").key()  # type: ignore[arg-type]


# ------------------------------------------------------- a reply in another prompt's shape


@pytest.mark.parametrize("parse, reply", [
    (parse_line_observations, {"facts": [{"subject": "Maya", "relation": "lives_in", "object": "Berlin"}]}),
    (parse_observations, {"lines": []}),
    (parse_output, {"statements": []}),
    (parse_line_observations, {}),
])
def test_a_reply_without_the_prompts_key_is_an_error_not_an_empty_result(parse: Any, reply: dict[str, Any]) -> None:
    with pytest.raises(pydantic.ValidationError, match="Field required"):
        parse(reply)


class WrongShapeLLM:
    """Answers every extraction with v1's ``{"facts": …}``, whatever the schema asks for."""

    name = "wrong-shape"
    context_window = 8192

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def chat(self, messages: list[dict[str, str]], *, schema: Any = None, max_tokens: int = 512,
             temperature: float = 0.0, stop: Any = None, purpose: str = "", penalties: Any = None) -> ChatResult:
        data = {"facts": [{"subject": "Maya", "relation": "lives_in", "object": "Berlin"}]}
        return ChatResult(text="{}", usage=CallUsage(prompt_tokens=10, completion_tokens=5, purpose=purpose), data=data)


def test_a_model_answering_the_wrong_shape_fails_the_chunk_and_keeps_its_turns_pending() -> None:
    with Memory(":memory:", llm=WrongShapeLLM()) as mem:
        res = mem.add([{"id": "t1", "speaker": "Maya", "text": "I live in Berlin."}], user_id="u1", session_id="s1")
        assert not res.ok and res.facts_added == 0
        assert "lines" in res.failed_chunks[0].error and "Field required" in res.failed_chunks[0].error
        assert [m.id for m in mem.store.messages("u1", pending_only=True)] == ["t1"]  # kept, to retry


class ScriptedV1LLM(WrongShapeLLM):
    """Scripts v1 facts (by default Maya's Berlin and her rehomed Pixel) and answers in the shape
    asked for (:func:`slot_replies.as_reply`)."""

    def __init__(self, facts: list[dict[str, Any]] | None = None) -> None:
        self.facts = facts or [{"turns": [0], "subject": "I", "relation": "lives_in", "object": "Berlin"},
                               {"turns": [1], "subject": "I", "relation": "has_pet", "object": "Pixel", "ended": True}]

    def chat(self, messages: list[dict[str, str]], *, schema: Any = None, max_tokens: int = 512,
             temperature: float = 0.0, stop: Any = None, purpose: str = "", penalties: Any = None) -> ChatResult:
        return ChatResult(text="{}", usage=CallUsage(prompt_tokens=10, completion_tokens=5, purpose=purpose),
                          data=as_reply(schema, messages[-1]["content"], self.facts))


@pytest.mark.parametrize("method", ["v3", "v4"])
def test_v3_and_v4_differ_only_in_their_rules(method: str) -> None:
    turns = [{"id": "t1", "speaker": "Maya", "text": "I live in Berlin and I work at Acme."},
             {"id": "t2", "speaker": "Maya", "text": "We had to rehome my dog Pixel."}]
    with Memory(":memory:", llm=ScriptedV1LLM(), config=Config(extraction=method)) as mem:
        mem.add(turns, user_id="u1", session_id="s1", timestamp="2023-11-05T10:00:00Z")
        got = {(f.relation, f.object) for f in mem.history(user_id="u1")}
        open_now = {(f.relation, f.object) for f in mem.facts(user_id="u1")}
    if method == "v3":  # "had to rehome" closes nothing, "… and I work at Acme" is one fact
        assert got == {("lives_in", "Berlin"), ("has_pet", "Pixel")} and ("has_pet", "Pixel") in open_now
    else:
        assert got == {("lives_in", "Berlin"), ("works_at", "Acme"), ("has_pet", "Pixel")}
        assert ("has_pet", "Pixel") not in open_now



def test_month_and_name_words_are_not_hedges_and_the_subject_is_a_name() -> None:
    assert clause_facts("Maya moved here in May and works at Acme.", "did", "here") == [("works_at", "Acme")]
    assert not small_talk("the team is cheering for Jon.", SPEAKERS)  # no named subject: not a speaker's act
