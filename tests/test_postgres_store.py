"""PostgreSQL-only behaviour: URL options, schemas, metadata, refusal, errors, the HNSW index."""

from __future__ import annotations

from collections.abc import Callable

import psycopg
import pytest

from chronomem import CorruptDatabaseError, Memory
from chronomem.errors import ConfigError, StoreError, ValidationError
from chronomem.store.postgres import LONG_PARAMETER_LIST, PostgresStore, _Conn, split_url, url_options
from chronomem.store.sql import migrations


def test_url_options_are_split_from_libpq_parameters() -> None:
    conninfo, own = url_options("postgresql://u:pw@db:5433/app?schema=tenant_1&sslmode=disable&pool_size=3")
    assert conninfo == "postgresql://u:pw@db:5433/app?sslmode=disable"
    assert own == {"schema": "tenant_1", "pool_size": "3"}
    assert split_url("postgres://u@db/app") == ("postgres://u@db/app", "chronomem")


@pytest.mark.parametrize("url, msg", [
    ("postgresql://u@h/db?schema=1abc", "invalid schema"),
    ("postgresql://u@h/db?schema=a;drop", "invalid schema"),
    ("postgresql://u@h/db?pool_size=many", "must be an integer"),
    ("postgresql://u@h/db?pool_size=0", "at least 1"),
    ("postgresql://u@h/db?hnsw_ef_search=0", "between 1 and 1000"),
])
def test_bad_url_options_are_config_errors(url: str, msg: str) -> None:
    with pytest.raises(ConfigError, match=msg):
        PostgresStore(url)


def test_unreachable_server_is_a_store_error_without_the_password() -> None:
    with pytest.raises(StoreError, match="cannot connect") as e:
        Memory("postgresql://someone:s3cret@127.0.0.1:1/nothing?connect_timeout=2")
    assert "s3cret" not in str(e.value)


def test_schemas_are_independent_memories(machine_pg) -> None:
    a, b = machine_pg.new_url(), machine_pg.new_url()
    try:
        with Memory(a) as ma, Memory(b) as mb:
            ma.add_facts([{"subject": "Maya", "relation": "lives_in", "object": "Porto"}], user_id="u")
            assert mb.history(user_id="u") == [] and [f.object for f in ma.history(user_id="u")] == ["Porto"]
    finally:
        machine_pg.drop(a)
        machine_pg.drop(b)


def test_metadata_records_version_and_vector_backend(url_factory: Callable[[str], str]) -> None:
    for kind, backend in (("postgres", "bytea"), ("postgres_pgvector", "pgvector")):
        with Memory(url_factory(kind)) as m:
            meta = m.store.meta()  # type: ignore[attr-defined]
            latest = migrations("postgres")[-1][0]
            assert meta["application"] == "chronomem" and meta["schema_version"] == str(latest)
            assert meta["vector_backend"] == backend and m.store.schema_version() == latest  # type: ignore[attr-defined]


def test_newer_schema_and_foreign_meta_are_refused(url_factory: Callable[[str], str]) -> None:
    url = url_factory("postgres")
    Memory(url).close()
    conninfo, schema = split_url(url)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(f"UPDATE \"{schema}\".chronomem_meta SET value = '99' WHERE key = 'schema_version'")
    with pytest.raises(StoreError, match="newer than this chronomem"):
        Memory(url)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(f"UPDATE \"{schema}\".chronomem_meta SET value = 'other' WHERE key = 'application'")
    with pytest.raises(CorruptDatabaseError, match="not a chronomem database"):
        Memory(url)


def test_pgvector_gets_one_hnsw_index_per_dimension_from_0_8_on(url_factory: Callable[[str], str]) -> None:
    url = url_factory("postgres_pgvector")
    with Memory(url) as m:
        m.store.put_vectors("u", "fact", [("a", [1.0, 0.0, 0.0])], "m")
        m.store.put_vectors("u", "fact", [("b", [1.0, 0.0, 0.0, 1.0])], "m")
        m.store.put_vectors("v", "fact", [("c", [0.0, 1.0, 0.0])], "m")
        names = {r[0] for r in m.store._all("SELECT indexname FROM pg_indexes WHERE schemaname = ? "  # type: ignore[attr-defined]
                                            "AND tablename = 'vectors'", (split_url(url)[1],))}
        if m.store.has_vector_index:  # type: ignore[attr-defined]
            assert {"vectors_hnsw_d3", "vectors_hnsw_d4"} <= names
        else:  # pgvector < 0.8 (no iterative scans): no index, every k-NN is an exact per-user scan
            from chronomem.store.postgres import ITERATIVE_SCAN_VERSION, _version_tuple

            assert _version_tuple(m.store.vector_extension_version) < ITERATIVE_SCAN_VERSION  # type: ignore[attr-defined]
            assert not {n for n in names if n.startswith("vectors_hnsw")}
        assert [i for i, _ in m.store.knn("u", "fact", [1.0, 0.0, 0.0])] == ["a"]


