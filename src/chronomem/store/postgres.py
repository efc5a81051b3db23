"""The PostgreSQL store: many API workers over one database.

Selected by URL: ``Memory("postgresql://user@host:5432/db")``.  The query
layer is :class:`~chronomem.store.sql.SQLStore`, shared with SQLite; this
module supplies only the dialect: a psycopg 3 connection pool, per-user write
locks, full-text search and vector search.

Layout and options
    chronomem keeps its tables in a dedicated schema, ``chronomem`` by default,
    so it can live in a database that holds other applications' tables.  Pick
    another schema with the URL option ``?schema=NAME`` (letters, digits and
    ``_``; e.g. one schema per tenant or per test run).  Other URL options:
    ``pool_size=N`` (connections per process, default 8), ``hnsw_ef_search=N``
    (default 100) and ``vector_index=off`` (pgvector storage, but always exact
    per-user k-NN: see BENCHMARKS.md for HNSW recall with a user filter); every
    other query parameter goes to libpq unchanged.  A schema that exists
    and has tables but no ``chronomem_meta`` is refused
    (:class:`~chronomem.errors.CorruptDatabaseError`), like a foreign SQLite file.

Migrations
    Versioned SQL files in ``migrations/postgres/``; applied on open inside one
    transaction holding a database-wide advisory lock, so several workers may
    start at once: the first migrates, the others wait and find it done.

Writes
    Every write runs in a transaction that first takes
    ``pg_advisory_xact_lock(hashtextextended(user_id, 0))``: writers of the same
    user serialise (the graph writer reads a slot's facts, then writes), writers
    of different users run in parallel.  Readers never block.

Forgetting
    ``forget`` deletes the rows (and with them their ``tsvector`` columns and index
    entries) in one transaction, so no query can return them.  What PostgreSQL does
    *not* promise is that the bytes are gone from disk: a DELETE marks tuples dead;
    (auto)VACUUM later makes their space reusable but does not overwrite it, so the
    old text can stay readable in the table and index files until reused; ``VACUUM
    FULL`` writes a fresh copy and unlinks the old files, without scrubbing them; and
    the write-ahead log (and any WAL archive, replica or backup) keeps the deleted
    values until it is recycled.  A deployment that must erase data physically needs
    storage-level measures (encrypted volumes with key rotation, WAL/backup
    retention); chronomem guarantees byte-level removal only for SQLite files.

Full-text search
    The ``tsvector`` columns index text folded by ``chronomem_fts_text``
    (migration 0010) as SQLite's FTS5 ``unicode61`` folds it: split at every
    separator (inside e-mail addresses, URLs, paths, dotted words), diacritics
    dropped from Latin letters; query words are folded by the same function.

Vectors
    With the ``pgvector`` extension (created on first migration if the server
    has it and the role may) vectors are ``vector`` values and each embedding
    dimension gets a partial HNSW index (cosine) on first use; queries filter by
    user and let the planner choose between that index (with pgvector 0.8's
    iterative scans, so the ``user_id`` filter keeps recall) and an exact scan of
    the user's rows.  With pgvector older than 0.8 (Ubuntu 24.04 ships 0.6)
    queries always scan the user's rows exactly: a filtered HNSW scan without
    iterative scans can return fewer than k rows.  Without pgvector vectors are
    float32 ``bytea`` and k-NN is an exact per-user scan in numpy — per-user
    memories are small.  Which one a database uses is recorded in
    ``chronomem_meta`` (``vector_backend``) and fixed at creation;
    :attr:`PostgresStore.has_vector_index` tells callers.
"""

from __future__ import annotations

import logging
import re
import struct
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import numpy as np
import psycopg
from psycopg_pool import ConnectionPool, PoolTimeout

from ..errors import ConfigError, CorruptDatabaseError, StoreError
from ..timeutil import to_micros, utcnow
from .fulltext import query_words
from .base import DUMP_BATCH, UserRows
from .sql import APP_KEY, APP_NAME, SCHEMA_VERSION_KEY, SQLStore, schema_version
from .vectors import exact_knn

