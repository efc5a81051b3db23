"""facts() and history() read symmetric and inverse facts from the side they were not stored on.

"Jonas and I got married" is stored as ``Lena married_to Jonas``; a user asking for Jonas's
spouse (``facts(subject="Jonas", relation="married_to")``) must find it, as must one asking for
Lucia's parent after "my daughter Lucia" (``Diego parent_of Lucia``).  The evolving-state
benchmark (benchmarks/bench_evolving.py) found ``facts()`` returned nothing there while
``answer()`` got it right.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from chronomem import Memory
from chronomem.model import Origin
from chronomem.server import create_app


@pytest.fixture
def family(mem: Memory) -> Memory:
    mem.add_facts([
        {"subject": "Lena", "relation": "married_to", "object": "Jonas", "valid_from": "2018-07-01",
         "confidence": 0.9, "text": "Jonas and I got married last summer."},
        {"subject": "Lena", "relation": "lives_in", "object": "Leeds", "valid_from": "2019-03-01"},
        {"subject": "Diego", "relation": "parent_of", "object": "Lucia", "valid_from": "2020-10-01"},
        {"subject": "Aiko", "relation": "partner_of", "object": "Kenji", "valid_from": "2016-01-01"},
        {"subject": "Aiko", "relation": "partner_of", "object": "Daniel", "valid_from": "2020-01-01"},
    ], user_id="u1")
    return mem


def triples(facts) -> list[tuple[str, str, str]]:
    return [(f.subject, f.relation, f.object) for f in facts]


def test_a_symmetric_fact_is_found_from_its_object(family: Memory) -> None:
    stored = family.facts(user_id="u1", subject="Lena", relation="married_to")
    [reading] = family.facts(user_id="u1", subject="Jonas", relation="spouse_of")  # a synonym
    assert (reading.subject, reading.relation, reading.object) == ("Jonas", "married_to", "Lena")
    assert reading.origin is Origin.DERIVED and reading.rule == "symmetry"
    assert reading.support_ids == [stored[0].id] and reading.id.startswith("derived:")
    # the reading holds exactly when the stored fact does, with its confidence and statement
    assert (reading.valid_from, reading.valid_to, reading.confidence) == (
        stored[0].valid_from, stored[0].valid_to, stored[0].confidence)
    assert reading.text == "Jonas and I got married last summer."
    assert reading.subject_id == stored[0].object_id and reading.object_id == stored[0].subject_id


def test_an_inverse_fact_is_read_with_the_inverse_relation(family: Memory) -> None:
    assert triples(family.facts(user_id="u1", subject="Lucia", relation="child_of")) == [("Lucia", "child_of", "Diego")]
    assert triples(family.facts(user_id="u1", subject="Lucia", relation="daughter_of")) == [
        ("Lucia", "child_of", "Diego")]
    assert triples(family.facts(user_id="u1", subject="Lucia")) == [("Lucia", "child_of", "Diego")]
    # asked with the stored relation from the wrong side: nothing ("Lucia parent_of Diego" is false)
    assert family.facts(user_id="u1", subject="Lucia", relation="parent_of") == []


def test_an_object_filter_mirrors_too(family: Memory) -> None:
    assert triples(family.facts(user_id="u1", object="Lena", relation="married_to")) == [
        ("Jonas", "married_to", "Lena")]
    assert triples(family.facts(user_id="u1", subject="Jonas", object="Lena")) == [("Jonas", "married_to", "Lena")]


def test_closure_and_as_of_carry_over(family: Memory) -> None:
    # Daniel's arrival closed Kenji (partner_of is single-valued); from Kenji's side the same holds
    assert triples(family.facts(user_id="u1", subject="Kenji", as_of="2018-01-01")) == [
        ("Kenji", "partner_of", "Aiko")]
    assert family.facts(user_id="u1", subject="Kenji") == []
    [closed] = family.history(user_id="u1", subject="Kenji")
    assert closed.valid_to is not None and closed.closed_by is not None


def test_other_side_off_and_unfiltered_lists_are_unchanged(family: Memory) -> None:
    assert family.facts(user_id="u1", subject="Jonas", other_side=False) == []
    assert family.history(user_id="u1", subject="Lucia", other_side=False) == []
    everything = family.history(user_id="u1")
    assert len(everything) == 5 and all(f.origin is not Origin.DERIVED for f in everything)
    # a relation with neither property is never mirrored
    assert family.facts(user_id="u1", subject="Leeds") == []
    # both sides asked for: the stored fact once, its reading once
    lena = family.facts(user_id="u1", subject="Lena")
    assert triples(lena) == [("Lena", "married_to", "Jonas"), ("Lena", "lives_in", "Leeds")]


def test_order_is_oldest_first_across_both_sides(mem: Memory) -> None:
    mem.add_facts([
        {"subject": "Ana", "relation": "sibling_of", "object": "Rui", "valid_from": "1990-01-01"},
        {"subject": "Rui", "relation": "lives_in", "object": "Porto", "valid_from": "2000-01-01"},
        {"subject": "Marta", "relation": "friend_of", "object": "Rui", "valid_from": "2010-01-01"},
    ], user_id="u1")
    assert triples(mem.facts(user_id="u1", subject="Rui")) == [
        ("Rui", "sibling_of", "Ana"), ("Rui", "lives_in", "Porto"), ("Rui", "friend_of", "Marta")]


def test_the_rest_api_lists_the_reading_and_can_leave_it_out(tmp_path: Path) -> None:
    mem = Memory(tmp_path / "m.db", llm=False, embedder=False)
    mem.add_facts([{"subject": "Lena", "relation": "married_to", "object": "Jonas"}], user_id="u1")
    with TestClient(create_app(mem)) as client:
        [item] = client.get("/v1/users/u1/facts", params={"subject": "jonas"}).json()["items"]
        assert (item["subject"], item["object"], item["rule"]) == ("Jonas", "Lena", "symmetry")
        assert len(item["support_ids"]) == 1
        off = client.get("/v1/users/u1/facts", params={"subject": "jonas", "other_side": "false"}).json()
        assert off["items"] == []
        assert len(client.get("/v1/users/u1/history", params={"subject": "jonas"}).json()["items"]) == 1
