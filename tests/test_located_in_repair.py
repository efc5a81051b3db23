"""Migration SQLite 0010 / PostgreSQL 0007: ``located_in`` closures written while it was single-valued
are undone when an older memory is opened (a place is in Germany and in Europe at once)."""

from __future__ import annotations

from collections.abc import Callable

import psycopg
import pytest
from schema_downgrade import downgrade

from chronomem import Memory
from chronomem.store.postgres import split_url
from chronomem.timeutil import to_micros

U = "u"


def _raw(url: str, sql: str, params: tuple[object, ...] = ()) -> None:
    """Run ``sql`` on the store behind ``url`` outside chronomem (what an older version wrote)."""
    if url.startswith("postgresql"):
        conninfo, schema = split_url(url)
        with psycopg.connect(conninfo, autocommit=True) as conn:
            conn.execute(f'SET search_path TO "{schema}"')
            conn.execute(sql.replace("?", "%s"), params)
    else:
        with Memory(url) as mem:
            mem.store._db.execute(sql, params)  # type: ignore[attr-defined]


def _reopen_as_older(url: str) -> None:
    """Mark the store as written before the migration, so that opening it runs the migration again."""
    if url.startswith("postgresql"):
        _raw(url, "ALTER TABLE facts DROP COLUMN start_guessed")  # 0008 adds it again
        _raw(url, "ALTER TABLE facts DROP COLUMN other_words")  # and 0009 this one
        _raw(url, "UPDATE chronomem_meta SET value = '6' WHERE key = 'schema_version'")
    else:
        with Memory(url) as mem:
            downgrade(mem.store._db, 9)  # type: ignore[attr-defined]


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_containers_closed_by_another_container_reopen(kind: str, url_factory: Callable[[str], str]) -> None:
    url = url_factory(kind)
    with Memory(url) as mem:
        mem.add_facts([
            {"subject": "Berlin", "relation": "located_in", "object": "Germany", "valid_from": "1990-10-03"},
            {"subject": "Berlin", "relation": "located_in", "object": "Europe", "valid_from": "2000-01-01"},
            {"subject": "Bonn", "relation": "located_in", "object": "West Germany", "valid_from": "1949-05-23",
             "valid_to": "1990-10-03"},  # an ending that was said stays
            {"subject": "Bonn", "relation": "located_in", "object": "Germany", "valid_from": "1990-10-03"},
            {"subject": "Kyoto", "relation": "located_in", "object": "Japan", "valid_from": "2001-01-01"},
            {"subject": "Kyoto", "relation": "located_in", "object": "Asia", "valid_from": "2001-01-01"},
            {"subject": "Maya", "relation": "lives_in", "object": "Porto", "valid_from": "2010-01-01"},
            {"subject": "Maya", "relation": "lives_in", "object": "Berlin", "valid_from": "2016-01-01"},
        ], user_id=U)
        by = {(f.subject, f.object): f for f in mem.history(user_id=U)}
        before = {k: (f.valid_to, f.closed_by) for k, f in by.items()}
    germany, europe = by[("Berlin", "Germany")], by[("Berlin", "Europe")]
    japan, asia = by[("Kyoto", "Japan")], by[("Kyoto", "Asia")]
    # what the single-valued rule wrote: closed at the next container's start, or superseded on a tie
    assert europe.valid_from is not None
    _raw(url, "UPDATE facts SET valid_to = ?, closed_by = ? WHERE id = ?",
         (to_micros(europe.valid_from), europe.id, germany.id))
    _raw(url, "UPDATE facts SET valid_to = NULL, closed_by = ? WHERE id = ?", (asia.id, japan.id))
    _reopen_as_older(url)
    with Memory(url) as mem:
        after = {(f.subject, f.object): (f.valid_to, f.closed_by) for f in mem.history(user_id=U)}
        assert after == before  # both containers open again; the said ending and lives_in untouched
        assert after[("Maya", "Porto")][1] == by[("Maya", "Berlin")].id
        assert after[("Bonn", "West Germany")][0] is not None
        assert {f.object for f in mem.facts(user_id=U, subject="Berlin", relation="located_in")} == {"Germany", "Europe"}
        assert {f.object for f in mem.facts(user_id=U, subject="Kyoto", relation="located_in")} == {"Japan", "Asia"}