log = logging.getLogger(__name__)

DEFAULT_SCHEMA = "chronomem"
VECTOR_BACKEND_KEY = "vector_backend"
PGVECTOR = "pgvector"
BYTEA = "bytea"
MIGRATION_LOCK = "chronomem.migrate"  # advisory-lock key (hashed) shared by every schema of a database
VECTOR_INDEX_LOCK = "chronomem.vector_index"
HNSW_MAX_DIM = 2000  # pgvector's limit for indexing `vector`
#: The HNSW index is used only from this pgvector version on: without iterative scans a filtered
#: index scan returns fewer than k rows when the user's vectors are a small share of the table.
ITERATIVE_SCAN_VERSION = (0, 8)
_SCHEMA_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")


_SECRET_PARAMS = frozenset({"password", "sslpassword"})


def redact(url: str) -> str:
    """The URL without its passwords (in the user part, or as libpq's ``password`` / ``sslpassword``
    query parameters), for messages and logs."""
    parts = urlsplit(url)
    if parts.password:
        parts = parts._replace(netloc=parts.netloc.replace(f":{parts.password}@", ":***@", 1))
    if parts.query:
        pairs = [p.split("=", 1) for p in parts.query.split("&")]
        parts = parts._replace(query="&".join(
            f"{p[0]}=***" if p[0].lower() in _SECRET_PARAMS and len(p) == 2 else "=".join(p) for p in pairs))
    return urlunsplit(parts)


OWN_OPTIONS = ("schema", "pool_size", "hnsw_ef_search", "vector_index")  # URL query options chronomem consumes


def url_options(url: str) -> tuple[str, dict[str, str]]:
    """Split chronomem's own query options (``schema``, ``pool_size``, ``hnsw_ef_search``) off a
    libpq URL: ``(conninfo, options)``; everything else is left for libpq."""
    parts = urlsplit(url)
    if parts.scheme not in ("postgresql", "postgres"):
        raise ConfigError(f"not a PostgreSQL URL: {redact(url)!r}")
    own: dict[str, str] = {}
    rest = []
    for k, v in parse_qsl(parts.query, keep_blank_values=True):
        (own.__setitem__(k, v) if k in OWN_OPTIONS else rest.append((k, v)))
    return urlunsplit(parts._replace(query=urlencode(rest))), own


def split_url(url: str) -> tuple[str, str]:
    """Split chronomem's options off a libpq URL: ``(conninfo, schema)``."""
    conninfo, own = url_options(url)
    schema = own.get("schema", DEFAULT_SCHEMA)
    if not _SCHEMA_RE.match(schema):
        raise ConfigError(f"invalid schema {schema!r} in {redact(url)!r}: use letters, digits and _ "
                          "(at most 63 characters, not starting with a digit)")
    return conninfo, schema


def _int_option(own: dict[str, str], key: str, default: int, url: str) -> int:
    try:
        return int(own[key]) if key in own else default
    except ValueError:
        raise ConfigError(f"{key}={own[key]!r} in {redact(url)!r} must be an integer") from None


FTS_OWN_ROWS = 5000
"""A user with fewer rows in a table than this has its full-text searches read its own rows (:meth:`_fts`)."""

LONG_PARAMETER_LIST = 64
"""More parameters than this and a statement is planned for its values every time (:class:`_Conn`)."""


class _Conn:
    """The DB-API surface :class:`SQLStore` uses (``execute``/``executemany``) over a psycopg connection."""

    __slots__ = ("raw",)

    def __init__(self, raw: psycopg.Connection[Any]) -> None:
        self.raw = raw

    def execute(self, sql: str, params: Sequence[Any] = (), *, own_plan: bool = False) -> psycopg.Cursor[Any]:
        # ``own_plan``: planned for its values every time, never prepared.
        # A statement with a long IN list is never prepared.  psycopg prepares a statement run five
        # times; PostgreSQL then moves to a generic plan, in which ``IN ($1, …, $2000)`` is searched
        # item by item for every row instead of through a hash of the constants: reading the facts
        # touching 2,000 entities of a 30,000-fact user went from 0.013 s to 2.7 s a chunk.
        own_plan = own_plan or len(params) > LONG_PARAMETER_LIST
        return self.raw.execute(sql, params, prepare=False if own_plan else None)

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        with self.raw.cursor() as cur:
            cur.executemany(sql, rows)


