"""The embedded default store: one SQLite file (WAL), vectors in the same file.

Uses ``sqlean.py`` (a drop-in ``sqlite3`` with extension loading, bundling a
recent SQLite with FTS5) rather than the interpreter's ``sqlite3``, which is
often built without ``enable_load_extension`` — so sqlite-vec always loads.
Writers are serialised with ``BEGIN IMMEDIATE`` (SQLite has one writer at a
time); readers never block thanks to WAL.

Many users share one file, so two things keep a user's work from growing with
the others' data.  Each user's facts and turns take rowids in a block of their
own (:data:`BLOCK_ROWS`, table ``user_blocks``, migration 0014), and a full-text
search asks FTS5 for the block's range (:meth:`SQLiteStore._fts`) and ranks
with FTS5's bm25 computed from the block's own counts (migration 0015), so the
order of a user's hits does not move with the others' words either.  A forget
finds the pages whose unused space to zero in a snapshot of its own, not under
the file's write lock (:meth:`SQLiteStore._sweep_after_forget`).
"""

from __future__ import annotations

import logging
import math
import os
import struct
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any, Literal

import sqlean as sqlite3

from ..cjk import cjk_bigrams
from ..errors import CorruptDatabaseError, StoreError
from ..model import Fact
from ..timeutil import to_micros, utcnow
from .free_space import pages_to_zero, zero_free_space, zero_pages
from .fulltext import bm25_ranking, query_words, varint_sum, varints
from .base import DUMP_BATCH, UserRows
from .sql import APP_KEY, APP_NAME, SCHEMA_VERSION_KEY, SQLStore, chunks, schema_version
from .sql import migrations as _migrations  # noqa: F401 - kept for callers of the old name
from .vectors import exact_knn, unit_vector

log = logging.getLogger(__name__)

# how long a forget waits for other connections' readers before leaving the WAL to a later checkpoint
CHECKPOINT_WAIT_MS = 5000

# a file of an earlier schema has its pages' unused space zeroed when it opens: forgets before version 12
# did not zero it, and migration 0014 moved every fact and turn to its user's rowid block, leaving a copy of
# each row in the pages it left (zeroed at the open rather than under the first forget's write lock)
ZEROED_ON_OPEN_BEFORE = 14

# chronomem_meta's mark of a forget whose zeroing of unused space has not run yet (the next open runs it)
UNSWEPT_KEY = "unswept_forget"

# a user's facts and turns take rowids from block * BLOCK_ROWS on (migration 0014): a full-text search
# reads only its user's part of the index
BLOCK_ROWS = 1 << 32
BLOCKED_TABLES = ("facts", "messages")

# a search counts a word's instances in the user's rows from the index when the whole file holds the word at
# most this many times the rows of the user's expected to hold it, else by reading the user's rows again: an
# instance read from the index costs ~0.09 µs, a row read again 2-4 µs (BENCHMARKS.md, "A user's ranking from
# the user's own counts")
INSTANCES_PER_HIT = 20

# a user whose rows are all a table holds is ranked by FTS5's own bm25 (the same counts, in C, one query):
# a file of one user searches as fast as before the user's own ranking (tests turn it off to compare)
FTS5_RANKS_A_LONE_USER = True


def _fts_query(text: str) -> str:
    """Free text as an FTS5 OR-query of its content words (:mod:`.fulltext`): FTS5's own ranking of a lone
    user (:meth:`SQLiteStore._fts`), or a query by hand."""
    return " OR ".join(f'"{w}"' for w in query_words(text))


# how many times a matched row holds the query's word, all columns: the characters highlight() adds, one
# marker before each instance.  FTS5 merges overlapping instances only: a one-token word's never overlap; a
# word of tokens that repeat ("ha_ha" in "ha ha ha") would count once a run, where bm25 counts each.
_INSTANCES = {
    "facts": "length(highlight(facts_fts, 0, ' ', '')) - length(f.fts_text)",
    "messages": " + ".join(f"length(highlight(messages_fts, {i}, ' ', '')) - length(f.{col})"
                           for i, col in enumerate(("speaker", "text", "context"))),
}


