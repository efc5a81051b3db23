"""The timeline does not depend on the order dated statements arrive in (chronomem.temporal, rule 1c).

Statements of one slot: dated starts ("Maya lives in Porto from 2018") and dated endings ("Maya left
Porto in June 2021", ``valid_to`` only).  Whatever order they are added in, the facts valid at every
instant ("as of" answers) are the same; history rows may differ in bookkeeping.

A value may be started twice ("Lisbon from 2017", "Lisbon from 2021"): the second start is folded
into the first fact and kept (``Fact.later_starts``), so a value placed between them later splits the
fact there.  Not covered (known limit): endings dated before any stated start of their value (stints
whose start stays unknown).
"""

from __future__ import annotations

import itertools
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chronomem import Memory, Message

BASE = datetime(2010, 1, 1, tzinfo=timezone.utc)
U = "u"


def month(n: int) -> str:
    return (BASE + timedelta(days=30 * n)).date().isoformat()


def add_all(mem: Memory, relation: str, statements: list[tuple[str, str, str]]) -> None:
    for obj, kind, when in statements:
        mem.add_facts([{"subject": "Maya", "relation": relation, "object": obj,
                        ("valid_from" if kind == "start" else "valid_to"): when}], user_id=U)


def answers(mem: Memory, relation: str, probes: list[str]) -> list[tuple[str, ...]]:
    return [tuple(sorted(f.object for f in mem.facts(user_id=U, subject="Maya", relation=relation, as_of=p)))
            for p in probes]


def probes_for(statements: list[tuple[str, str, str]]) -> list[str]:
    """An instant before, at and just after every stated date, and one before all of them."""
    days = sorted({datetime.fromisoformat(w).date() for _, _, w in statements})
    out = {(days[0] - timedelta(days=400)).isoformat()}
    for d in days:
        out |= {(d - timedelta(days=1)).isoformat(), d.isoformat(), (d + timedelta(days=1)).isoformat()}
    return sorted(out)


def timeline(relation: str, statements: list[tuple[str, str, str]], order: tuple[int, ...]) -> list[tuple[str, ...]]:
    with Memory(":memory:", llm=False, embedder=False) as mem:
        add_all(mem, relation, [statements[i] for i in order])
        return answers(mem, relation, probes_for(statements))


@st.composite
def slot_statements(draw: st.DrawFn, values: list[str], starts_each: int = 1) -> list[tuple[str, str, str]]:
    """At most ``starts_each`` starts per value, and endings of values after a start of theirs; all dates
    distinct."""
    months = sorted(draw(st.lists(st.integers(0, 150), min_size=2, max_size=4, unique=True)))
    out: list[tuple[str, str, str]] = []
    started: dict[str, list[int]] = {}
    for m in months:
        obj = draw(st.sampled_from(values))
        ends = [v for v, at in started.items() if at]
        if len(started.get(obj, [])) < starts_each and (draw(st.booleans()) or not ends):
            started.setdefault(obj, []).append(m)
            out.append((obj, "start", month(m)))
        elif ends:
            out.append((draw(st.sampled_from(ends)), "end", month(m)))
    return draw(st.permutations(out))


def assert_order_independent(relation: str, statements: list[tuple[str, str, str]]) -> None:
    first = tuple(range(len(statements)))
    expected = timeline(relation, statements, first)
    for order in itertools.permutations(first):
        assert timeline(relation, statements, order) == expected, (statements, order)


@settings(deadline=None, max_examples=30)
@given(slot_statements(["Porto", "Lisbon", "Braga"]))
def test_single_valued_answers_do_not_depend_on_arrival_order(statements) -> None:
    assert_order_independent("lives_in", statements)


@settings(deadline=None, max_examples=30)
@given(slot_statements(["cat"]))
def test_many_valued_answers_do_not_depend_on_arrival_order(statements) -> None:
    assert_order_independent("has_pet", statements)


@settings(deadline=None, max_examples=40)
@given(slot_statements(["Porto", "Lisbon"], starts_each=2))
def test_a_value_started_twice_gives_the_same_answers_in_any_order(statements) -> None:
    """"Lisbon from 2017", "Lisbon from 2021" and a value placed between them: the second start is kept
    (``Fact.later_starts``) and splits Lisbon where the other value comes, whenever it comes."""
    assert_order_independent("lives_in", statements)


@settings(deadline=None, max_examples=30)
@given(slot_statements(["cat"], starts_each=2))
def test_a_pet_got_twice_gives_the_same_answers_in_any_order(statements) -> None:
    assert_order_independent("has_pet", statements)


# -- the adversarial tester's cases ---------------------------------------------------------------------

