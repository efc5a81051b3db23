"""A user's full-text ranking is FTS5's bm25 computed over that user's rows alone (migration 0015).

What must hold: a user alone in a file gets FTS5's own scores, bit for bit, in FTS5's order; a user's
hits and scores are the same whatever other users of the file wrote before, between or after; the
counts each block keeps (rows and tokens of facts and turns) are what a recount of the index finds,
after any writes, renames and forgets; the SQL view and the Python decoder read FTS5's sizes alike.
"""

from __future__ import annotations

import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
import sqlean
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chronomem import Memory
from chronomem.model import Message
from chronomem.store.fulltext import bm25_ranking, varint_sum
from chronomem.store import sqlite as sqlite_store
from chronomem.store.sqlite import BLOCK_ROWS, _fts_query

T = datetime(2024, 5, 1, tzinfo=timezone.utc)
EXAMPLES = 1000 if os.environ.get("HYPOTHESIS_PROFILE") == "thorough" else 25
# words that stem alike, a stopword, a name, a word of two tokens, one of none, one with a diacritic
VOCAB = ["zebra", "zebras", "opera", "tea", "jazz", "dance", "dancing", "friend", "Paris", "the", "a", "Ana", "e_mail",
         "__", "Zoë"]
SEARCHES = (("facts", "search_facts_text"), ("messages", "search_messages_text"))

