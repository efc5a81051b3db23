"""SQLite keeps copies of moved rows in the unused space of its pages; forgetting zeroes that space.

``secure_delete`` zeroes a deleted row where it lies, not the copies a page split or rebalance left
in the gap between a page's cell pointers and its cell content (:mod:`chronomem.store.free_space`).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlean

from chronomem import Memory
from chronomem.store.free_space import zero_free_space, zeroed_page
from schema_downgrade import downgrade

U = "u1"


def leaf(cells: int, content: int, *, first_free: int = 0, page_one: bool = False) -> bytearray:
    page = bytearray(4096)
    hdr = 100 if page_one else 0
    page[hdr] = 13  # a table leaf
    page[hdr + 1:hdr + 3] = first_free.to_bytes(2, "big")
    page[hdr + 3:hdr + 5] = cells.to_bytes(2, "big")
    page[hdr + 5:hdr + 7] = content.to_bytes(2, "big")
    for i in range(cells):
        page[hdr + 8 + 2 * i:hdr + 10 + 2 * i] = (content + 10 * i).to_bytes(2, "big")
    page[content:] = b"c" * (4096 - content)  # the live cells
    return page


def test_a_page_keeps_its_header_pointers_and_cells_and_loses_what_lies_between() -> None:
    page = leaf(2, 3000)
    page[12:3000] = b"s" * (3000 - 12)  # a stale copy between the two pointers' end (8 + 4) and the cells
    out = zeroed_page(bytes(page), 2, 4096)
    assert out is not None
    assert out[:12] == page[:12] and out[12:3000] == bytes(2988) and out[3000:] == page[3000:]
    assert zeroed_page(out, 2, 4096) is None  # nothing left to write


def test_free_blocks_lose_their_contents_and_keep_their_chain() -> None:
    page = leaf(1, 3000, first_free=3100)
    page[3100:3104] = (3300).to_bytes(2, "big") + (50).to_bytes(2, "big")  # next block, size
    page[3300:3304] = (0).to_bytes(2, "big") + (20).to_bytes(2, "big")
    out = zeroed_page(bytes(page), 2, 4096)
    assert out is not None
    assert out[3100:3104] == page[3100:3104] and out[3104:3150] == bytes(46) and out[3150:3300] == page[3150:3300]
    assert out[3300:3304] == page[3300:3304] and out[3304:3320] == bytes(16)


def test_page_one_is_read_past_the_file_header() -> None:
    page = leaf(1, 3000, page_one=True)
    page[:100] = b"SQLite format 3\x00".ljust(100, b"h")
    page[110:3000] = b"s" * 2890
    out = zeroed_page(bytes(page), 1, 4096)
    assert out is not None and out[:110] == page[:110] and not any(out[110:3000])


@pytest.mark.parametrize("damage", ["not a b-tree page", "pointers past the content", "a loop of free blocks",
                                    "a free block outside the page"])
def test_a_page_that_does_not_read_as_a_b_tree_page_is_left_alone(damage: str) -> None:
    page = leaf(1, 3000, first_free=3100)
    page[3100:3104] = (0).to_bytes(2, "big") + (50).to_bytes(2, "big")
    page[20:40] = b"s" * 20
    if damage == "not a b-tree page":
        page[0] = 0  # an overflow or free-list page
    elif damage == "pointers past the content":
        page[3:5] = (2000).to_bytes(2, "big")
    elif damage == "a loop of free blocks":
        page[3100:3102] = (3100).to_bytes(2, "big")
    else:
        page[3100:3104] = (0).to_bytes(2, "big") + (2000).to_bytes(2, "big")
    assert zeroed_page(bytes(page), 2, 4096) is None


def marked_rows(path: Path) -> tuple[sqlean.Connection, list[bytes]]:
    """Rows rewritten at other sizes (pages split and rebalance), then every other one deleted under
    secure_delete: the deleted rows' markers."""
    db = sqlean.connect(str(path), isolation_level=None)
    db.execute("PRAGMA secure_delete = ON")
    db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, b TEXT)")
    for i in range(500):
        db.execute("INSERT INTO t VALUES (?, ?)", (i, f"marker{i:05d}-" + "x" * 100))
    for i in range(500):
        db.execute("UPDATE t SET b = ? WHERE id = ?", (f"marker{i:05d}-" + "y" * (100 + 37 * (i % 5)), i))
    for i in range(0, 500, 2):
        db.execute("DELETE FROM t WHERE id = ?", (i,))
    return db, [f"marker{i:05d}".encode() for i in range(0, 500, 2)]


