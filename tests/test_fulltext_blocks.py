"""A full-text search reads only its user's part of the index (migration 0014 of the SQLite store).

Each user's facts and turns take rowids in a block of their own (``user_blocks.block * 2**32`` on), and
a search asks FTS5 for that rowid range.  What must hold whatever the order of writes: every row sits in
its user's block, the index finds every stored row by its words and nothing forgotten, a file written
before the blocks reads the same after its migration, and a user's block goes with the user.  On
PostgreSQL a user's search reads the user's own rows or is planned for the user, never a plan made for
no user in particular.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
import sqlean
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chronomem import Memory
from chronomem.errors import StoreError
from chronomem.model import Message
from chronomem.store.sqlite import BLOCK_ROWS, SQLiteStore
from schema_downgrade import downgrade
from test_fulltext_ranking import kept, recount

T = datetime(2024, 5, 1, tzinfo=timezone.utc)
EXAMPLES = 1000 if os.environ.get("HYPOTHESIS_PROFILE") == "thorough" else 25


def fact(subject: str, obj: str, word: str) -> dict[str, str]:
    return {"subject": subject, "relation": "likes", "object": obj, "text": f"{subject} likes {obj} {word}"}


def turn(user: str, session: str, seq: int, text: str) -> Message:
    return Message(f"{session}-{seq}", user, session, "Ana", text, T, T, seq=seq)


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[Memory]:
    with Memory(str(tmp_path / "m.db"), llm=False, embedder=False) as m:
        yield m


def blocks(db: sqlean.Connection) -> dict[str, int]:
    return dict(db.execute("SELECT user_id, block FROM user_blocks").fetchall())


def rows_outside_their_block(db: sqlean.Connection) -> list[tuple[str, str, int]]:
    return [(table, user, rowid) for table in ("facts", "messages")
            for rowid, user in db.execute(f"SELECT rowid, user_id FROM {table}")
            if rowid // BLOCK_ROWS != blocks(db).get(user)]


def found(mem: Memory, user: str, word: str) -> tuple[set[str], set[str]]:
    """Objects of the facts and ids of the turns the user's full-text search finds for ``word``."""
    fact_ids = [i for i, _ in mem.store.search_facts_text(user, word, 50)]
    turn_ids = {i for i, _ in mem.store.search_messages_text(user, word, 50)}
    return {f.object for f in mem.store.facts(user, ids=fact_ids)}, turn_ids


def test_writes_of_two_users_in_turn_land_in_each_ones_block_and_are_found_by_their_words(mem: Memory) -> None:
    for i in range(3):  # interleaved: a rowid picked by the table's maximum would fall in the other's block
        for user in ("a", "b"):
            mem.add_facts([fact("Ana", f"{user}thing{i}", f"{user}word{i}")], user_id=user)
            mem.store.add_messages(user, [turn(user, f"{user}s{i}", 0, f"{user} said {user}talk{i}")])
    db = mem.store._db  # type: ignore[attr-defined]
    assert len(set(blocks(db).values())) == 2
    assert rows_outside_their_block(db) == []
    for user, other in (("a", "b"), ("b", "a")):
        for i in range(3):
            assert found(mem, user, f"{user}word{i}")[0] == {f"{user}thing{i}"}
            assert found(mem, user, f"{user}talk{i}")[1] == {f"{user}s{i}-0"}
            assert found(mem, user, f"{other}word{i} {other}talk{i}") == (set(), set())


