"""``chronomem migrate`` and ``chronomem copy``: SQLite → PostgreSQL → SQLite is lossless."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from typer.testing import CliRunner

from chronomem import Memory, StoreError, ValidationError
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
    assert r.exit_code == 0 and "schema version 13" in r.output  # 0002: the tie rule, 0003: jobs and API keys,
    # 0004: contextual turn index, 0005: the turns that ended a fact or taught an alias, 0006: confirmations,
    # learned starts, 0007: located_in closures undone, 0008: guessed starts marked, 0009: other statements' words,
    # 0010: full-text words folded as SQLite's FTS5 folds them, 0011: Chinese, Japanese, Korean in pairs,
    # 0012: changes to entity spellings logged for the resolver, 0013: later starts and ends of facts
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


def test_a_copy_goes_a_batch_at_a_time_and_a_row_that_does_not_arrive_fails_it(
        url_factory: Callable[[str], str], monkeypatch: pytest.MonkeyPatch) -> None:
    a, b, c = url_factory("sqlite"), url_factory("postgres"), url_factory("sqlite")
    with Memory(a) as m:
        _populate(m, "alice")
        want = m.store.dump_user("alice")
    with open_store(a) as src, open_store(b) as dst:
        rep = copy_memory(src, dst, batch=2)  # every table of more than two rows in several batches
        assert rep.users["alice"] == {t: len(rows) for t, rows in want.items()}
        assert dst.dump_user("alice") == want
    with open_store(a) as src, open_store(url_factory("sqlite")) as dst:  # the source written to meanwhile
        real = src.iter_user
        calls = []

        def written_after_the_copy(user: str, *, batch: int = 1000):  # type: ignore[no-untyped-def]
            calls.append(user)
            if len(calls) == 2:  # the check's read: a writer came between
                with Memory(a) as m:
                    m.add_facts([{"subject": "Maya", "relation": "likes", "object": "tea"}], user_id="alice")
            return real(user, batch=batch)

        monkeypatch.setattr(src, "iter_user", written_after_the_copy)
        with pytest.raises(StoreError, match="does not read back identically"):
            copy_memory(src, dst, batch=2)
        monkeypatch.undo()
    with open_store(a) as src, open_store(c) as dst:
        load = dst.load_user
        monkeypatch.setattr(dst, "load_user", lambda user, rows: load(user, {t: r[1:] for t, r in rows.items()}))
        with pytest.raises(StoreError, match="does not read back identically"):
            copy_memory(src, dst, batch=2)


def test_migrate_on_sqlite(tmp_path) -> None:
    from chronomem.store.sqlite import _migrations

    latest = _migrations("sqlite")[-1][0]
    r = run("migrate", "--db", str(tmp_path / "m.db"))
    assert r.exit_code == 0 and f"schema version {latest}" in r.output


def test_copying_a_whole_store_brings_its_api_keys_and_tenants(url_factory: Callable[[str], str]) -> None:
    a, b = url_factory("sqlite"), url_factory("postgres")
    r = runner.invoke(app, ["keys", "create", "--tenant", "acme", "--db", a])
    key = r.stdout.strip().splitlines()[0]
    r = runner.invoke(app, ["keys", "create", "--tenant", "beta", "--db", a])
    from chronomem.keys import key_matches, key_prefix

    assert run("keys", "revoke", key_prefix(r.stdout.strip().splitlines()[0]) or "", "--db", a).exit_code == 0
    with Memory(a, tenant="acme") as m:
        m.add_facts([{"subject": "Maya", "relation": "lives_in", "object": "Porto"}], user_id="u1")
    r = run("copy", a, b)
    assert r.exit_code == 0 and "u1 (tenant acme)" in r.output and "\x1f" not in r.output
    assert "2 API key(s)" in r.output
    with open_store(a) as src, open_store(b) as dst:
        assert [(k.prefix, k.hash, k.tenant, k.active) for k in dst.api_keys()] == \
            [(k.prefix, k.hash, k.tenant, k.active) for k in src.api_keys()]
    with open_store(b) as dst:
        stored = dst.api_key(key_prefix(key) or "")
        assert stored is not None and key_matches(key, stored) and stored.tenant == "acme"
    r = run("copy", a, url_factory("sqlite"), "--user", "u1", "--tenant", "acme")  # one tenant's user
    assert r.exit_code == 0 and "copied 1 user(s)" in r.output and "API key" not in r.output


def test_migrate_says_what_it_waits_for_on_a_terminal_and_nothing_more_elsewhere(tmp_path, monkeypatch) -> None:
    import io

    from rich.console import Console

    from chronomem.cli import core

    db = str(tmp_path / "m.db")
    screen = io.StringIO()
    monkeypatch.setattr(core, "status", Console(file=screen, force_terminal=True, width=100))
    assert run("migrate", "--db", db).exit_code == 0
    assert "opening the store and applying its migrations" in screen.getvalue()
    piped = io.StringIO()
    monkeypatch.setattr(core, "status", Console(file=piped, force_terminal=False))
    r = run("migrate", "--db", db)
    assert r.exit_code == 0 and "schema version" in r.output and piped.getvalue() == ""
