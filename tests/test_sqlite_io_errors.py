"""A full disk or a file chronomem cannot write is a :class:`StoreError` saying so, never a raw driver error nor
a :class:`CorruptDatabaseError` about a healthy file.

SQLite may roll a transaction back by itself when the disk fills (SQLITE_FULL); the store's own ROLLBACK then
failed with "cannot rollback - no transaction is active" and hid the real error.  ``PRAGMA max_page_count``
stands in for a small disk where a statement fails with SQLITE_FULL ("database or disk is full"); a wrapped
connection stands in for SQLite's own rollback, which a real full disk gives when the page cache spills.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

import chronomem.store.sqlite as sqlite_store
from chronomem import CorruptDatabaseError, Memory
from chronomem.errors import StoreError
from chronomem.store.sqlite import sqlite3


def _big_facts(n: int) -> list[dict[str, str]]:
    return [{"subject": f"S{i}", "relation": "likes", "object": f"o{i} " + "lorem ipsum " * 20} for i in range(n)]


def _limit_pages(conn: Any, extra: int) -> None:
    """Let the file grow by ``extra`` pages only, as a disk with that much room left."""
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    conn.execute(f"PRAGMA max_page_count = {pages + extra}")


class _DiskFillsMidWrite:
    """The SQLite connection, except that the first INSERT fails as when the disk fills while SQLite spills its
    page cache: SQLite rolls the whole transaction back by itself, then reports SQLITE_FULL."""

    def __init__(self, db: Any) -> None:
        self._db = db
        self.failed = False

    def _write(self, method: str, sql: str, *args: Any) -> Any:
        if not self.failed and sql.lstrip().upper().startswith("INSERT") and self._db.in_transaction:
            self.failed = True
            self._db.execute("ROLLBACK")
            raise sqlite3.OperationalError("database or disk is full")
        return getattr(self._db, method)(sql, *args)

    def execute(self, sql: str, *args: Any) -> Any:
        return self._write("execute", sql, *args)

    def executemany(self, sql: str, *args: Any) -> Any:
        return self._write("executemany", sql, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._db, name)


def test_a_write_the_disk_cannot_hold_is_a_store_error_and_writes_nothing(tmp_path: Path) -> None:
    with Memory(tmp_path / "m.db", llm=False, embedder=False) as mem:
        mem.add_facts([{"subject": "seed", "relation": "likes", "object": "x"}], user_id="u0")
        inner = mem.store.inner
        real = inner._db
        inner._db = fails = _DiskFillsMidWrite(real)
        try:
            with pytest.raises(StoreError, match="database or disk is full") as caught:
                mem.add_facts(_big_facts(50), user_id="u1")
        finally:
            inner._db = real
        assert fails.failed and "cannot rollback" not in str(caught.value) and not real.in_transaction
        assert mem.facts(user_id="u1") == [] and len(mem.facts(user_id="u0")) == 1
        mem.add_facts([{"subject": "a", "relation": "likes", "object": "b"}], user_id="u0")  # still writable
        assert len(mem.facts(user_id="u0")) == 2


def test_a_migration_that_fills_the_disk_is_a_store_error_not_corruption(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "m.db"
    with Memory(path, llm=False, embedder=False) as mem:
        mem.add_facts([{"subject": "seed", "relation": "likes", "object": "x"}], user_id="u0")
        version = mem.store.inner._db.execute(
            "SELECT value FROM chronomem_meta WHERE key = 'schema_version'").fetchone()[0]
    real_version, real_connect = sqlite_store.schema_version, sqlite_store._connect
    filler = ("CREATE TABLE filler (x BLOB);\n"
              "INSERT INTO filler WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r WHERE i < 2000) "
              "SELECT zeroblob(4000) FROM r;\n")

    def one_more_migration(*args: Any) -> tuple[int, list[tuple[int, str]]]:
        current, found = real_version(*args)
        return current, [*found, (int(version) + 1, filler)]  # a migration that rewrites more than fits

    def small_disk(*args: Any) -> Any:
        conn = real_connect(*args)
        _limit_pages(conn, 30)
        return conn

    monkeypatch.setattr(sqlite_store, "schema_version", one_more_migration)
    monkeypatch.setattr(sqlite_store, "_connect", small_disk)
    with pytest.raises(StoreError, match="database or disk is full") as caught:
        Memory(path, llm=False, embedder=False)
    assert not isinstance(caught.value, CorruptDatabaseError)
    assert f"schema version {int(version) + 1}" in str(caught.value) and "cannot rollback" not in str(caught.value)
    monkeypatch.undo()
    with Memory(path, llm=False, embedder=False) as mem:  # intact, at its old version
        assert len(mem.facts(user_id="u0")) == 1
        db = mem.store.inner._db
        assert db.execute("SELECT value FROM chronomem_meta WHERE key = 'schema_version'").fetchone()[0] == version
        assert not db.execute("SELECT 1 FROM sqlite_master WHERE name = 'filler'").fetchone()


def test_a_store_whose_wal_cannot_be_created_is_not_called_corrupt(tmp_path: Path) -> None:
    """SQLite answers "unable to open database file" (SQLITE_CANTOPEN) when it cannot create the -wal beside
    a WAL file, as on a read-only mount or folder; a folder in the -wal's place gives the same, even as root."""
    path = tmp_path / "m.db"
    with Memory(path, llm=False, embedder=False) as mem:
        mem.add_facts([{"subject": "seed", "relation": "likes", "object": "x"}], user_id="u0")
    (tmp_path / "m.db-wal").mkdir()
    with pytest.raises(StoreError, match="unable to open database file") as caught:
        Memory(path, llm=False, embedder=False)
    assert not isinstance(caught.value, CorruptDatabaseError)
    assert "folder must be writable" in str(caught.value)
    (tmp_path / "m.db-wal").rmdir()
    with Memory(path, llm=False, embedder=False) as mem:  # the file was healthy all along
        assert len(mem.facts(user_id="u0")) == 1


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root writes to read-only folders")
def test_a_store_in_a_read_only_folder_is_not_called_corrupt(tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    with Memory(folder / "m.db", llm=False, embedder=False) as mem:
        mem.add_facts([{"subject": "seed", "relation": "likes", "object": "x"}], user_id="u0")
    folder.chmod(0o555)
    try:
        with pytest.raises(StoreError) as caught:
            Memory(folder / "m.db", llm=False, embedder=False)
        assert not isinstance(caught.value, CorruptDatabaseError)
    finally:
        folder.chmod(0o755)


def test_a_damaged_file_is_still_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "garbage.db"
    path.write_bytes(b"not sqlite at all " * 300)
    with pytest.raises(CorruptDatabaseError, match="not a usable chronomem database"):
        Memory(path, llm=False, embedder=False)


def test_a_file_in_place_of_the_folder_is_a_store_error(tmp_path: Path) -> None:
    (tmp_path / "folder").write_text("")
    with pytest.raises(StoreError, match="cannot create the folder"):
        Memory(tmp_path / "folder" / "m.db", llm=False, embedder=False)