def test_an_ending_after_the_inferred_close_is_absorbed_not_a_phantom_stint() -> None:
    """"left Porto in June 2021" after "Lisbon from March 2021" closed Porto: no Porto before 2018."""
    statements = [("Porto", "start", "2018-01-01"), ("Lisbon", "start", "2021-03-01"), ("Porto", "end", "2021-06-01")]
    with Memory(":memory:", llm=False, embedder=False) as mem:
        add_all(mem, "lives_in", statements)
        assert [f.object for f in mem.facts(user_id=U, subject="Maya", as_of="2012-01-01")] == []
        assert [f.object for f in mem.facts(user_id=U, subject="Maya", as_of="2019-01-01")] == ["Porto"]
        assert [f.object for f in mem.facts(user_id=U, subject="Maya", as_of="2021-04-01")] == ["Lisbon"]
        [porto] = [f for f in mem.history(user_id=U) if f.object == "Porto"]  # no second row
        assert porto.valid_to == datetime(2021, 3, 1, tzinfo=timezone.utc)
        assert porto.stated_to == datetime(2021, 6, 1, tzinfo=timezone.utc)
    assert_order_independent("lives_in", statements)


def test_two_endings_of_the_cat_do_not_invent_a_cat_before_it_came() -> None:
    statements = [("cat", "start", "2015-01-01"), ("cat", "end", "2020-01-01"), ("cat", "end", "2021-01-01")]
    with Memory(":memory:", llm=False, embedder=False) as mem:
        add_all(mem, "has_pet", statements)
        assert mem.facts(user_id=U, subject="Maya", as_of="2010-01-01") == []
        assert [f.object for f in mem.facts(user_id=U, subject="Maya", as_of="2016-01-01")] == ["cat"]
        assert len(mem.history(user_id=U)) == 1
    assert_order_independent("has_pet", statements)


def test_an_ending_is_no_repetition_of_a_stint_that_began_after_it() -> None:
    """"I left Braga in 2013" is not said inside "Braga from 2018" once that stint is closed."""
    statements = [("Braga", "start", "2018-07-01"), ("Lisbon", "start", "2014-09-01"),
                  ("Porto", "start", "2024-05-01"), ("Braga", "end", "2013-11-01")]
    with Memory(":memory:", llm=False, embedder=False) as mem:
        add_all(mem, "lives_in", statements)
        assert [f.object for f in mem.facts(user_id=U, subject="Maya", as_of="2012-01-01")] == ["Braga"]
    with Memory(":memory:", llm=False, embedder=False) as mem:
        add_all(mem, "lives_in", [statements[i] for i in (0, 1, 3, 2)])
        assert [f.object for f in mem.facts(user_id=U, subject="Maya", as_of="2012-01-01")] == ["Braga"]


def test_a_stint_said_again_after_a_later_value_cut_it_short_is_a_repetition() -> None:
    """"Porto from 2016 to 2019" said twice while "Berlin from 2017" is held (which closed Porto in 2017):
    one Porto, reinforced, as a restored backup gives it too (test_import_repeats)."""
    porto = {"subject": "Maya", "relation": "lives_in", "object": "Porto", "valid_from": "2016-01-01",
             "valid_to": "2019-01-01", "confidence": 0.8}
    with Memory(":memory:", llm=False, embedder=False) as mem:
        mem.add_facts([porto], user_id=U)
        mem.add_facts([{"subject": "Maya", "relation": "lives_in", "object": "Berlin", "valid_from": "2017-01-01"}],
                      user_id=U)
        mem.add_facts([porto], user_id=U)
        [held] = [f for f in mem.history(user_id=U) if f.object == "Porto"]  # no superseded twin
        assert held.confidence > 0.8 and len(held.confirmations) == 2
        assert held.valid_to == datetime(2017, 1, 1, tzinfo=timezone.utc)


# -- a value started twice: the second start is kept (Fact.later_starts) and splits the fact where needed

def test_a_return_to_a_city_survives_a_stint_learned_later() -> None:
    statements = [("Lisbon", "start", "2017-01-01"), ("Porto", "start", "2018-10-01"), ("Lisbon", "start", "2021-03-01")]
    with Memory(":memory:", llm=False, embedder=False) as mem:
        add_all(mem, "lives_in", [statements[i] for i in (0, 2, 1)])  # the return is said before Porto
        at = {p: [f.object for f in mem.facts(user_id=U, subject="Maya", as_of=p)]
              for p in ("2018-01-01", "2020-01-01", "2022-01-01")}
        assert at == {"2018-01-01": ["Lisbon"], "2020-01-01": ["Porto"], "2022-01-01": ["Lisbon"]}
        lisbon = sorted((f for f in mem.history(user_id=U) if f.object == "Lisbon"), key=lambda f: f.valid_from)
        assert [(f.valid_from.date().isoformat(), f.valid_to and f.valid_to.date().isoformat()) for f in lisbon] == [
            ("2017-01-01", "2018-10-01"), ("2021-03-01", None)]
        assert lisbon[0].later_starts == [] and lisbon[1].later_starts == []
    assert_order_independent("lives_in", statements)