def _version_tuple(version: str | None) -> tuple[int, ...]:
    """``"0.8.1"`` → ``(0, 8, 1)``; ``None`` or junk → ``()`` (older than any version)."""
    parts = []
    for p in (version or "").split("."):
        m = re.match(r"\d+", p)
        if m is None:
            break
        parts.append(int(m.group()))
    return tuple(parts)


def _ts_query(text: str) -> list[str]:
    """Free text → its content words (:mod:`.fulltext`), for ``chronomem_fts_query`` (migration 0010), which
    folds each as the index folds its text and reads it as plain text, never as tsquery syntax."""
    return query_words(text)


class PostgresStore(SQLStore):
    """PostgreSQL implementation of :class:`~chronomem.store.base.Store`.

    ``url`` is a libpq URL plus the optional query options ``schema``, ``pool_size`` and
    ``hnsw_ef_search`` (URL options win over the keyword arguments); ``pool_size`` bounds the connections this process opens; ``hnsw_ef_search``
    is pgvector's search breadth when a query uses the HNSW index (recall vs. speed;
    pgvector's default is 40).
    """

    param = "%s"

    def __init__(self, url: str, *, pool_size: int = 8, connect_timeout_s: float = 30.0,
                 hnsw_ef_search: int = 100) -> None:
        super().__init__()
        own = url_options(url)[1]
        pool_size = _int_option(own, "pool_size", pool_size, url)
        hnsw_ef_search = _int_option(own, "hnsw_ef_search", hnsw_ef_search, url)
        if own.get("vector_index", "on") not in ("on", "off"):
            raise ConfigError(f"vector_index={own['vector_index']!r} in {redact(url)!r}: use on or off")
        self.use_vector_index = own.get("vector_index", "on") == "on"
        if pool_size < 1:
            raise ConfigError(f"pool_size must be at least 1, got {pool_size}")
        if not 1 <= hnsw_ef_search <= 1000:
            raise ConfigError(f"hnsw_ef_search must be between 1 and 1000, got {hnsw_ef_search}")
        self.url = url
        self._conninfo, self.schema = split_url(url)
        self._known_dims: set[int] = set()
        self.vector_backend = BYTEA
        self.extension_schema: str | None = None
        self.vector_extension_version: str | None = None
        try:
            self._migrate(connect_timeout_s)
        except psycopg.OperationalError as e:
            raise StoreError(f"cannot connect to PostgreSQL at {redact(url)}: {e}".strip()) from e
        wants_index = self.vector_backend == PGVECTOR and self.use_vector_index
        iterative = _version_tuple(self.vector_extension_version) >= ITERATIVE_SCAN_VERSION
        if wants_index and not iterative:
            log.info("pgvector %s has no iterative index scans (%s+): k-NN on %s is an exact per-user scan",
                     self.vector_extension_version, ".".join(map(str, ITERATIVE_SCAN_VERSION)), redact(url))
        self.has_vector_index = wants_index and iterative
        path = f'"{self.schema}"' + (f',"{self.extension_schema}"' if self.extension_schema
                                     and self.extension_schema != self.schema else "")
        options = f"-c search_path={path}"  # no spaces: libpq splits options on whitespace
        if self.has_vector_index:
            options += f" -c hnsw.iterative_scan=relaxed_order -c hnsw.ef_search={int(hnsw_ef_search)}"
        # check: a pooled connection the server has closed (restart, failover, pg_terminate_backend) is
        # replaced on checkout, not handed to a write that then fails and fails its job for good
        self._pool = ConnectionPool(self._conninfo, min_size=1, max_size=pool_size, open=False,
                                    kwargs={"autocommit": True, "options": options},
                                    timeout=connect_timeout_s, name=f"chronomem:{self.schema}",
                                    check=ConnectionPool.check_connection)
        try:
            self._pool.open(wait=True, timeout=connect_timeout_s)
        except PoolTimeout as e:
            self._pool.close()
            raise StoreError(f"cannot open a connection pool to {redact(url)}: {e}") from e

    # -- migrations ----------------------------------------------------------------------
    def _migrate(self, timeout_s: float) -> None:
        with psycopg.connect(self._conninfo, autocommit=True, connect_timeout=max(1, int(timeout_s))) as conn:
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (MIGRATION_LOCK,))
                self._migrate_locked(conn)

    def _migrate_locked(self, conn: psycopg.Connection[Any]) -> None:
        s = self.schema
        where = f"schema {s!r} of {redact(self.url)}"
        tables = {r[0] for r in conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = %s", (s,))}
        if tables and "chronomem_meta" not in tables:
            raise CorruptDatabaseError(
                f"{where} holds tables that are not chronomem's ({sorted(tables)[:5]}); refusing to touch "
                "it — choose another schema with ?schema=NAME")
        meta = dict(conn.execute(f'SELECT key, value FROM "{s}".chronomem_meta').fetchall()) \
            if tables else None
        current, migrations = schema_version(meta, where, "postgres")
        if current == 0 or meta is None:  # no meta table is version 0
            conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{s}"')
            self.vector_backend = PGVECTOR if self._create_vector_extension(conn) else BYTEA
        else:
            self.vector_backend = meta.get(VECTOR_BACKEND_KEY, BYTEA)
        self.extension_schema, self.vector_extension_version = self._vector_extension(conn) or (None, None)
        if self.vector_backend == PGVECTOR and self.extension_schema is None:
            raise StoreError(f"{where} stores vectors with pgvector, but the server has no 'vector' "
                             "extension installed in this database any more")
        path = f'"{s}"' + (f', "{self.extension_schema}"' if self.extension_schema else "")
        conn.execute(f"SET LOCAL search_path = {path}")
        for version, sql in migrations:
            if version <= current:
                continue
            log.info("migrating %s to schema version %d", where, version)
            vec_type = "vector" if self.vector_backend == PGVECTOR else "bytea"
            conn.execute(sql.replace("@VECTOR_TYPE@", vec_type))
            upsert = ("INSERT INTO chronomem_meta (key, value) VALUES (%s, %s) "
                      "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value")
            for k, v in ((APP_KEY, APP_NAME), (SCHEMA_VERSION_KEY, str(version)),
                         (f"migrated_{version}", str(to_micros(utcnow()))),
                         (VECTOR_BACKEND_KEY, self.vector_backend)):
                conn.execute(upsert, (k, v))

    def _create_vector_extension(self, conn: psycopg.Connection[Any]) -> bool:
        """Try ``CREATE EXTENSION vector`` (in ``public`` when it exists, so dropping our schema
        never drops the extension other schemas use); False when the server lacks it or we may not."""
        if self._vector_extension(conn) is not None:
            return True
        has_public = conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = 'public'").fetchone()
        target = "public" if has_public else self.schema
        try:
            with conn.transaction():  # a savepoint: failure leaves the migration usable
                conn.execute(f'CREATE EXTENSION IF NOT EXISTS vector SCHEMA "{target}"')
        except psycopg.Error as e:
            log.info("pgvector is not available on this server (%s); using exact per-user k-NN",
                     str(e).strip().splitlines()[0])
            return False
        return True

    @staticmethod
    def _vector_extension(conn: psycopg.Connection[Any]) -> tuple[str, str] | None:
        """The schema and version of the installed ``vector`` extension; None without it."""
        row = conn.execute("SELECT n.nspname, e.extversion FROM pg_extension e JOIN pg_namespace n "
                           "ON n.oid = e.extnamespace WHERE e.extname = 'vector'").fetchone()
        return None if row is None else (str(row[0]), str(row[1]))

    def schema_version(self) -> int:
        rows = self._all("SELECT value FROM chronomem_meta WHERE key = ?", (SCHEMA_VERSION_KEY,))
        return int(rows[0][0]) if rows else 0

    def meta(self) -> dict[str, str]:
        return dict(self._all("SELECT key, value FROM chronomem_meta"))

    # -- dialect hooks ---------------------------------------------------------------------
    @contextmanager
    def _connection(self) -> Iterator[psycopg.Connection[Any]]:
        try:
            with self._pool.connection() as raw:
                yield raw
        except PoolTimeout as e:
            raise StoreError(f"no PostgreSQL connection available from {redact(self.url)}: {e}") from e

    @contextmanager
    def _connect_for_write(self, user_id: str) -> Iterator[Any]:
        with self._connection() as raw:
            try:
                with raw.transaction():
                    raw.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (user_id,))
                    yield _Conn(raw)
            except psycopg.DataError as e:
                raise StoreError(f"PostgreSQL rejected a value: {str(e).strip()}") from e
            except (psycopg.Error, UnicodeEncodeError) as e:  # never a raw driver error to callers
                raise StoreError(f"PostgreSQL write failed on {redact(self.url)}: {str(e).strip()}") from e

    def iter_user(self, user_id: str, *, batch: int = DUMP_BATCH) -> UserRows:
        """The user's rows read in one REPEATABLE READ, READ ONLY transaction on a pooled connection of the
        dump's own: one snapshot, taken at its first read, while the user's writers go on (the base class's
        way held the user's write lock for the whole dump)."""
        with self._connection() as raw:
            try:
                with raw.transaction():
                    raw.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                    conn = _Conn(raw)

                    def read(sql: str, params: Sequence[Any] = ()) -> list[Any]:
                        return conn.execute(self._q(sql), params).fetchall()

                    yield from self._user_rows(read, user_id, batch)
            except (psycopg.Error, UnicodeEncodeError) as e:  # never a raw driver error to callers
                raise StoreError(f"PostgreSQL read failed on {redact(self.url)}: {str(e).strip()}") from e

    def _relax_commit(self) -> None:
        self._local.conn.execute("SET LOCAL synchronous_commit TO OFF")

    @contextmanager
    def _connect_for_read(self) -> Iterator[Any]:
        with self._connection() as raw:
            try:
                yield _Conn(raw)
            except (psycopg.Error, UnicodeEncodeError) as e:  # never a raw driver error to callers
                raise StoreError(f"PostgreSQL read failed on {redact(self.url)}: {str(e).strip()}") from e

    def _fts(self, conn: Any, table: str, user_id: str, query: str, limit: int) -> list[tuple[str, float]]:
        q = _ts_query(query)
        if not q:
            return []
        # A user of few rows is searched through its own rows: matched by the function behind ``@@``, which
        # no index serves, so the planner cannot take the GIN index instead.  The GIN index holds every
        # user's rows: read for a common word (or with a long pending list) it cost 2-4 ms where the user's
        # 1,000 rows take 0.6.  A larger user keeps the operator and a plan made for it (own_plan: a
        # prepared statement's generic plan, made for no user, read the GIN index for everyone: 13 ms).
        few = conn.execute(f"SELECT COUNT(*) FROM (SELECT 1 FROM {table} WHERE user_id = %s LIMIT %s) AS s",
                           (user_id, FTS_OWN_ROWS)).fetchone()[0] < FTS_OWN_ROWS
        match = "ts_match_vq(tsv, q)" if few else "tsv @@ q"
        rows = conn.execute(
            f"SELECT id, ts_rank(tsv, q) AS score FROM {table}, chronomem_fts_query(%s::text[]) AS q "
            f"WHERE user_id = %s AND {match} ORDER BY score DESC, id LIMIT %s",
            (q, user_id, limit), own_plan=not few).fetchall()
        return [(r[0], float(r[1])) for r in rows]

    def _vec_param(self, vector: Sequence[float]) -> Any:
        if self.vector_backend == PGVECTOR:
            return "[" + ",".join(repr(float(x)) for x in np.asarray(vector, dtype=np.float32)) + "]"
        return np.asarray(vector, dtype="<f4").tobytes()

    def _vec_from_db(self, value: Any) -> list[float]:
        if self.vector_backend == PGVECTOR:
            # pgvector prints float4 in shortest form; go back through float32 so values equal
            # what SQLite (float32 blobs) returns and copies between stores are lossless
            text = value if isinstance(value, str) else str(value)
            return np.asarray([float(x) for x in text.strip("[]").split(",") if x],
                              dtype=np.float32).astype(float).tolist()
        return list(struct.unpack(f"<{len(value) // 4}f", bytes(value)))

    def _knn(self, conn: Any, user_id: str, kind: str, vector: Sequence[float], k: int,
             model: str | None) -> list[tuple[str, float]]:
        dim = len(vector)
        sql_model = " AND model = %s" if model else ""
        params: list[Any] = [user_id, kind] + ([model] if model else [])
        if self.vector_backend != PGVECTOR:
            rows = conn.execute(f"SELECT item_id, vec FROM vectors WHERE user_id = %s AND kind = %s "
                                f"AND dim = {dim}{sql_model}", params).fetchall()
            return exact_knn([(r[0], bytes(r[1])) for r in rows], vector, k)
        # the expression and the literal dim match the partial HNSW index of that dimension;
        # relaxed_order (set per connection) may return near-ordered rows: re-sort outside.
        # With vector_index=off the bare column does not match the index: always an exact scan.
        expr = f"vec::vector({dim})" if self.has_vector_index else "vec"
        rows = conn.execute(
            f"WITH c AS MATERIALIZED (SELECT item_id, {expr} <=> %s::vector({dim}) AS d "
            f"FROM vectors WHERE user_id = %s AND kind = %s AND dim = {dim}{sql_model} "
            f"ORDER BY d LIMIT %s) SELECT item_id, CASE WHEN d = 'NaN' THEN 1 ELSE d END AS d FROM c "
            f"ORDER BY 2, item_id",
            (self._vec_param(vector), *params, int(k))).fetchall()
        # pgvector's distance is NaN where a vector of zeros has no direction: similarity 0, as store.vectors
        # (it sorts NaN last, so when over k vectors are further than orthogonal one may be left out)
        return [(r[0], 1.0 - float(r[1])) for r in rows]

    def put_vectors(self, user_id: str, kind: str, items: Sequence[tuple[str, Sequence[float]]],
                    model: str) -> None:
        if not items:
            return
        with self.transaction(user_id):
            if self.has_vector_index:
                for dim in {len(v) for _, v in items} - self._known_dims:
                    self._ensure_vector_index(dim)
            super().put_vectors(user_id, kind, items, model)

    def _ensure_vector_index(self, dim: int) -> None:
        """Create the partial HNSW index for ``dim`` once (inside the current write transaction)."""
        if dim <= 0 or dim > HNSW_MAX_DIM:
            self._known_dims.add(dim)  # above pgvector's limit: exact scans for this dimension
            return
        name = f"vectors_hnsw_d{dim}"
        with self._conn() as c:
            if c.execute("SELECT to_regclass(%s)", (f'"{self.schema}".{name}',)).fetchone()[0] is None:
                c.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                          (f"{VECTOR_INDEX_LOCK}.{self.schema}",))
                log.info("creating HNSW index %s for %d-d vectors", name, dim)
                c.execute(f"CREATE INDEX IF NOT EXISTS {name} ON vectors USING hnsw "
                          f"((vec::vector({dim})) vector_cosine_ops) WHERE dim = {dim}")
        self._known_dims.add(dim)

    # -- maintenance ---------------------------------------------------------------------------
    def drop_schema(self) -> None:
        """Drop chronomem's schema and everything in it (tests and ``copy --replace``); irreversible."""
        with self._connection() as raw:
            raw.execute(f'DROP SCHEMA IF EXISTS "{self.schema}" CASCADE')

    def close(self) -> None:
        self._pool.close()
