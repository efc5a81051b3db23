"""Chinese, Japanese and Korean text is searchable (chronomem.cjk; SQLite migration 0016, PostgreSQL 0011).

Both indexes kept a run of such characters, which these languages write without spaces, as one token:
"私は去年リスボンに引っ越しました。" was one word, and no question in those languages found a turn or a fact;
the read path's lexical scoring saw only Latin letters, and a name inside a sentence was never a span to
anchor on.  Now a run is indexed and asked for as its overlapping pairs of characters, both stores alike;
every other text is indexed as before.
"""

from __future__ import annotations

import itertools
import os
import re
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
import sqlean
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chronomem import Memory
from chronomem.cjk import CJK, cjk_bigrams, split_cjk
from chronomem.model import Message
from chronomem.retrieve.anchoring import candidate_spans
from chronomem.retrieve.scoring import words
from chronomem.store.fulltext import query_words
from chronomem.store.sql import migrations
from schema_downgrade import downgrade
from test_fulltext_ranking import kept, recount

T = datetime(2024, 5, 1, tzinfo=timezone.utc)
EXAMPLES = 1000 if os.environ.get("HYPOTHESIS_PROFILE") == "thorough" else 25
KINDS = ["sqlite", "postgres", "postgres_pgvector"]
PG_KINDS = KINDS[1:]

TEXTS = {
    "moved": "私は去年リスボンに引っ越しました。",
    "job": "アクメ社で働いています。犬のポチも元気です。",
    "zh": "我在北京大学学习中文",
    "ko": "마야는 서울에 살아요",
    "mixed": "Mayaは東京タワーが好き",
    "en": "I moved to Lisbon last year",
}


def _turns(user: str, texts: list[str]) -> list[Message]:
    return [Message(f"m{i}", user, "s", "Ana", text, T, T, seq=i) for i, text in enumerate(texts)]


def _facts(texts: list[str]) -> list[dict[str, Any]]:
    return [{"subject": "Ana", "relation": "said", "object": f"k{i}", "text": text, "id": f"f{i}"}
            for i, text in enumerate(texts)]


def _found(mem: Memory, user: str, query: str) -> tuple[list[str], list[str]]:
    return (sorted(i for i, _ in mem.store.search_facts_text(user, query, 100)),
            sorted(i for i, _ in mem.store.search_messages_text(user, query, 100)))


def _keys(ids: list[str]) -> set[str]:
    names = list(TEXTS)
    return {names[int(i[1:])] for i in ids}


# -- the pure functions ----------------------------------------------------------------------------------
def test_a_run_becomes_its_pairs_apart_from_the_words_it_touches() -> None:
    assert cjk_bigrams("私は去年リスボンに") == "私は は去 去年 年リ リス スボ ボン ンに"
    assert cjk_bigrams("Mayaは東京!") == "Maya は東 東京 !"  # a space where a run meets other text
    assert cjk_bigrams("犬") == "犬" and cjk_bigrams("マヤ") == "マヤ"
    assert cjk_bigrams("Where does Maya live? Zoë, São Paulo.") == "Where does Maya live? Zoë, São Paulo."
    assert query_words("マヤはどこ?") == ["マヤ", "ヤは", "はど", "どこ"]
    assert query_words("犬") == []  # one character, like a one-letter word
    assert words("Где живёт Мария?") == ["где", "живёт", "мария"]  # other scripts: whole words, as before
    assert split_cjk("abc東京def") == ["abc", "東京", "def"]


def test_a_name_inside_a_sentence_is_a_span() -> None:
    spans = [t for _i, _j, t in candidate_spans("マヤはどこに住んでいますか?")]
    assert "マヤ" in spans and "どこ" in spans and "住んでいますか" in spans
    assert max(len(t) for t in spans) == 12  # MAX_CJK_NAME: the sentence of 13 is no span
    mixed = [t for _i, _j, t in candidate_spans("Does Maya live in 東京都?")]
    assert {"Maya", "東京", "東京都"} <= set(mixed) and "in 東京" not in mixed
    # an English question's spans are those of before: words, up to four, never a piece of a word
    assert [t for _i, _j, t in candidate_spans("Where does Maya's brother live?")] == [
        "Maya", "Maya brother", "Maya brother live", "brother", "brother live", "live"]


def _fts5_tokens(text: str) -> list[str]:
    db = sqlean.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE t USING fts5 (x, tokenize='porter unicode61')")
    db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, instance)")
    db.execute("INSERT INTO t (rowid, x) VALUES (1, ?)", (text,))
    tokens = [r[0] for r in db.execute("SELECT term FROM v ORDER BY offset")]
    db.close()
    return tokens


