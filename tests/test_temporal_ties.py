"""The tie rule: two values of a single-valued relation with the same ``valid_from``.

The later-recorded statement wins; the earlier one is superseded (kept in history, valid at no
instant) and never closed at its own start, so no stored interval is empty — the demo used to
show "works_at Globex 2023-06-20 → 2023-06-20", an interval add_facts itself refuses.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from chronomem import Memory
from chronomem.cli.render import interval
from schema_downgrade import downgrade

U = "u1"


def works(mem: Memory, org: str, start: str = "2023-06-20", **kw: object):
    return mem.add_facts([{"subject": "Maya", "relation": "works_at", "object": org, "valid_from": start, **kw}],
                         user_id=U)


def no_empty_intervals(mem: Memory) -> None:
    for f in mem.history(user_id=U):
        assert f.valid_from is None or f.valid_to is None or f.valid_from < f.valid_to, f


@pytest.mark.parametrize("one_batch", [False, True])
def test_equal_starts_later_statement_wins_and_no_interval_is_empty(mem: Memory, one_batch: bool) -> None:
    if one_batch:
        rep = mem.add_facts([{"subject": "Maya", "relation": "works_at", "object": o, "valid_from": "2023-06-20"}
                             for o in ("Acme", "Globex")], user_id=U)
    else:
        works(mem, "Acme")
        rep = works(mem, "Globex")
    no_empty_intervals(mem)
    assert [f.object for f in mem.facts(user_id=U, subject="Maya")] == ["Globex"]
    assert [f.object for f in mem.facts(user_id=U, subject="Maya", as_of="2023-06-20")] == ["Globex"]
    acme = next(f for f in mem.history(user_id=U) if f.object == "Acme")
    globex = next(f for f in mem.history(user_id=U) if f.object == "Globex")
    assert acme.superseded and acme.closed_by == globex.id and not acme.is_valid_at(acme.valid_from)
    assert not globex.superseded and globex.valid_to is None
    assert "→" not in interval(acme) and "superseded" in interval(acme)
    assert {f.object for f in rep.closed} == ({"Acme"} if not one_batch else set())


def test_a_tie_inside_a_closed_stint_keeps_the_later_closure(mem: Memory) -> None:
    works(mem, "Acme", "2020-01-01")
    works(mem, "Initech", "2022-01-01")
    works(mem, "Globex", "2020-01-01")  # correction of what began in 2020
    no_empty_intervals(mem)
    got = {f.object: (f.valid_from.year, f.valid_to and f.valid_to.year, f.superseded)
           for f in mem.history(user_id=U)}  # type: ignore[union-attr]
    assert got == {"Acme": (2020, None, True), "Globex": (2020, 2022, False), "Initech": (2022, None, False)}
    assert [f.object for f in mem.facts(user_id=U, as_of="2021-01-01")] == ["Globex"]


def test_forgetting_the_winner_reinstates_the_superseded_fact(mem: Memory) -> None:
    works(mem, "Acme")
    winner = works(mem, "Globex").added[0]
    mem.forget(user_id=U, fact_id=winner.id)
    no_empty_intervals(mem)
    assert [(f.object, f.valid_to, f.superseded) for f in mem.history(user_id=U)] == [("Acme", None, False)]
    assert [f.object for f in mem.facts(user_id=U)] == ["Acme"]


def test_saying_the_superseded_value_again_wins_the_tie_back(mem: Memory) -> None:
    works(mem, "Acme")
    works(mem, "Globex")
    rep = works(mem, "Acme")
    assert len(rep.added) == 1 and not rep.reinforced  # recorded anew, not a silent reinforcement
    no_empty_intervals(mem)
    assert [f.object for f in mem.facts(user_id=U)] == ["Acme"]


def test_an_ending_does_not_reopen_or_end_a_superseded_fact(mem: Memory) -> None:
    works(mem, "Acme")
    works(mem, "Globex")
    mem.add_facts([{"subject": "Maya", "relation": "works_at", "object": "Acme", "valid_to": "2024-01-01"}],
                  user_id=U)
    no_empty_intervals(mem)
    assert [f.object for f in mem.facts(user_id=U)] == ["Globex"]


def test_a_tie_exports_and_imports_unchanged(tmp_path: Path) -> None:
    with Memory(tmp_path / "a.db") as a:
        works(a, "Acme")
        works(a, "Globex")
        data = a.export(user_id=U)
    with Memory(tmp_path / "b.db") as b:
        b.import_(data)
        assert b.export(user_id=U)["tables"] == data["tables"]
        assert [f.object for f in b.facts(user_id=U)] == ["Globex"]


def test_a_database_with_empty_intervals_is_migrated_to_superseded(tmp_path: Path) -> None:
    with Memory(tmp_path / "m.db") as mem:
        works(mem, "Acme")
        works(mem, "Globex")
        db = mem.store._db  # type: ignore[attr-defined]
        acme_id = next(f.id for f in mem.history(user_id=U) if f.object == "Acme")
        db.execute("UPDATE facts SET valid_to = valid_from WHERE id = ?", (acme_id,))  # what older versions wrote
        downgrade(db, 4)  # opening the file runs 0005 (and the later ones) again
    with Memory(tmp_path / "m.db") as mem:
        no_empty_intervals(mem)
        assert next(f for f in mem.history(user_id=U) if f.object == "Acme").superseded


def test_two_endings_with_unknown_starts_and_the_same_end_tie_too(mem: Memory) -> None:
    """Found by the fuzz test: the second ending used to get valid_from == valid_to."""
    mem.add_facts([{"subject": "Maya", "relation": "works_at", "object": "Acme", "valid_to": "2015-09-28"}],
                  user_id=U)
    mem.add_facts([{"subject": "Maya", "relation": "works_at", "object": "Globex", "valid_to": "2015-09-28"}],
                  user_id=U)
    works(mem, "Initech", "2015-09-28")
    no_empty_intervals(mem)
    assert [f.object for f in mem.facts(user_id=U, as_of="2015-01-01")] == ["Globex"]
    assert [f.object for f in mem.facts(user_id=U, as_of="2015-09-28")] == ["Initech"]