def test_secure_delete_leaves_copies_of_moved_rows_and_zeroing_the_free_space_takes_them(tmp_path: Path) -> None:
    db, deleted = marked_rows(tmp_path / "t.db")
    raw = (tmp_path / "t.db").read_bytes()
    assert [m for m in deleted if m in raw], "SQLite left no copy: the scenario is no longer real"
    db.execute("BEGIN IMMEDIATE")
    assert zero_free_space(db) > 0
    db.execute("COMMIT")
    raw = (tmp_path / "t.db").read_bytes()
    assert [m for m in deleted if m in raw] == []
    assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert [r[0] for r in db.execute("SELECT b FROM t ORDER BY id")] == [
        f"marker{i:05d}-" + "y" * (100 + 37 * (i % 5)) for i in range(1, 500, 2)]
    db.close()


def plant(path: Path, needle: bytes) -> None:
    """Write ``needle`` into the unused space of a page of the facts table, as a stale copy would lie."""
    db = sqlean.connect(str(path), isolation_level=None)
    pgno = db.execute("SELECT pageno FROM dbstat WHERE name = 'facts' AND pagetype = 'leaf' "
                      "AND unused > 200 LIMIT 1").fetchone()[0]
    page = bytearray(db.execute("SELECT data FROM sqlite_dbpage WHERE pgno = ?", (pgno,)).fetchone()[0])
    gap = 8 + 2 * int.from_bytes(page[3:5], "big")
    page[gap + 16:gap + 16 + len(needle)] = needle
    db.execute("UPDATE sqlite_dbpage SET data = ? WHERE pgno = ?", (bytes(page), pgno))
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    assert needle in path.read_bytes()


def sixty_facts_and_a_copy(path: Path, needle: bytes) -> None:
    """A memory of 60 facts of user U, and ``needle`` planted in a page's unused space (:func:`plant`)."""
    with Memory(path) as mem:
        for i in range(60):
            mem.add_facts([{"subject": "Maya", "relation": "likes", "object": f"thing {i}"}], user_id=U)
    plant(path, needle)


def test_a_forget_zeroes_the_copies_sqlite_left_in_unused_space(tmp_path: Path) -> None:
    sixty_facts_and_a_copy(tmp_path / "m.db", b"Maya likes Quarnelstale4471")
    with Memory(tmp_path / "m.db") as mem:
        mem.forget(user_id=U, fact_id=mem.history(user_id=U)[0].id)
        assert b"Quarnelstale4471" not in (tmp_path / "m.db").read_bytes()
        assert len(mem.history(user_id=U)) == 59
        assert mem.store._db.execute("PRAGMA integrity_check").fetchone() == ("ok",)  # type: ignore[attr-defined]


def test_opening_a_file_of_an_earlier_version_zeroes_the_copies_its_forgets_left(tmp_path: Path) -> None:
    with Memory(tmp_path / "m.db") as mem:
        for i in range(60):
            mem.add_facts([{"subject": "Maya", "relation": "likes", "object": f"thing {i}"}], user_id=U)
        downgrade(mem.store._db, 11)  # type: ignore[attr-defined]
    plant(tmp_path / "m.db", b"Maya likes Quarnelstale5582")
    with Memory(tmp_path / "m.db") as mem:
        assert b"Quarnelstale5582" not in (tmp_path / "m.db").read_bytes()
        assert len(mem.history(user_id=U)) == 60


