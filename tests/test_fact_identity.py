"""What makes two facts the same fact (graph.FACT_IDENTITY 2): a catch-all relation is keyed by its statement.

``did`` is extraction's catch-all: its object is a loose handle ("the dance studio") and the
statement is what the fact says.  Before, a second statement typed the same way only reinforced the
first, across chunks and sessions alike, and its words were lost.
"""

from __future__ import annotations

from chronomem import Config, Memory
from chronomem.registry import RelationRegistry, statement_identity


def did(text: str, when: str, source: str) -> dict[str, object]:
    return {"subject": "Jon", "relation": "did", "object": "the dance studio", "text": text,
            "valid_from": when, "source_ids": [source], "confidence": 0.9}


def test_two_statements_about_one_thing_stay_two_facts_across_sessions(store_url: str) -> None:
    with Memory(store_url, llm=False, embedder=None) as mem:
        mem.add_facts([did("Jon's dance studio opens tomorrow.", "2023-06-19", "t1")], user_id="u", session_id="s1")
        report = mem.add_facts([did("Jon painted the dance studio blue.", "2023-06-20", "t2")], user_id="u",
                               session_id="s2")
        facts = mem.history(user_id="u")
    assert len(report.added) == 1 and not report.reinforced and not report.closed
    assert sorted(f.text for f in facts) == ["Jon painted the dance studio blue.", "Jon's dance studio opens tomorrow."]
    assert all(f.valid_to is None for f in facts)  # neither closes the other


def test_the_same_statement_said_again_reinforces() -> None:
    with Memory(":memory:", llm=False, embedder=None) as mem:
        mem.add_facts([did("Jon painted the dance studio blue.", "2023-06-19", "t1")], user_id="u")
        report = mem.add_facts([did("jon painted the  dance studio blue!", "2023-06-20", "t2")], user_id="u")
        (fact,) = mem.history(user_id="u")
    assert len(report.reinforced) == 1 and not report.added
    assert fact.source_ids == ["t1", "t2"] and fact.confidence > 0.9


def test_a_typed_relation_is_the_same_fact_whatever_its_statement_says() -> None:
    lives = {"subject": "Maya", "relation": "lives_in", "object": "Lisbon", "valid_from": "2020-01-01"}
    with Memory(":memory:", llm=False, embedder=None) as mem:
        mem.add_facts([{**lives, "text": "Maya lives in Lisbon."}], user_id="u")
        report = mem.add_facts([{**lives, "text": "Maya still loves her flat in Lisbon.",
                                 "valid_from": "2021-05-01"}], user_id="u")
        assert len(mem.history(user_id="u")) == 1
    assert len(report.reinforced) == 1


def test_a_relation_can_be_declared_keyed_by_its_statement() -> None:
    config = Config(relations=[{"name": "noted", "by_statement": True}])
    note = {"subject": "Maya", "relation": "noted", "object": "the trip", "valid_from": "2023-01-01"}
    with Memory(":memory:", llm=False, embedder=None, config=config) as mem:
        mem.add_facts([{**note, "text": "Maya booked the trip."}], user_id="u")
        mem.add_facts([{**note, "text": "Maya cancelled a day of the trip."}], user_id="u")
        assert len(mem.history(user_id="u")) == 2
    registry = RelationRegistry()
    assert registry.spec("did").by_statement and not registry.spec("lives_in").by_statement
    assert not registry.spec("visited").by_statement  # only the catch-all, unless declared
    # describing the catch-all (a config entry with its name alone, a synonym) keeps it keyed by statement
    registry.update([{"name": "did", "description": "anything done"}])
    registry.learn_synonym("done", "did")
    assert registry.spec("did").by_statement and registry.spec("done").by_statement
    assert registry.spec("did").description == "anything done"
    assert statement_identity(" Jon  painted it. ") == statement_identity("jon painted it")