def test_every_character_of_the_class_is_a_word_character_fts5_keeps_as_it_is() -> None:
    """A pair of characters is one token to unicode61, unfolded, for every character the class holds: else
    a pair would split, or a query's pair (folded by Python) would differ from the indexed one."""
    ranges = re.findall(r"(.)-(.)", CJK)
    points = [c for a, b in ranges for c in range(ord(a), ord(b) + 1)]
    db = sqlean.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE t USING fts5 (x, tokenize='porter unicode61')")
    db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, instance)")
    db.executemany("INSERT INTO t (rowid, x) VALUES (?, ?)", [(c, chr(c) * 2) for c in points])
    terms = dict(db.execute("SELECT doc, term FROM v"))
    db.close()
    assert {c for c in points if terms.get(c) != chr(c) * 2} == set()


cjk_char = st.sampled_from("私は去年東京リスボンポチ犬の学习中文마야는서울々ーｱｲ")
latin_word = st.sampled_from(["maya", "Porto", "café", "2024", "x"])
piece = st.one_of(st.text(cjk_char, min_size=1, max_size=6), latin_word,
                  st.sampled_from([" ", "、", "。", "!", "-", " ", "\n"]))


@settings(max_examples=EXAMPLES * 4, deadline=None)
@given(st.lists(piece, min_size=1, max_size=10).map("".join))
def test_fts5_indexes_every_adjacent_pair_and_no_token_mixes_scripts(text: str) -> None:
    tokens = _fts5_tokens(cjk_bigrams(text))
    runs = re.findall(f"[{CJK}]+", text)
    expected = [run[k:k + 2] for run in runs for k in range(max(1, len(run) - 1))]
    assert [t for t in tokens if re.search(f"[{CJK}]", t)] == expected
    assert all(re.fullmatch(f"[{CJK}]+", t) or not re.search(f"[{CJK}]", t) for t in tokens)


# -- both stores -----------------------------------------------------------------------------------------
@pytest.fixture(params=KINDS)
def mem(request: pytest.FixtureRequest, url_factory: Callable[[str], str]) -> Iterator[Memory]:
    with Memory(url_factory(request.param), llm=False, embedder=False) as m:
        yield m


QUESTIONS = {
    "リスボン": ({"moved"}, {"moved"}),
    "引っ越し": ({"moved"}, {"moved"}),
    "ポチ": ({"job"}, {"job"}),
    "北京大学": ({"zh"}, {"zh"}),
    "서울": ({"ko"}, {"ko"}),
    "마야": ({"ko"}, {"ko"}),
    "東京タワー": ({"mixed"}, {"mixed"}),
    "maya": ({"mixed"}, {"mixed"}),
    "Lisbon": ({"en"}, {"en"}),
}


def test_a_question_in_any_of_the_three_languages_finds_its_turn_and_its_fact(mem: Memory) -> None:
    mem.add_facts(_facts(list(TEXTS.values())), user_id="u")
    mem.store.add_messages("u", _turns("u", list(TEXTS.values())))
    for query, (facts, turns) in QUESTIONS.items():
        found_facts, found_turns = _found(mem, "u", query)
        assert _keys(found_facts) == facts, query
        # a turn is also found through the turn after it (the contextual index)
        assert turns <= _keys(found_turns) <= turns | {list(TEXTS)[list(TEXTS).index(k) + 1]
                                                       for k in turns if k != "en"}, query
    mem.forget(user_id="u", everything=True)  # the delete triggers take the pairs out again
    assert all(_found(mem, "u", q) == ([], []) for q in QUESTIONS)


def test_the_read_path_anchors_a_japanese_question_on_the_name_inside_it(mem: Memory) -> None:
    mem.add_facts([{"subject": "マヤ", "relation": "lives_in", "object": "リスボン"},
                   {"subject": "トム", "relation": "lives_in", "object": "大阪"}], user_id="u")
    res = mem.search("マヤはどこに住んでいますか?", user_id="u")
    assert [(r["name"], r["how"]) for r in res.trace.roots] == [("マヤ", "name")]
    assert "マヤ lives in リスボン" in res.context and "大阪" not in res.context


_users = itertools.count()


@pytest.mark.parametrize("kind", PG_KINDS)
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(stored=st.lists(st.lists(piece, min_size=1, max_size=8).map("".join), min_size=1, max_size=5),
       asked=st.lists(st.text(cjk_char, min_size=2, max_size=4), min_size=1, max_size=4))
