"""PostgreSQL's full-text search finds what SQLite's finds (PostgreSQL migration 0010).

SQLite's FTS5 (``porter unicode61``) splits text at every separator and drops diacritics from Latin
letters; PostgreSQL's parser kept e-mail addresses, URLs, host names, paths and dotted words whole and its
``english`` configuration kept accents, so "example" missed maya@example.com and "cafe" missed "café" there
alone.  ``chronomem_fts_text`` folds both the indexed text and each query word as unicode61 does.  What is
checked: the tester's cases; for texts of words joined by punctuation and accented Latin letters, the rows a
query word finds are the same rows in both stores (facts and turns); and the function itself against FTS5,
code point by code point.  The stemmers still differ (FTS5's Porter, PostgreSQL's Snowball English), so the
vocabulary here holds no two words one of them would conflate and the other not.
"""

from __future__ import annotations

import itertools
import os
import unicodedata
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from typing import Any

import pytest
import sqlean
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chronomem import Memory
from chronomem.model import Message
from chronomem.store.postgres import PostgresStore, split_url
from chronomem.store.sql import migrations

T = datetime(2024, 5, 1, tzinfo=timezone.utc)
EXAMPLES = 1000 if os.environ.get("HYPOTHESIS_PROFILE") == "thorough" else 25
PG_KINDS = ["postgres", "postgres_pgvector"]  # PostgreSQL 15 in the C.UTF-8 locale, the bundled one in C


def _turns(user: str, texts: list[str]) -> list[Message]:
    return [Message(f"m{i}", user, "s", "Ana", text, T, T, seq=i) for i, text in enumerate(texts)]


def _facts(texts: list[str]) -> list[dict[str, Any]]:
    return [{"subject": "Ana", "relation": "said", "object": f"k{i}", "text": text, "id": f"f{i}"}
            for i, text in enumerate(texts)]


@pytest.fixture
def stores(request: pytest.FixtureRequest, url_factory: Callable[[str], str]) -> Iterator[tuple[Memory, Memory]]:
    """An SQLite memory and a PostgreSQL one (of the kind the test is parametrised with)."""
    with Memory(url_factory("sqlite"), llm=False, embedder=False) as lite, \
            Memory(url_factory(request.param), llm=False, embedder=False) as pg:
        yield lite, pg


def _found(mem: Memory, user: str, query: str) -> tuple[list[str], list[str]]:
    """The ids of the facts and of the turns a search finds, sorted (the order is each store's ranking)."""
    return (sorted(i for i, _ in mem.store.search_facts_text(user, query, 100)),
            sorted(i for i, _ in mem.store.search_messages_text(user, query, 100)))


def _store_both(stores: tuple[Memory, ...], user: str, texts: list[str]) -> None:
    for mem in stores:
        mem.add_facts(_facts(texts), user_id=user)
        mem.store.add_messages(user, _turns(user, texts))


# -- the tester's cases ------------------------------------------------------------------------------------
TESTER_TEXTS = {
    "email": "Write to maya.silva@example.com for details",
    "url": "Her blog is https://mayablog.example.org/posts/porto",
    "host": "She works on gitlab.acme.io every day",
    "hyphen": "She bought an e-bike in Porto",
    "underscore": "Her username is night_owl42",
    "path": "The file is /home/maya/notes.txt",
    "version": "She upgraded to python3.11 recently",
    "apostrophe": "She loves O'Brien's pub",
    "camel": "She uses PostgreSQL daily",
    "accent": "Zoë adores the café",
    "bakery": "Our site: https://bakery.example.org/menu",
    "sao": "I moved to São Paulo",
}
TESTER_QUERIES = {
    "example": {"email", "url", "bakery"}, "silva": {"email"}, "mayablog": {"url"}, "posts": {"url"},
    "gitlab": {"host"}, "acme": {"host"}, "bike": {"hyphen"}, "night_owl42": {"underscore"},
    "night": {"underscore"}, "owl42": {"underscore"}, "notes": {"path"}, "home": {"path"},
    "python3": {"version"}, "python3.11": {"version"}, "brien": {"apostrophe"}, "o'brien": {"apostrophe"},
    "postgresql": {"camel"}, "cafe": {"accent"}, "CAFÉ": {"accent"}, "zoe": {"accent"}, "Zoë": {"accent"},
    "bakery menu": {"bakery"}, "Sao": {"sao"}, "sao paulo": {"sao"}, "owl": set(),
}


@pytest.mark.parametrize("stores", PG_KINDS, indirect=True)
def test_the_testers_words_are_found_in_both_stores(stores: tuple[Memory, Memory]) -> None:
    keys = list(TESTER_TEXTS)
    _store_both(stores, "u", list(TESTER_TEXTS.values()))
    lite, pg = stores
    for query, expected in TESTER_QUERIES.items():
        facts, turns = _found(pg, "u", query)
        assert (facts, turns) == _found(lite, "u", query), query
        assert {keys[int(i[1:])] for i in facts} == expected, query
        # a turn is also found through the turn after it (the contextual index, migration 0004)
        assert {keys[int(i[1:])] for i in turns} >= expected, query


