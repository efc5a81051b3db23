"""On-disk caches for model calls: chat responses and embeddings, in one SQLite file.

The file is SQLite through ``sqlean`` (the project's drop-in ``sqlite3``) in
WAL mode with a busy timeout, so several processes — parallel benchmark
workers, say — can read and write it at once.  Each write (an entry and its
owner) is one transaction, so a crash never leaves half an entry.

- :class:`ResponseCache` maps a hash of (model name, messages, schema,
  max_tokens, temperature, stop and, only when any is set, the repetition
  penalties) to the reply text, the parsed data and the token counts of the
  original call.
- :class:`EmbeddingCache` maps (embedder name, sha256 of the text) to a
  float32 vector and records its dimension.

Entries written or read inside :func:`cache_owner` are tagged with that owner
(``Memory`` tags each call with its tenant and user), and ``purge_owner``
deletes every entry an owner touched, zeroing the freed pages
(``secure_delete``) and truncating the WAL: ``Memory.forget`` leaves no reply
or vector of a forgotten user in the cache.  Untagged entries (benchmarks)
are never purged.

A call still running when a purge happens (a worker's job extracting the
turns a ``forget`` then deletes) would write its reply after the purge.  So
each :func:`cache_owner` block remembers when it began, the file records when
it was last purged (of anyone: the file keeps no trace of whom), and a block
that began before that purge writes no reply or vector; it still reads, and
still tags an entry it reuses, so that forgetting its owner later finds it
(a block racing its own owner's forget may so leave a tag naming that owner
on another's entry; the next purge of that owner takes it).  A forget creates
a configured cache file that does not exist yet, to record its purge there.
The times compared are wall-clock (``time.time()``): a clock stepped back
past a purge lets a racing write through.

Default location: ``$CHRONOMEM_CACHE_DIR/model-cache.sqlite`` or
``~/.cache/chronomem/model-cache.sqlite``.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlean as sqlite3

from .base import Messages, Penalties

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    created_at REAL NOT NULL,
    text TEXT NOT NULL,
    data TEXT,
    prompt_tokens INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0,
    latency_s REAL NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS embeddings (
    model TEXT NOT NULL,
    text_hash TEXT NOT NULL,
    dim INTEGER NOT NULL,
    vec BLOB NOT NULL,
    PRIMARY KEY (model, text_hash)
);
CREATE TABLE IF NOT EXISTS response_owners (
    owner TEXT NOT NULL,
    key TEXT NOT NULL,
    PRIMARY KEY (owner, key)
);
CREATE TABLE IF NOT EXISTS last_purge (
    at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS embedding_owners (
    owner TEXT NOT NULL,
    model TEXT NOT NULL,
    text_hash TEXT NOT NULL,
    PRIMARY KEY (owner, model, text_hash)
);
"""

_OWNER: ContextVar[tuple[str, float] | None] = ContextVar("chronomem_cache_owner", default=None)


@contextmanager
def cache_owner(owner: str | None) -> Iterator[None]:
    """Tag the cache entries written or read inside the block (in this thread or task) with ``owner``;
    a purge that happens while the block runs ends its writes (see the module's doc)."""
    token = _OWNER.set(None if owner is None else (owner, time.time()))
    try:
        yield
    finally:
        _OWNER.reset(token)


def current_cache_owner() -> str | None:
    """The owner set by the innermost :func:`cache_owner` block, or None."""
    held = _OWNER.get()
    return None if held is None else held[0]


def owner_since() -> float | None:
    """When the innermost :func:`cache_owner` block with an owner began (``time.time()``), or None."""
    held = _OWNER.get()
    return None if held is None else held[1]


def default_cache_path() -> Path:
    base = os.environ.get("CHRONOMEM_CACHE_DIR")
    root = Path(base).expanduser() if base else Path.home() / ".cache" / "chronomem"
    return root / "model-cache.sqlite"


def cache_path(setting: str) -> Path:
    """The file a cache setting names: ``"default"`` (:func:`default_cache_path`) or a path."""
    return default_cache_path() if setting == "default" else Path(setting).expanduser()