def test_the_index_follows_renames_forgets_and_imports_inside_the_blocks(mem: Memory) -> None:
    mem.add_facts([fact("Ana", "tea", "zebra"), fact("Ana", "jazz", "opera")], user_id="a")
    mem.add_facts([fact("Bo", "tea", "zebra")], user_id="b")
    tea = next(f for f in mem.store.facts("a") if f.object == "tea")
    mem.forget(user_id="a", fact_id=tea.id)
    assert found(mem, "a", "zebra") == (set(), set()) and found(mem, "b", "zebra")[0] == {"tea"}
    mem.import_(mem.export(user_id="a"), user_id="c")  # through load_user
    assert found(mem, "c", "opera")[0] == {"jazz"}
    mem.add_facts([fact("Annie", "chess", "quokka")], user_id="c")
    assert found(mem, "c", "ana")[0] == {"jazz"}
    mem.merge_entities("Annie", into="Ana", user_id="c")  # renames the fact's subject: its index row too
    assert found(mem, "c", "ana")[0] == {"jazz", "chess"}
    db = mem.store._db  # type: ignore[attr-defined]
    assert rows_outside_their_block(db) == []
    db.execute("INSERT INTO facts_fts (facts_fts) VALUES ('integrity-check')")
    db.execute("INSERT INTO messages_fts (messages_fts, rank) VALUES ('integrity-check', 1)")


def test_forgetting_a_user_takes_the_users_block_and_a_new_start_gets_a_new_one(mem: Memory) -> None:
    mem.add_facts([fact("Ana", "tea", "zebra")], user_id="a")
    mem.add_facts([fact("Bo", "tea", "zebra")], user_id="b")
    db = mem.store._db  # type: ignore[attr-defined]
    before = blocks(db)
    mem.forget(user_id="a", everything=True)
    assert "a" not in blocks(db)  # no trace of the user's name left in the table
    mem.add_facts([fact("Ana", "jazz", "opera")], user_id="a")
    assert blocks(db)["a"] != before["b"]
    assert rows_outside_their_block(db) == [] and found(mem, "a", "opera")[0] == {"jazz"}
    assert found(mem, "a", "zebra") == (set(), set())


def test_a_full_block_is_refused_by_name_with_nothing_written(mem: Memory) -> None:
    mem.add_facts([fact("Ana", "tea", "zebra")], user_id="a")
    db = mem.store._db  # type: ignore[attr-defined]
    last = (blocks(db)["a"] + 1) * BLOCK_ROWS - 1
    db.execute("UPDATE facts SET rowid = ? WHERE user_id = 'a'", (last,))  # the block's last rowid taken
    db.execute("INSERT INTO facts_fts (facts_fts) VALUES ('rebuild')")
    with pytest.raises(StoreError, match=r"user 'a' has no rowids left for 1 more facts rows"):
        mem.add_facts([fact("Ana", "jazz", "opera")], user_id="a")
    assert [f.object for f in mem.store.facts("a")] == ["tea"] and found(mem, "a", "opera") == (set(), set())
    assert "jazz" not in {e.name for e in mem.store.entities("a")}


def renumber_as_before_blocks(db: sqlean.Connection) -> None:
    """Number the rows as one table-wide counter did before the blocks (each user's rows in their order)."""
    downgrade(db, 13)
    for table in ("facts", "messages"):
        for n, (rowid,) in enumerate(db.execute(f"SELECT rowid FROM {table} ORDER BY rowid % {BLOCK_ROWS}, "
                                                "rowid").fetchall(), start=1):
            db.execute(f"UPDATE {table} SET rowid = ? WHERE rowid = ?", (n, rowid))
    db.execute("DROP TABLE user_blocks")
    db.execute("INSERT INTO facts_fts (facts_fts) VALUES ('delete-all')")
    db.execute("INSERT INTO facts_fts (rowid, text) SELECT rowid, subject || ' ' || replace(relation, '_', ' ') "
               "|| ' ' || object || ' ' || text FROM facts")
    db.execute("INSERT INTO messages_fts (messages_fts) VALUES ('rebuild')")