@pytest.mark.parametrize("stores", PG_KINDS, indirect=True)
def test_query_text_never_becomes_tsquery_syntax(stores: tuple[Memory, Memory]) -> None:
    _store_both(stores, "u", ["zoey likes tea", "zoe's café", "a & b | c"])
    for mem in stores:
        assert _found(mem, "u", "zoe:*") == (["f1"], ["m1", "m2"])  # no prefix search: zoey stays unfound
        for query in ["!zoe", "'zoe' | 'tea'", "zoe <-> tea", "(zoe", "\\", "':* & !", "__", "_ _ -"]:
            assert _found(mem, "u", query) == _found(stores[0], "u", query), query


# -- any text of these words -----------------------------------------------------------------------------
# no two of them share a stem under Porter or under Snowball English, and none is a stopword
WORDS = ["maya", "silva", "example", "gitlab", "acme", "porto", "bakery", "menu", "python3", "notes", "bike",
         "owl42", "night", "zoë", "café", "são", "paulo", "müller", "łódź", "ærø", "straße", "crème", "brûlée",
         "ångström", "señor", "naïve", "jalapeño", "œuvre", "façade", "İzmir", "dvořák", "ğzel", "2024", "11"]
SEPARATORS = [" ", "@", ".", "/", "-", ":", "_", "'", ", ", " — ", "…", "«", "»", "“", "”", "(", ")", "#",
              "+", "|", "&", "!", "?", "\t", "\n", "😀", "·", "\u00a0"]


def _variants(word: str) -> list[str]:
    """The word as a text may spell it: as is, capitalised, in capitals, without its accents (as a user
    types it), decomposed (a combining accent after its letter)."""
    bare = "".join(c for c in unicodedata.normalize("NFD", word) if not unicodedata.combining(c))
    return [word, word.capitalize(), word.upper(), bare, unicodedata.normalize("NFD", word)]


spelled = st.sampled_from(WORDS).flatmap(lambda w: st.sampled_from(_variants(w)))
texts = st.lists(st.lists(st.tuples(spelled, st.sampled_from(SEPARATORS)), min_size=1, max_size=8)
                 .map(lambda parts: "".join(w + s for w, s in parts)), min_size=1, max_size=6)
# a query word, or two joined as a text joins them ("maya.silva", "night_owl42")
queries = st.lists(st.one_of(spelled, st.tuples(spelled, st.sampled_from(SEPARATORS), spelled)
                             .map("".join)), min_size=1, max_size=6)
_users = itertools.count()


@pytest.mark.parametrize("stores", PG_KINDS, indirect=True)
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(stored=texts, asked=queries)
def test_a_query_word_finds_the_same_rows_in_both_stores(stores: tuple[Memory, Memory], stored: list[str],
                                                         asked: list[str]) -> None:
    user = f"u{next(_users)}"  # one user an example: the stores live as long as the test
    _store_both(stores, user, stored)
    lite, pg = stores
    for query in asked:
        assert _found(pg, user, query) == _found(lite, user, query), (stored, query)


# -- the folding itself, code point by code point --------------------------------------------------------
BMP_AND_EMOJI = [c for c in itertools.chain(range(1, 0x10000), range(0x1F000, 0x1FB00)) if not 0xD800 <= c < 0xE000]
LATIN = [(0x01, 0x24F), (0x300, 0x36F), (0x1E00, 0x1EFF)]


def _fts5_tokens(code_points: list[int]) -> dict[int, list[str]]:
    """The tokens FTS5's unicode61 (what SQLite's index runs before Porter) makes of "q<c>q", each c."""
    db = sqlean.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE t USING fts5 (x, tokenize='unicode61')")
    db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, instance)")
    db.executemany("INSERT INTO t (rowid, x) VALUES (?, ?)", [(c, f"q{chr(c)}q") for c in code_points])
    out: dict[int, list[str]] = {c: [] for c in code_points}
    for doc, term in db.execute("SELECT doc, term FROM v"):
        out[doc].append(term)
    db.close()
    return {c: sorted(t) for c, t in out.items()}


def _pg_tokens(store: PostgresStore, code_points: list[int]) -> dict[int, list[str]]:
    """The same through chronomem_fts_text and PostgreSQL's parser (``simple``: no stemmer, no stopwords)."""
    with store._connection() as conn:
        rows = conn.execute(
            "SELECT c, ARRAY(SELECT lexeme FROM unnest(to_tsvector('simple', chronomem_fts_text('q' || chr(c) "
            "|| 'q'))) AS u, generate_series(1, cardinality(u.positions)) ORDER BY lexeme) "
            "FROM unnest(%s::int[]) AS c", (code_points,)).fetchall()
    return {c: list(tokens) for c, tokens in rows}