class _SQLiteFile:
    """One connection per process and thread-safe use of it; reopened after fork."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(path) if path is not None else default_cache_path()
        self._lock = threading.Lock()
        self._conn: Any = None
        self._pid = -1

    def _connect(self) -> Any:
        if self._conn is None or self._pid != os.getpid():
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(str(self.path), timeout=30.0, check_same_thread=False, isolation_level=None)
            conn.execute("PRAGMA busy_timeout=30000")
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA secure_delete=ON")  # a purged entry's bytes are overwritten, not left free
            conn.executescript(_SCHEMA)
            self._conn, self._pid = conn, os.getpid()
        return self._conn

    def execute(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            return self._connect().execute(sql, params).fetchall()

    def executemany(self, sql: str, rows: list[tuple[Any, ...]]) -> None:
        self.write([(sql, rows)])

    def write(self, batches: list[tuple[str, list[tuple[Any, ...]]]], *, fenced: bool = True) -> list[int]:
        """Run each ``(sql, rows)`` in one transaction; returns the rows each changed.

        ``fenced``: inside a :func:`cache_owner` block that began before the file's last purge nothing is
        written (a call racing a forget); the check and the write are one transaction, so a purge comes
        before the write, and sees it, or after."""
        since = owner_since() if fenced else None
        with self._lock:
            conn = self._connect()
            conn.execute("BEGIN IMMEDIATE")
            try:
                if since is not None and since <= self._last_purge(conn):
                    conn.execute("COMMIT")
                    return [0] * len(batches)
                changed = []
                for sql, rows in batches:
                    before = conn.total_changes
                    conn.executemany(sql, rows)
                    changed.append(int(conn.total_changes - before))
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            return changed

    @staticmethod
    def _last_purge(conn: Any) -> float:
        row = conn.execute("SELECT max(at) FROM last_purge").fetchone()
        return float(row[0]) if row and row[0] is not None else float("-inf")

    def purge(self, batches: list[tuple[str, list[tuple[Any, ...]]]]) -> list[int]:
        """:meth:`write` the deletions and the purge's time (outside any owner's block: a purge from inside
        one is never held back), then truncate the WAL so no copy of a deleted page stays in it."""
        with cache_owner(None):
            changed = self.write([*batches, ("DELETE FROM last_purge", [()]),
                                  ("INSERT INTO last_purge (at) VALUES (?)", [(time.time(),)])])[:len(batches)]
        with self._lock:
            self._connect().execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
        return changed

    def close(self) -> None:
        with self._lock:
            if self._conn is not None and self._pid == os.getpid():
                self._conn.close()
            self._conn = None


@dataclass(slots=True)
class CachedResponse:
    text: str
    data: Any  # JSON value (None when the call had no schema)
    prompt_tokens: int
    completion_tokens: int
    latency_s: float  # of the original call


def response_key(
    model: str,
    messages: Messages,
    *,
    schema: str | None,
    max_tokens: int,
    temperature: float,
    stop: list[str] | None,
    penalties: Penalties | None = None,
    grammar: str | None = None,
) -> str:
    """sha256 over everything that determines a reply.

    The penalties enter the hashed record only when at least one is set, and the grammar only
    when given, so a call without them has the key it had before they existed (saved caches
    still replay).
    """
    record: dict[str, object] = {
        "model": model,
        "messages": messages,
        "schema": schema,
        "max_tokens": max_tokens,
        "temperature": round(float(temperature), 6),
        "stop": stop or [],
    }
    fields = penalties.request_fields() if penalties is not None else {}
    if fields:
        record["penalties"] = {k: round(v, 6) for k, v in fields.items()}
    if grammar is not None:
        record["grammar"] = grammar
    blob = json.dumps(
        record,
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return hashlib.sha256(blob.encode()).hexdigest()


class ResponseCache:
    """Chat replies keyed by :func:`response_key`."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self._db = _SQLiteFile(path)

    @property
    def path(self) -> Path:
        return self._db.path

    def get(self, key: str) -> CachedResponse | None:
        rows = self._db.execute(
            "SELECT text, data, prompt_tokens, completion_tokens, latency_s FROM responses WHERE key = ?", (key,)
        )
        if not rows:
            return None
        text, data, pt, ct, lat = rows[0]
        return CachedResponse(text, json.loads(data) if data is not None else None, pt, ct, lat)

    def put(self, key: str, model: str, resp: CachedResponse) -> None:
        row = (
            key,
            model,
            time.time(),
            resp.text,
            None if resp.data is None else json.dumps(resp.data, ensure_ascii=False),
            resp.prompt_tokens,
            resp.completion_tokens,
            resp.latency_s,
        )
        self._db.write([
            ("INSERT OR REPLACE INTO responses (key, model, created_at, text, data, prompt_tokens, completion_tokens,"
             " latency_s) VALUES (?, ?, ?, ?, ?, ?, ?, ?)", [row]),
            *self._owned([key]),
        ])

    def own(self, key: str) -> None:
        """Tag the entry ``key`` (a hit) with the current :func:`cache_owner`, if any."""
        if current_cache_owner() is not None:
            self._db.write(self._owned([key]), fenced=False)  # a tag, no words: a later forget must find it

    @staticmethod
    def _owned(keys: list[str]) -> list[tuple[str, list[tuple[Any, ...]]]]:
        owner = current_cache_owner()
        if owner is None:
            return []
        return [("INSERT OR IGNORE INTO response_owners (owner, key) VALUES (?, ?)", [(owner, k) for k in keys])]

    def purge_owner(self, owner: str) -> int:
        """Delete every reply ``owner`` wrote or read (whoever else did too); returns how many."""
        mine = "SELECT key FROM response_owners WHERE owner = ?"
        return self._db.purge([(f"DELETE FROM responses WHERE key IN ({mine})", [(owner,)]),
                               (f"DELETE FROM response_owners WHERE key IN ({mine})", [(owner,)])])[0]

    def __len__(self) -> int:
        return int(self._db.execute("SELECT count(*) FROM responses")[0][0])

    def clear(self, model: str | None = None) -> None:
        if model is None:
            self._db.write([("DELETE FROM responses", [()]), ("DELETE FROM response_owners", [()])])
        else:
            self._db.write([("DELETE FROM response_owners WHERE key IN (SELECT key FROM responses WHERE model = ?)",
                             [(model,)]),
                            ("DELETE FROM responses WHERE model = ?", [(model,)])])

    def close(self) -> None:
        self._db.close()


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class EmbeddingCache:
    """Vectors keyed by (embedder name, sha256 of the text); the dimension is stored with each."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self._db = _SQLiteFile(path)

    @property
    def path(self) -> Path:
        return self._db.path

    def get_many(self, model: str, texts: list[str]) -> dict[str, list[float]]:
        """Cached vectors for those of ``texts`` that have one, by text hash."""
        import numpy as np

        hashes = sorted({text_hash(t) for t in texts})
        found: dict[str, list[float]] = {}
        for i in range(0, len(hashes), 500):
            chunk = hashes[i : i + 500]
            rows = self._db.execute(
                f"SELECT text_hash, dim, vec FROM embeddings WHERE model = ? AND text_hash IN ({','.join('?' * len(chunk))})",
                (model, *chunk),
            )
            for h, dim, blob in rows:
                vec = np.frombuffer(blob, dtype=np.float32)
                if vec.shape[0] == dim:
                    found[h] = vec.tolist()
        return found

    def put_many(self, model: str, items: list[tuple[str, list[float]]]) -> None:
        import numpy as np

        rows = [
            (model, text_hash(t), len(v), np.asarray(v, dtype=np.float32).tobytes()) for t, v in items
        ]
        if rows:
            self._db.write([
                ("INSERT OR REPLACE INTO embeddings (model, text_hash, dim, vec) VALUES (?, ?, ?, ?)", rows),
                *self._owned(model, [r[1] for r in rows]),
            ])

    def own(self, model: str, hashes: list[str]) -> None:
        """Tag the vectors of ``hashes`` (hits) with the current :func:`cache_owner`, if any."""
        if current_cache_owner() is not None and hashes:
            self._db.write(self._owned(model, hashes), fenced=False)  # as ResponseCache.own

    @staticmethod
    def _owned(model: str, hashes: list[str]) -> list[tuple[str, list[tuple[Any, ...]]]]:
        owner = current_cache_owner()
        if owner is None:
            return []
        return [("INSERT OR IGNORE INTO embedding_owners (owner, model, text_hash) VALUES (?, ?, ?)",
                 [(owner, model, h) for h in dict.fromkeys(hashes)])]

    def purge_owner(self, owner: str) -> int:
        """Delete every vector ``owner`` wrote or read (whoever else did too); returns how many."""
        mine = "SELECT model, text_hash FROM embedding_owners WHERE owner = ?"
        return self._db.purge([(f"DELETE FROM embeddings WHERE (model, text_hash) IN ({mine})", [(owner,)]),
                               (f"DELETE FROM embedding_owners WHERE (model, text_hash) IN ({mine})",
                                [(owner,)])])[0]

    def __len__(self) -> int:
        return int(self._db.execute("SELECT count(*) FROM embeddings")[0][0])

    def close(self) -> None:
        self._db.close()