def _connect(path: str, timeout_s: float) -> Any:
    """A connection to the store's file, with the function its full-text indexes read their text through
    (``chronomem_cjk_bigrams``, migration 0016)."""
    conn = sqlite3.connect(path, timeout=timeout_s, isolation_level=None, check_same_thread=False)
    conn.create_function("chronomem_cjk_bigrams", 1, _cjk_bigrams, deterministic=True)
    return conn


def _cjk_bigrams(text: Any) -> Any:
    return cjk_bigrams(text) if isinstance(text, str) else text


def _rollback(conn: Any) -> None:
    """Undo what is left of a failed transaction.  SQLite may have rolled it back by itself already (on
    SQLITE_FULL, SQLITE_IOERR, SQLITE_NOMEM), and then a ROLLBACK fails with "no transaction is active";
    a ROLLBACK that fails for any reason must not replace the error that made the caller roll back."""
    if not conn.in_transaction:
        return
    try:
        conn.execute("ROLLBACK")
    except sqlite3.Error as e:
        log.warning("SQLite could not roll back a failed transaction (%s)", e)


# primary result codes (the low byte of an extended one) that say the file cannot be written, or that the
# machine failed, rather than that the file is damaged: SQLITE_PERM, SQLITE_READONLY, SQLITE_CANTOPEN, and
# SQLITE_BUSY, SQLITE_LOCKED, SQLITE_NOMEM, SQLITE_IOERR, SQLITE_FULL, SQLITE_NOLFS
_UNWRITABLE_CODES = frozenset({3, 8, 14})
_ENVIRONMENT_CODES = _UNWRITABLE_CODES | {5, 6, 7, 10, 13, 22}


def _failure(path: str, error: sqlite3.DatabaseError) -> Literal["folder", "unwritable", "environment", "corrupt"]:
    """What ``error`` while opening (or migrating) ``path`` says: the path is a folder; the file or its folder
    cannot be written; the machine failed (a full disk, an I/O error, a lock); or the file is damaged."""
    code = getattr(error, "sqlite_errorcode", None)  # absent on an error raised from Python
    primary = code & 0xFF if isinstance(code, int) else None
    text = str(error)
    if os.path.isdir(path):
        return "folder"
    if primary in _UNWRITABLE_CODES or primary is None and ("unable to open" in text or "readonly" in text):
        return "unwritable"
    if primary in _ENVIRONMENT_CODES or primary is None and ("disk is full" in text or "I/O error" in text):
        return "environment"
    return "corrupt"


def _open_error(path: str, error: sqlite3.DatabaseError) -> StoreError:
    """The error to raise for ``error`` while opening ``path``: a full disk, an I/O error or a file or folder
    chronomem cannot write is a :class:`StoreError` naming that cause, not a corrupt file: calling a healthy
    store "not a usable chronomem database" sends its owner to restore a backup."""
    kind, text = _failure(path, error), str(error)
    if kind == "folder":
        return CorruptDatabaseError(f"{path} is not a usable chronomem database: it is a folder, not a file")
    if kind == "unwritable":
        return StoreError(f"cannot open {path} for writing ({text}): chronomem writes the file and creates files "
                          "beside it (SQLite's -wal and -shm), so the file and its folder must be writable")
    if kind == "environment":
        return StoreError(f"cannot open {path}: {text}")
    return CorruptDatabaseError(f"{path} is not a usable chronomem database: {text}")


@contextmanager
def _read_transaction(conn: Any) -> Iterator[None]:
    """Run a search's statements in one read transaction (or in the caller's): its counts and its hits
    come from the same state of the file while other processes write."""
    if conn.in_transaction:
        yield
        return
    conn.execute("BEGIN")
    try:
        yield
    finally:
        conn.execute("COMMIT")