def test_nul_characters_are_refused_with_a_clear_error(url_factory: Callable[[str], str]) -> None:
    """PostgreSQL text cannot hold NUL: Memory refuses it up front (as on SQLite), and the store
    itself says so instead of leaking a driver exception when called directly."""
    from chronomem.model import Fact, Intent, Origin
    from chronomem.timeutil import utcnow

    with Memory(url_factory("postgres")) as m:
        with pytest.raises(ValidationError, match="NUL"):
            m.add_facts([{"subject": "Maya", "relation": "likes", "object": "a\x00b"}], user_id="u")
        assert m.history(user_id="u") == []
        now = utcnow()
        bad = Fact(id="f", user_id="u", subject="Maya", relation="likes", object="a\x00b", valid_from=now,
                   valid_to=None, confidence=1.0, intent=Intent.FACT, origin=Origin.IMPORTED, recorded_at=now,
                   subject_id="s", object_id="o")
        with pytest.raises(StoreError, match="NUL"):
            m.store.insert_facts("u", [bad])
        assert m.history(user_id="u") == []


def test_vector_index_off_keeps_pgvector_storage_but_searches_exactly(url_factory: Callable[[str], str]) -> None:
    url = url_factory("postgres_pgvector") + "&vector_index=off"
    with Memory(url) as m:
        assert m.store.has_vector_index is False and m.store.meta()["vector_backend"] == "pgvector"  # type: ignore[attr-defined]
        m.store.put_vectors("u", "fact", [("a", [1.0, 0.0]), ("b", [0.0, 1.0])], "m")
        assert [i for i, _ in m.store.knn("u", "fact", [0.9, 0.1])] == ["a", "b"]
        assert m.store._all("SELECT to_regclass('vectors_hnsw_d2')")[0][0] is None  # type: ignore[attr-defined]
    with pytest.raises(ConfigError, match="vector_index"):
        PostgresStore(url_factory("postgres") + "&vector_index=maybe")


def test_pgvector_versions_compare_numerically() -> None:
    from chronomem.store.postgres import ITERATIVE_SCAN_VERSION, _version_tuple

    assert _version_tuple("0.8.1") == (0, 8, 1) and _version_tuple("0.10.0") > ITERATIVE_SCAN_VERSION
    assert _version_tuple("0.6.2") < ITERATIVE_SCAN_VERSION <= _version_tuple("0.8")
    assert _version_tuple(None) == () < ITERATIVE_SCAN_VERSION and _version_tuple("dev") == ()
    assert _version_tuple("0.7.0-beta") == (0, 7, 0)


def test_statements_with_long_in_lists_are_never_prepared(machine_pg) -> None:
    """PostgreSQL's generic plan of a prepared ``IN ($1, …, $n)`` searches the list item by item for every
    row (an import of 30,000 facts took minutes); such statements are planned for their values each time."""
    short = "SELECT %s::int + 1"
    long_list = [str(i) for i in range(LONG_PARAMETER_LIST + 1)]
    long_sql = f"SELECT count(*) FROM (VALUES (1)) v(x) WHERE x::text IN ({', '.join(['%s'] * len(long_list))})"
    with psycopg.connect(machine_pg.url, autocommit=True) as raw:
        conn = _Conn(raw)
        for _ in range(8):  # psycopg prepares a statement from its fifth run on
            assert conn.execute(short, (1,)).fetchone() == (2,)
            assert conn.execute(long_sql, long_list).fetchone() == (1,)
        prepared = [r[0] for r in raw.execute("SELECT statement FROM pg_prepared_statements", prepare=False)]
    assert any("+ 1" in s for s in prepared), prepared  # the short one was: psycopg does prepare
    assert not any("IN (" in s for s in prepared), prepared