@pytest.mark.parametrize("kind", PG_KINDS)
def test_the_folding_is_fts5s_code_point_by_code_point(kind: str, url_factory: Callable[[str], str]) -> None:
    """Every character FTS5 treats as a separator separates in PostgreSQL too (the whole BMP and the emoji
    blocks), and every Latin character (ASCII, Latin-1 Supplement, Latin Extended-A/B, the combining
    diacritics, Latin Extended Additional) is folded to what FTS5 folds it to.  Outside Latin the words can
    still differ: superscripts and fractions (², ½), private-use and unassigned characters are word characters
    to FTS5 and blanks to the parser of a database with a Unicode locale; other scripts' capitals are lowered
    by the database's locale (not at all under C)."""
    fts5 = _fts5_tokens(BMP_AND_EMOJI)
    store = PostgresStore(url_factory(kind))
    try:
        pg = _pg_tokens(store, BMP_AND_EMOJI)
    finally:
        store.close()
    separators = {c for c, tokens in fts5.items() if tokens == ["q", "q"]}
    assert {c for c in separators if pg[c] != ["q", "q"]} == set()
    latin = [c for c in BMP_AND_EMOJI if any(a <= c <= b for a, b in LATIN)]
    unequal = {f"U+{c:04X}": (fts5[c], pg[c]) for c in latin if fts5[c] != pg[c]
               and unicodedata.category(chr(c)) != "No"}
    assert unequal == {}


# -- the migration ---------------------------------------------------------------------------------------
def _raw(url: str, sql: str) -> None:
    import psycopg

    conninfo, schema = split_url(url)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(f'SET search_path TO "{schema}"')
        conn.execute(sql)


def test_migration_0010_refolds_what_an_older_version_indexed(url_factory: Callable[[str], str]) -> None:
    """A schema of version 9 (its tsvector columns over the raw text, as 0001 and 0004 made them) gets its
    columns and indexes again on opening; the rows it held are found by the words inside them."""
    latest = migrations("postgres")[-1][0]
    url = url_factory("postgres")
    with Memory(url, llm=False, embedder=False) as mem:
        mem.add_facts(_facts(["Write to maya.silva@example.com", "Zoë adores the café"]), user_id="u")
        mem.store.add_messages("u", _turns("u", ["My site is https://bakery.example.org/menu", "Hello"]))
    _raw(url, """
        DROP INDEX facts_fts; ALTER TABLE facts DROP COLUMN tsv;
        ALTER TABLE facts ADD COLUMN tsv tsvector GENERATED ALWAYS AS (to_tsvector('english'::regconfig,
          subject || ' ' || replace(relation, '_', ' ') || ' ' || object || ' ' || text)) STORED;
        CREATE INDEX facts_fts ON facts USING gin (tsv);
        DROP INDEX messages_fts; ALTER TABLE messages DROP COLUMN tsv;
        ALTER TABLE messages ADD COLUMN tsv tsvector GENERATED ALWAYS AS
          (setweight(to_tsvector('english'::regconfig, speaker || ' ' || text), 'A')
           || setweight(to_tsvector('english'::regconfig, context), 'B')) STORED;
        CREATE INDEX messages_fts ON messages USING gin (tsv);
        UPDATE chronomem_meta SET value = '9' WHERE key = 'schema_version'""")
    with Memory(url, llm=False, embedder=False) as mem:  # opening runs 0010 and those after it
        assert _found(mem, "u", "example") == (["f0"], ["m0", "m1"])
        assert _found(mem, "u", "cafe zoe") == (["f1"], [])
        assert _found(mem, "u", "menu") == ([], ["m0", "m1"])
    store = PostgresStore(url)
    try:
        assert store.schema_version() == latest
        with store._connection() as conn:
            indexes = {r[0] for r in conn.execute("SELECT indexname FROM pg_indexes WHERE schemaname = "
                                                  "current_schema() AND indexdef LIKE '%gin (tsv)%'")}
        assert indexes == {"facts_fts", "messages_fts"}
    finally:
        store.close()


def test_a_latin1_database_migrates_and_splits_at_ascii_separators(machine_pg: Any) -> None:
    """A LATIN1 database cannot hold most of the folding table's characters: 0010 still runs there (the file
    is ASCII, the table is decoded in UTF8 databases only) and its function splits at ASCII separators."""
    import psycopg

    name = f"chronomem_latin1_{machine_pg.run_id}"
    with psycopg.connect(machine_pg.url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name} ENCODING 'LATIN1' TEMPLATE template0 LC_COLLATE 'C' LC_CTYPE 'C'")
    try:
        url = machine_pg.url.rsplit("/", 1)[0] + f"/{name}"
        with Memory(url, llm=False, embedder=False) as mem:
            _store_both((mem,), "u", ["Write to maya.silva@example.com", "The file is /home/maya/notes.txt"])
            assert _found(mem, "u", "example") == (["f0"], ["m0", "m1"])
            assert _found(mem, "u", "notes") == (["f1"], ["m1"])
    finally:
        with psycopg.connect(machine_pg.url, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