@pytest.mark.parametrize("mode", ["FULL", "INCREMENTAL"])
def test_pointer_map_pages_of_auto_vacuum_are_left_alone(tmp_path: Path, mode: str) -> None:
    """A pointer-map page starts with a page type (5 for a non-root b-tree page, 2 for a free one), as an
    interior b-tree page does: read as one, its entries would be zeroed and the file corrupt."""
    db = sqlean.connect(str(tmp_path / "v.db"), isolation_level=None)
    db.execute(f"PRAGMA auto_vacuum = {mode}")
    db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, b TEXT)")
    db.execute("BEGIN")
    for i in range(20_000):  # past the second pointer-map page (page 822 of 4,096-byte pages), which fills
        db.execute("INSERT INTO t VALUES (?, ?)", (i, f"row{i}-" + "x" * 300))
    db.execute("COMMIT")
    db.execute("DELETE FROM t WHERE id % 3 = 0")
    maps = range(2, db.execute("PRAGMA page_count").fetchone()[0] + 1, 4096 // 5 + 1)
    before = {p: bytes(db.execute("SELECT data FROM sqlite_dbpage WHERE pgno = ?", (p,)).fetchone()[0]) for p in maps}
    assert any(page[0] in (2, 5) for page in before.values())  # one looks like an interior b-tree page
    db.execute("BEGIN IMMEDIATE")
    zero_free_space(db)
    db.execute("COMMIT")
    assert {p: bytes(db.execute("SELECT data FROM sqlite_dbpage WHERE pgno = ?", (p,)).fetchone()[0])
            for p in maps} == before
    assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    db.execute("DELETE FROM t WHERE id % 3 = 1")
    if mode == "INCREMENTAL":
        db.execute("PRAGMA incremental_vacuum")
    assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert db.execute("SELECT COUNT(*) FROM t").fetchone()[0] == 6666
    db.close()


def test_a_forget_stands_when_zeroing_fails_and_the_next_one_zeroes(tmp_path: Path, monkeypatch, caplog) -> None:
    from chronomem.store import sqlite as sqlite_store

    def broken(db: object, pages: object) -> int:
        raise RuntimeError("no sqlite_dbpage here")

    sixty_facts_and_a_copy(tmp_path / "m.db", b"Maya likes Quarnelstale6693")
    with Memory(tmp_path / "m.db") as mem:
        with monkeypatch.context() as m:
            m.setattr(sqlite_store, "zero_pages", broken)
            mem.forget(user_id=U, fact_id=mem.history(user_id=U)[0].id)
        assert len(mem.history(user_id=U)) == 59  # the forget stands
        assert "could not be zeroed" in caplog.text and "no sqlite_dbpage here" in caplog.text
        assert b"Quarnelstale6693" in (tmp_path / "m.db").read_bytes()
        assert unswept(mem)  # left for the next open, had this process ended here
        mem.forget(user_id=U, fact_id=mem.history(user_id=U)[0].id)
        assert b"Quarnelstale6693" not in (tmp_path / "m.db").read_bytes()
        assert len(mem.history(user_id=U)) == 58 and not unswept(mem)


def unswept(mem: Memory) -> bool:
    from chronomem.store.sqlite import UNSWEPT_KEY

    db = mem.store._db  # type: ignore[attr-defined]
    return db.execute("SELECT 1 FROM chronomem_meta WHERE key = ?", (UNSWEPT_KEY,)).fetchone() is not None


def test_a_forget_whose_process_ended_before_its_zeroing_is_zeroed_when_the_file_opens(tmp_path: Path,
                                                                                        monkeypatch) -> None:
    from chronomem.store.sqlite import SQLiteStore

    sixty_facts_and_a_copy(tmp_path / "m.db", b"Maya likes Quarnelstale7714")
    with Memory(tmp_path / "m.db") as mem:
        with monkeypatch.context() as m:
            m.setattr(SQLiteStore, "_sweep_after_forget", lambda self: None)  # the process ends right after
            mem.forget(user_id=U, fact_id=mem.history(user_id=U)[0].id)
        assert unswept(mem) and b"Quarnelstale7714" in (tmp_path / "m.db").read_bytes()
    with Memory(tmp_path / "m.db") as mem:
        assert b"Quarnelstale7714" not in (tmp_path / "m.db").read_bytes()
        assert not unswept(mem) and len(mem.history(user_id=U)) == 59


def test_other_writers_go_on_while_a_forget_looks_for_pages_to_zero(tmp_path: Path, monkeypatch) -> None:
    """Finding the pages reads the whole file (a third of a second at 460 MB): it holds neither the file's
    write lock nor the store's, so another process and another thread of this one write meanwhile, and the
    thread's commit does not read the file again for a sweep of its own."""
    import threading

    from chronomem.store import free_space
    from chronomem.store import sqlite as sqlite_store

    sixty_facts_and_a_copy(tmp_path / "m.db", b"Maya likes Quarnelstale8825")
    wrote: list[str] = []

    def looking(db: object) -> list[int] | None:
        wrote.append("looked")
        if len(wrote) > 1:
            return free_space.pages_to_zero(db)
        other = sqlean.connect(str(tmp_path / "m.db"), isolation_level=None, timeout=0)  # no waiting
        other.execute("BEGIN IMMEDIATE")
        other.execute("INSERT INTO chronomem_meta (key, value) VALUES ('other process', 'was here')")
        other.execute("COMMIT")
        other.close()
        wrote.append("process")
        thread = threading.Thread(target=lambda: (mem.add_facts([{"subject": "Tom", "relation": "likes",
                                                                  "object": "tea"}], user_id="other"),
                                                  wrote.append("thread")))
        thread.start()
        thread.join(timeout=30)
        return free_space.pages_to_zero(db)

    with Memory(tmp_path / "m.db") as mem:
        monkeypatch.setattr(sqlite_store, "pages_to_zero", looking)
        mem.forget(user_id=U, fact_id=mem.history(user_id=U)[0].id)
        assert wrote == ["looked", "process", "thread"]  # one look, the forget's
        assert b"Quarnelstale8825" not in (tmp_path / "m.db").read_bytes()
        assert [f.object for f in mem.history(user_id="other")] == ["tea"] and not unswept(mem)
        assert mem.store._db.execute("PRAGMA integrity_check").fetchone() == ("ok",)  # type: ignore[attr-defined]