def test_a_file_written_before_the_blocks_searches_the_same_after_its_migration(tmp_path: Path) -> None:
    path = str(tmp_path / "old.db")
    words = "zebra opera tea jazz"
    with Memory(path, llm=False, embedder=False) as mem:
        for i, user in enumerate(("a", "b", "a", "c", "b")):
            mem.add_facts([fact("Ana", f"thing{i}", words.split()[i % 4]), fact("Bo", "x", words)], user_id=user)
            mem.store.add_messages(user, [turn(user, f"s{i}", 0, f"said {words.split()[i % 4]} twice {i}")])
        answers = {u: (mem.store.search_facts_text(u, words, 20), mem.store.search_messages_text(u, words, 20))
                   for u in "abc"}
        renumber_as_before_blocks(mem.store._db)  # type: ignore[attr-defined]
        db = mem.store._db  # type: ignore[attr-defined]
        assert db.execute("SELECT MAX(rowid), COUNT(*) FROM facts").fetchone() == (8, 8)  # "Bo likes x" once a user
    with Memory(path, llm=False, embedder=False) as mem:  # opening runs 0014 and 0015
        db = mem.store._db  # type: ignore[attr-defined]
        assert sorted(blocks(db)) == ["a", "b", "c"] and rows_outside_their_block(db) == []
        assert kept(db) == recount(db) and len(kept(db)) == 3
        for u in "abc":
            assert (mem.store.search_facts_text(u, words, 20), mem.store.search_messages_text(u, words, 20)) \
                == answers[u]
        db.execute("INSERT INTO facts_fts (facts_fts) VALUES ('integrity-check')")
        db.execute("INSERT INTO messages_fts (messages_fts, rank) VALUES ('integrity-check', 1)")