def test_postgresql_finds_the_rows_sqlite_finds(kind: str, url_factory: Callable[[str], str],
                                                stored: list[str], asked: list[str]) -> None:
    user = f"u{next(_users)}"
    found = []
    for url in (url_factory("sqlite"), url_factory(kind)):
        with Memory(url, llm=False, embedder=False) as m:
            m.add_facts(_facts(stored), user_id=user)
            m.store.add_messages(user, _turns(user, stored))
            found.append([_found(m, user, q) for q in asked])
    assert found[0] == found[1], (stored, asked)
    for query, (facts, _turns_found) in zip(asked, found[0]):  # a pair of the query in a text finds it
        pairs = set(query_words(query))
        holding = {f"f{i}" for i, text in enumerate(stored) if pairs & set(query_words(text))}
        assert set(facts) == holding, (stored, query)


# -- files and schemas written before ---------------------------------------------------------------------
def test_an_sqlite_file_of_schema_15_is_indexed_in_pairs_on_opening(tmp_path: Path) -> None:
    path = str(tmp_path / "old.db")
    with Memory(path, llm=False, embedder=False) as m:
        m.add_facts(_facts(list(TEXTS.values())), user_id="u")
        m.store.add_messages("u", _turns("u", list(TEXTS.values())))
        m.add_facts(_facts(["other user's Lisbon"]), user_id="v")
    db = sqlean.connect(path, isolation_level=None)
    db.create_function("chronomem_cjk_bigrams", 1, cjk_bigrams, deterministic=True)  # to read the view
    downgrade(db, 15)
    # the index as schema 15 wrote it: each text as it is
    for table, columns in (("facts", "fts_text"), ("messages", "speaker, text, context")):
        db.execute(f"INSERT INTO {table}_fts ({table}_fts) VALUES ('rebuild')")
    db.execute("UPDATE user_blocks SET (facts_rows, facts_tokens, messages_rows, messages_tokens) = "
               "(0, 0, 0, 0)")
    db.close()
    with Memory(path, llm=False, embedder=False) as m:  # opening runs 0016
        for query, (facts, turns) in QUESTIONS.items():
            found_facts, found_turns = _found(m, "u", query)
            assert _keys(found_facts) == facts and turns <= _keys(found_turns), query
        inner = m.store._db  # type: ignore[attr-defined]
        assert kept(inner) == recount(inner)  # the blocks' counts are made again
        m.forget(user_id="u", everything=True)
        inner.execute("INSERT INTO facts_fts (facts_fts) VALUES ('integrity-check')")
        inner.execute("INSERT INTO messages_fts (messages_fts, rank) VALUES ('integrity-check', 1)")
        assert _found(m, "v", "lisbon")[0] == ["f0"]


def test_the_sqlite_file_stays_readable_without_chronomem_and_refuses_foreign_writes(tmp_path: Path) -> None:
    path = str(tmp_path / "m.db")
    with Memory(path, llm=False, embedder=False) as m:
        m.add_facts(_facts(["東京"]), user_id="u")
        m.store.add_messages("u", _turns("u", ["東京タワー"]))
    db = sqlean.connect(path)  # sqlite3's shell, say: no chronomem function
    assert db.execute("SELECT subject, text FROM facts").fetchall() == [("Ana", "東京")]
    assert db.execute("SELECT * FROM messages").fetchone() is not None
    with pytest.raises(sqlean.OperationalError, match="chronomem_cjk_bigrams"):
        db.execute("DELETE FROM messages")  # would leave the index out of step with the table
    db.close()


@pytest.mark.parametrize("kind", PG_KINDS)
def test_a_postgresql_schema_of_version_10_indexes_its_rows_in_pairs(kind: str,
                                                                      url_factory: Callable[[str], str]) -> None:
    import psycopg

    from chronomem.store.postgres import split_url

    url = url_factory(kind)
    with Memory(url, llm=False, embedder=False) as m:
        m.add_facts(_facts(list(TEXTS.values())), user_id="u")
        m.store.add_messages("u", _turns("u", list(TEXTS.values())))
    conninfo, schema = split_url(url)
    with psycopg.connect(conninfo, autocommit=True) as conn:  # back to 0010's function and words
        conn.execute(f'SET search_path TO "{schema}"')
        conn.execute(dict(migrations("postgres"))[10])  # its function, and both columns made again with it
        conn.execute("DROP FUNCTION chronomem_fts_fold(text), chronomem_cjk_bigrams(text)")
        conn.execute("UPDATE chronomem_meta SET value = '10' WHERE key = 'schema_version'")
        assert conn.execute("SELECT count(*) FROM messages WHERE tsv @@ 'リスボン'::tsquery").fetchone() == (0,)
    with Memory(url, llm=False, embedder=False) as m:  # opening runs 0011
        for query, (facts, turns) in QUESTIONS.items():
            found_facts, found_turns = _found(m, "u", query)
            assert _keys(found_facts) == facts and turns <= _keys(found_turns), query