class SQLiteStore(SQLStore):
    """SQLite implementation of :class:`~chronomem.store.base.Store`."""

    touching_by_union = True  # see SQLStore.touching_by_union
    names_by_entity = "entity_names INDEXED BY entity_names_by_entity"  # see SQLStore.names_by_entity

    def __init__(self, path: str | Path, *, timeout_s: float = 60.0) -> None:
        super().__init__()
        # "~/memory.db" is the file in the home folder (it made the folder there and opened "./~/memory.db")
        self.path = str(path) if str(path) == ":memory:" else os.path.expanduser(str(path))
        self.url = f"sqlite:///{self.path}"
        if self.path != ":memory:":
            try:
                Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            except OSError as e:  # a file where the folder should be, no permission: not a driver error
                raise StoreError(f"cannot create the folder of {self.path}: {e}") from e
        self._lock = threading.RLock()
        self._scrub_wal = False  # a delete committed: checkpoint the WAL so no old page survives there
        try:
            self._db = _connect(self.path, timeout_s)
            self._vec = self._load_sqlite_vec()
            self._refuse_foreign()  # before any pragma that would rewrite the file header
            self._enable_wal(timeout_s)
            self._db.execute("PRAGMA synchronous = NORMAL")
            self._db.execute("PRAGMA foreign_keys = ON")
            self._db.execute("PRAGMA secure_delete = ON")  # forgotten data is zeroed in the file
            self._busy_ms = int(timeout_s * 1000)
            self._db.execute(f"PRAGMA busy_timeout = {self._busy_ms}")
            self._migrate()
            for table in BLOCKED_TABLES:  # the index's words, read in place (see _word_in_rows)
                self._db.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{table}_fts_terms "
                                 f"USING fts5vocab(main, {table}_fts, row)")
                self._db.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{table}_fts_instances "
                                 f"USING fts5vocab(main, {table}_fts, instance)")
            self._terms = QueryTerms()
        except sqlite3.DatabaseError as e:
            self._safe_close()
            raise _open_error(self.path, e) from e

    def _enable_wal(self, timeout_s: float) -> None:
        """Switch the file to WAL, waiting out other processes that hold it: the switch needs the file to
        itself, and SQLite answers "database is locked" at once, without its busy handler, while another
        process is creating or switching the same new file (workers started together)."""
        deadline = time.monotonic() + timeout_s
        pause = 0.01
        while True:
            try:
                self._db.execute("PRAGMA journal_mode = WAL")
                return
            except sqlite3.OperationalError as e:
                if ("locked" not in str(e) and "busy" not in str(e)) or time.monotonic() + pause > deadline:
                    raise
                time.sleep(pause)
                pause = min(pause * 2, 0.5)

    def _safe_close(self) -> None:
        try:
            self._db.close()
        except Exception:  # pragma: no cover - best effort
            pass

    def _load_sqlite_vec(self) -> bool:
        try:
            import sqlite_vec

            self._db.enable_load_extension(True)
            sqlite_vec.load(self._db)
            self._db.enable_load_extension(False)
            return True
        except Exception as e:  # pragma: no cover - depends on the platform wheel
            log.warning("sqlite-vec could not be loaded (%s); vector search uses Python", e)
            return False

    def _refuse_foreign(self) -> None:
        tables = {r[0] for r in self._db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if tables and "chronomem_meta" not in tables:
            raise CorruptDatabaseError(
                f"{self.path} is an SQLite database but not a chronomem one "
                f"(it has tables {sorted(tables)[:5]}); refusing to touch it")

    def _migrate(self) -> None:
        db = self._db
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        meta = dict(db.execute("SELECT key, value FROM chronomem_meta").fetchall()) \
            if "chronomem_meta" in tables else None
        current, found = schema_version(meta, self.path, "sqlite")
        self._migrate_from(current, found)
        unswept = meta is not None and UNSWEPT_KEY in meta  # a forget whose process ended before its sweep
        if 0 < current < ZEROED_ON_OPEN_BEFORE or unswept:  # forgets, or the move, left copies of rows behind
            with self._connect_for_write(""):
                if self._zero_free_space():
                    db.execute("DELETE FROM chronomem_meta WHERE key = ?", (UNSWEPT_KEY,))
            self._checkpoint_after_delete()

    def _migrate_from(self, current: int, found: list[tuple[int, str]]) -> None:
        db = self._db
        for version, sql in found:
            if version <= current:
                continue
            log.info("migrating %s to schema version %d", self.path, version)
            db.execute("BEGIN IMMEDIATE")
            try:
                # re-check inside the lock: another process may have migrated meanwhile
                has_meta = db.execute("SELECT 1 FROM sqlite_master WHERE name = 'chronomem_meta'").fetchone()
                done = 0
                if has_meta:
                    row = db.execute("SELECT value FROM chronomem_meta WHERE key = ?",
                                     (SCHEMA_VERSION_KEY,)).fetchone()
                    done = int(row[0]) if row else 0
                if done < version:
                    for stmt in _split_sql(sql):
                        db.execute(stmt)
                    db.execute("INSERT OR REPLACE INTO chronomem_meta (key, value) VALUES (?, ?)",
                               (APP_KEY, APP_NAME))
                    db.execute("INSERT OR REPLACE INTO chronomem_meta (key, value) VALUES (?, ?)",
                               (SCHEMA_VERSION_KEY, str(version)))
                    db.execute("INSERT OR REPLACE INTO chronomem_meta (key, value) VALUES (?, ?)",
                               (f"migrated_{version}", str(to_micros(utcnow()))))
                db.execute("COMMIT")
            except sqlite3.DatabaseError as e:
                _rollback(db)
                if _failure(self.path, e) in ("unwritable", "environment"):  # a full disk, not a damaged file
                    raise StoreError(f"could not migrate {self.path} to schema version {version}: {e} "
                                     "(rolled back: the file keeps its earlier version)") from e
                raise
            except BaseException:
                _rollback(db)
                raise

    # -- dialect hooks ---------------------------------------------------------------
    @contextmanager
    def _connect_for_write(self, user_id: str) -> Iterator[Any]:
        sweep = False
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
            except sqlite3.DatabaseError as e:
                raise StoreError(f"cannot start a write transaction on {self.path}: {e}") from e
            try:
                yield self._db
            except (sqlite3.Error, UnicodeEncodeError) as e:  # never a raw driver error to callers
                _rollback(self._db)
                raise StoreError(f"SQLite write failed on {self.path}: {e}") from e
            except BaseException:
                _rollback(self._db)
                raise
            else:
                sweep = self._scrub_wal  # rows this transaction forgot may have older copies in unused space
                try:
                    if sweep:  # until the sweep has run, a crash leaves it to the next open
                        self._db.execute("INSERT OR REPLACE INTO chronomem_meta (key, value) VALUES (?, ?)",
                                         (UNSWEPT_KEY, str(to_micros(utcnow()))))
                    self._db.execute("COMMIT")
                except sqlite3.Error as e:  # a full disk, an I/O error: nothing of it was written
                    _rollback(self._db)
                    raise StoreError(f"SQLite could not commit on {self.path}: {e}") from e
                self._scrub_wal = False  # this sweep is ours: a commit while it reads sweeps nothing again
        if sweep:
            self._sweep_after_forget()

    def _sweep_after_forget(self) -> None:
        """After a forget committed: zero the unused space of the pages (:mod:`.free_space`), then
        checkpoint the WAL (:meth:`_checkpoint_after_delete`).

        Finding the pages means reading every page of the file (0.34 s at 460 MB); that read runs in a
        snapshot on a connection of its own, holding no lock, so other writers go on meanwhile.  Only the
        pages found are read again and written, in a write transaction that also clears the mark the
        forget left (:data:`UNSWEPT_KEY`).  A page cannot gain a forgotten row's copy after the forget: the
        rows are gone and a freed page is zeroed (``secure_delete``).  Where pages cannot be told by
        their first byte (``auto_vacuum``, 2**24 pages and more) the write transaction reads them all."""
        pages: list[int] | None = None
        if self.path != ":memory:":
            try:
                with closing(self._snapshot()) as reader:
                    pages = pages_to_zero(reader)
            except Exception as e:  # noqa: BLE001 - the write transaction below reads them all instead
                log.debug("%s: pages to zero not read in a snapshot (%s)", self.path, e)
        with self._lock:
            try:
                with self._connect_for_write(""):  # the forget's commit took the sweep flag: no sweep again
                    if self._zero_free_space(pages):
                        self._db.execute("DELETE FROM chronomem_meta WHERE key = ?", (UNSWEPT_KEY,))
            except StoreError as e:  # the forget stands; its mark makes the next open zero
                log.warning("%s: the unused space of its pages could not be zeroed (%s); the next forget or "
                            "open zeroes it", self.path, e)
                return
            try:
                self._checkpoint_after_delete()
            except sqlite3.Error as e:  # committed: the next delete or close checkpoints again
                self._scrub_wal = True
                log.warning("%s: the WAL could not be truncated after a delete (%s); forgotten data "
                            "stays in %s-wal until the next checkpoint", self.path, e, self.path)

    def _zero_free_space(self, pages: list[int] | None = None) -> bool:
        """Zero the unused space of ``pages`` (default: of every page; :mod:`chronomem.store.free_space`),
        in this transaction; whether it was done.

        A failure is logged and the transaction goes on: what was deleted stays deleted (its rows zeroed
        where they lay), and the next forget, or the next open, zeroes again."""
        if self.path == ":memory:":
            return True
        started = time.perf_counter()
        try:
            written = zero_free_space(self._db) if pages is None else zero_pages(self._db, pages)
        except Exception as e:  # noqa: BLE001 - the delete itself must not fail for it
            log.warning("%s: the unused space of its pages could not be zeroed (%s); older copies of deleted "
                        "rows may stay in the file until the next forget", self.path, e)
            return False
        log.debug("%s: zeroed the unused space of %d pages in %.0f ms", self.path, written,
                  1000 * (time.perf_counter() - started))
        return True

    def _checkpoint_after_delete(self) -> None:
        """Copy the WAL into the file and truncate it, so forgotten bytes live on in neither.

        Deleted rows are zeroed in the pages (``secure_delete``), but the WAL still holds
        the older images of those pages until a checkpoint; ``TRUNCATE`` writes them back
        and empties the WAL.  It cannot finish while another connection reads an older
        snapshot; it waits for such readers at most :data:`CHECKPOINT_WAIT_MS`, and if they
        are still reading, the next delete (or closing the last connection) finishes it.
        """
        self._scrub_wal = False
        if self.path == ":memory:":
            return
        self._db.execute(f"PRAGMA busy_timeout = {CHECKPOINT_WAIT_MS}")
        try:
            busy, _, _ = self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        finally:
            self._db.execute(f"PRAGMA busy_timeout = {self._busy_ms}")
        if busy:
            log.warning("%s: the WAL could not be truncated after a delete (a reader is active); "
                        "forgotten data stays in %s-wal until the next checkpoint", self.path, self.path)

    # forgetting: the deletes below flag their transaction for the sweep (_sweep_after_forget) once it
    # commits; the flag is set inside the transaction, so no other thread's commit can take it first
    def delete_facts(self, user_id: str, ids: Sequence[str]) -> int:
        with self.transaction(user_id):
            self._scrub_wal = True
            return super().delete_facts(user_id, ids)

    def delete_session(self, user_id: str, session_id: str) -> list[str]:
        with self.transaction(user_id):
            self._scrub_wal = True
            return super().delete_session(user_id, session_id)

    def delete_orphan_entities(self, user_id: str) -> int:
        with self.transaction(user_id):
            self._scrub_wal = True
            return super().delete_orphan_entities(user_id)

    def delete_user(self, user_id: str) -> None:
        with self.transaction(user_id):
            self._scrub_wal = True
            super().delete_user(user_id)
            self._exec(user_id, "DELETE FROM user_blocks WHERE user_id = ?", (user_id,))

    def delete_checkpoints(self, user_id: str, from_seq: int = 0) -> int:
        with self.transaction(user_id):
            self._scrub_wal = True
            return super().delete_checkpoints(user_id, from_seq)

    @contextmanager
    def _connect_for_read(self) -> Iterator[Any]:
        with self._lock:
            try:
                yield self._db
            except (sqlite3.Error, UnicodeEncodeError) as e:  # never a raw driver error to callers
                raise StoreError(f"SQLite read failed on {self.path}: {e}") from e

    def _snapshot(self) -> Any:
        """A connection of its own to the file, in a read transaction: under WAL it sees the file as its
        first read finds it while the store's connection goes on serving (and writing) for every other
        caller.  Close it to end the transaction."""
        conn = _connect(self.path, self._busy_ms / 1000)
        try:
            conn.execute("PRAGMA query_only = ON")
            conn.execute("BEGIN")
        except BaseException:
            conn.close()
            raise
        return conn

    def iter_user(self, user_id: str, *, batch: int = DUMP_BATCH) -> UserRows:
        """The user's rows read in one read transaction on a connection of the dump's own: under WAL it
        sees the file as it was at its first read while the store's connection goes on serving (and
        writing) for every other caller; the base class's way held the store's one connection, and its
        write lock, for the whole dump (two seconds for a user of 15,000 facts).  An in-memory store has
        no second connection to it: it dumps the base class's way."""
        if self.path == ":memory:":
            yield from super().iter_user(user_id, batch=batch)
            return
        try:
            conn = self._snapshot()
        except sqlite3.Error as e:
            raise StoreError(f"cannot open a read transaction on {self.path}: {e}") from e

        def read(sql: str, params: Sequence[Any] = ()) -> list[Any]:
            try:
                return conn.execute(self._q(sql), params).fetchall()
            except (sqlite3.Error, UnicodeEncodeError) as e:  # never a raw driver error to callers
                raise StoreError(f"SQLite read failed on {self.path}: {e}") from e

        try:
            yield from self._user_rows(read, user_id, batch)
        finally:
            conn.close()  # ends the read transaction

    def _fts(self, conn: Any, table: str, user_id: str, query: str, limit: int) -> list[tuple[str, float]]:
        """FTS5's bm25 over the user's rows alone (:func:`.fulltext.bm25_ranking`): for each word, the rows
        of the user's block that hold it, how many times each does and its length (:meth:`_word_in_rows`);
        the row and token counts are the block's (``user_blocks``, migration 0015).  A user whose rows are
        all the table holds is ranked by FTS5's own bm25, the same ranking in one query.  The user_id test
        on the ranked rows stays the rule of who sees what."""
        words = query_words(query)
        if not words:
            return []
        with _read_transaction(conn):
            counts = conn.execute(f"SELECT block, {table}_rows, {table}_tokens FROM user_blocks WHERE user_id = ?",
                                  (user_id,)).fetchone()
            if counts is None or not counts[1]:  # the user has no rows in this table
                return []
            block, rows, tokens = counts
            span = _block_range(block)
            # FTS5's averages record (the rows of the whole table first) tells the user's share of the rows
            averages = conn.execute(f"SELECT block FROM {table}_fts_data WHERE id = 1").fetchone()
            in_table = varints(averages[0])[0] if averages else 0
            if rows == in_table and FTS5_RANKS_A_LONE_USER:  # the table is this user's: FTS5's bm25 is the user's
                return [(i, -float(score)) for i, score in conn.execute(  # FTS5's bm25 is lower-is-better
                    f"SELECT t.id, bm25({table}_fts) AS score FROM {table}_fts JOIN {table} t "
                    f"ON t.rowid = {table}_fts.rowid WHERE {table}_fts MATCH ? AND {table}_fts.rowid BETWEEN ? "
                    "AND ? AND t.user_id = ? ORDER BY score LIMIT ?",
                    (_fts_query(query), *span, user_id, limit))]
            share = rows / max(rows, in_table)
            hits = [self._word_in_rows(conn, table, word, word_tokens, span, share)
                    for word, word_tokens in self._terms.tokens(words).items()]
            ranked = bm25_ranking(rows, tokens, hits, limit)
            if not ranked:
                return []
            ids: dict[int, str] = {}
            for chunk in chunks([r for r, _ in ranked], 500):
                ids.update(conn.execute(f"SELECT rowid, id FROM {table} WHERE rowid IN ({','.join('?' * len(chunk))}) "
                                        "AND user_id = ?", (*chunk, user_id)).fetchall())
        return [(ids[rowid], score) for rowid, score in ranked if rowid in ids]

    def _word_in_rows(self, conn: Any, table: str, word: str, tokens: tuple[str, ...], block: tuple[int, int],
                      share: float) -> list[tuple[int, int, int]]:
        """Each row of the block that holds ``word`` (its ``tokens``): its rowid, how many times it does, all
        columns together, and its tokens (from FTS5's docsize table).

        A one-token word is read from the index itself (fts5vocab's instances of the token, every user's,
        the block's kept) when the file holds it at most :data:`INSTANCES_PER_HIT` times the rows the user
        is expected to have of it (its rows in the file times the user's ``share`` of the table's rows, one
        at least): in a file of one user or few, always.  Otherwise FTS5 reads each of the user's rows that
        hold it again and marks the word in it (``highlight``), which costs the user's rows alone, a few µs
        each."""
        if not tokens:  # no token (say "__"): the phrase matches no row
            return []
        if len(tokens) == 1:
            in_file = conn.execute(f"SELECT doc, cnt FROM temp.{table}_fts_terms WHERE term = ?", tokens).fetchone()
            if in_file is None:
                return []
            if in_file[1] <= INSTANCES_PER_HIT * max(1.0, in_file[0] * share):
                return [(rowid, n, varint_sum(size)) for rowid, n, size in conn.execute(
                    f"SELECT v.doc, count(*), d.sz FROM temp.{table}_fts_instances v "
                    f"JOIN {table}_fts_docsize d ON d.id = v.doc "
                    "WHERE v.term = ? AND v.doc BETWEEN ? AND ? GROUP BY v.doc", (tokens[0], *block))]
        return [(rowid, n, varint_sum(size)) for rowid, n, size in conn.execute(
            f"SELECT f.rowid, {_INSTANCES[table]}, d.sz FROM {table}_fts f JOIN {table}_fts_docsize d "
            f"ON d.id = f.rowid WHERE {table}_fts MATCH ? AND f.rowid BETWEEN ? AND ?", (f'"{word}"', *block))]

    def _row_ids(self, user_id: str, table: str, n: int) -> list[int] | None:
        """The next ``n`` rowids of the user's block in ``table`` (facts or messages: the tables the
        full-text indexes follow; the database chooses for the others), the block given on the user's
        first row."""
        if table not in BLOCKED_TABLES:
            return None
        with self._conn(user_id, write=True) as c:
            block = _block_of(c, user_id)
            if block is None:
                block = _block_range(c.execute("INSERT INTO user_blocks (user_id, block) SELECT ?, "
                                               "COALESCE(MAX(block), 0) + 1 FROM user_blocks RETURNING block",
                                               (user_id,)).fetchone()[0])
            low, high = block
            top = _last_rowid(c, table, low, high)
        start = (low if top is None else top) + 1
        if start + n - 1 > high:
            raise StoreError(f"{self.path}: user {user_id!r} has no rowids left for {n} more {table} rows")
        return list(range(start, start + n))

    def _vec_param(self, vector: Sequence[float]) -> bytes:
        return struct.pack(f"{len(vector)}f", *vector)

    def _vec_from_db(self, value: Any) -> list[float]:
        return list(struct.unpack(f"{len(value) // 4}f", value))

    def _knn(self, conn: Any, user_id: str, kind: str, vector: Sequence[float], k: int,
             model: str | None) -> list[tuple[str, float]]:
        sql_model = " AND model = ?" if model else ""
        params: list[Any] = [user_id, kind, len(vector)] + ([model] if model else [])
        if self._vec:
            # sqlite-vec computes in float32: the question's vector goes in at unit length (a cosine does not
            # depend on it; 1e-30 squared is 0 in float32), and a distance it cannot give (NULL for a vector
            # of zeros, which has no direction; inf or NaN past float32's range) is similarity 0, as in
            # store.vectors
            unit = unit_vector(vector)
            rows = conn.execute(
                f"SELECT item_id, COALESCE(vec_distance_cosine(vec, ?), 1.0) AS d FROM vectors "
                f"WHERE user_id = ? AND kind = ? AND dim = ?{sql_model} ORDER BY d LIMIT ?",
                (self._vec_param(unit), *params, k)).fetchall()
            return [(r[0], 1.0 - d if math.isfinite(d := float(r[1])) else 0.0) for r in rows]
        rows = conn.execute(f"SELECT item_id, vec FROM vectors WHERE user_id = ? AND kind = ? "
                            f"AND dim = ?{sql_model}", params).fetchall()
        return exact_knn(rows, vector, k)  # when the extension is unavailable

    def insert_facts(self, user_id: str, facts: Sequence[Fact]) -> None:
        if facts:
            with self._indexing_new_facts(user_id):
                super().insert_facts(user_id, facts)

    def load_user(self, user_id: str, rows: dict[str, list[dict[str, Any]]]) -> dict[str, int]:
        with self._indexing_new_facts(user_id):
            return super().load_user(user_id, rows)

    @contextmanager
    def _indexing_new_facts(self, user_id: str) -> Iterator[None]:
        """Add the facts inserted inside the block to the full-text index, in one statement, and to
        their block's counts (the ranking's statistics, migration 0015).

        Every path that inserts facts must go through this: the index has no
        insert trigger (see migration 0002), and deleting a fact that was never
        indexed would corrupt it.  One writer at a time, so the new rows are
        exactly those above the old maximum rowid of the user's block (and, had
        a row been given no rowid of the block, those above the old maximum of
        the table).
        """
        with self._conn(user_id, write=True) as c:
            low, high = _block_of(c, user_id) or (0, -1)
            top = c.execute("SELECT COALESCE(MAX(rowid), 0) FROM facts").fetchone()[0]
            in_block = _last_rowid(c, "facts", low, high)
            yield
            if high < 0:  # the block given by the inserts
                low, high = _block_of(c, user_id) or (0, -1)
            new = (max(low, (in_block or 0) + 1), high, top)
            c.execute("INSERT INTO facts_fts (rowid, fts_text) SELECT rowid, chronomem_cjk_bigrams(fts_text) "
                      "FROM facts WHERE rowid BETWEEN ? AND ? OR rowid > ?", new)
            # and count them in their blocks' statistics, as the delete and update triggers do (0015)
            c.execute("UPDATE user_blocks SET facts_rows = facts_rows + s.n, facts_tokens = facts_tokens + s.tokens "
                      "FROM (SELECT id >> 32 AS block, count(*) AS n, sum(tokens) AS tokens FROM facts_fts_lengths "
                      "WHERE id BETWEEN ? AND ? OR id > ? GROUP BY 1) AS s WHERE user_blocks.block = s.block", new)

    def close(self) -> None:
        with self._lock:
            self._safe_close()
            if hasattr(self, "_terms"):
                self._terms.close()


class QueryTerms:
    """Each query word's tokens as the full-text indexes make them (``porter unicode61``, as migrations
    0007 and 0015 declare both), from an FTS5 table of its own in memory; remembered, up to ``size``."""

    def __init__(self, size: int = 4096) -> None:
        self._db = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        self._db.execute("CREATE VIRTUAL TABLE words USING fts5 (word, tokenize='porter unicode61')")
        self._db.execute("CREATE VIRTUAL TABLE words_tokens USING fts5vocab(words, instance)")
        self._known: dict[str, tuple[str, ...]] = {}
        self._size = size
        self._lock = threading.Lock()

    def tokens(self, words: Sequence[str]) -> dict[str, tuple[str, ...]]:
        with self._lock:
            new = [w for w in dict.fromkeys(words) if w not in self._known]
            if new:
                self._db.execute("DELETE FROM words")
                self._db.executemany("INSERT INTO words (rowid, word) VALUES (?, ?)", enumerate(new))
                found: dict[int, list[str]] = {i: [] for i in range(len(new))}
                for n, term in self._db.execute("SELECT doc, term FROM words_tokens ORDER BY doc, offset"):
                    found[n].append(term)
                if len(self._known) + len(new) > self._size:
                    self._known.clear()
                self._known.update((w, tuple(found[i])) for i, w in enumerate(new))
            return {w: self._known[w] for w in words}

    def close(self) -> None:
        self._db.close()


def _block_range(block: int) -> tuple[int, int]:
    """The first and last rowid of a user's block."""
    return block * BLOCK_ROWS, (block + 1) * BLOCK_ROWS - 1


def _block_of(conn: Any, user_id: str) -> tuple[int, int] | None:
    """The first and last rowid of the user's block (None: the user was given none yet)."""
    row = conn.execute("SELECT block FROM user_blocks WHERE user_id = ?", (user_id,)).fetchone()
    return None if row is None else _block_range(row[0])


def _last_rowid(conn: Any, table: str, low: int, high: int) -> int | None:
    """The highest rowid of ``table`` between ``low`` and ``high`` (None: no row there)."""
    row = conn.execute(f"SELECT rowid FROM {table} WHERE rowid BETWEEN ? AND ? ORDER BY rowid DESC LIMIT 1",
                       (low, high)).fetchone()
    return None if row is None else int(row[0])


def _split_sql(script: str) -> list[str]:
    """Split a migration into statements, keeping trigger bodies whole."""
    stmts, buf, depth = [], [], 0
    for line in script.splitlines():
        stripped = line.strip()
        if stripped.startswith("--") or not stripped:
            continue
        buf.append(line)
        upper = stripped.upper()
        if upper.startswith("CREATE TRIGGER"):
            depth += 1
        if stripped.endswith(";"):
            if depth and upper.startswith("END;"):
                depth -= 1
            if not depth:
                stmts.append("\n".join(buf))
                buf = []
    if buf:
        stmts.append("\n".join(buf))
    return stmts
