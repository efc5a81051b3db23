"""Forgetting a statement leaves the timeline it would have had if it had never been said (chronomem.unsaying).

Each dated statement of one slot (a start of a value, at most two per value, or an ending of a value
started before it) is said in a session of its own, in a random order; one session is forgotten.  The facts
valid at every probe instant equal those of the same statements, less that one, said in the same order, and
no trace of the forgotten turn is left in the user's rows.  Outside: a forget that leaves an ending with no
start of its value before it (see :func:`forgettable`).
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from hypothesis import given, settings
from hypothesis import strategies as st
from test_temporal_order_independence import answers, probes_for, slot_statements

from chronomem import Memory, Message
from chronomem.temporal import abutting_repetitions

U = "u"
T0 = datetime(2030, 1, 1, tzinfo=timezone.utc)


def say_each_in_its_session(mem: Memory, relation: str, statements: list[tuple[str, str, str]],
                            turns: list[str]) -> None:
    for i, ((obj, kind, when), turn) in enumerate(zip(statements, turns, strict=True)):
        t = T0 + timedelta(days=i)
        mem.store.ensure_session(U, f"s-{turn}", started_at=t)
        mem.store.add_messages(U, [Message(id=turn, user_id=U, session_id=f"s-{turn}", speaker="Maya",
                                           text=f"{obj}: {kind} {when}", timestamp=t, recorded_at=t, seq=i)])
        mem.add_facts([{"subject": "Maya", "relation": relation, "object": obj,
                        ("valid_from" if kind == "start" else "valid_to"): when,
                        "source_ids": [turn], "session_id": f"s-{turn}"}], user_id=U)


def check_forget(relation: str, statements: list[tuple[str, str, str]], k: int) -> None:
    turns = [f"turn{i:02d}" for i in range(len(statements))]
    at = probes_for(statements)
    with Memory(":memory:", llm=False, embedder=False) as mem:
        say_each_in_its_session(mem, relation, statements, turns)
        mem.forget(user_id=U, session_id=f"s-{turns[k]}")
        got = answers(mem, relation, at)
        assert turns[k] not in repr(mem.store.dump_user(U)), "a trace of the forgotten turn is left"
        # no two stints of one fact kept apart by what was forgotten
        assert abutting_repetitions(mem.history(user_id=U), mem.graph.key, mem.graph.theta) == []
    with Memory(":memory:", llm=False, embedder=False) as mem:
        say_each_in_its_session(mem, relation, statements[:k] + statements[k + 1:], turns[:k] + turns[k + 1:])
        assert got == answers(mem, relation, at), (statements, k)


def started_before_ending(statements: list[tuple[str, str, str]]) -> bool:
    return all(any(o == obj and k == "start" and w < when for o, k, w in statements)
               for obj, kind, when in statements if kind == "end")


def forgettable(statements: list[tuple[str, str, str]]) -> list[int]:
    """The statements whose forgetting leaves every ending after a start of its value: an ending left with
    none before it stands for a stint whose start is inferred from the order things were said in (the
    order rules' known limit).  Endings are always among them."""
    return [k for k in range(len(statements)) if started_before_ending(statements[:k] + statements[k + 1:])]


@settings(deadline=None, max_examples=60)
@given(st.data())
def test_forgetting_a_place_said_leaves_the_places_of_never_having_said_it(data: st.DataObject) -> None:
    statements = data.draw(slot_statements(["Porto", "Lisbon"], starts_each=2))
    check_forget("lives_in", statements, data.draw(st.sampled_from(forgettable(statements))))


@settings(deadline=None, max_examples=60)
@given(st.data())
def test_forgetting_a_pet_said_leaves_the_pets_of_never_having_said_it(data: st.DataObject) -> None:
    statements = data.draw(slot_statements(["cat"], starts_each=2))
    check_forget("has_pet", statements, data.draw(st.sampled_from(forgettable(statements))))


def test_a_stint_only_an_ending_is_left_of_gives_way_to_that_ending() -> None:
    """Lisbon from 2017, back in Lisbon 2021, left Lisbon 2023, Porto from 2019 (the return said before
    Porto: a later start, split out when Porto came).  Forgetting the return leaves "left Lisbon 2023"
    without a stint of its own: Porto from 2019 on, as if the return had never been said."""
    said = [("Lisbon", "start", "2017-01-01"), ("Lisbon", "start", "2021-01-01"), ("Lisbon", "end", "2023-01-01"),
            ("Porto", "start", "2019-01-01")]
    turns = ["a", "b", "c", "d"]
    with Memory(":memory:", llm=False, embedder=False) as mem:
        say_each_in_its_session(mem, "lives_in", said, turns)
        assert [f.object for f in mem.facts(user_id=U, as_of="2022-01-01")] == ["Lisbon"]
        mem.forget(user_id=U, session_id="s-b")
        assert [f.object for f in mem.facts(user_id=U, as_of="2022-01-01")] == ["Porto"]
        assert [f.object for f in mem.facts(user_id=U, as_of="2024-01-01")] == ["Porto"]
        lisbon = [f for f in mem.history(user_id=U) if f.object == "Lisbon"]
        assert [(f.valid_from.year, f.valid_to and f.valid_to.year, f.ended_by) for f in lisbon] == [(2017, 2019, ["c"])]


def test_forgetting_the_first_start_moves_the_fact_to_the_start_said_after_it() -> None:
    with Memory(":memory:", llm=False, embedder=False) as mem:
        say_each_in_its_session(mem, "lives_in", [("Lisbon", "start", "2017-01-01"), ("Lisbon", "start", "2021-03-01")],
                                ["a", "b"])
        [lisbon] = mem.history(user_id=U)
        mem.forget(user_id=U, session_id="s-a")
        [after] = mem.history(user_id=U)
        assert (after.id, after.valid_from, after.started_by, after.later_starts, after.source_ids) == (
            lisbon.id, datetime(2021, 3, 1, tzinfo=timezone.utc), ["b"], [], ["b"])


def test_the_same_start_said_again_keeps_it_when_one_saying_is_forgotten() -> None:
    """A repetition records no start equal to its fact's: a statement left that is no later start and no
    ending may have said the start again, so the start stays."""
    with Memory(":memory:", llm=False, embedder=False) as mem:
        say_each_in_its_session(mem, "lives_in", [("Lisbon", "start", "2017-01-01"), ("Lisbon", "start", "2017-01-01"),
                                                  ("Lisbon", "end", "2020-01-01")], ["a", "b", "c"])
        mem.forget(user_id=U, session_id="s-a")
        [lisbon] = mem.history(user_id=U)
        assert (lisbon.valid_from.year, lisbon.valid_to.year, lisbon.source_ids) == (2017, 2020, ["b", "c"])


def test_an_ending_said_twice_stays_when_one_saying_is_forgotten() -> None:
    """"I left Porto in 2013" in two sessions: forgetting either leaves Porto ended in 2013 (before, forgetting
    the second left a Porto with no start and no end, holding at every instant)."""
    for forgotten in ("a", "b"):
        with Memory(":memory:", llm=False, embedder=False) as mem:
            say_each_in_its_session(mem, "lives_in", [("Porto", "end", "2013-01-01"), ("Porto", "end", "2013-01-01")],
                                    ["a", "b"])
            mem.forget(user_id=U, session_id=f"s-{forgotten}")
            [porto] = mem.history(user_id=U)
            assert (porto.valid_from, porto.valid_to) == (None, datetime(2013, 1, 1, tzinfo=timezone.utc))
            assert mem.facts(user_id=U, as_of="2014-01-01") == []


def test_a_start_and_end_said_together_go_together() -> None:
    """"Porto from 2010 to 2016" (a), then "I left Porto in 2013" (b, which ends it earlier and keeps 2016 as a
    later end, with a's turn).  Forgetting a leaves b alone: Porto until 2013, start unknown, and no 2016
    (before, the later end was kept without turns, so nothing could forget it, and the 2010 start stayed)."""
    with Memory(":memory:", llm=False, embedder=False) as mem:
        for i, (turn, dates) in enumerate((("a", {"valid_from": "2010-01-01", "valid_to": "2016-01-01"}),
                                           ("b", {"valid_to": "2013-01-01"}))):
            t = T0 + timedelta(days=i)
            mem.store.ensure_session(U, f"s-{turn}", started_at=t)
            mem.store.add_messages(U, [Message(id=turn, user_id=U, session_id=f"s-{turn}", speaker="Maya",
                                               text="Porto", timestamp=t, recorded_at=t, seq=i)])
            mem.add_facts([{"subject": "Maya", "relation": "lives_in", "object": "Porto", "source_ids": [turn],
                            "session_id": f"s-{turn}", **dates}], user_id=U)
        [porto] = mem.history(user_id=U)
        assert [(d.at.year, d.turns) for d in porto.later_ends] == [(2016, ["a"])]
        mem.forget(user_id=U, session_id="s-a")
        [porto] = mem.history(user_id=U)
        assert (porto.valid_from, porto.valid_to, porto.later_ends, porto.source_ids) == (
            None, datetime(2013, 1, 1, tzinfo=timezone.utc), [], ["b"])


def test_a_fact_whose_statement_from_the_forgotten_session_moved_away_keeps_no_trace_of_it() -> None:
    """"Left Porto in 2017" (the first session: a fact of its own), "Porto from 2010" (its start, rule 1b),
    "left Porto in 2011" (an earlier end: 2017 is kept as a later end), "Porto again from 2014" (takes the 2017
    ending, rule 3b).  The first fact holds no turn of the first session any more, but was told there: forgetting
    that session leaves it told in the session of its start, not in the deleted one."""
    check_forget("lives_in", [("Porto", "end", "2017-11-20"), ("Porto", "start", "2010-06-30"),
                              ("Porto", "end", "2011-06-25"), ("Porto", "start", "2014-05-10")], 0)


def test_a_statement_left_is_read_by_the_turns_still_said() -> None:
    """:func:`unsay` (pure): the later start was said over two turns, one of them forgotten with the first
    statement; what is left of it still says the later start, so the start moves there."""
    from chronomem.model import Fact, Intent, LaterDate, Origin
    from chronomem.unsaying import unsay

    later = datetime(2021, 1, 1, tzinfo=timezone.utc)
    f = Fact(id="f1", user_id=U, subject="Maya", relation="lives_in", object="Lisbon",
             valid_from=datetime(2017, 1, 1, tzinfo=timezone.utc), valid_to=None, confidence=0.9,
             intent=Intent.FACT, origin=Origin.STATED, recorded_at=T0, source_ids=["a", "b", "x"],
             confirmations=[(0.9, ["a"]), (0.9, ["b", "x"])], later_starts=[LaterDate(later, T0, ["b", "x"])])
    out = unsay(f, {"a", "x"}, 0.6)
    assert (out.replay, out.endings, f.valid_from, f.started_by, f.later_starts, f.source_ids) == (
        True, [], later, ["b"], [], ["b"])


def test_forgetting_the_start_a_handed_over_ending_came_to_leaves_the_ending_where_it_was() -> None:
    """"Left Porto in 2017" (a fact of its own), "left Porto in 2011" (an earlier end: 2017 kept as a later end),
    "Porto again from 2014" (takes the 2017 ending, rule 3b), "Porto from 2010": forgetting "again from 2014"
    gives the 2017 ending back to the first stint, as a later end."""
    check_forget("lives_in", [("Porto", "end", "2017-11-20"), ("Porto", "end", "2011-06-25"),
                              ("Porto", "start", "2014-05-10"), ("Porto", "start", "2010-06-30")], 2)


def test_two_stints_a_forgotten_value_kept_apart_are_one_fact_again() -> None:
    """"Lisbon from 2012" (a), "Porto from 2013" (b), "Lisbon from 2015" (c): two Lisbon facts.  Forgetting b
    leaves one Lisbon fact from 2012, with c's start kept as a later start, as if Porto had never been said."""
    with Memory(":memory:", llm=False, embedder=False) as mem:
        say_each_in_its_session(mem, "lives_in", [("Lisbon", "start", "2012-01-01"), ("Porto", "start", "2013-01-01"),
                                                  ("Lisbon", "start", "2015-01-01")], ["a", "b", "c"])
        first = next(f for f in mem.history(user_id=U) if f.object == "Lisbon")
        res = mem.forget(user_id=U, session_id="s-b")
        [lisbon] = mem.history(user_id=U)
        assert (res.facts_deleted, res.rejoined) == (1, 1)
        assert (lisbon.id, lisbon.valid_from.year, lisbon.valid_to, lisbon.source_ids) == (first.id, 2012, None, ["a", "c"])
        assert [(d.at.year, d.turns) for d in lisbon.later_starts] == [(2015, ["c"])]
        mem.add_facts([{"subject": "Maya", "relation": "lives_in", "object": "Porto", "valid_from": "2014-01-01"}],
                      user_id=U)  # Porto said again, with another date: Lisbon splits there as before
        assert [(f.object, f.valid_from.year) for f in mem.history(user_id=U)] == [
            ("Lisbon", 2012), ("Porto", 2014), ("Lisbon", 2015)]


# -- statements that give a start and an end at once, corrections, cut stints (a reviewer's counterexamples)

Dated = tuple[str, str, dict[str, str]]  # turn, object, dates


def say_dated(mem: Memory, relation: str, said: list[Dated]) -> None:
    """Each statement in a session of its own, ``s-turn-{turn}``, with one turn, ``turn-{turn}``."""
    for i, (name, obj, dates) in enumerate(said):
        turn, t = f"turn-{name}", T0 + timedelta(days=i)
        mem.store.ensure_session(U, f"s-{turn}", started_at=t)
        mem.store.add_messages(U, [Message(id=turn, user_id=U, session_id=f"s-{turn}", speaker="Maya",
                                           text=f"{obj} {dates}", timestamp=t, recorded_at=t, seq=i)])
        mem.add_facts([{"subject": "Maya", "relation": relation, "object": obj, "source_ids": [turn],
                        "session_id": f"s-{turn}", **dates}], user_id=U)


def same_as_never_said(relation: str, said: list[Dated], forgotten: str) -> list[tuple[str, ...]]:
    at = probes_for([(obj, "start", when) for _, obj, dates in said for when in dates.values()])
    with Memory(":memory:", llm=False, embedder=False) as mem:
        say_dated(mem, relation, said)
        mem.forget(user_id=U, session_id=f"s-turn-{forgotten}")
        got = answers(mem, relation, at)
        assert f"turn-{forgotten}" not in repr(mem.store.dump_user(U))
    with Memory(":memory:", llm=False, embedder=False) as mem:
        say_dated(mem, relation, [s for s in said if s[0] != forgotten])
        assert got == answers(mem, relation, at), (said, forgotten)
    return got


def test_a_start_said_again_with_an_end_stays_when_the_first_saying_is_forgotten() -> None:
    """"Porto from 2016" (a), "Porto from 2016 to 2019" (b): b gave the start too, not only the end."""
    for forgotten in ("a", "b"):
        same_as_never_said("lives_in", [("a", "Porto", {"valid_from": "2016-09-26"}),
                                        ("b", "Porto", {"valid_from": "2016-09-26", "valid_to": "2019-08-12"})],
                           forgotten)
    same_as_never_said("lives_in", [("a", "Porto", {"valid_from": "2010-01-01"}),  # a later start with the end
                                    ("b", "Porto", {"valid_from": "2014-01-01", "valid_to": "2019-01-01"})], "a")
    same_as_never_said("lives_in", [("a", "Porto", {"valid_to": "2014-10-07"}),  # rule 1b: the start with the end
                                    ("b", "Porto", {"valid_from": "2013-01-01", "valid_to": "2014-10-07"})], "a")



def test_an_end_only_the_forgotten_statement_gave_goes_when_a_repetition_said_the_start_alone() -> None:
    """"Porto from 2014 to 2018" (a), then "Porto from 2014" (b): forgetting a leaves Porto from 2014, open (it
    stayed ended in 2018: what b said could not be told); said twice with the end, the end stays."""
    for forgotten in ("a", "b"):
        same_as_never_said("lives_in", [("a", "Porto", {"valid_from": "2014-01-01", "valid_to": "2018-01-01"}),
                                        ("b", "Porto", {"valid_from": "2014-01-01"})], forgotten)
        same_as_never_said("lives_in", [("a", "Porto", {"valid_from": "2014-01-01", "valid_to": "2018-01-01"}),
                                        ("b", "Porto", {"valid_from": "2014-01-01", "valid_to": "2018-01-01"})],
                           forgotten)
    for forgotten in ("a", "b"):  # the other order: the start alone first
        same_as_never_said("lives_in", [("a", "Porto", {"valid_from": "2014-01-01"}),
                                        ("b", "Porto", {"valid_from": "2014-01-01", "valid_to": "2018-01-01"})],
                           forgotten)

def test_an_ending_cut_short_by_a_forgotten_stint_reaches_its_end_again() -> None:
    """"Porto from October 2016", then "I left Lisbon in 2021" (cut where Porto began, with nothing closing it):
    forgetting Porto leaves no trace of its date in Lisbon."""
    got = same_as_never_said("lives_in", [("a", "Porto", {"valid_from": "2016-10-26"}),
                                          ("b", "Lisbon", {"valid_to": "2021-10-30"})], "a")
    assert ("Lisbon",) in got


def test_forgetting_a_repetition_leaves_the_version_a_correction_replaced_replaced() -> None:
    with Memory(":memory:", llm=False, embedder=False) as mem:
        say_dated(mem, "lives_in", [("a", "Porto", {"valid_from": "2010-01-01"}),
                                    ("b", "Porto", {"valid_from": "2010-01-01"})])
        [porto] = mem.history(user_id=U)
        mem.correct(porto.id, user_id=U, valid_from="2011-01-01")
        mem.forget(user_id=U, session_id="s-turn-a")
        assert [f.object for f in mem.facts(user_id=U, as_of="2012-01-01")] == ["Porto"]
        assert mem.facts(user_id=U, as_of="2010-06-01") == []


def test_a_start_learned_after_a_later_start_was_kept_leaves_no_later_start_at_or_before_it() -> None:
    """"The cat died in 2018", "the cat 2016 to 2017" (kept as a later start of the cat, whose start was unknown),
    "the cat from 2016" (its start, rule 1b): no later start equal to the start is left, and a backup of it
    imports again (it was refused: "later_starts must lie after valid_from")."""
    with Memory(":memory:", llm=False, embedder=False) as mem:
        say_dated(mem, "has_pet", [("a", "cat", {"valid_to": "2018-02-18"}),
                                   ("b", "cat", {"valid_from": "2016-01-30", "valid_to": "2017-05-01"}),
                                   ("c", "cat", {"valid_from": "2016-01-30"})])
        assert all(f.valid_from is None or all(d.at > f.valid_from for d in f.later_starts)
                   for f in mem.history(user_id=U))
        mem.import_(mem.export(user_id=U), user_id="u-copy")
        assert len(mem.history(user_id="u-copy")) == len(mem.history(user_id=U))
