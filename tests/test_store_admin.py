"""``chronomem migrate`` and ``chronomem copy``: SQLite → PostgreSQL → SQLite is lossless."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from typer.testing import CliRunner

from chronomem import Memory, ValidationError
from chronomem.cli import app
from chronomem.cli.store_admin import copy_memory
from chronomem.store import open_store
from contract import _populate

runner = CliRunner()


def run(*args: str):
    return runner.invoke(app, list(args), catch_exceptions=False)


@pytest.mark.parametrize("pg", ["postgres", "postgres_pgvector"])
def test_copy_sqlite_to_postgres_and_back_is_lossless(pg: str, url_factory: Callable[[str], str]) -> None:
    src, mid, back = url_factory("sqlite"), url_factory(pg), url_factory("sqlite")
    with Memory(src) as m:
        _populate(m, "alice")
        _populate(m, "bob")
        m.add_facts([{"subject": "Bob", "relation": "likes", "object": "chess"}], user_id="bob")
        before = {u: m.export(user_id=u)["tables"] for u in ("alice", "bob")}

    r = run("migrate", "--db", mid)
    assert r.exit_code == 0 and "schema version 6" in r.output  # 0002: the tie rule, 0003: jobs and API keys,
    # 0004: contextual turn index, 0005: the turns that ended a fact or taught an alias, 0006: confirmations, learned starts
    with Memory(mid) as m:  # the HNSW index needs pgvector 0.8+; older versions search exactly
        indexed = m.store.has_vector_index
    assert ("pgvector" in r.output) is (pg == "postgres_pgvector")
    assert ("(ANN index)" in r.output) is indexed and ("(exact per-user k-NN)" in r.output) is not indexed
    r = run("copy", src, mid)
    assert r.exit_code == 0 and "copied 2 user(s)" in r.output and "verified identical" in r.output
    r = run("copy", mid, back, "--user", "bob")
    assert r.exit_code == 0 and "copied 1 user(s)" in r.output
    r = run("copy", mid, back, "--user", "alice")
    assert r.exit_code == 0

    for url in (mid, back):
        with Memory(url) as m:
            assert {u: m.export(user_id=u)["tables"] for u in ("alice", "bob")} == before
            assert [f.object for f in m.facts(user_id="alice", subject="Maya S.")] == ["Zürich"]


def test_copy_refuses_to_overwrite_unless_replace(url_factory: Callable[[str], str]) -> None:
    a, b = url_factory("sqlite"), url_factory("postgres")
    with Memory(a) as m:
        m.add_facts([{"subject": "Maya", "relation": "lives_in", "object": "Porto"}], user_id="u")
    with Memory(b) as m:
        m.add_facts([{"subject": "Maya", "relation": "lives_in", "object": "Oslo"}], user_id="u")
    with open_store(a) as src, open_store(b) as dst:
        with pytest.raises(ValidationError, match="--replace"):
            copy_memory(src, dst)
        with pytest.raises(ValidationError, match="no data"):
            copy_memory(src, dst, ["nobody"])
        rep = copy_memory(src, dst, replace=True)
        assert rep.users["u"]["facts"] == 1
    with Memory(b) as m:
        assert [f.object for f in m.history(user_id="u")] == ["Porto"]


def test_migrate_on_sqlite(tmp_path) -> None:
    from chronomem.store.sqlite import _migrations

    latest = _migrations("sqlite")[-1][0]
    r = run("migrate", "--db", str(tmp_path / "m.db"))
    assert r.exit_code == 0 and f"schema version {latest}" in r.output
