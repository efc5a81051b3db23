"""Zeroing what SQLite leaves in the unused space of its pages, so forgotten bytes leave the file.

``PRAGMA secure_delete`` zeroes a row where it lies when the row is deleted, and a page when it is
freed.  It does not reach the copies that moving rows between pages leaves behind: when a page
splits or is rebalanced, SQLite rebuilds it from its cells and keeps the bytes between the cell
pointers and the new start of the cell content as they were, so the space once used by cells now
living on a sibling page still holds them.  When such a row is deleted later, only its live copy is
zeroed.  Measured here on a plain table under ``secure_delete``: 1 to 2 of every 20,000 deleted
rows still readable in the file; the reliability fuzz found a forgotten fact's words so in an FTS5
segment page.

:func:`zero_free_space` reads every b-tree page and zeroes its unallocated gap and its free blocks
through ``sqlite_dbpage``, inside the caller's write transaction: no cell of a page changes.  Pages
whose unused space is already zero are not written.  About 3 µs a page (0.34 s for the 460 MB file
of a million facts on the reference machine; BENCHMARKS.md "Forgetting in a large shared file").
A forget splits it: :func:`pages_to_zero` reads every page in a snapshot of its own, holding no lock,
and :func:`zero_pages` reads again and writes only the pages found, inside a write transaction.
"""

from __future__ import annotations

from typing import Any

LEAF_KINDS = (10, 13)  # index and table leaf pages: 8-byte header
INTERIOR_KINDS = (2, 5)  # 12-byte header


def zeroed_page(page: bytes, pgno: int, usable: int) -> bytes | None:
    """``page`` with its unallocated gap and free blocks zeroed, or ``None`` when nothing changes or the
    page does not read as a b-tree page (it is then left as it is)."""
    hdr = 100 if pgno == 1 else 0
    kind = page[hdr]
    if kind not in LEAF_KINDS + INTERIOR_KINDS:
        return None
    first_free = int.from_bytes(page[hdr + 1:hdr + 3], "big")
    cells = int.from_bytes(page[hdr + 3:hdr + 5], "big")
    content = int.from_bytes(page[hdr + 5:hdr + 7], "big") or 65536
    gap = hdr + (8 if kind in LEAF_KINDS else 12) + 2 * cells
    if not gap <= content <= usable:
        return None
    dirty_gap = page.count(0, gap, content) != content - gap  # the common case, a clean page, read in C
    if not dirty_gap and not first_free:
        return None
    out = bytearray(page)
    out[gap:content] = bytes(content - gap)
    changed, block, seen = dirty_gap, first_free, 0
    while block:  # the free-block chain: (next, size) heads in ascending order inside the content
        if block < max(content, seen) or block + 4 > usable:
            return None
        nxt, size = int.from_bytes(out[block:block + 2], "big"), int.from_bytes(out[block + 2:block + 4], "big")
        if size < 4 or block + size > usable:
            return None
        if out.count(0, block + 4, block + size) != size - 4:
            out[block + 4:block + size] = bytes(size - 4)
            changed = True
        seen, block = block + size, nxt
    return bytes(out) if changed else None


def zero_free_space(db: Any) -> int:
    """Zero the unused space of every b-tree page of the main database; how many pages were written.
    Call it inside a write transaction (``BEGIN IMMEDIATE``).

    One pass reads every page and notes those with something to zero (:func:`pages_to_zero`); a second
    reads and writes just those (:func:`zero_pages`), so memory holds one page at a time.
    """
    pages = pages_to_zero(db)
    if pages is None:
        pages = pages_to_zero(db, btree=_btree_pages(db)) or []
    return _write_zeroed(db, pages)


def pages_to_zero(db: Any, *, btree: set[int] | None = None) -> list[int] | None:
    """The numbers of the pages whose unused space holds something, in the snapshot ``db`` reads.

    A b-tree page is told by its first byte while the file has fewer than 2**24 pages and no pointer-map
    pages (overflow and free-list pages start with a page number, whose first byte is then 0; a
    pointer-map page of ``auto_vacuum`` starts with a page type).  In any other file the b-tree pages must
    be listed (``btree``, from ``dbstat``: :func:`zero_free_space` does); without the list this returns
    None.  Telling pages by their first byte also lets :func:`zero_pages` run in a later transaction than
    this read, whatever was written in between (:meth:`SQLiteStore._sweep_after_forget`)."""
    size, count = db.execute("PRAGMA page_size").fetchone()[0], db.execute("PRAGMA page_count").fetchone()[0]
    usable = size - db.execute("SELECT data FROM sqlite_dbpage WHERE pgno = 1").fetchone()[0][20]  # reserved
    if btree is None and not (count < 2**24 and not db.execute("PRAGMA auto_vacuum").fetchone()[0]):
        return None
    return [pgno for pgno, data in db.execute("SELECT pgno, data FROM sqlite_dbpage")
            if (btree is None or pgno in btree) and zeroed_page(data, pgno, usable) is not None]


def zero_pages(db: Any, pages: list[int]) -> int:
    """Zero the unused space of ``pages`` (:func:`pages_to_zero`'s), each read again here; how many pages
    were written.  Call it inside a write transaction.  A page that is no b-tree page any more is left as
    it is (:func:`zeroed_page`)."""
    count = db.execute("PRAGMA page_count").fetchone()[0]
    if not (count < 2**24 and not db.execute("PRAGMA auto_vacuum").fetchone()[0]):
        return zero_free_space(db)  # no longer told by first bytes (the file grew meanwhile): all of it
    return _write_zeroed(db, pages)


def _write_zeroed(db: Any, pages: list[int]) -> int:
    size = db.execute("PRAGMA page_size").fetchone()[0]
    usable = size - db.execute("SELECT data FROM sqlite_dbpage WHERE pgno = 1").fetchone()[0][20]
    written = 0
    for pgno in pages:
        row = db.execute("SELECT data FROM sqlite_dbpage WHERE pgno = ?", (pgno,)).fetchone()
        page = None if row is None else zeroed_page(row[0], pgno, usable)
        if page is not None:
            db.execute("UPDATE sqlite_dbpage SET data = ? WHERE pgno = ?", (page, pgno))
            written += 1
    return written


def _btree_pages(db: Any) -> set[int]:
    return {r[0] for r in db.execute("SELECT pageno FROM dbstat WHERE pagetype IN ('internal', 'leaf')")}