def test_a_cat_said_again_survives_an_earlier_ending_learned_later() -> None:
    statements = [("cat", "start", "2015-01-01"), ("cat", "start", "2020-01-01"), ("cat", "end", "2018-01-01")]
    with Memory(":memory:", llm=False, embedder=False) as mem:
        add_all(mem, "has_pet", statements)
        assert [f.object for f in mem.facts(user_id=U, subject="Maya", as_of="2019-01-01")] == []
        assert [f.object for f in mem.facts(user_id=U, subject="Maya", as_of="2021-01-01")] == ["cat"]
    assert_order_independent("has_pet", statements)


def test_an_entity_merge_splits_a_fact_the_merged_value_cuts_before_its_later_start() -> None:
    """Lisbon 2017 and again 2021 said of "Maya", Porto 2018 of "Maya S": merged, the slot is replayed and
    Lisbon splits at Porto as a write would have split it (no later start left outside its fact)."""
    with Memory(":memory:", llm=False, embedder=False) as mem:
        for who, city, start in (("Maya", "Lisbon", "2017-01-01"), ("Maya", "Lisbon", "2021-03-01"),
                                 ("Maya S", "Porto", "2018-10-01")):
            mem.add_facts([{"subject": who, "relation": "lives_in", "object": city, "valid_from": start}], user_id=U)
        mem.merge_entities("Maya S", "Maya", user_id=U)
        assert [f.object for f in mem.facts(user_id=U, subject="Maya", as_of="2022-01-01")] == ["Lisbon"]
        assert all(f.valid_to is None or all(d.at < f.valid_to for d in f.later_starts)
                   for f in mem.history(user_id=U))
        mem.add_facts([{"subject": "Maya", "relation": "lives_in", "object": "Lisbon", "valid_to": "2017-06-01"}],
                      user_id=U)
        assert all(f.valid_to is None or f.valid_from is None or f.valid_from < f.valid_to
                   for f in mem.history(user_id=U))


def test_forgetting_an_ending_leaves_the_ending_said_after_it() -> None:
    """The cat from 2015, "it died in 2018" (m2), "it died in 2022" (m3, kept in later_ends): forgetting m2's
    session ends the cat in 2022, whichever ending came first."""
    for first, second in (("2018-01-01", "2022-01-01"), ("2022-01-01", "2018-01-01")):
        with Memory(":memory:", llm=False, embedder=False) as mem:
            for i, (when, kind) in enumerate((("2015-01-01", "valid_from"), (first, "valid_to"),
                                              (second, "valid_to")), 1):
                t = BASE + timedelta(days=i)
                mem.store.ensure_session(U, f"s{i}", started_at=t)
                mem.store.add_messages(U, [Message(id=f"m{i}", user_id=U, session_id=f"s{i}", speaker="Maya",
                                                   text=f"the cat: {kind} {when}", timestamp=t, recorded_at=t, seq=i)])
                mem.add_facts([{"subject": "Maya", "relation": "has_pet", "object": "cat", kind: when,
                                "source_ids": [f"m{i}"], "session_id": f"s{i}"}], user_id=U)
            mem.forget(user_id=U, session_id="s2" if first == "2018-01-01" else "s3")
            [cat] = mem.history(user_id=U)
            assert (cat.valid_to, cat.later_ends) == (datetime(2022, 1, 1, tzinfo=timezone.utc), []), (first, second)


def test_the_later_ending_that_takes_over_keeps_no_forgotten_turn() -> None:
    """The cat from 2015 (s1); "it died in 2018" and "it died in 2022" (s2); "it died in 2022" again (s3): the
    2022 ending is kept with both its turns.  Forgetting s2 ends the cat in 2022, ended by s3's turn only."""
    with Memory(":memory:", llm=False, embedder=False) as mem:
        said = [("s1", "m1", "valid_from", "2015-01-01"), ("s2", "m2", "valid_to", "2018-01-01"),
                ("s2", "m3", "valid_to", "2022-01-01"), ("s3", "m5", "valid_to", "2022-01-01")]
        for i, (sid, mid, kind, when) in enumerate(said, 1):
            t = BASE + timedelta(days=i)
            mem.store.ensure_session(U, sid, started_at=t)
            mem.store.add_messages(U, [Message(id=mid, user_id=U, session_id=sid, speaker="Maya",
                                               text=f"the cat: {kind} {when}", timestamp=t, recorded_at=t, seq=i)])
            mem.add_facts([{"subject": "Maya", "relation": "has_pet", "object": "cat", kind: when,
                            "source_ids": [mid], "session_id": sid}], user_id=U)
        assert [d.turns for d in mem.history(user_id=U)[0].later_ends] == [["m3", "m5"]]
        mem.forget(user_id=U, session_id="s2")
        [cat] = mem.history(user_id=U)
        assert (cat.valid_to, cat.ended_by, cat.later_ends) == (datetime(2022, 1, 1, tzinfo=timezone.utc), ["m5"], [])
        assert '"m3"' not in repr(mem.store.dump_user(U)) and "'m3'" not in repr(mem.store.dump_user(U))


