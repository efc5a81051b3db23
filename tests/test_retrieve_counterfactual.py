"""Counterfactual rules: symmetry, inverse, hyponymy, containment, temporal inheritance (pure)."""

from __future__ import annotations

from datetime import datetime, timezone

from chronomem.model import Fact, Intent, Origin
from chronomem.registry import RelationRegistry
from chronomem.retrieve import counterfactual as cf

UTC = timezone.utc
REG = RelationRegistry()


def t(x: str | None) -> datetime | None:
    return None if x is None else datetime.fromisoformat(x).replace(tzinfo=UTC)


def fact(s: str, r: str, o: str, vf: str | None = None, vt: str | None = None, c: float = 1.0) -> Fact:
    return Fact(id=f"{s}|{r}|{o}", user_id="u", subject=s, relation=r, object=o, valid_from=t(vf),
                valid_to=t(vt), confidence=c, intent=Intent.FACT, origin=Origin.IMPORTED,
                recorded_at=t("2024-01-01"), source_ids=[f"m-{s}"], subject_id=s.lower(),
                object_id=o.lower())


def lookup_from(facts: list[Fact]):
    def lookup(ids, rels):
        return [f for f in facts if f.subject_id in ids and f.relation in rels]
    return lookup


def test_symmetry() -> None:
    f = fact("Rui", "sibling_of", "Maya", "2017-03-01", c=0.9)
    d = cf.symmetric_reverse(f, REG)
    assert d is not None
    assert (d.subject, d.relation, d.object) == ("Maya", "sibling_of", "Rui")
    assert (d.subject_id, d.object_id) == ("maya", "rui")
    assert d.origin == Origin.DERIVED and d.rule == "symmetry" and d.support_ids == [f.id]
    assert d.confidence < f.confidence and d.valid_from == f.valid_from
    assert d.source_ids == f.source_ids and d.id.startswith("derived:")
    assert cf.symmetric_reverse(fact("Maya", "lives_in", "Porto"), REG) is None


def test_inverse() -> None:
    d = cf.inverse_reverse(fact("Ana", "mother_of", "Maya"), REG)  # synonyms resolve through the registry
    assert d is not None and d.relation == "child_of"
    d = cf.inverse_reverse(fact("Ana", "parent_of", "Maya"), REG)
    assert d is not None and (d.subject, d.relation, d.object) == ("Maya", "child_of", "Ana")
    assert d.rule == "inverse"


def test_hyponymy_chain() -> None:
    pet = fact("Maya", "has_pet", "Sunny", "2023-01-01")
    links = {"sunny": [fact("Sunny", "is_a", "golden retriever", "2023-01-01")],
             "golden retriever": [fact("golden retriever", "is_a", "dog", "2000-01-01")]}
    out = cf.chain_up(pet, links, cf.HYPONYMY)
    assert [(d.subject, d.relation, d.object) for d in out] == [
        ("Maya", "has_pet", "golden retriever"), ("Maya", "has_pet", "dog")]
    dog = out[-1]
    assert dog.support_ids == [pet.id, "Sunny|is_a|golden retriever", "golden retriever|is_a|dog"]
    assert dog.valid_from == t("2023-01-01") and dog.confidence == 0.9
    assert dog.rule == "hyponymy"


def test_containment_only_for_places() -> None:
    lives = fact("Maya", "lives_in", "Kyoto", "2020-01-01")
    loc = fact("Kyoto", "located_in", "Japan")
    derived = cf.propose("maya", [lives], lookup_from([loc]), REG)
    assert [(d.subject, d.relation, d.object, d.rule) for d in derived] == [
        ("Maya", "lives_in", "Japan", "containment")]
    likes = fact("Maya", "likes", "Kyoto")
    assert cf.propose("maya", [likes], lookup_from([loc]), REG) == []


def test_supports_that_never_hold_together_derive_nothing() -> None:
    lives = fact("Maya", "lives_in", "Porto", "2017-01-01", "2019-01-01")
    loc = fact("Porto", "located_in", "Portugal", "2020-01-01")
    assert cf.chain_up(lives, {"porto": [loc]}, cf.CONTAINMENT) == []


def test_temporal_inheritance_of_timeless_facts() -> None:
    late = fact("Sunny", "is_a", "dog", "2025-01-01")
    d = cf.inherit_timeless(late)
    assert d is not None and d.valid_from is None and d.rule == "temporal_inheritance"
    assert cf.inherit_timeless(fact("Maya", "lives_in", "Porto", "2025-01-01")) is None
    ended = fact("Sunny", "is_a", "puppy", "2020-01-01", "2021-01-01")
    assert cf.inherit_timeless(ended) is None
    # in propose: a classification learned after as_of still applies at as_of
    when = t("2024-06-01")
    valid = lambda f: f.is_valid_at(when)  # noqa: E731
    pet = fact("Maya", "has_pet", "Sunny", "2023-01-01")
    out = cf.propose("maya", [pet], lookup_from([late]), REG, valid=valid)
    dog = [d for d in out if d.object == "dog"]
    assert dog and dog[0].rule == "temporal_inheritance+hyponymy"
    assert dog[0].support_ids == [pet.id, late.id]


def test_propose_reads_incoming_symmetric_and_inverse_from_the_frontier_side() -> None:
    nbrs = [fact("Rui", "sibling_of", "Maya"), fact("Ana", "parent_of", "Maya"),
            fact("Maya", "lives_in", "Lisbon")]
    out = cf.propose("maya", nbrs, lookup_from([]), REG)
    got = {(d.subject, d.relation, d.object, d.rule) for d in out}
    assert got == {("Maya", "sibling_of", "Rui", "symmetry"), ("Maya", "child_of", "Ana", "inverse")}
    only_sym = cf.propose("maya", nbrs, lookup_from([]), REG, rules=frozenset({cf.SYMMETRY}))
    assert {d.rule for d in only_sym} == {"symmetry"}


def test_rule_chain_symmetry_then_containment() -> None:
    nbrs = [fact("Tiago", "married_to", "Maya")]
    assert cf.propose("tiago", nbrs, lookup_from([]), REG) == []  # already readable from Tiago's side
    out = cf.propose("maya", nbrs, lookup_from([]), REG)
    assert [(d.subject, d.object) for d in out] == [("Maya", "Tiago")]
    # containment after symmetry: derived facts rest on stored ids only
    lives = fact("Kyoto", "located_in", "Japan")
    shared = fact("Rui", "lives_in", "Kyoto")
    out = cf.propose("kyoto", [lives, shared], lookup_from([fact("Japan", "located_in", "Asia")]), REG)
    assert any(d.object == "Asia" and d.support_ids == [lives.id, "Japan|located_in|Asia"] for d in out)


def test_derived_ids_are_deterministic() -> None:
    f = fact("Rui", "sibling_of", "Maya")
    assert cf.symmetric_reverse(f, REG).id == cf.symmetric_reverse(f, REG).id  # type: ignore[union-attr]
