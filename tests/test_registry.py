from __future__ import annotations

import pytest

from chronomem import RelationRegistry, RelationSpec, ValidationError


def test_synonyms_map_to_canonical() -> None:
    r = RelationRegistry()
    assert r.canonical("resides_in") == "lives_in"
    assert r.canonical("Lives In") == "lives_in"
    assert r.canonical("employed_at") == "works_at"
    assert r.canonical("brand_new_rel") == "brand_new_rel"


def test_properties_of_builtins() -> None:
    r = RelationRegistry()
    assert r.spec("partner_of").single_valued and r.spec("partner_of").symmetric
    assert r.spec("sibling_of").symmetric and not r.spec("sibling_of").single_valued
    assert r.spec("parent_of").inverse == "child_of" and r.spec("child_of").inverse == "parent_of"
    assert not r.spec("something_unknown").single_valued


def test_define_and_override() -> None:
    r = RelationRegistry()
    r.define("mentor_of", inverse="mentee_of")
    assert r.spec("mentee_of").inverse == "mentor_of"
    r.define(RelationSpec("likes", single_valued=True))
    assert r.spec("likes").single_valued
    r.learn_synonym("adores", "likes")
    assert r.canonical("adores") == "likes"
    assert RelationRegistry().spec("likes").single_valued is False  # registries are independent


def test_keys_are_direction_independent() -> None:
    r = RelationRegistry()
    assert r.key("a", "sibling_of", "b") == r.key("b", "sibling_of", "a")
    assert r.key("a", "parent_of", "b") == r.key("b", "child_of", "a")
    assert r.key("a", "likes", "b") != r.key("b", "likes", "a")


@pytest.mark.parametrize("bad", ["", "   ", "!!!"])
def test_bad_relation_names(bad: str) -> None:
    with pytest.raises(ValidationError, match="relation"):
        RelationRegistry().canonical(bad)


def test_bad_definitions() -> None:
    r = RelationRegistry()
    with pytest.raises(ValidationError):
        r.update([{"single_valued": True}])
    with pytest.raises(ValidationError):
        r.update([{"name": "x", "colour": "red"}])
    with pytest.raises(ValidationError):
        r.define("x", symmetric=True, inverse="y")


def test_read_from_object_mirrors_symmetric_and_inverse_relations() -> None:
    reg = RelationRegistry()
    assert reg.read_from_object("married_to") == "married_to"
    assert reg.read_from_object("spouse_of") == "married_to"  # a synonym reads as its canonical name
    assert reg.read_from_object("parent_of") == "child_of" and reg.read_from_object("child_of") == "parent_of"
    assert reg.read_from_object("lives_in") is None
    reg.define("mentor_of", inverse="mentee_of")
    assert reg.read_from_object("mentee_of") == "mentor_of"


def test_a_synonym_cannot_take_a_relation_or_another_relations_synonym() -> None:
    """``define("home_town", synonyms=["lives_in"])`` made every stored ``lives_in`` fact unreachable by its
    name and new ones stop closing the old home; the definition is refused and the registry is unchanged."""
    from chronomem import Memory

    with Memory(":memory:", llm=False, embedder=False) as mem:
        mem.add_facts([{"subject": "Maya", "relation": "lives_in", "object": "Porto", "valid_from": "2018-01-01"}],
                      user_id="u")
        with pytest.raises(ValidationError, match="lives_in.*relation of its own"):
            mem.define_relation("home_town", synonyms=["town", "lives_in"])
        with pytest.raises(ValidationError, match="resides_in.*already means lives_in"):
            mem.define_relation("home_town", synonyms=["resides_in"])
        assert mem.registry.canonical("lives_in") == "lives_in" and not mem.registry.is_known("home_town")
        assert mem.registry.canonical("town") == "town"
        rep = mem.add_facts([{"subject": "Maya", "relation": "lives_in", "object": "Lisbon",
                              "valid_from": "2021-01-01"}], user_id="u")
        assert [f.object for f in rep.closed] == ["Porto"]
    r = RelationRegistry()
    r.define("lives_in", synonyms=["resides_in", "home_town"])  # its own synonyms, and a new one: fine
    assert r.canonical("home_town") == "lives_in"
    with pytest.raises(ValidationError, match="works_at.*relation of its own"):
        r.learn_synonym("works_at", "likes")
    assert r.canonical("works_at") == "works_at"