def test_postgres_searches_a_small_users_own_rows_and_plans_a_large_users_search_for_it(
        url_factory: Callable[[str], str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Two ways to one answer.  A user of few rows is matched row by row through the function behind
    ``@@`` (no index serves it, so the planner cannot read every user's GIN entries instead); a larger user
    keeps the operator, and its statement is never prepared: a prepared statement's generic plan, made
    for no user in particular, reads the GIN index for everyone (``own_plan``)."""
    import psycopg

    from chronomem.store import postgres

    asked: list[tuple[str, bool | None]] = []
    execute = psycopg.Connection.execute

    def spy(self: Any, query: Any, params: Any = None, *, prepare: bool | None = None, binary: bool = False) -> Any:
        asked.append((str(query), prepare))
        return execute(self, query, params, prepare=prepare, binary=binary)

    def searches(mem: Memory) -> list[Any]:
        return [(mem.store.search_facts_text("a", q, 5), mem.store.search_messages_text("a", q, 5))
                for q in ("zebra", "opera tea", "jazz zebra said", "nothing")]

    with Memory(url_factory("postgres"), llm=False, embedder=False) as mem:
        mem.add_facts([fact("Ana", "tea", "zebra"), fact("Ana", "jazz", "opera zebra")], user_id="a")
        mem.store.add_messages("a", [turn("a", "s", i, f"said zebra {w}") for i, w in enumerate(["opera", "tea"])])
        mem.add_facts([fact("Bo", "tea", "zebra opera")], user_id="b")
        monkeypatch.setattr(psycopg.Connection, "execute", spy)
        few = [searches(mem) for _ in range(3)]  # psycopg would prepare a statement on its fifth run
        own_rows = [(query, prepare) for query, prepare in asked if "ts_rank" in query]
        monkeypatch.setattr(postgres, "FTS_OWN_ROWS", 2)  # user a now counts as large
        asked.clear()
        many = [searches(mem) for _ in range(3)]
        planned = [(query, prepare) for query, prepare in asked if "ts_rank" in query]
    assert few == many and few[0][0][0] and few[0][0][1]  # the same hits, found both ways
    assert len(own_rows) == 24 and all("ts_match_vq(tsv, q)" in query for query, _ in own_rows)
    assert len(planned) == 24 and all("tsv @@ q" in query and prepare is False for query, prepare in planned)


step = st.one_of(
    st.tuples(st.just("facts"), st.sampled_from("abc"), st.integers(1, 3)),
    st.tuples(st.just("turns"), st.sampled_from("abc"), st.integers(1, 3)),
    st.tuples(st.just("forget_fact"), st.sampled_from("abc"), st.integers(0, 20)),
    st.tuples(st.just("forget_session"), st.sampled_from("abc"), st.integers(0, 20)),
    st.tuples(st.just("forget_user"), st.sampled_from("abc"), st.just(0)),
    st.tuples(st.just("import"), st.sampled_from("abc"), st.sampled_from("abc")),
)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(step, min_size=1, max_size=12))
def test_any_order_of_users_writes_keeps_each_row_in_its_block_and_found(tmp_path_factory: pytest.TempPathFactory,
                                                                         steps: list[tuple[str, str, Any]]) -> None:
    """Whatever three users write, forget and import in whatever order, every row sits in its user's block,
    each user's search finds each of its facts and turns by its own word and nothing of the others'."""
    words = iter(f"w{n:04d}x" for n in range(10_000))
    with Memory(str(tmp_path_factory.mktemp("blocks") / "m.db"), llm=False, embedder=False) as mem:
        for name, user, arg in steps:
            if name == "facts":
                mem.add_facts([fact("Ana", next(words), next(words)) for _ in range(arg)], user_id=user)
            elif name == "turns":
                session = next(words)
                mem.store.add_messages(user, [turn(user, session, i, f"said {next(words)}") for i in range(arg)])
            elif name == "forget_fact" and (held := mem.history(user_id=user)):
                mem.forget(user_id=user, fact_id=held[arg % len(held)].id)
            elif name == "forget_session" and (sessions := sorted({m.session_id for m in mem.store.messages(user)})):
                mem.forget(user_id=user, session_id=sessions[arg % len(sessions)])
            elif name == "forget_user":
                mem.forget(user_id=user, everything=True)
            elif name == "import" and arg != user:
                mem.import_(mem.export(user_id=arg), user_id=user)
        db = mem.store._db  # type: ignore[attr-defined]
        assert rows_outside_their_block(db) == []
        assert len(set(blocks(db).values())) == len(blocks(db))
        assert kept(db) == recount(db)  # the ranking's counts (migration 0015)
        for user in "abc":
            for f in mem.store.facts(user):
                hits = [i for i, _ in mem.store.search_facts_text(user, f.text.split()[-1], 50)]
                assert f.id in hits and len(mem.store.facts(user, ids=hits)) == len(hits)  # all the user's
            for m in mem.store.messages(user):
                hits = [i for i, _ in mem.store.search_messages_text(user, m.text.split()[-1], 50)]
                assert m.id in hits and len(mem.store.messages(user, ids=hits)) == len(hits)
        db.execute("INSERT INTO facts_fts (facts_fts) VALUES ('integrity-check')")
        db.execute("INSERT INTO messages_fts (messages_fts, rank) VALUES ('integrity-check', 1)")


def test_the_same_user_id_in_two_tenants_of_one_file_has_two_blocks(tmp_path: Path) -> None:
    path = str(tmp_path / "m.db")
    with Memory(path, tenant="acme", llm=False, embedder=False) as acme, \
            Memory(path, tenant="globex", llm=False, embedder=False) as globex:
        for i in range(2):  # interleaved writes of "u1" in both tenants
            acme.add_facts([fact("Ana", f"acme{i}", "zebra")], user_id="u1")
            globex.add_facts([fact("Ana", f"globex{i}", "zebra")], user_id="u1")
        assert found(acme, "u1", "zebra")[0] == {"acme0", "acme1"}
        assert found(globex, "u1", "zebra")[0] == {"globex0", "globex1"}
        acme.forget(user_id="u1", everything=True)
        assert found(acme, "u1", "zebra") == (set(), set())
        assert found(globex, "u1", "zebra")[0] == {"globex0", "globex1"}
    with Memory(path, llm=False, embedder=False) as mem:
        db = mem.store._db  # type: ignore[attr-defined]
        assert len(blocks(db)) == 1 and rows_outside_their_block(db) == []  # globex's u1 only