words = st.lists(st.sampled_from(VOCAB), min_size=0, max_size=8).map(" ".join)
a_fact = st.tuples(st.sampled_from(VOCAB), st.sampled_from(VOCAB), words)
a_turn = st.tuples(st.sampled_from(["Ana", "Bo"]), words)
a_query = st.lists(st.sampled_from(VOCAB + ["absent", "of"]), min_size=1, max_size=4).map(" ".join)
settings_ = settings(max_examples=EXAMPLES, deadline=None,
                     suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def write(mem: Memory, user: str, facts: list[tuple[str, str, str]], turns: list[tuple[str, str]],
          session: str) -> None:
    if facts:
        mem.add_facts([{"subject": s, "relation": "likes", "object": o, "text": t} for s, o, t in facts],
                      user_id=user)
    if turns:
        mem.store.add_messages(user, [Message(f"{session}-{i}", user, session, speaker, text or "hm", T, T, seq=i)
                                      for i, (speaker, text) in enumerate(turns)])


def native(db: sqlean.Connection, table: str, user: str, query: str, limit: int) -> list[tuple[str, float]]:
    """FTS5's own ranking of the user's rows: bm25() over the whole table, as the store searched before."""
    q = _fts_query(query)
    rows = db.execute(f"SELECT t.id, bm25({table}_fts) AS score FROM {table}_fts JOIN {table} t "
                      f"ON t.rowid = {table}_fts.rowid WHERE {table}_fts MATCH ? AND t.user_id = ? "
                      "ORDER BY score LIMIT ?", (q, user, limit)).fetchall() if q else []
    return [(i, -s) for i, s in rows]


def recount(db: sqlean.Connection) -> dict[int, tuple[int, int, int, int]]:
    """Each block's rows and tokens of facts and turns, counted from FTS5's sizes in Python."""
    out: dict[int, list[int]] = {}
    for n, table in enumerate(("facts", "messages")):
        for rowid, size in db.execute(f"SELECT id, sz FROM {table}_fts_docsize"):
            counts = out.setdefault(rowid // BLOCK_ROWS, [0, 0, 0, 0])
            counts[2 * n] += 1
            counts[2 * n + 1] += varint_sum(size)
    return {block: (c[0], c[1], c[2], c[3]) for block, c in out.items()}


def kept(db: sqlean.Connection) -> dict[int, tuple[int, int, int, int]]:
    """The counts the blocks keep, blocks with no rows left out."""
    return {r[0]: tuple(r[1:]) for r in db.execute(  # type: ignore[misc]
        "SELECT block, facts_rows, facts_tokens, messages_rows, messages_tokens FROM user_blocks") if any(r[1:])}


@pytest.fixture(params=["from the index", "from the rows", "by FTS5 for a lone user"])
def counting(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every way a search ranks: counting a word's instances in the index's fts5vocab or in the rows read
    again, and FTS5's own bm25 where the user's rows are all the table holds."""
    monkeypatch.setattr(sqlite_store, "FTS5_RANKS_A_LONE_USER", request.param == "by FTS5 for a lone user")
    monkeypatch.setattr(sqlite_store, "INSTANCES_PER_HIT", 10**9 if request.param == "from the index" else -1)
    return str(request.param)


@settings_
@given(facts=st.lists(a_fact, max_size=25), turns=st.lists(a_turn, max_size=25), queries=st.lists(a_query, min_size=1,
       max_size=4), limit=st.integers(1, 30))
def test_a_user_alone_gets_fts5s_own_scores_and_order(tmp_path_factory: pytest.TempPathFactory, counting: str,
                                                      facts: Any, turns: Any, queries: list[str], limit: int) -> None:
    with Memory(str(tmp_path_factory.mktemp("alone") / "m.db"), llm=False, embedder=False) as mem:
        write(mem, "a", facts, turns, "s")
        db = mem.store._db  # type: ignore[attr-defined]
        for query in queries:
            for table, search in SEARCHES:
                assert getattr(mem.store, search)("a", query, limit) == native(db, table, "a", query, limit), query


def found_facts(mem: Memory, query: str) -> list[tuple[tuple[str, str, str], float]]:
    """User a's fact hits by content (fact ids are drawn at random, different in each file) and score."""
    hits = mem.store.search_facts_text("a", query, 20)
    facts = {f.id: (f.subject, f.object, f.text) for f in mem.store.facts("a", ids=[i for i, _ in hits])}
    return [(facts[i], score) for i, score in hits]


@settings_
@given(mine=st.lists(a_fact, min_size=1, max_size=15), my_turns=st.lists(a_turn, min_size=1, max_size=15),
       others=st.lists(st.tuples(st.sampled_from("bc"), st.lists(a_fact, max_size=30), st.lists(a_turn, max_size=30)),
                       max_size=4),
       split=st.integers(0, 4), queries=st.lists(a_query, min_size=1, max_size=4))
def test_a_users_hits_and_scores_do_not_move_with_what_others_wrote(
        tmp_path_factory: pytest.TempPathFactory, counting: str, mine: Any, my_turns: Any, others: Any, split: int,
        queries: list[str]) -> None:
    folder = tmp_path_factory.mktemp("shared")
    with Memory(str(folder / "alone.db"), llm=False, embedder=False) as alone, \
            Memory(str(folder / "shared.db"), llm=False, embedder=False) as shared:
        write(alone, "a", mine, my_turns, "s")
        for n, (user, facts, turns) in enumerate(others):
            if n == split:
                write(shared, "a", mine, my_turns, "s")
            write(shared, user, facts, turns, f"s{n}")
        if split >= len(others):
            write(shared, "a", mine, my_turns, "s")
        for query in queries:
            assert found_facts(shared, query) == found_facts(alone, query)
            assert shared.store.search_messages_text("a", query, 20) == alone.store.search_messages_text("a", query, 20)


def test_forgetting_another_users_rows_leaves_a_users_scores_as_they_were(tmp_path: Path) -> None:
    with Memory(str(tmp_path / "m.db"), llm=False, embedder=False) as mem:
        write(mem, "a", [("Ana", "zebra", "Ana saw a zebra at the opera")], [("Ana", "zebra and opera")], "s")
        before = mem.store.search_facts_text("a", "zebra opera", 5), mem.store.search_messages_text("a", "zebra", 5)
        for i in range(3):
            write(mem, "b", [("Bo", "zebra", "zebra " * i)] * 40, [("Bo", "opera zebra")] * 40, f"s{i}")
            mem.forget(user_id="b", session_id=f"s{i}")
        mem.forget(user_id="b", everything=True)
        assert (mem.store.search_facts_text("a", "zebra opera", 5), mem.store.search_messages_text("a", "zebra", 5)) \
            == before


def test_the_blocks_counts_follow_writes_renames_and_forgets(tmp_path: Path) -> None:
    with Memory(str(tmp_path / "m.db"), llm=False, embedder=False) as mem:
        db = mem.store._db  # type: ignore[attr-defined]
        write(mem, "a", [("Ana", "zebra", "Ana saw a zebra"), ("Ana Lopez", "tea", "tea time")],
              [("Ana", "hello there"), ("Bo", "the zebra")], "s1")
        write(mem, "b", [("Bo", "opera", "")], [("Bo", "opera tonight with friends")], "s1")
        assert kept(db) == recount(db) and len(kept(db)) == 2
        names = {e.name: e.id for e in mem.store.entities("a")}
        mem.store.merge_entities("a", names["Ana Lopez"], names["Ana"])  # renames a fact's subject
        assert kept(db) == recount(db)
        db.execute("UPDATE messages SET text = 'a much longer turn than before it was' WHERE user_id = 'b'")
        assert kept(db) == recount(db)
        mem.forget(user_id="a", session_id="s1")
        mem.forget(user_id="a", fact_id=mem.history(user_id="a")[0].id)
        assert kept(db) == recount(db)
        mem.forget(user_id="b", everything=True)
        assert kept(db) == recount(db) and len(kept(db)) == 1


@pytest.mark.parametrize("table, columns", [("facts", ["fts_text"]), ("messages", ["speaker", "text", "context"])])
@pytest.mark.parametrize("tokens", [0, 1, 127, 128, 16383, 16384, 2**21 - 1, 2**21])
def test_the_view_and_the_decoder_read_fts5s_sizes_alike(table: str, columns: list[str], tokens: int) -> None:
    """FTS5 stores a row's size per column as a varint of one to four bytes here; both readers agree,
    on the view's short path (one byte a column) and its long one."""
    db = sqlean.connect(":memory:", isolation_level=None)
    db.execute(f"CREATE TABLE {table} ({', '.join(columns)})")
    db.execute(f"CREATE VIRTUAL TABLE {table}_fts USING fts5 ({', '.join(columns)}, content='{table}')")
    sql = (Path(__file__).parents[1] / "src/chronomem/store/migrations/sqlite/0015_user_fulltext_statistics.sql"
           ).read_text()
    start = sql.index(f"CREATE VIEW {table}_fts_lengths")
    db.execute(sql[start:sql.index(";", start)])
    values = ["a " * tokens, "Ana", "x y"][:len(columns)]
    db.execute(f"INSERT INTO {table}_fts (rowid, {', '.join(columns)}) VALUES (1, {', '.join('?' * len(columns))})",
               values)
    size = db.execute(f"SELECT sz FROM {table}_fts_docsize WHERE id = 1").fetchone()[0]
    expected = tokens + (len(columns) > 1) * 3
    assert varint_sum(size) == expected
    assert db.execute(f"SELECT tokens FROM {table}_fts_lengths WHERE id = 1").fetchone()[0] == expected


def test_the_ranking_follows_fts5s_formula_on_a_worked_example() -> None:
    """Two rows of three and five tokens, eight in all: "zebra" in row 1 twice and in row 2 once."""
    import math

    ranked = bm25_ranking(rows=2, tokens=8, hits=[[(1, 2, 3), (2, 1, 5)]], limit=5)
    idf = 1e-6  # log((2 - 2 + 0.5) / 2.5) < 0: FTS5 floors it
    assert [r for r, _ in ranked] == [1, 2]
    assert [s for _, s in ranked] == pytest.approx([idf * 2 * 2.2 / (2 + 1.2 * (0.25 + 0.75 * 3 / 4)),
                                                   idf * 1 * 2.2 / (1 + 1.2 * (0.25 + 0.75 * 5 / 4))], rel=1e-12)
    ranked = bm25_ranking(rows=10, tokens=40, hits=[[(3, 1, 4)], [(4, 1, 4)]], limit=1)
    assert ranked == [(3, pytest.approx(math.log(9.5 / 1.5) * 2.2 / (1 + 1.2), rel=1e-12))]  # tie: lower rowid
    assert bm25_ranking(rows=0, tokens=0, hits=[[]], limit=5) == []


def test_a_word_is_counted_from_the_index_unless_the_file_holds_it_for_many_others(tmp_path: Path) -> None:
    """Alone in the table, the user is ranked by FTS5's own bm25; beside others, the user's instances of a
    word are read from fts5vocab, unless other users hold the word in far more rows than this user's share
    of the table would: then the user's own rows are read again."""
    with Memory(str(tmp_path / "m.db"), llm=False, embedder=False) as mem:
        db = mem.store._db  # type: ignore[attr-defined]
        statements: list[str] = []
        db.set_trace_callback(statements.append)
        write(mem, "a", [("Ana", "zebra", "a zebra"), ("Ana", "tea", "green tea")], [], "s")
        assert mem.store.search_facts_text("a", "zebra", 5)
        assert any("bm25(facts_fts)" in s for s in statements)
        assert not any("facts_fts_instances" in s or "highlight(" in s for s in statements)
        write(mem, "b", [("Bo", f"zebra {i}", "a zebra") for i in range(60)] + [("Bo", "tea", "tea")], [], "s")
        statements.clear()
        assert mem.store.search_facts_text("a", "zebra", 5)
        assert any("highlight(" in s for s in statements)
        statements.clear()
        assert mem.store.search_facts_text("a", "tea", 5)  # "tea": b's share of it matches b's share of rows
        assert any("facts_fts_instances" in s for s in statements) and not any("highlight(" in s for s in statements)


def test_a_search_for_more_hits_than_one_statement_takes_returns_them_all(tmp_path: Path) -> None:
    with Memory(str(tmp_path / "m.db"), llm=False, embedder=False) as mem:
        write(mem, "a", [("Ana", f"zebra {i}", "zebra " * (i % 3)) for i in range(700)], [], "s")
        write(mem, "b", [("Bo", "zebra", "")], [], "s")  # not alone in the table: ranked in Python
        hits = mem.store.search_facts_text("a", "zebra", 1000)
        assert len(hits) == len({i for i, _ in hits}) == 700
        assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)
