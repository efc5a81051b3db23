"""The non-destructive update rules, one test per rule, through the public API."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from chronomem import Memory, Origin, SearchOptions
from chronomem.cli.render import interval

U = "u1"


def dt(s: str) -> datetime:
    return datetime.fromisoformat(s).replace(tzinfo=timezone.utc)


def lives(mem: Memory, city: str, start: str | None = None, end: str | None = None, c: float = 1.0):
    f = {"subject": "Maya", "relation": "lives_in", "object": city, "confidence": c}
    if start:
        f["valid_from"] = start
    if end:
        f["valid_to"] = end
    return mem.add_facts([f], user_id=U)


def versions(mem: Memory, rel: str = "lives_in") -> list[tuple[str, str | None, str | None]]:
    return [(f.object, f.valid_from and f.valid_from.date().isoformat(),
             f.valid_to and f.valid_to.date().isoformat())
            for f in mem.history(user_id=U, subject="Maya", relation=rel)]


def test_single_valued_new_value_closes_old_and_both_remain(mem: Memory) -> None:
    lives(mem, "Porto", "2018-01-01")
    rep = lives(mem, "Lisbon", "2021-03-01")
    assert [f.object for f in rep.closed] == ["Porto"]
    assert versions(mem) == [("Porto", "2018-01-01", "2021-03-01"), ("Lisbon", "2021-03-01", None)]
    assert [f.object for f in mem.facts(user_id=U, subject="Maya")] == ["Lisbon"]
    assert [f.object for f in mem.facts(user_id=U, subject="Maya", as_of="2020-06-01")] == ["Porto"]
    closed = mem.history(user_id=U, subject="Maya")[0]
    assert closed.closed_by == rep.added[0].id


def test_interval_is_half_open(mem: Memory) -> None:
    lives(mem, "Porto", "2018-01-01")
    lives(mem, "Lisbon", "2021-03-01")
    assert [f.object for f in mem.facts(user_id=U, as_of="2021-03-01T00:00:00Z")] == ["Lisbon"]
    assert [f.object for f in mem.facts(user_id=U, as_of="2021-02-28T23:59:59Z")] == ["Porto"]
    assert mem.facts(user_id=U, as_of="2017-12-31") == []


def test_late_fact_about_the_past_lands_in_order(mem: Memory) -> None:
    lives(mem, "Lisbon", "2021-03-01")
    rep = lives(mem, "Porto", "2018-01-01")  # learned late
    assert rep.closed == []  # it does not close the later one …
    assert rep.added[0].valid_to == dt("2021-03-01")  # … the later one closes it
    assert versions(mem) == [("Porto", "2018-01-01", "2021-03-01"), ("Lisbon", "2021-03-01", None)]


def test_late_fact_between_two_versions(mem: Memory) -> None:
    lives(mem, "Porto", "2016-01-01")
    lives(mem, "Lisbon", "2020-01-01")
    lives(mem, "Braga", "2018-01-01")
    assert versions(mem) == [("Porto", "2016-01-01", "2018-01-01"), ("Braga", "2018-01-01", "2020-01-01"),
                             ("Lisbon", "2020-01-01", None)]


def test_bounded_late_fact_closes_overlapping_earlier_one(mem: Memory) -> None:
    lives(mem, "Berlin", "2010-01-01")
    lives(mem, "Oslo", "2016-01-01", "2021-01-01")
    assert versions(mem) == [("Berlin", "2010-01-01", "2016-01-01"), ("Oslo", "2016-01-01", "2021-01-01")]


def test_equal_start_later_recorded_wins(mem: Memory) -> None:
    lives(mem, "Porto", "2018-01-01")
    lives(mem, "Lisbon", "2018-01-01")
    assert [f.object for f in mem.facts(user_id=U, as_of="2019-01-01")] == ["Lisbon"]
    porto = [f for f in mem.history(user_id=U) if f.object == "Porto"][0]
    # superseded: still stored, valid at no instant, never an empty interval (tests/test_temporal_ties.py)
    assert porto.valid_from == dt("2018-01-01") and porto.valid_to is None and porto.superseded


def test_multi_valued_facts_coexist(mem: Memory) -> None:
    mem.add_facts([{"subject": "Maya", "relation": "likes", "object": "surfing", "valid_from": "2018-01-01"},
                   {"subject": "Maya", "relation": "likes", "object": "jazz", "valid_from": "2019-01-01"}],
                  user_id=U)
    assert sorted(f.object for f in mem.facts(user_id=U, relation="likes")) == ["jazz", "surfing"]


def test_unknown_relations_default_to_multi_valued(mem: Memory) -> None:
    mem.add_facts([{"subject": "Maya", "relation": "plays", "object": "chess", "valid_from": "2018-01-01"},
                   {"subject": "Maya", "relation": "plays", "object": "go", "valid_from": "2019-01-01"}],
                  user_id=U)
    assert len(mem.facts(user_id=U, relation="plays")) == 2


def test_same_fact_again_reinforces_instead_of_duplicating(mem: Memory) -> None:
    mem.add_facts([{"subject": "Maya", "relation": "lives_in", "object": "Porto", "valid_from": "2018-01-01",
                    "confidence": 0.8, "source_ids": ["m1"]}], user_id=U)
    rep = mem.add_facts([{"subject": "maya", "relation": "resides_in", "object": "PORTO",
                          "valid_from": "2019-05-01", "confidence": 0.8, "source_ids": ["m7"]}], user_id=U)
    assert rep.added == [] and len(rep.reinforced) == 1
    [f] = mem.history(user_id=U)
    assert f.source_ids == ["m1", "m7"]
    assert f.confidence > 0.8
    assert f.valid_from == dt("2018-01-01")


def test_hedged_repetition_does_not_become_stable(mem: Memory) -> None:
    for _ in range(3):
        lives(mem, "Paris", "2025-01-01", c=0.4)
    [f] = mem.history(user_id=U)
    assert f.confidence == 0.4


def test_explicit_ending_closes_the_open_fact(mem: Memory) -> None:
    mem.add_facts([{"subject": "Maya", "relation": "has_pet", "object": "Pixel", "valid_from": "2019-02-10"}],
                  user_id=U)
    rep = mem.add_facts([{"subject": "Maya", "relation": "has_pet", "object": "Pixel",
                          "valid_to": "2022-05-01", "source_ids": ["m9"]}], user_id=U)
    assert rep.added == [] and [f.object for f in rep.closed] == ["Pixel"]
    [f] = mem.history(user_id=U, relation="has_pet")
    assert f.valid_to == dt("2022-05-01") and "m9" in f.source_ids
    assert mem.facts(user_id=U, relation="has_pet") == []


def test_ending_without_open_fact_is_recorded_with_unknown_start(mem: Memory) -> None:
    mem.add_facts([{"subject": "Maya", "relation": "owns", "object": "a Vespa", "valid_to": "2020-01-01"}],
                  user_id=U)
    [f] = mem.history(user_id=U)
    assert f.valid_from is None and f.valid_to == dt("2020-01-01")
    assert [x.object for x in mem.facts(user_id=U, as_of="2001-01-01")] == ["a Vespa"]
    assert mem.facts(user_id=U) == []


def test_an_ending_after_stints_that_all_ended_follows_the_last_of_them(mem: Memory) -> None:
    """"Porto from 2010", "Berlin from 2012" (closing Porto), "left Berlin in 2014", then "I left Lisbon in
    2021": Lisbon is taken to start when Berlin ended, a guess a start said later replaces.  Before, Lisbon
    reached back to an unknown start and was cut where Porto began: Lisbon until 2010, nothing from 2014."""
    lives(mem, "Porto", "2010-01-01")
    lives(mem, "Berlin", "2012-01-01")
    lives(mem, "Berlin", end="2014-01-01")
    lives(mem, "Lisbon", end="2021-01-01")
    assert versions(mem) == [("Porto", "2010-01-01", "2012-01-01"), ("Berlin", "2012-01-01", "2014-01-01"),
                             ("Lisbon", "2014-01-01", "2021-01-01")]
    assert [f.start_guessed for f in mem.history(user_id=U, object="Lisbon")] == [True]
    assert [f.object for f in mem.facts(user_id=U, as_of="2009-01-01")] == []
    # what a reader is shown: a start nobody said is no date the user gave
    context = mem.search("Where does Maya live?", user_id=U, as_of="2015-06-01",
                         options=SearchOptions(embeddings=False)).context
    assert "Lisbon [after 1 January 2014 -> 1 January 2021)" in context
    assert interval(mem.history(user_id=U, object="Lisbon")[0]) == "after 2014-01-01 → 2021-01-01"
    lives(mem, "Lisbon", "2016-01-01")  # the start, said later
    assert versions(mem)[-1] == ("Lisbon", "2016-01-01", "2021-01-01")
    assert "Lisbon [1 January 2016 -> 1 January 2021)" in mem.search(
        "Where does Maya live?", user_id=U, as_of="2017-06-01", options=SearchOptions(embeddings=False)).context


def test_an_ending_with_an_open_stint_before_it_keeps_the_unknown_start(mem: Memory) -> None:
    """A stint of known start still open ("Porto from 2010") before the ending: no guess overlaps it."""
    lives(mem, "Porto", "2010-01-01")
    lives(mem, "Lisbon", end="2021-01-01")
    assert versions(mem) == [("Lisbon", None, "2010-01-01"), ("Porto", "2010-01-01", None)]


def test_low_confidence_never_closes_a_stable_fact(mem: Memory) -> None:
    lives(mem, "Berlin", "2019-01-01")
    rep = lives(mem, "Paris", "2024-06-01", c=0.3)  # "I might move to Paris"
    assert rep.closed == []
    assert [f.object for f in mem.facts(user_id=U)] == ["Berlin"]
    assert sorted(f.object for f in mem.facts(user_id=U, include_unstable=True)) == ["Berlin", "Paris"]


def test_stable_fact_is_not_closed_by_unstable_and_unstable_not_by_stable(mem: Memory) -> None:
    lives(mem, "Paris", "2024-06-01", c=0.3)
    lives(mem, "Berlin", "2025-01-01")
    paris = [f for f in mem.history(user_id=U) if f.object == "Paris"][0]
    assert paris.valid_to is None  # plans are kept as they were said


def test_theta_is_configurable(tmp_path) -> None:
    with Memory(tmp_path / "m.db", theta_stable=0.2) as m:
        m.add_facts([{"subject": "Maya", "relation": "lives_in", "object": "Berlin", "valid_from": "2019-01-01"},
                     {"subject": "Maya", "relation": "lives_in", "object": "Paris", "valid_from": "2024-01-01",
                      "confidence": 0.3}], user_id=U)
        assert [f.object for f in m.facts(user_id=U)] == ["Paris"]


def test_symmetric_single_valued_relation_closes_both_sides(mem: Memory) -> None:
    mem.add_facts([{"subject": "Maya", "relation": "married_to", "object": "Tiago", "valid_from": "2015-01-01"}],
                  user_id=U)
    mem.add_facts([{"subject": "Ana", "relation": "married_to", "object": "Tiago", "valid_from": "2022-01-01"}],
                  user_id=U)
    now = mem.facts(user_id=U, relation="married_to")
    assert [(f.subject, f.object) for f in now] == [("Ana", "Tiago")]
    assert len(mem.history(user_id=U, relation="spouse_of")) == 2


def test_symmetric_and_inverse_facts_are_stored_once_and_reinforce(mem: Memory) -> None:
    mem.add_facts([{"subject": "Rui", "relation": "sibling_of", "object": "Maya", "valid_from": "2000-01-01"},
                   {"subject": "Maya", "relation": "brother_of", "object": "Rui", "valid_from": "2001-01-01"},
                   {"subject": "Ana", "relation": "parent_of", "object": "Maya", "valid_from": "2000-01-01"},
                   {"subject": "Maya", "relation": "child_of", "object": "Ana", "valid_from": "2001-01-01"}],
                  user_id=U)
    hist = mem.history(user_id=U)
    assert [(f.subject, f.relation, f.object) for f in hist] == [
        ("Rui", "sibling_of", "Maya"), ("Ana", "parent_of", "Maya")]


def test_defaults_for_add_facts(mem: Memory) -> None:
    rep = mem.add_facts([{"subject": "Maya", "relation": "likes", "object": "tea"}], user_id=U)
    [f] = rep.added
    assert f.confidence == 1.0 and f.intent.value == "FACT" and f.origin is Origin.IMPORTED
    assert f.valid_from is not None and abs((f.valid_from - f.recorded_at).total_seconds()) < 5


def test_batch_is_applied_in_order_within_one_call(mem: Memory) -> None:
    rep = mem.add_facts([
        {"subject": "Maya", "relation": "works_at", "object": "Farfetch", "valid_from": "2017-01-01"},
        {"subject": "Maya", "relation": "works_at", "object": "Feedzai", "valid_from": "2020-01-01"},
        {"subject": "Maya", "relation": "works_at", "object": "Unbabel", "valid_from": "2023-01-01"},
    ], user_id=U)
    assert len(rep.added) == 3
    assert versions(mem, "works_at") == [("Farfetch", "2017-01-01", "2020-01-01"),
                                         ("Feedzai", "2020-01-01", "2023-01-01"),
                                         ("Unbabel", "2023-01-01", None)]


@pytest.mark.parametrize("rel", ["lives_in", "works_at", "job_title", "studies_at", "married_to",
                                 "partner_of", "born_in"])
def test_builtin_single_valued_relations(mem: Memory, rel: str) -> None:
    mem.add_facts([{"subject": "X", "relation": rel, "object": "A", "valid_from": "2010-01-01"},
                   {"subject": "X", "relation": rel, "object": "B", "valid_from": "2012-01-01"}], user_id=U)
    assert [f.object for f in mem.facts(user_id=U, subject="X", relation=rel)] == ["B"]


@pytest.mark.parametrize("rel", ["sibling_of", "friend_of", "parent_of", "child_of", "has_pet", "likes",
                                 "dislikes", "owns", "hobby", "is_a", "located_in"])
def test_builtin_multi_valued_relations(mem: Memory, rel: str) -> None:
    mem.add_facts([{"subject": "X", "relation": rel, "object": "A", "valid_from": "2010-01-01"},
                   {"subject": "X", "relation": rel, "object": "B", "valid_from": "2012-01-01"}], user_id=U)
    assert sorted(f.object for f in mem.facts(user_id=U, subject="X", relation=rel)) == ["A", "B"]


def test_user_defined_relation_overrides(tmp_path) -> None:
    with Memory(tmp_path / "m.db", relations=[{"name": "likes", "single_valued": True},
                                             {"name": "drives", "single_valued": True,
                                              "synonyms": ["drives_a"]}]) as m:
        m.add_facts([{"subject": "X", "relation": "likes", "object": "A", "valid_from": "2010-01-01"},
                     {"subject": "X", "relation": "likes", "object": "B", "valid_from": "2012-01-01"},
                     {"subject": "X", "relation": "drives_a", "object": "Golf", "valid_from": "2010-01-01"},
                     {"subject": "X", "relation": "drives", "object": "Tesla", "valid_from": "2015-01-01"}],
                    user_id=U)
        assert sorted(f.object for f in m.facts(user_id=U)) == ["B", "Tesla"]


def test_ending_that_reaches_further_back_keeps_the_earlier_part(mem: Memory) -> None:
    lives(mem, "Oslo", "2018-01-01")  # known since 2018 …
    rep = lives(mem, "Oslo", "2016-01-01", "2021-01-01")  # … "from 2016 to 2021 I lived in Oslo"
    assert [f.object for f in rep.closed][:1] == ["Oslo"]
    assert versions(mem) == [("Oslo", "2016-01-01", "2018-01-01"), ("Oslo", "2018-01-01", "2021-01-01")]
    assert [f.object for f in mem.facts(user_id=U, as_of="2017-01-01")] == ["Oslo"]
    assert mem.facts(user_id=U, as_of="2022-01-01") == []


def test_an_ending_closes_the_one_open_fact_named_alike(mem: Memory) -> None:
    # session 30: "I finally quit Asda" after "Asda offered me a role at their head office": the ending named the
    # employer shorter; before, it became "works_at Asda" with an unknown start, placed before every known start
    # (she "worked at Asda" before 2005)
    work = [{"subject": "Maya", "relation": "works_at", "object": o, "valid_from": s}
            for o, s in (("Shell", "2005-01-01"), ("Asda head office", "2013-06-01"))]
    mem.add_facts(work, user_id=U)
    rep = mem.add_facts([{"subject": "Maya", "relation": "works_at", "object": "Asda", "valid_to": "2019-10-30"}],
                        user_id=U)
    assert rep.added == [] and [f.object for f in rep.closed] == ["Asda head office"]
    assert versions(mem, "works_at") == [("Shell", "2005-01-01", "2013-06-01"),
                                         ("Asda head office", "2013-06-01", "2019-10-30")]
    assert mem.facts(user_id=U, subject="Maya", relation="works_at", as_of="2004-01-01") == []


def test_an_ending_named_unlike_the_open_fact_keeps_the_old_rule(mem: Memory) -> None:
    lives(mem, "Porto North", "2012-01-01")
    lives(mem, "Lisbon", "2015-01-01")
    rep = lives(mem, "Porto", end="2014-06-01")  # alike the closed fact, not the open one: nothing to close
    assert rep.closed == [] and rep.added[0].valid_from is None
    lives(mem, "Braga", end="2019-01-01")  # named like nothing
    assert [v for v in versions(mem) if v[0] == "Lisbon"] == [("Lisbon", "2015-01-01", None)]


def managed() -> Memory:
    return Memory(":memory:", llm="none", embedder=False,
                  relations=[{"name": "reports_to", "single_valued": True, "inverse": "manages"}])


def said(mem: Memory, s: str, r: str, o: str, start: str) -> None:
    mem.add_facts([{"subject": s, "relation": r, "object": o, "valid_from": start}], user_id=U)


def test_a_single_valued_slot_is_one_slot_from_either_side() -> None:
    with managed() as mem:
        said(mem, "Maya", "reports_to", "Bob", "2019-01-01")
        said(mem, "Carol", "manages", "Maya", "2021-01-01")  # stated from the manager's side
        now = mem.facts(user_id=U, subject="Maya", relation="reports_to")
        assert [f.object for f in now] == ["Carol"]  # before: Bob and Carol
        then = mem.facts(user_id=U, subject="Maya", relation="reports_to", as_of="2020-01-01")
        assert [f.object for f in then] == ["Bob"]
        [carol] = [f for f in mem.history(user_id=U, other_side=False) if f.object == "Maya"]
        mem.forget(user_id=U, fact_id=carol.id)  # and forgetting it reopens Bob from either side
        assert [f.object for f in mem.facts(user_id=U, subject="Maya", relation="reports_to")] == ["Bob"]


def test_what_one_manages_is_not_whom_one_reports_to() -> None:
    with managed() as mem:
        said(mem, "Maya", "manages", "Tom", "2019-01-01")
        said(mem, "Maya", "reports_to", "Dan", "2020-01-01")  # before: this closed "Maya manages Tom"
        assert [(f.relation, f.object) for f in mem.history(user_id=U, other_side=False)] == \
            [("manages", "Tom"), ("reports_to", "Dan")]
        assert all(f.valid_to is None for f in mem.history(user_id=U, other_side=False))
        said(mem, "Nina", "manages", "Tom", "2022-01-01")  # Tom's new manager closes Maya's management of him
        assert [f.subject for f in mem.facts(user_id=U, object="Tom", relation="manages")] == ["Nina"]


def test_a_place_is_in_each_of_its_containers_at_once() -> None:
    with Memory(":memory:", llm="none", embedder=False) as mem:
        for container, start in (("Germany", "2020-01-01"), ("Europe", "2021-01-01")):
            mem.add_facts([{"subject": "Berlin", "relation": "located_in", "object": container,
                            "valid_from": start}], user_id=U)
        # before: located_in was single-valued, so Europe "moved" Berlin out of Germany in 2021
        assert sorted(f.object for f in mem.facts(user_id=U, subject="Berlin")) == ["Europe", "Germany"]


def works(mem: Memory, org: str, start: str | None = None, end: str | None = None) -> None:
    f = {"subject": "Maya", "relation": "works_at", "object": org}
    f.update({k: v for k, v in (("valid_from", start), ("valid_to", end)) if v})
    mem.add_facts([f], user_id=U)


def test_a_start_learned_after_the_end_joins_the_stint(mem: Memory) -> None:
    works(mem, "Initech", "2015-01-01")
    works(mem, "Acme", end="2020-06-01")  # "I left Acme in June 2020": its start unknown
    works(mem, "Acme", "2018-01-01")  # "I joined Acme in 2018": before, this start was dropped
    assert versions(mem, "works_at") == [("Initech", "2015-01-01", "2018-01-01"),
                                         ("Acme", "2018-01-01", "2020-06-01")]
    assert mem.facts(user_id=U, subject="Maya", relation="works_at") == []  # she left Acme; nothing since
    assert [f.object for f in mem.facts(user_id=U, subject="Maya", as_of="2019-01-01")] == ["Acme"]
    assert mem.facts(user_id=U, subject="Maya", relation="works_at", as_of="2010-01-01") == []


def test_a_stated_end_replaces_an_end_inferred_from_the_next_value(mem: Memory) -> None:
    lives(mem, "Porto", "2010-01-01")
    lives(mem, "Lisbon", "2013-01-01")
    lives(mem, "Berlin", "2016-01-01")  # closes Lisbon at 2016: an inferred end
    rep = lives(mem, "Lisbon", end="2014-06-01")  # "I left Lisbon in June 2014": before, ignored
    assert [f.object for f in rep.closed] == ["Lisbon"]
    assert versions(mem) == [("Porto", "2010-01-01", "2013-01-01"), ("Lisbon", "2013-01-01", "2014-06-01"),
                             ("Berlin", "2016-01-01", None)]
    assert mem.facts(user_id=U, subject="Maya", as_of="2015-01-01") == []  # between Lisbon and Berlin


def chain(mem: Memory) -> dict[str, str]:
    """Porto 2010, Lisbon 2013, Berlin 2016: the ids by city."""
    for city, start in (("Porto", "2010-01-01"), ("Lisbon", "2013-01-01"), ("Berlin", "2016-01-01")):
        lives(mem, city, start)
    return {f.object: f.id for f in mem.history(user_id=U, subject="Maya")}


def living(mem: Memory, when: str | None = None) -> list[str]:
    return [f.object for f in mem.facts(user_id=U, subject="Maya", relation="lives_in", as_of=when)]


def test_a_corrected_start_takes_its_place_in_the_slot(mem: Memory) -> None:
    ids = chain(mem)
    mem.correct(ids["Lisbon"], user_id=U, valid_from="2012-01-01")  # before: Porto and Lisbon in 2012
    assert living(mem, "2012-06-01") == ["Lisbon"] and living(mem, "2011-06-01") == ["Porto"]
    mem.correct(ids["Berlin"], user_id=U, valid_from="2017-01-01")  # before: nobody in 2016
    assert living(mem, "2016-06-01") == ["Lisbon"] and living(mem) == ["Berlin"]


def test_a_correction_to_a_hedge_closes_nothing(mem: Memory) -> None:
    ids = chain(mem)
    mem.correct(ids["Berlin"], user_id=U, confidence=0.3)  # "not sure she moved to Berlin"
    assert living(mem) == ["Lisbon"]  # before: nobody
    hedged = [f for f in mem.facts(user_id=U, subject="Maya", include_unstable=True) if f.object == "Berlin"]
    assert [f.confidence for f in hedged] == [0.3]


def test_a_corrected_value_keeps_its_place_when_what_closed_it_is_forgotten(mem: Memory) -> None:
    ids = chain(mem)
    coimbra = mem.correct(ids["Lisbon"], user_id=U, object="Coimbra")
    assert living(mem, "2014-01-01") == ["Coimbra"]
    assert coimbra.valid_to is not None and coimbra.stated_to is None  # its end is inferred, not stated
    mem.forget(user_id=U, fact_id=ids["Berlin"])
    assert living(mem) == ["Coimbra"]  # before: nobody, the inferred end had become a stated one
    old = [f for f in mem.history(user_id=U, subject="Maya") if f.object == "Lisbon"]
    assert [(f.confidence, f.closed_by) for f in old] == [(0.0, coimbra.id)]  # still points at its fix


def test_a_rebuild_leaves_other_peoples_slots_alone(mem: Memory) -> None:
    for who, org, start in (("Tom", "Acme", "2015-01-01"), ("Tom", "Initech", "2019-01-01"),
                            ("Maya", "Acme", "2016-01-01")):
        mem.add_facts([{"subject": who, "relation": "works_at", "object": org, "valid_from": start}], user_id=U)
    [maya] = mem.facts(user_id=U, subject="Maya")
    mem.correct(maya.id, user_id=U, valid_from="2017-01-01")  # rebuilds Maya's slot, which touches Acme
    assert [f.object for f in mem.facts(user_id=U, subject="Tom")] == ["Initech"]  # before: Acme reopened


def test_a_version_a_correction_replaced_takes_no_part_in_updates(mem: Memory) -> None:
    lives(mem, "Lisbon", "2010-01-01")
    [lisbon] = mem.facts(user_id=U, subject="Maya")
    porto = mem.correct(lisbon.id, user_id=U, object="Porto")
    lives(mem, "Lisbon", end="2014-01-01", c=0.4)  # a hedged ending of the corrected-away value
    [old] = [f for f in mem.history(user_id=U, subject="Maya") if f.id == lisbon.id]
    assert (old.confidence, old.closed_by) == (0.0, porto.id)  # before: revived at 0.4, link lost