def test_merging_an_ending_said_of_one_name_into_a_stint_said_of_the_other_ends_it() -> None:
    """"Porto from 2010", "I left Oporto in 2015" (another entity), "Lisbon from 2018"; Oporto merged into Porto:
    Porto ends in 2015, in either order of the first two (before, the ending was folded in as a repetition and
    its end lost, or kept apart as a Porto reaching back before 2010)."""
    said = [("Porto", {"valid_from": "2010-01-01"}), ("Oporto", {"valid_to": "2015-01-01"}),
            ("Lisbon", {"valid_from": "2018-01-01"})]
    for order in ((0, 1, 2), (1, 0, 2), (2, 1, 0)):
        with Memory(":memory:", llm=False, embedder=False) as mem:
            for i in order:
                obj, dates = said[i]
                mem.add_facts([{"subject": "Maya", "relation": "lives_in", "object": obj, **dates,
                                "source_ids": [f"m{i}"]}], user_id=U)
            mem.merge_entities("Oporto", "Porto", user_id=U)
            stints = sorted((f.object, f.valid_from and f.valid_from.year, f.valid_to and f.valid_to.year)
                            for f in mem.history(user_id=U) if not f.superseded)
            assert stints == [("Lisbon", 2018, None), ("Porto", 2010, 2015)], order
            assert [f.object for f in mem.facts(user_id=U, as_of="2016-01-01")] == [], order


def test_merging_keeps_a_start_said_again_after_the_ending_as_its_own_stint() -> None:
    """"I left Oporto in 2015" (another entity), then "Porto from January 2015" and "Porto from 2020" (kept as a
    later start of the open Porto).  Merged, the ending gives Porto its end and the return of 2020 is a stint
    of its own, as when all were said of one name; before, the return was dropped with the ending's replan
    (a reviewer's find), and a restored backup then left it outside its fact."""
    said = [("Oporto", {"valid_to": "2015-04-01"}), ("Porto", {"valid_from": "2015-01-01"}),
            ("Porto", {"valid_from": "2020-01-01"})]

    def stints(merge: bool) -> list[tuple[str, int | None, int | None]]:
        with Memory(":memory:", llm=False, embedder=False) as mem:
            for i, (obj, dates) in enumerate(said):
                mem.add_facts([{"subject": "Maya", "relation": "lives_in", "object": obj if merge else "Porto",
                                **dates, "source_ids": [f"m{i}"]}], user_id=U)
            if merge:
                mem.merge_entities("Oporto", "Porto", user_id=U)
            mem.import_(mem.export(user_id=U), user_id="copy")  # a backup of it imports
            return sorted(("Porto", f.valid_from and f.valid_from.year, f.valid_to and f.valid_to.year)
                          for f in mem.history(user_id=U) if not f.superseded)

    assert stints(merge=True) == stints(merge=False) == [("Porto", 2015, 2015), ("Porto", 2020, None)]


def test_merging_a_stint_said_from_the_same_start_as_a_later_start_folds_them() -> None:
    """"Porto from 2020" of Mom; "Porto from 2015" and "Porto from 2020" of Maya (kept as a later start).  Mom
    merged into Maya: Porto 2015-2020 and one Porto from 2020 holding both sayings, as when all were said of one
    name; before, the stint split out at 2020 superseded Mom's (a third row, a duplicate of the same value)."""
    said = [("Mom", "2020-01-01"), ("Maya", "2015-01-01"), ("Maya", "2020-01-01")]

    def rows(merge: bool) -> list[tuple[int, int | None, int]]:
        with Memory(":memory:", llm=False, embedder=False) as mem:
            for i, (who, start) in enumerate(said):
                mem.add_facts([{"subject": who if merge else "Maya", "relation": "lives_in", "object": "Porto",
                                "valid_from": start, "source_ids": [f"m{i}"]}], user_id=U)
            if merge:
                assert mem.merge_entities("Mom", "Maya", user_id=U).facts_folded == 0
            return sorted((f.valid_from.year, f.valid_to and f.valid_to.year, len(f.source_ids))
                          for f in mem.history(user_id=U))

    assert rows(merge=True) == rows(merge=False) == [(2015, 2020, 1), (2020, None, 2)]
