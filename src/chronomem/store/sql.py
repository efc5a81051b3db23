"""The one query layer shared by the SQL stores.

Dialects (SQLite, PostgreSQL) differ only in how they connect, lock, search
text and search vectors; everything else — the schema's shape, every query,
row conversion — lives here once.  Times are stored as integer microseconds
since the epoch (UTC) in both dialects, so the same comparisons work in both.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime
from importlib import resources
from typing import Any, NamedTuple, TypeVar

from ..errors import CorruptDatabaseError, StoreError
from ..jobs.model import IN_PROCESS, Job, JobKind, JobPosition, JobStatus
from ..keys import ApiKey
from ..memo import text_memo
from ..model import (Checkpoint, Entity, EntityPosition, Fact, FactHead, FactPosition, Intent, LaterDate,
                     Message, MessagePosition, Origin, Session, SessionPosition)
from ..timeutil import at_offset, from_micros, local_offset, to_micros
from .base import DUMP_BATCH, Store, UserRows
from .tenant import KeySpan

FACT_COLS = ("user_id", "id", "subject_id", "subject", "relation", "object_id", "object",
             "valid_from", "valid_to", "stated_to", "confidence", "intent", "origin",
             "recorded_at", "session_id", "agent_id", "source_ids", "text", "closed_by", "ended_by",
             "text_from", "confirmations", "started_by", "start_guessed", "other_words",
             "later_starts", "later_ends")
HEAD_COLS = ("id", "subject_id", "subject", "relation", "object_id", "object", "valid_from", "recorded_at")
MSG_COLS = ("user_id", "id", "session_id", "agent_id", "seq", "speaker", "text", "ts",
            "recorded_at", "extracted", "utc_offset")
ENT_COLS = ("user_id", "id", "name", "type", "created_at")
SESSION_COLS = ("user_id", "id", "agent_id", "started_at", "ended_at")
CP_COLS = ("user_id", "seq", "session_id", "memory", "created_at", "session_time")
NAME_COLS = ("user_id", "norm", "entity_id", "alias", "learned_from")
VEC_COLS = ("user_id", "kind", "item_id", "model", "dim", "vec")
JOB_COLS = ("id", "tenant", "user_id", "kind", "session_id", "status", "payload", "result", "error",
            "attempts", "worker", "lease_until", "created_at", "sent_at", "started_at", "finished_at",
            "updated_at")
KEY_COLS = ("prefix", "tenant", "hash", "name", "created_at", "revoked_at")
JOBS_LOCK = "chronomem.jobs"  # write-lock key of job bookkeeping (rows are keyed by job id)
KEYS_LOCK = "chronomem.api_keys"

# tables in dependency order, with their columns: the unit of dump/load/copy
TABLES: dict[str, tuple[str, ...]] = {
    "sessions": SESSION_COLS,
    "messages": MSG_COLS,
    "entities": ENT_COLS,
    "entity_names": NAME_COLS,
    "facts": FACT_COLS,
    "checkpoints": CP_COLS,
    "vectors": VEC_COLS,
}
#: each table's primary key after ``user_id``: the order a user's rows are dumped in, a batch at a time
TABLE_KEYS: dict[str, tuple[str, ...]] = {
    "sessions": ("id",), "messages": ("id",), "entities": ("id",), "entity_names": ("norm",),
    "facts": ("id",), "checkpoints": ("seq",), "vectors": ("kind", "item_id"),
}
TIME_COLS = {"valid_from", "valid_to", "stated_to", "recorded_at", "ts", "started_at",
             "ended_at", "created_at", "session_time"}


def pair_turns(new: Sequence[tuple[int, str]], stored: Sequence[tuple[int, str]]
               ) -> tuple[dict[str, str | None], dict[str, str]]:
    """Each new turn's turn before (None: the stored one before them all, or none) and the stored turns
    whose turn before becomes a new one, given ``(seq, id)`` of one session's new turns and of its stored
    turns from the first new one's ``seq`` on, both in ``seq`` order.  "Before" is the last turn of a
    smaller ``seq``, as the index's SQL reads it (turns of one ``seq`` follow the same turn)."""
    merged = sorted([(seq, 1, i) for seq, i in new] + [(seq, 0, i) for seq, i in stored])
    before: dict[str, str | None] = {}
    after: dict[str, str] = {}
    prev: tuple[int, str] | None = None  # (is new, id) of the last turn of the previous seq
    last: tuple[int, str] | None = None
    current = None
    for seq, is_new, i in merged:
        if seq != current:
            prev, current = last, seq
        if is_new:
            before[i] = None if prev is None else prev[1]
        elif prev is not None and prev[0]:
            after[i] = prev[1]
        last = (is_new, i)
    return before, after


class _Turn(NamedTuple):
    """What the full-text index's pairing of a turn with the one before it reads of a turn."""

    id: str
    session_id: str
    seq: int
    speaker: str
    text: str


SCHEMA_VERSION_KEY = "schema_version"
APP_KEY = "application"
APP_NAME = "chronomem"


def migrations(dialect: str) -> list[tuple[int, str]]:
    """``(version, sql)`` of the dialect's migration files, oldest first."""
    folder = resources.files("chronomem.store") / "migrations" / dialect
    out = []
    for entry in folder.iterdir():
        m = re.match(r"(\d+)_.*\.sql$", entry.name)
        if m:
            out.append((int(m.group(1)), entry.read_text(encoding="utf-8")))
    return sorted(out)


def schema_version(meta: dict[str, str] | None, where: str,
                   dialect: str) -> tuple[int, list[tuple[int, str]]]:
    """Check a database's ``chronomem_meta`` rows and return its version and the dialect's migrations.

    ``meta=None`` (no meta table) is a new database, version 0.  Refuses a
    foreign application and a schema newer than this chronomem knows.
    """
    if meta is not None and meta.get(APP_KEY) != APP_NAME:
        raise CorruptDatabaseError(f"{where} is not a chronomem database")
    current = int((meta or {}).get(SCHEMA_VERSION_KEY, "0"))
    found = migrations(dialect)
    latest = found[-1][0]
    if current > latest:
        raise StoreError(f"{where} has schema version {current}, newer than this chronomem "
                         f"({latest}); upgrade chronomem")
    return current, found


def _us(dt: datetime | None) -> int | None:
    return None if dt is None else to_micros(dt)


def _dt(us: int | None) -> datetime | None:
    return None if us is None else _from_micros(us)


# facts share their dates (a day's statements, one extraction's recorded_at): a search builds ~300
# facts, and a bounded memo of the conversion halves what their four times cost.  Enrolled with the
# text memos, so forgetting a user leaves none of its times referenced either.
_from_micros = text_memo(maxsize=1 << 12)(from_micros)


def _id_list(text: str) -> list[str]:
    """A JSON list of turn ids as :func:`fact_to_row` writes it: split directly when that is exact."""
    if text == "[]":
        return []
    if text.startswith('["') and text.endswith('"]') and "\\" not in text:
        ids = text[2:-2].split('", "')
        if text.count('"') == 2 * len(ids):  # no other quote: json.dumps's own separators, no escapes
            return ids
    return list(json.loads(text))


def fact_to_row(f: Fact) -> tuple[Any, ...]:
    return (f.user_id, f.id, f.subject_id, f.subject, f.relation, f.object_id, f.object,
            _us(f.valid_from), _us(f.valid_to), _us(f.stated_to), f.confidence, f.intent.value,
            f.origin.value, _us(f.recorded_at), f.session_id, f.agent_id,
            json.dumps(f.source_ids) if f.source_ids else "[]", f.text, f.closed_by,
            json.dumps(f.ended_by) if f.ended_by else None, json.dumps(f.text_from) if f.text_from else None,
            _confirmations(f), json.dumps(f.started_by) if f.started_by else None, 1 if f.start_guessed else None,
            _other_words(f), _later_dates(f.later_starts), _later_dates(f.later_ends))


def _confirmations(f: Fact) -> str | None:
    return json.dumps([[c, ids] for c, ids in f.confirmations]) if f.confirmations else None


def _other_words(f: Fact) -> str | None:
    return json.dumps([[ids, words] for ids, words in f.other_words]) if f.other_words else None


def _later_dates(dates: Sequence[LaterDate]) -> str | None:
    """``Fact.later_starts`` or ``later_ends`` as stored: a JSON list of [date, recorded, [message ids]], the
    times in µs."""
    return json.dumps([[to_micros(d.at), to_micros(d.recorded_at), d.turns] for d in dates]) if dates else None


def _read_later_dates(text: str) -> list[LaterDate]:
    return [LaterDate(_from_micros(at), _from_micros(recorded), ids) for at, recorded, ids in json.loads(text)]


# enum lookups by value without Enum.__call__ (row_to_fact runs for every fact a search reads)
_INTENTS = {m.value: m for m in Intent}
_ORIGINS = {m.value: m for m in Origin}


def _order_of(columns: Sequence[str]) -> Callable[[Sequence[Any]], tuple[Any, ...]]:
    """``ORDER BY valid_from IS NOT NULL, valid_from, recorded_at, id`` of rows of ``columns`` (ids are
    unique)."""
    v, t, i = columns.index("valid_from"), columns.index("recorded_at"), columns.index("id")
    return lambda r: (1, r[v], r[t], r[i]) if r[v] is not None else (0, r[t], r[i])


T = TypeVar("T")
IN_CHUNK = 2000
"""Values of one ``IN`` list per statement: a filter of more is read in chunks (:meth:`SQLStore.facts`)."""
USER_TABLES = ("messages", "facts", "entities", "sessions", "checkpoints")
"""The tables keyed by ``user_id`` that make a user: one with a row in any is listed by :meth:`SQLStore.users`."""


def chunks(values: Sequence[T], size: int) -> Iterator[list[T]]:
    """``values`` in lists of at most ``size``, in order: the ``IN`` lists of one long request (a
    statement's parameters are bounded: PostgreSQL takes 65,535, SQLite 32,766)."""
    for i in range(0, len(values), size):
        yield list(values[i:i + size])
_LISTED_FILTERS = ("ids", "subject_ids", "object_ids", "touching", "relations", "closed_by")


def _beyond(key: Sequence[tuple[str, Any]], op: str = ">") -> tuple[str, list[Any]]:
    """The condition (and its parameters) of the rows past ``key``, ``(column, value)`` pairs in ``ORDER BY``
    order (``op`` ``"<"`` for a descending order): the list's place of a page's last item."""
    (column, value), rest = key[0], key[1:]
    if not rest:
        return f"{column} {op} ?", [value]
    inner, params = _beyond(rest, op)
    return f"({column} {op} ? OR ({column} = ? AND {inner}))", [value, value, *params]


def _key_range(column: str, low: str, inclusive: bool, high: str | None) -> tuple[str, list[Any]]:
    """The condition (and parameters) of user keys from ``low`` (itself too when ``inclusive``) to before
    ``high`` (``None``: no end), on ``column``."""
    cond, params = f"{column} {'>=' if inclusive else '>'} ?", [low]
    if high is not None:
        cond += f" AND {column} < ?"
        params.append(high)
    return cond, params


def _fact_filters(**given: Any) -> dict[str, Any]:
    """Every filter :meth:`SQLStore._fact_rows` reads: the given ones, ``None`` (not filtered) for the rest."""
    return {**dict.fromkeys((*_LISTED_FILTERS, "as_of", "min_confidence", "session_id", "after")), **given}


def row_to_fact(r: Sequence[Any]) -> Fact:
    return Fact(
        user_id=r[0], id=r[1], subject_id=r[2], subject=r[3], relation=r[4], object_id=r[5],
        object=r[6], valid_from=_dt(r[7]), valid_to=_dt(r[8]), stated_to=_dt(r[9]),
        confidence=r[10], intent=_INTENTS[r[11]], origin=_ORIGINS[r[12]],
        recorded_at=_dt(r[13]),  # type: ignore[arg-type]
        session_id=r[14], agent_id=r[15], source_ids=_id_list(r[16]),
        text=r[17],
        closed_by=r[18],
        ended_by=_id_list(r[19]) if r[19] else [],
        text_from=_id_list(r[20]) if r[20] else [],
        confirmations=[(c, ids) for c, ids in json.loads(r[21])] if r[21] else [],
        started_by=_id_list(r[22]) if r[22] else [],
        start_guessed=r[23] == 1,
        other_words=[(ids, words) for ids, words in json.loads(r[24])] if r[24] else [],
        later_starts=_read_later_dates(r[25]) if r[25] else [],
        later_ends=_read_later_dates(r[26]) if r[26] else [],
    )


def row_to_entity(r: Sequence[Any], aliases: Sequence[str] = ()) -> Entity:
    return Entity(user_id=r[0], id=r[1], name=r[2], type=r[3], created_at=_dt(r[4]), aliases=list(aliases))


def row_to_session(r: Sequence[Any]) -> Session:
    return Session(user_id=r[0], id=r[1], agent_id=r[2], started_at=_dt(r[3]), ended_at=_dt(r[4]))


def row_to_message(r: Sequence[Any]) -> Message:
    ts = from_micros(r[7]) if r[10] is None else at_offset(from_micros(r[7]), r[10])  # the speaker's clock
    return Message(user_id=r[0], id=r[1], session_id=r[2], agent_id=r[3], seq=r[4], speaker=r[5],
                   text=r[6], timestamp=ts, recorded_at=_dt(r[8]),  # type: ignore[arg-type]
                   extracted=bool(r[9] == 1))


def job_to_row(j: Job) -> tuple[Any, ...]:
    return (j.id, j.tenant, j.user_id, j.kind.value, j.session_id, j.status.value, json.dumps(j.payload),
            None if j.result is None else json.dumps(j.result), j.error, j.attempts, j.worker,
            _us(j.lease_until), to_micros(j.created_at), _us(j.sent_at), _us(j.started_at),
            _us(j.finished_at), to_micros(j.updated_at))


def row_to_job(r: Sequence[Any]) -> Job:
    return Job(id=r[0], tenant=r[1], user_id=r[2], kind=JobKind(r[3]), session_id=r[4],
               status=JobStatus(r[5]), payload=json.loads(r[6]),
               result=None if r[7] is None else json.loads(r[7]), error=r[8], attempts=r[9],
               worker=r[10], lease_until=_dt(r[11]), created_at=_dt(r[12]),  # type: ignore[arg-type]
               sent_at=_dt(r[13]), started_at=_dt(r[14]), finished_at=_dt(r[15]),
               updated_at=_dt(r[16]))  # type: ignore[arg-type]


def _quoted_fact_ids(result: dict[str, Any]) -> set[str]:
    """Ids of the facts a job result lists (an AddResult, or a SessionEnd's extraction)."""
    parts = [result, result.get("extraction") or {}]
    return {f["id"] for part in parts for key in ("added", "closed", "reinforced") for f in part.get(key) or ()}


class SQLStore(Store):
    """Store logic over a DB-API connection; subclasses supply the dialect hooks."""

    param = "?"  # placeholder style of the driver
    # "facts touching these entities" as two index reads: SQLite's planner reads the OR of subject_id
    # and object_id through the primary key, every fact of the user (4x slower at 1,000 facts a
    # user); PostgreSQL's bitmap OR uses both indexes by itself
    touching_by_union = False
    # the names of some entities (Store.entities with ids): SQLite's planner, without statistics, read every
    # name of the user through the primary key instead (3 ms at 40,000 names, on each write that named a new
    # entity: the resolver reads the entities its log says changed)
    names_by_entity = "entity_names"

    def __init__(self) -> None:
        self._local = threading.local()

    # -- dialect hooks ------------------------------------------------------------
    def _connect_for_write(self, user_id: str) -> AbstractContextManager[Any]:
        """Yield a connection inside a write transaction that serialises ``user_id``'s writers."""
        raise NotImplementedError

    def _connect_for_read(self) -> AbstractContextManager[Any]:
        raise NotImplementedError

    def _fts(self, conn: Any, table: str, user_id: str, query: str, limit: int) -> list[tuple[str, float]]:
        raise NotImplementedError

    def _knn(self, conn: Any, user_id: str, kind: str, vector: Sequence[float], k: int,
             model: str | None) -> list[tuple[str, float]]:
        raise NotImplementedError

    def _vec_param(self, vector: Sequence[float]) -> Any:
        raise NotImplementedError

    def _relax_commit(self) -> None:
        """Inside a write transaction: let it commit without waiting for the disk (bookkeeping
        whose loss in a crash is harmless).  No-op where commits do not wait anyway."""

    def _vec_from_db(self, value: Any) -> list[float]:
        raise NotImplementedError

    def _row_ids(self, user_id: str, table: str, n: int) -> list[int] | None:
        """Inside a write transaction: the row ids ``n`` new rows of ``table`` of ``user_id`` take, or None
        to let the database choose (the default)."""
        return None

    def _numbered(self, user_id: str, table: str, cols: Sequence[str],
                  rows: Sequence[Sequence[Any]]) -> tuple[Sequence[str], Sequence[Sequence[Any]]]:
        """``cols`` and ``rows`` of new rows of ``table``, with the dialect's row ids in front where it
        places them (:meth:`_row_ids`)."""
        ids = self._row_ids(user_id, table, len(rows)) if rows else None
        if ids is None:
            return cols, rows
        return ("rowid", *cols), [(i, *r) for i, r in zip(ids, rows)]

    def _upsert_ignore(self, table: str, cols: Sequence[str]) -> str:
        ph = ", ".join([self.param] * len(cols))
        return f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({ph}) ON CONFLICT DO NOTHING"

    # -- plumbing --------------------------------------------------------------------
    def _q(self, sql: str) -> str:
        return sql if self.param == "?" else sql.replace("?", self.param)

    @contextmanager
    def transaction(self, user_id: str) -> Iterator[None]:
        if getattr(self._local, "conn", None) is not None:
            yield  # nested: join the outer transaction
            return
        with self._connect_for_write(user_id) as conn:
            self._local.conn = conn
            try:
                yield
            finally:
                self._local.conn = None

    @contextmanager
    def _conn(self, user_id: str | None = None, write: bool = False) -> Iterator[Any]:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            yield conn
        elif write:
            assert user_id is not None
            with self.transaction(user_id):
                yield self._local.conn
        else:
            with self._connect_for_read() as conn:
                yield conn

    def _all(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        with self._conn() as c:
            cur = c.execute(self._q(sql), params)
            return cur.fetchall()

    def _exec(self, user_id: str, sql: str, params: Sequence[Any] = ()) -> int:
        with self._conn(user_id, write=True) as c:
            return c.execute(self._q(sql), params).rowcount

    def _many(self, user_id: str, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        if rows:
            with self._conn(user_id, write=True) as c:
                c.executemany(self._q(sql), rows)

    def _in(self, values: Sequence[Any]) -> str:
        return "(" + ", ".join("?" * len(values)) + ")"

    # -- users -------------------------------------------------------------------------
    def users(self, *, tenant: str | None = None, after: str | None = None,
              limit: int | None = None) -> list[str]:
        span = KeySpan.of(tenant)
        if limit is None:
            return self._all_users(span, after)
        # a page: one indexed probe per user (the least key after the last one, over the tables that
        # hold users), so a page costs the same whatever the users hold and whatever other tenants hold
        out: list[str] = []
        low, inclusive = (after, False) if after is not None and after >= span.low else (span.low, True)
        while len(out) < limit:
            key = self._next_user(low, inclusive, span.high)
            if key is None:
                break
            if span.holds(key):
                out.append(key)
                low, inclusive = key, False
            else:  # a key of a tenant, in the default tenant's walk: skip that tenant's keys at once
                low, inclusive = span.past(key), True
        return out

    def _all_users(self, span: KeySpan, after: str | None) -> list[str]:
        cond, params = _key_range("user_id", span.low, True, span.high)
        if after is not None:
            cond += " AND user_id > ?"
            params.append(after)
        rows = self._all(" UNION ".join(f"SELECT user_id FROM {t} WHERE {cond}" for t in USER_TABLES),
                         params * len(USER_TABLES))
        return sorted(k for (k,) in rows if span.holds(k))

    def _next_user(self, low: str, inclusive: bool, high: str | None) -> str | None:
        cond, params = _key_range("user_id", low, inclusive, high)
        probes = " UNION ALL ".join(f"SELECT min(user_id) AS k FROM {t} WHERE {cond}" for t in USER_TABLES)
        row = self._all(f"SELECT min(k) FROM ({probes}) AS firsts", params * len(USER_TABLES))
        return row[0][0] if row else None

    # -- sessions & messages -----------------------------------------------------------
    def ensure_session(self, user_id: str, session_id: str, *, started_at: datetime | None = None,
                       agent_id: str | None = None) -> Session:
        self._exec(user_id, self._upsert_ignore("sessions", SESSION_COLS),
                   (user_id, session_id, agent_id, _us(started_at), None))
        if started_at is not None:
            self._exec(user_id, "UPDATE sessions SET started_at = ? WHERE user_id = ? AND id = ? "
                       "AND (started_at IS NULL OR started_at > ?)",
                       (_us(started_at), user_id, session_id, _us(started_at)))
        return self._session(user_id, session_id)

    def _session(self, user_id: str, session_id: str) -> Session:
        cols = ", ".join(SESSION_COLS)
        return row_to_session(self._all(f"SELECT {cols} FROM sessions WHERE user_id = ? AND id = ?",
                                        (user_id, session_id))[0])

    def end_session(self, user_id: str, session_id: str, ended_at: datetime) -> None:
        self._exec(user_id, "UPDATE sessions SET ended_at = ? WHERE user_id = ? AND id = ?",
                   (_us(ended_at), user_id, session_id))

    def idle_sessions(self, before: datetime, *, tenant: str | None = None) -> list[tuple[str, str]]:
        span = KeySpan.of(tenant)  # a tenant's sweep reads its own key range, not every tenant's sessions
        within, params = _key_range("s.user_id", span.low, True, span.high)
        rows = self._all("SELECT s.user_id, s.id FROM sessions s JOIN messages m "
                         f"ON m.user_id = s.user_id AND m.session_id = s.id WHERE {within} AND s.ended_at IS NULL "
                         "GROUP BY s.user_id, s.id HAVING max(m.recorded_at) <= ? ORDER BY s.user_id, s.id",
                         (*params, _us(before)))
        return [(r[0], r[1]) for r in rows if span.holds(r[0])]

    def sessions(self, user_id: str, *, after: SessionPosition | None = None,
                 limit: int | None = None) -> list[Session]:
        sql = f"SELECT {', '.join(SESSION_COLS)} FROM sessions WHERE user_id = ?"
        params: list[Any] = [user_id]
        if after is not None:  # the rows the ORDER BY below puts after it
            if after.started_at is None:
                cond, past = _beyond([("id", after.id)])
                cond = f"(started_at IS NOT NULL OR {cond})"
            else:
                cond, past = _beyond([("started_at", to_micros(after.started_at)), ("id", after.id)])
            sql += f" AND {cond}"
            params += past
        sql += " ORDER BY started_at IS NOT NULL, started_at, id"  # no start first, in both dialects
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        return [row_to_session(r) for r in self._all(sql, params)]

    def add_messages(self, user_id: str, messages: Sequence[Message]) -> list[Message]:
        if not messages:
            return []
        with self.transaction(user_id):
            inserted = self._insert_turns(
                user_id, [_Turn(m.id, m.session_id, m.seq, m.speaker, m.text) for m in messages],
                [(user_id, m.id, m.session_id, m.agent_id, m.seq, m.speaker, m.text, to_micros(m.timestamp),
                  to_micros(m.recorded_at), int(m.extracted), local_offset(m.timestamp)) for m in messages])
        return [messages[k] for k in inserted]

    def _insert_turns(self, user_id: str, turns: Sequence[_Turn], values: Sequence[Sequence[Any]]) -> list[int]:
        """Insert the turns not stored yet (``values``: each turn's :data:`MSG_COLS`), each with the turn
        before it in its session as the full-text index pairs them; the positions of those inserted."""
        held: set[str] = set()
        for chunk in chunks([t.id for t in turns], 500):
            held.update(r[0] for r in self._all(f"SELECT id FROM messages WHERE user_id = ? AND id IN "
                                                f"{self._in(chunk)}", (user_id, *chunk)))
        new = [k for k, t in enumerate(turns) if t.id not in held]
        context, updates = self._turn_contexts(user_id, [turns[k] for k in new])
        cols, rows = self._numbered(user_id, "messages", MSG_COLS + ("context",),
                                    [(*values[k], context[turns[k].id]) for k in new])
        self._many(user_id, self._upsert_ignore("messages", cols), rows)
        self._set_context(user_id, updates)
        return new

    # The full-text index holds each turn with the turn before it in its session (migration 0007/0004):
    # a question that shares its words with what was asked then finds the reply that answers it.
    def _turn_contexts(self, user_id: str, new: Sequence[_Turn]) -> tuple[dict[str, str], dict[str, str]]:
        """``"Speaker: text"`` of the turn before each new turn in its session ('' for a first turn), and the
        stored turns whose turn before is now a new one, with their new context.  Turns arrive out of order
        (an import reads them in key order): each new turn is placed among the session's stored turns by
        ``seq``, reading the stored turns' ids from the first new one on and the text of those that come
        just before a new turn."""
        context: dict[str, str] = {}
        updates: dict[str, str] = {}
        by_session: dict[str, list[_Turn]] = {}
        for m in new:
            by_session.setdefault(m.session_id, []).append(m)
        for sid, turns in by_session.items():
            turns.sort(key=lambda m: m.seq)
            rows = self._all("SELECT speaker, text FROM messages WHERE user_id = ? AND session_id = ? "
                             "AND seq < ? ORDER BY seq DESC LIMIT 1", (user_id, sid, turns[0].seq))
            first = f"{rows[0][0]}: {rows[0][1]}" if rows else ""
            later = [(int(seq), i) for i, seq in self._all(
                "SELECT id, seq FROM messages WHERE user_id = ? AND session_id = ? AND seq >= ? ORDER BY seq",
                (user_id, sid, turns[0].seq))]
            before, after = pair_turns([(m.seq, m.id) for m in turns], later)
            texts = {m.id: f"{m.speaker}: {m.text}" for m in turns}
            wanted = sorted({p for p in before.values() if p is not None and p not in texts})
            for chunk in chunks(wanted, 500):
                texts.update((i, f"{sp}: {tx}") for i, sp, tx in self._all(
                    f"SELECT id, speaker, text FROM messages WHERE user_id = ? AND id IN {self._in(chunk)}",
                    (user_id, *chunk)))
            context.update((m, first if p is None else texts[p]) for m, p in before.items())
            updates.update((stored, texts[p]) for stored, p in after.items())
        return context, updates

    def _set_context(self, user_id: str, updates: Mapping[str, str]) -> None:
        self._many(user_id, "UPDATE messages SET context = ? WHERE user_id = ? AND id = ?",
                   [(text, user_id, i) for i, text in updates.items()])

    def messages(self, user_id: str, *, session_id: str | None = None,
                 ids: Sequence[str] | None = None, pending_only: bool = False,
                 after: MessagePosition | None = None, limit: int | None = None) -> list[Message]:
        sql = f"SELECT {', '.join(MSG_COLS)} FROM messages WHERE user_id = ?"
        params: list[Any] = [user_id]
        if session_id is not None:
            sql += " AND session_id = ?"
            params.append(session_id)
        if ids is not None:
            if not ids:
                return []
            sql += f" AND id IN {self._in(ids)}"
            params.extend(ids)
        if pending_only:
            sql += " AND extracted <> 1"
        if after is not None:  # the rows the ORDER BY below puts after it
            cond, past = _beyond([("ts", to_micros(after.timestamp)), ("session_id", after.session_id),
                                  ("seq", after.seq)])
            sql += f" AND {cond}"
            params += past
        sql += " ORDER BY ts, session_id, seq"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        return [row_to_message(r) for r in self._all(sql, params)]

    def next_messages(self, user_id: str, ids: Sequence[str]) -> dict[str, Message]:
        return self._adjacent_messages(user_id, ids, after=True)

    def previous_messages(self, user_id: str, ids: Sequence[str]) -> dict[str, Message]:
        return self._adjacent_messages(user_id, ids, after=False)

    def _adjacent_messages(self, user_id: str, ids: Sequence[str], *, after: bool) -> dict[str, Message]:
        """For each id, the turn right after (``after``) or right before it in its session, by ``seq``."""
        if not ids:
            return {}
        ids = list(dict.fromkeys(ids))
        cols = ", ".join(f"n.{c}" for c in MSG_COLS)
        pick, cmp = ("MIN", ">") if after else ("MAX", "<")
        rows = self._all(
            f"SELECT m.id, {cols} FROM messages m JOIN messages n "
            "ON n.user_id = m.user_id AND n.session_id = m.session_id AND n.seq = ("
            f"SELECT {pick}(x.seq) FROM messages x WHERE x.user_id = m.user_id AND x.session_id = m.session_id "
            f"AND x.seq {cmp} m.seq) WHERE m.user_id = ? AND m.id IN {self._in(ids)}", (user_id, *ids))
        return {r[0]: row_to_message(r[1:]) for r in rows}

    def mark_extracted(self, user_id: str, ids: Sequence[str], state: int = 1) -> None:
        # only a success is written over a success: a racing call may have extracted the turns meanwhile, and
        # a failure marked after it (the pipeline's FAILED is 2; the guard once held for -1 alone) made them
        # pending again, so a retry reinforced their facts a second time
        guard = " AND extracted <> 1" if state != 1 else ""
        self._many(user_id, f"UPDATE messages SET extracted = ? WHERE user_id = ? AND id = ?{guard}",
                   [(state, user_id, i) for i in ids])

    # -- entities -------------------------------------------------------------------------
    def entities(self, user_id: str, ids: Sequence[str] | None = None, *, with_aliases: bool = True,
                 after: EntityPosition | None = None, limit: int | None = None) -> list[Entity]:
        sql = f"SELECT {', '.join(ENT_COLS)} FROM entities WHERE user_id = ?"
        params: list[Any] = [user_id]
        if after is not None:  # the rows the ORDER BY below puts after it
            cond, past = _beyond([("created_at", to_micros(after.created_at)), ("id", after.id)])
            sql += f" AND {cond}"
            params += past
        if ids is None:
            page = "" if limit is None else f" LIMIT {int(limit)}"
            rows = self._all(f"{sql} ORDER BY created_at, id{page}", params)
            if not (with_aliases and rows):
                named = []
            elif limit is None:
                named = self._all("SELECT entity_id, alias FROM entity_names WHERE user_id = ?", (user_id,))
            else:  # a page: the names of its entities only
                named = self._names_of(user_id, [r[1] for r in rows])
        else:  # only the asked entities and their names, in chunks under the drivers' limits on parameters
            ids = list(dict.fromkeys(ids))
            rows = []
            for chunk in chunks(ids, IN_CHUNK):
                rows += self._all(f"{sql} AND id IN {self._in(chunk)}", (*params, *chunk))
            rows.sort(key=lambda r: (r[4], r[1]))  # ORDER BY created_at, id
            del rows[len(rows) if limit is None else limit:]
            named = self._names_of(user_id, [r[1] for r in rows]) if with_aliases else []
        aliases: dict[str, list[str]] = {}
        for eid, alias in sorted(named, key=lambda r: r[1]):  # ORDER BY alias
            aliases.setdefault(eid, []).append(alias)
        return [row_to_entity(r, [a for a in aliases.get(r[1], []) if a != r[2]]) for r in rows]

    def entities_without_vectors(self, user_id: str, kind: str, model: str) -> list[Entity]:
        cols = ", ".join(f"e.{c}" for c in ENT_COLS)
        return [row_to_entity(r) for r in self._all(
            f"SELECT {cols} FROM entities e WHERE e.user_id = ? AND NOT EXISTS (SELECT 1 FROM vectors v "
            "WHERE v.user_id = e.user_id AND v.kind = ? AND v.item_id = e.id AND v.model = ?) "
            "ORDER BY e.created_at, e.id", (user_id, kind, model))]

    def _names_of(self, user_id: str, ids: Sequence[str]) -> list[Any]:
        """``(entity_id, alias)`` of every name of the entities ``ids``."""
        return [r for chunk in chunks(ids, IN_CHUNK) for r in self._all(
            f"SELECT entity_id, alias FROM {self.names_by_entity} WHERE user_id = ? "
            f"AND entity_id IN {self._in(chunk)}", (user_id, *chunk))]

    def entity_types(self, user_id: str, ids: Sequence[str]) -> dict[str, str | None]:
        # two columns, no order: the search asks this for every path's end (Store.entities builds
        # whole entities, sorted)
        out: dict[str, str | None] = {}
        ids = list(dict.fromkeys(ids))
        for chunk in chunks(ids, 500):
            out.update(self._all(f"SELECT id, type FROM entities WHERE user_id = ? AND id IN {self._in(chunk)}",
                                 [user_id, *chunk]))
        return out

    def entity_ids_by_norm(self, user_id: str, norms: Sequence[str]) -> dict[str, str]:
        out: dict[str, str] = {}
        norms = list(dict.fromkeys(norms))
        for chunk in chunks(norms, 500):
            out.update(self._all(f"SELECT norm, entity_id FROM entity_names WHERE user_id = ? "
                                 f"AND norm IN {self._in(chunk)}", (user_id, *chunk)))
        return out

    def insert_entities(self, user_id: str, entities: Sequence[tuple[Entity, str]], *,
                        learned_from: Mapping[str, Sequence[str]] | None = None) -> None:
        said = learned_from or {}
        with self.transaction(user_id):
            self._many(user_id, self._upsert_ignore("entities", ENT_COLS),
                       [(user_id, e.id, e.name, e.type, _us(e.created_at) or 0) for e, _ in entities])
            self._many(user_id, self._upsert_ignore("entity_names", NAME_COLS),
                       [(user_id, norm, e.id, e.name, json.dumps(list(said[norm])) if said.get(norm) else None)
                        for e, norm in entities])

    def add_alias(self, user_id: str, entity_id: str, alias: str, norm: str,
                  learned_from: Sequence[str] | None = None) -> None:
        with self.transaction(user_id):
            rows = self._all("SELECT entity_id, learned_from FROM entity_names WHERE user_id = ? AND norm = ?",
                             (user_id, norm))
            if not rows:
                self._exec(user_id, f"INSERT INTO entity_names ({', '.join(NAME_COLS)}) VALUES (?, ?, ?, ?, ?)",
                           (user_id, norm, entity_id, alias, json.dumps(list(learned_from)) if learned_from else None))
            elif rows[0][0] == entity_id and rows[0][1] is not None:  # learned before: now from these turns too
                old = json.loads(rows[0][1])
                merged = self._with_turns(user_id, {norm: (old, list(learned_from or []))}).get(norm, old)
                self._exec(user_id, "UPDATE entity_names SET learned_from = ? WHERE user_id = ? AND norm = ?",
                           (json.dumps(merged) if learned_from else None, user_id, norm))

    def merge_entities(self, user_id: str, source_id: str, target_id: str) -> list[str]:
        with self.transaction(user_id):
            rows = dict(self._all("SELECT id, name FROM entities WHERE user_id = ? AND id IN (?, ?)",
                                  (user_id, source_id, target_id)))
            if source_id not in rows or target_id not in rows:
                return []
            name = rows[target_id]
            moved = [r[0] for r in self._all("SELECT id FROM facts WHERE user_id = ? AND subject_id = ? UNION "
                                             "SELECT id FROM facts WHERE user_id = ? AND object_id = ?",
                                             (user_id, source_id, user_id, source_id))]
            for col in ("subject", "object"):
                self._exec(user_id, f"UPDATE facts SET {col}_id = ?, {col} = ? WHERE user_id = ? AND {col}_id = ?",
                           (target_id, name, user_id, source_id))
            self._exec(user_id, "UPDATE entity_names SET entity_id = ? WHERE user_id = ? AND entity_id = ?",
                       (target_id, user_id, source_id))
            self._exec(user_id, "UPDATE entities SET type = (SELECT type FROM entities WHERE user_id = ? AND id = ?) "
                       "WHERE user_id = ? AND id = ? AND type IS NULL", (user_id, source_id, user_id, target_id))
            self._exec(user_id, "DELETE FROM entities WHERE user_id = ? AND id = ?", (user_id, source_id))
            self._exec(user_id, "DELETE FROM vectors WHERE user_id = ? AND kind = 'entity' AND item_id = ?",
                       (user_id, source_id))
            for chunk in chunks(moved, 500):  # their text names the target now: embedded again on need
                self._exec(user_id, f"DELETE FROM vectors WHERE user_id = ? AND kind = 'fact' "
                           f"AND item_id IN {self._in(chunk)}", (user_id, *chunk))
        return moved

    def entity_version(self, user_id: str) -> tuple[int, int] | None:
        # the log is written by triggers (migration sqlite 0017, postgres 0012): every writer counts,
        # whatever code path or process it is
        rows = self._all("SELECT seq, tag FROM entity_changes WHERE user_id = ? ORDER BY seq DESC LIMIT 1",
                         (user_id,))
        return (int(rows[0][0]), int(rows[0][1])) if rows else (0, 0)

    def entities_changed_since(self, user_id: str, version: tuple[int, int]) -> list[str] | None:
        seq, tag = version
        if seq <= 0:  # read before the log's first change: what that reader saw is not in the log
            return None
        rows = self._all("SELECT seq, tag, entity_id FROM entity_changes WHERE user_id = ? AND seq >= ? "
                         "ORDER BY seq", (user_id, seq))
        # the reader's change must still be there with its tag (not rolled back and replaced), and every
        # change after it must be an added spelling
        if not rows or (rows[0][0], rows[0][1]) != (seq, tag) or any(r[2] is None for r in rows[1:]):
            return None
        return list(dict.fromkeys(r[2] for r in rows[1:]))

    # -- facts ----------------------------------------------------------------------------------
    def insert_facts(self, user_id: str, facts: Sequence[Fact]) -> None:
        with self.transaction(user_id):
            cols, rows = self._numbered(user_id, "facts", FACT_COLS, [fact_to_row(f) for f in facts])
            self._many(user_id, f"INSERT INTO facts ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                       rows)

    def update_facts(self, user_id: str, facts: Sequence[Fact]) -> None:
        self._many(user_id, "UPDATE facts SET valid_from = ?, valid_to = ?, stated_to = ?, confidence = ?, "
                   "source_ids = ?, text = ?, closed_by = ?, ended_by = ?, text_from = ?, confirmations = ?, "
                   "started_by = ?, start_guessed = ?, session_id = ?, other_words = ?, later_starts = ?, later_ends = ? "
                   "WHERE user_id = ? AND id = ?",
                   [(_us(f.valid_from), _us(f.valid_to), _us(f.stated_to), f.confidence,
                     json.dumps(f.source_ids), f.text, f.closed_by,
                     json.dumps(f.ended_by) if f.ended_by else None,
                     json.dumps(f.text_from) if f.text_from else None, _confirmations(f),
                     json.dumps(f.started_by) if f.started_by else None, 1 if f.start_guessed else None,
                     f.session_id, _other_words(f), _later_dates(f.later_starts), _later_dates(f.later_ends),
                     user_id, f.id)
                    for f in facts])

    def facts(self, user_id: str, *, ids: Sequence[str] | None = None,
              subject_ids: Sequence[str] | None = None, object_ids: Sequence[str] | None = None,
              touching: Sequence[str] | None = None, relations: Sequence[str] | None = None,
              as_of: datetime | None = None, min_confidence: float | None = None,
              session_id: str | None = None, limit: int | None = None,
              closed_by: Sequence[str] | None = None, after: FactPosition | None = None) -> list[Fact]:
        filters = _fact_filters(ids=ids, subject_ids=subject_ids, object_ids=object_ids, touching=touching,
                                relations=relations, closed_by=closed_by, as_of=as_of, min_confidence=min_confidence,
                                session_id=session_id, after=after)
        return [row_to_fact(r) for r in self._fact_rows(user_id, filters, limit)]

    def count_touching(self, user_id: str, entity_ids: Sequence[str]) -> dict[str, int]:
        out: dict[str, int] = {}
        for chunk in chunks(list(dict.fromkeys(entity_ids)), 500):
            t_in = self._in(chunk)
            for eid, n in self._all(f"SELECT subject_id, COUNT(*) FROM facts WHERE user_id = ? "
                                    f"AND subject_id IN {t_in} GROUP BY subject_id UNION ALL SELECT object_id, "
                                    f"COUNT(*) FROM facts WHERE user_id = ? AND object_id IN {t_in} GROUP BY object_id",
                                    (user_id, *chunk, user_id, *chunk)):
                out[eid] = out.get(eid, 0) + int(n)
        return out

    def fact_heads(self, user_id: str, touching: Sequence[str], *,
                   min_confidence: float | None = None) -> list[FactHead]:
        filters = _fact_filters(touching=list(touching), min_confidence=min_confidence)
        return [FactHead(r[0], r[1], r[2], r[3], r[4], r[5], _dt(r[6]), _dt(r[7]))  # type: ignore[arg-type]
                for r in self._fact_rows(user_id, filters, None, HEAD_COLS)]

    def _fact_rows(self, user_id: str, filters: Mapping[str, Any], limit: int | None,
                   columns: Sequence[str] = FACT_COLS) -> list[Sequence[Any]]:
        """The rows of :meth:`facts` (``columns`` of them, ``id`` and both times among them), in its order
        (``ORDER BY valid_from IS NOT NULL, valid_from, recorded_at, id``).  A list of more values than one
        statement should take is read in chunks: PostgreSQL refuses more than 65,535 parameters and SQLite
        32,766."""
        long = next((k for k in _LISTED_FILTERS if filters[k] is not None and len(filters[k]) > IN_CHUNK), None)
        if long is not None:
            asked = list(filters[long])
            by_id: dict[str, Sequence[Any]] = {}  # a fact two chunks find comes once
            at = columns.index("id")
            for chunk in chunks(asked, IN_CHUNK):
                by_id.update((r[at], r) for r in self._fact_rows(user_id, {**filters, long: chunk}, None, columns))
            rows = sorted(by_id.values(), key=_order_of(columns))
            return rows if limit is None else rows[:int(limit)]
        where = ""  # the filters besides user_id and touching
        params: list[Any] = []
        for col, key in (("id", "ids"), ("subject_id", "subject_ids"), ("object_id", "object_ids"),
                         ("relation", "relations"), ("closed_by", "closed_by")):
            if (values := filters[key]) is not None:
                if not values:
                    return []
                where += f" AND {col} IN {self._in(values)}"
                params.extend(values)
        if (as_of := filters["as_of"]) is not None:
            t = to_micros(as_of)
            where += (" AND (valid_from IS NULL OR valid_from <= ?) AND (valid_to IS NULL OR valid_to > ?)"
                      " AND (valid_to IS NOT NULL OR closed_by IS NULL)")  # a superseded fact never holds
            params.extend((t, t))
        if filters["min_confidence"] is not None:
            where += " AND confidence >= ?"
            params.append(filters["min_confidence"])
        if filters["session_id"] is not None:
            where += " AND session_id = ?"
            params.append(filters["session_id"])
        if (after := filters["after"]) is not None:  # the rows the ORDER BY below puts after it
            later = [("recorded_at", to_micros(after.recorded_at)), ("id", after.id)]
            if after.valid_from is None:
                cond, past = _beyond(later)
                cond = f"(valid_from IS NOT NULL OR {cond})"
            else:
                cond, past = _beyond([("valid_from", to_micros(after.valid_from)), *later])
            where += f" AND {cond}"
            params += past
        cols = ", ".join(columns)
        touching = filters["touching"]
        if touching is None:
            sql, all_params = f"SELECT {cols} FROM facts WHERE user_id = ?{where}", [user_id, *params]
        elif not touching:
            return []
        elif self.touching_by_union:
            # each index read directly, the object side without the rows the subject side returned
            # (subject_id is NOT NULL): no id subquery and no lookup of each id in the primary key
            t_in = self._in(touching)
            rows = sorted(self._all(f"SELECT {cols} FROM facts WHERE user_id = ? AND subject_id IN {t_in}{where}"
                                    f" UNION ALL SELECT {cols} FROM facts WHERE user_id = ? AND object_id IN {t_in}"
                                    f" AND subject_id NOT IN {t_in}{where}",
                                    [user_id, *touching, *params, user_id, *touching, *touching, *params]),
                          key=_order_of(columns))  # the ORDER BY below, without a temp B-tree of rows
            return rows if limit is None else rows[:int(limit)]
        else:
            t_in = self._in(touching)
            sql = (f"SELECT {cols} FROM facts WHERE user_id = ? AND (subject_id IN {t_in} OR object_id IN {t_in})"
                   f"{where}")
            all_params = [user_id, *touching, *touching, *params]
        sql += " ORDER BY valid_from IS NOT NULL, valid_from, recorded_at, id"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        return self._all(sql, all_params)

    def count_facts(self, user_id: str) -> int:
        return int(self._all("SELECT COUNT(*) FROM facts WHERE user_id = ?", (user_id,))[0][0])

    def held_fact_ids(self, user_id: str, ids: Sequence[str]) -> set[str]:
        asked = list(dict.fromkeys(ids))
        held: set[str] = set()
        for chunk in chunks(asked, IN_CHUNK):
            held.update(r[0] for r in self._all(f"SELECT id FROM facts WHERE user_id = ? AND id IN {self._in(chunk)}",
                                                (user_id, *chunk)))
        return held

    def delete_facts(self, user_id: str, ids: Sequence[str]) -> int:
        if not ids:
            return 0
        with self.transaction(user_id):
            n = 0
            for chunk in chunks(ids, 500):
                n += self._exec(user_id, f"DELETE FROM facts WHERE user_id = ? AND id IN {self._in(chunk)}",
                                (user_id, *chunk))
            self.drop_fact_copies(user_id, ids)
        return n

    def drop_fact_copies(self, user_id: str, ids: Sequence[str]) -> None:
        if not ids:
            return
        with self.transaction(user_id):
            for chunk in chunks(ids, 500):
                self._exec(user_id, f"DELETE FROM vectors WHERE user_id = ? AND kind = 'fact' "
                           f"AND item_id IN {self._in(chunk)}", (user_id, *chunk))
            self._forget_in_job_results(user_id, ids)

    def _forget_in_job_results(self, user_id: str, fact_ids: Sequence[str]) -> None:
        """Drop the results of jobs that quote one of these facts (the job's status stays)."""
        doomed = set(fact_ids)
        rows = self._all("SELECT id, result FROM jobs WHERE user_id = ? AND result IS NOT NULL", (user_id,))
        hits = [(job_id,) for job_id, result in rows if doomed & _quoted_fact_ids(json.loads(result))]
        self._many(user_id, "UPDATE jobs SET result = NULL WHERE id = ?", hits)

    # -- search -------------------------------------------------------------------------------------
    def search_facts_text(self, user_id: str, query: str, limit: int = 20) -> list[tuple[str, float]]:
        with self._conn() as c:
            return self._fts(c, "facts", user_id, query, limit)

    def search_messages_text(self, user_id: str, query: str, limit: int = 20) -> list[tuple[str, float]]:
        with self._conn() as c:
            return self._fts(c, "messages", user_id, query, limit)

    def put_vectors(self, user_id: str, kind: str, items: Sequence[tuple[str, Sequence[float]]],
                    model: str) -> None:
        rows = [(user_id, kind, item_id, model, len(vec), self._vec_param(vec)) for item_id, vec in items]
        with self.transaction(user_id):
            self._many(user_id, "DELETE FROM vectors WHERE user_id = ? AND kind = ? AND item_id = ?",
                       [(user_id, kind, i) for i, _ in items])
            self._many(user_id, f"INSERT INTO vectors ({', '.join(VEC_COLS)}) VALUES (?, ?, ?, ?, ?, ?)", rows)

    def knn(self, user_id: str, kind: str, vector: Sequence[float], k: int = 10,
            model: str | None = None) -> list[tuple[str, float]]:
        with self._conn() as c:
            return self._knn(c, user_id, kind, vector, k, model)

    def vector_ids(self, user_id: str, kind: str, model: str) -> set[str]:
        return {r[0] for r in self._all("SELECT item_id FROM vectors WHERE user_id = ? AND kind = ? "
                                        "AND model = ?", (user_id, kind, model))}

    def get_vectors(self, user_id: str, kind: str, ids: Sequence[str], model: str) -> dict[str, list[float]]:
        out: dict[str, list[float]] = {}
        ids = list(dict.fromkeys(ids))
        for chunk in chunks(ids, 500):
            for item_id, vec in self._all(f"SELECT item_id, vec FROM vectors WHERE user_id = ? AND kind = ? "
                                          f"AND model = ? AND item_id IN {self._in(chunk)}",
                                          (user_id, kind, model, *chunk)):
                out[item_id] = self._vec_from_db(vec)
        return out

    # -- checkpoints ------------------------------------------------------------------------------------
    def put_checkpoint(self, cp: Checkpoint) -> None:
        u = cp.user_id
        with self.transaction(u):
            self._exec(u, "DELETE FROM checkpoints WHERE user_id = ? AND seq = ?", (u, cp.seq))
            self._exec(u, f"INSERT INTO checkpoints ({', '.join(CP_COLS)}) VALUES (?, ?, ?, ?, ?, ?)",
                       (u, cp.seq, cp.session_id, cp.memory, to_micros(cp.created_at), _us(cp.session_time)))

    def checkpoints(self, user_id: str) -> list[Checkpoint]:
        rows = self._all(f"SELECT {', '.join(CP_COLS)} FROM checkpoints WHERE user_id = ? ORDER BY seq",
                         (user_id,))
        return [self._checkpoint_of(r) for r in rows]

    def checkpoint_heads(self, user_id: str) -> list[tuple[int, str]]:
        return [(r[0], r[1]) for r in self._all("SELECT seq, session_id FROM checkpoints WHERE user_id = ? "
                                                "ORDER BY seq", (user_id,))]

    @staticmethod
    def _checkpoint_of(r: Sequence[Any]) -> Checkpoint:
        return Checkpoint(user_id=r[0], seq=r[1], session_id=r[2], memory=r[3],
                          created_at=_dt(r[4]), session_time=_dt(r[5]))  # type: ignore[arg-type]

    # ``last``: the last seq of the run 1, 2, 3... the chain starts with (nothing past a gap is read: a
    # forget's rewrite is owed there, see rsum.first_gap; 0 when the chain does not start at 1).  Counting
    # the seqs on the primary key settles a chain without gaps; only one with a gap looks for the first seq
    # without a successor.  Separate MIN, MAX and COUNT let SQLite probe the index for the first two
    _CP_RUN = ("bounds AS (SELECT (SELECT MIN(seq) FROM checkpoints WHERE user_id = ?) AS lo, "
               "(SELECT MAX(seq) FROM checkpoints WHERE user_id = ?) AS hi, "
               "(SELECT COUNT(*) FROM checkpoints WHERE user_id = ?) AS n), "
               "run AS (SELECT CASE WHEN lo <> 1 THEN 0 WHEN n = hi THEN hi ELSE "
               "(SELECT MIN(c.seq) FROM checkpoints c WHERE c.user_id = ? AND NOT EXISTS "
               "(SELECT 1 FROM checkpoints d WHERE d.user_id = c.user_id AND d.seq = c.seq + 1)) END AS last "
               "FROM bounds)")

    def checkpoint_page(self, user_id: str, *, after_seq: int = 0, limit: int = 50,
                        session_id: str | None = None) -> list[Checkpoint]:
        rows = self._all(f"WITH {self._CP_RUN} SELECT {', '.join(CP_COLS)} FROM checkpoints WHERE user_id = ? "
                         f"AND seq > ? AND seq <= (SELECT last FROM run)"
                         f"{'' if session_id is None else ' AND session_id = ?'} ORDER BY seq LIMIT {int(limit)}",
                         [*[user_id] * 5, after_seq, *([] if session_id is None else [session_id])])
        return [self._checkpoint_of(r) for r in rows]

    def checkpoint_at(self, user_id: str, as_of: datetime | None = None) -> Checkpoint | None:
        """One statement (one snapshot) that returns one row: the seqs are counted on the primary key,
        ``as_of`` compares times in SQL up to the first late checkpoint, and only the answer's text is
        read.  Reading the whole chain to keep its last one cost 70 ms at 10,000 checkpoints."""
        params: list[Any] = [user_id] * 5
        valid = "last"
        if as_of is not None:
            # the checkpoint before the first one in the run whose session came after as_of
            valid = ("COALESCE((SELECT c.seq FROM checkpoints c WHERE c.user_id = ? AND c.seq BETWEEN 1 AND last "
                     "AND COALESCE(c.session_time, c.created_at) > ? ORDER BY c.seq LIMIT 1) - 1, last)")
            params += [user_id, to_micros(as_of)]
        rows = self._all(f"WITH {self._CP_RUN} SELECT {', '.join(CP_COLS)} FROM checkpoints "
                         f"WHERE user_id = ? AND seq >= 1 AND seq = (SELECT {valid} FROM run)", params)
        return self._checkpoint_of(rows[0]) if rows else None

    def delete_checkpoints(self, user_id: str, from_seq: int = 0) -> int:
        with self.transaction(user_id):
            self._forget_summaries_in_job_results(user_id, from_seq)
            return self._exec(user_id, "DELETE FROM checkpoints WHERE user_id = ? AND seq >= ?",
                              (user_id, from_seq))

    def _forget_summaries_in_job_results(self, user_id: str, from_seq: int) -> None:
        """Drop the results of ``end_session`` jobs that quote a summary being deleted or replaced (a
        summary written after a session that is now forgotten still tells it; the job's status stays)."""
        rows = self._all("SELECT id, result FROM jobs WHERE user_id = ? AND kind = ? AND result IS NOT NULL",
                         (user_id, JobKind.END_SESSION.value))
        hits = [(job_id,) for job_id, result in rows
                if (seq := json.loads(result).get("checkpoint_seq")) is not None and seq >= from_seq]
        self._many(user_id, "UPDATE jobs SET result = NULL WHERE id = ?", hits)

    # -- forgetting ---------------------------------------------------------------------------------------
    def delete_session(self, user_id: str, session_id: str) -> list[str]:
        with self.transaction(user_id):
            self._exec(user_id, "DELETE FROM jobs WHERE user_id = ? AND session_id = ?", (user_id, session_id))
            ids = [r[0] for r in self._all("SELECT id FROM messages WHERE user_id = ? AND session_id = ?",
                                           (user_id, session_id))]
            for chunk in chunks(ids, 500):
                self._exec(user_id, f"DELETE FROM vectors WHERE user_id = ? AND kind = 'message' "
                           f"AND item_id IN {self._in(chunk)}", (user_id, *chunk))
            unnamed = self._forget_learned_aliases(user_id, set(ids))
            self._exec(user_id, "DELETE FROM messages WHERE user_id = ? AND session_id = ?", (user_id, session_id))
            self._exec(user_id, "DELETE FROM checkpoints WHERE user_id = ? AND session_id = ?",
                       (user_id, session_id))
            self._exec(user_id, "DELETE FROM sessions WHERE user_id = ? AND id = ?", (user_id, session_id))
            return self._rename_unnamed(user_id, unnamed)

    def add_alias_sources(self, user_id: str, sources: Mapping[str, Sequence[str]]) -> None:
        norms = [n for n, ids in sources.items() if ids]
        with self.transaction(user_id):
            rows = []
            for chunk in chunks(norms, 500):
                rows += self._all(f"SELECT norm, learned_from FROM entity_names WHERE user_id = ? AND "
                                  f"learned_from IS NOT NULL AND norm IN {self._in(chunk)}", (user_id, *chunk))
            grown = self._with_turns(user_id, {norm: (json.loads(learned), list(sources[norm])) for norm, learned in rows})
            self._many(user_id, "UPDATE entity_names SET learned_from = ? WHERE user_id = ? AND norm = ?",
                       [(json.dumps(ids), user_id, norm) for norm, ids in grown.items()])

    def mark_given_by_hand(self, user_id: str, norms: Sequence[str]) -> None:
        norms = list(dict.fromkeys(norms))
        with self.transaction(user_id):
            for chunk in chunks(norms, 500):
                self._exec(user_id, f"UPDATE entity_names SET learned_from = NULL WHERE user_id = ? AND "
                           f"learned_from IS NOT NULL AND norm IN {self._in(chunk)}", (user_id, *chunk))

    def _with_turns(self, user_id: str, lists: Mapping[str, tuple[list[str], list[str]]],
                    keep: int = 8) -> dict[str, list[str]]:
        """Spellings' turn lists (normalised spelling → (stored turns, new turns)) with the new turns added;
        only the lists that change.

        Turns are forgotten only with their session, so once a list holds more than ``keep`` turns a new
        turn of a session among its last ``keep`` entries adds nothing (it takes that entry's place when
        it was said earlier: a list names each session by its first turn).  The user's own name, said in
        every turn, grows by a session, not by a turn, and each write looks up a few turns only.  A turn
        the store does not hold (``add_facts`` may cite any id) is kept as it is."""
        out: dict[str, list[str]] = {}
        todo: dict[str, tuple[list[str], list[str]]] = {}
        for norm, (old, new) in lists.items():
            have = set(old)
            fresh = [t for t in dict.fromkeys(new) if t not in have]
            if not fresh:
                continue
            if len(old) + len(fresh) <= keep:
                out[norm] = [*old, *fresh]
            else:
                todo[norm] = (old, fresh)
        ask = sorted({t for old, fresh in todo.values() for t in (*old[-keep:], *fresh)})
        place: dict[str, tuple[str, int, int]] = {}  # turn -> (session, when said, position)
        for chunk in chunks(ask, 500):
            for turn, session, ts, seq in self._all(f"SELECT id, session_id, ts, seq FROM messages WHERE "
                                                    f"user_id = ? AND id IN {self._in(chunk)}", (user_id, *chunk)):
                place[turn] = (session, ts, seq)
        for norm, (old, fresh) in todo.items():
            merged = list(old)
            listed = {place[t][0]: i for i, t in enumerate(merged) if i >= len(merged) - keep and t in place}
            for t in fresh:
                p = place.get(t)
                if p is not None and p[0] in listed:
                    i = listed[p[0]]
                    if p[1:] < place[merged[i]][1:]:
                        merged[i] = t
                    continue
                merged.append(t)
                if p is not None:
                    listed[p[0]] = len(merged) - 1
            if merged != old:
                out[norm] = merged
        return out

    def _forget_learned_aliases(self, user_id: str, message_ids: set[str]) -> dict[str, str]:
        """Drop the spellings only these turns used; the others forget them as a source.  Returns the
        entities whose name was one of the dropped spellings (entity id → that name)."""
        rows = self._all("SELECT norm, entity_id, alias, learned_from FROM entity_names WHERE user_id = ? "
                         "AND learned_from IS NOT NULL", (user_id,))
        gone, kept = [], []
        dropped: dict[str, set[str]] = {}  # entity id -> its dropped spellings
        for norm, entity_id, alias, learned in rows:
            ids = json.loads(learned)
            left = [i for i in ids if i not in message_ids]
            if not left:
                gone.append((user_id, norm))
                dropped.setdefault(entity_id, set()).add(alias)
            elif len(left) < len(ids):
                kept.append((json.dumps(left), user_id, norm))
        self._many(user_id, "DELETE FROM entity_names WHERE user_id = ? AND norm = ?", gone)
        self._many(user_id, "UPDATE entity_names SET learned_from = ? WHERE user_id = ? AND norm = ?", kept)
        named = {e.id: e.name for e in self.entities(user_id, list(dropped), with_aliases=False)}
        return {eid: name for eid, name in named.items() if name in dropped[eid]}

    def _rename_unnamed(self, user_id: str, unnamed: Mapping[str, str]) -> list[str]:
        """Give each entity whose name forgetting took (id → that name) the first spelling still said,
        in the entity and in every fact that names it; what was made of the old name goes with it (the
        entity's vectors, the facts' vectors and quoting job results).  An entity no fact names is left
        to :meth:`delete_orphan_entities`.  One that facts still name but no spelling is left to (turns not
        recorded with it: an import into a user who knew the name) keeps its name, recorded again with
        the turns of those facts, so that it stays one entity to resolution."""
        from ..entities import best_spelling, normalize_name  # the choice is a rule of entity resolution

        ids = list(unnamed)
        naming: dict[str, dict[str, None]] = {}  # entity id -> the facts that name it
        said: dict[str, dict[str, None]] = {}  # entity id -> the turns of those facts
        spellings: dict[str, list[tuple[str, list[str] | None]]] = {}
        for chunk in chunks(ids, 500):
            for fact_id, subject_id, object_id, source_ids in self._all(  # one index per endpoint, no OR
                    f"SELECT id, subject_id, object_id, source_ids FROM facts WHERE user_id = ? AND subject_id IN "
                    f"{self._in(chunk)} UNION SELECT id, subject_id, object_id, source_ids FROM facts WHERE "
                    f"user_id = ? AND object_id IN {self._in(chunk)}", (user_id, *chunk, user_id, *chunk)):
                for eid in {subject_id, object_id} & unnamed.keys():
                    naming.setdefault(eid, {})[fact_id] = None
                    said.setdefault(eid, {}).update(dict.fromkeys(_id_list(source_ids)))
            for entity_id, alias, learned in self._all(
                    f"SELECT entity_id, alias, learned_from FROM entity_names WHERE user_id = ? "
                    f"AND entity_id IN {self._in(chunk)}", (user_id, *chunk)):
                spellings.setdefault(entity_id, []).append((alias, json.loads(learned) if learned else None))
        turns = sorted({t for names in spellings.values() for _, learned in names for t in learned or ()})
        said_at: dict[str, tuple[int, int]] = {}
        for chunk in chunks(turns, 500):
            said_at.update((r[0], (r[1], r[2])) for r in self._all(
                f"SELECT id, ts, seq FROM messages WHERE user_id = ? AND id IN {self._in(chunk)}", (user_id, *chunk)))
        kept = [eid for eid in sorted(naming) if eid not in spellings]
        self._many(user_id, self._upsert_ignore("entity_names", NAME_COLS),
                   [(user_id, normalize_name(unnamed[eid]), eid, unnamed[eid],
                     json.dumps(list(said[eid])) if said.get(eid) else None) for eid in kept])
        renamed = {eid: name for eid in sorted(naming) if eid in spellings
                   and (name := best_spelling(spellings[eid], said_at)) is not None}
        if not renamed:
            return []
        rows = [(name, user_id, eid) for eid, name in renamed.items()]
        self._many(user_id, "UPDATE entities SET name = ? WHERE user_id = ? AND id = ?", rows)
        self._many(user_id, "UPDATE facts SET subject = ? WHERE user_id = ? AND subject_id = ?", rows)
        self._many(user_id, "UPDATE facts SET object = ? WHERE user_id = ? AND object_id = ?", rows)
        self._many(user_id, "DELETE FROM vectors WHERE user_id = ? AND kind = 'entity' AND item_id = ?",
                   [(user_id, eid) for eid in renamed])
        self.drop_fact_copies(user_id, sorted({f for eid in renamed for f in naming[eid]}))
        return list(renamed)

    def delete_orphan_entities(self, user_id: str) -> int:
        # two NOT EXISTS, one per endpoint index: "subject_id = e.id OR object_id = e.id" reads every fact
        # of the user for every entity (a forget took seconds at 5,000 facts)
        orphan = ("SELECT id FROM entities e WHERE e.user_id = ? "
                  "AND NOT EXISTS (SELECT 1 FROM facts f WHERE f.user_id = e.user_id AND f.subject_id = e.id) "
                  "AND NOT EXISTS (SELECT 1 FROM facts f WHERE f.user_id = e.user_id AND f.object_id = e.id)")
        with self.transaction(user_id):
            ids = [r[0] for r in self._all(orphan, (user_id,))]
            for chunk in chunks(ids, 500):
                for table, col in (("entity_names", "entity_id"), ("entities", "id")):
                    self._exec(user_id, f"DELETE FROM {table} WHERE user_id = ? AND {col} IN {self._in(chunk)}",
                               (user_id, *chunk))
                self._exec(user_id, f"DELETE FROM vectors WHERE user_id = ? AND kind = 'entity' "
                           f"AND item_id IN {self._in(chunk)}", (user_id, *chunk))
        return len(ids)

    def delete_user(self, user_id: str) -> None:
        with self.transaction(user_id):
            self._exec(user_id, "DELETE FROM jobs WHERE user_id = ?", (user_id,))  # results quote facts
            for table in reversed(TABLES):
                self._exec(user_id, f"DELETE FROM {table} WHERE user_id = ?", (user_id,))
            # last, as deleting the names above logged their removal: a new log starts at seq 1, with tags
            # no resolver holds
            self._exec(user_id, "DELETE FROM entity_changes WHERE user_id = ?", (user_id,))

    # -- dump / load ------------------------------------------------------------------------------------------
    def iter_user(self, user_id: str, *, batch: int = DUMP_BATCH) -> UserRows:
        # a batch at a time, but inside the user's write transaction: no writer of the user lands between
        # two reads, so no fact names an entity the dump lacks (an export must import again)
        with self.transaction(user_id):
            yield from self._user_rows(self._all, user_id, batch)

    def _user_rows(self, read: Callable[[str, Sequence[Any]], list[Any]], user_id: str, batch: int) -> UserRows:
        """:meth:`iter_user`'s rows, each query answered by ``read`` (in one snapshot of the store)."""
        for table, cols in TABLES.items():
            keys = TABLE_KEYS[table]
            sql = f"SELECT {', '.join(cols)} FROM {table} WHERE user_id = ?"
            page = f" ORDER BY {', '.join(keys)} LIMIT {int(batch)}"
            found = [self._dump_row(table, cols, r) for r in read(sql + page, (user_id,))]
            yield table, found
            while len(found) == batch:  # the rows after the last one's key (keys are unique per user)
                cond, past = _beyond([(k, found[-1][k]) for k in keys])
                found = [self._dump_row(table, cols, r) for r in read(f"{sql} AND {cond}{page}", (user_id, *past))]
                if found:
                    yield table, found

    def _dump_row(self, table: str, cols: Sequence[str], r: Sequence[Any]) -> dict[str, Any]:
        d = dict(zip(cols, r))
        if table == "vectors":
            d["vec"] = self._vec_from_db(d["vec"])
        return d

    def load_user(self, user_id: str, rows: dict[str, list[dict[str, Any]]]) -> dict[str, int]:
        stored: dict[str, int] = {}
        with self.transaction(user_id):
            for table, cols in TABLES.items():
                batch = []
                for d in rows.get(table, []):
                    values = [user_id if c == "user_id" else d.get(c) for c in cols]
                    if table == "vectors":
                        values[-1] = self._vec_param(d["vec"])
                    batch.append(values)
                if not batch:
                    stored[table] = 0
                    continue
                if table == "messages":  # the index's pairing of turns is not exported: made as turns arrive
                    stored[table] = len(self._insert_turns(user_id, [
                        _Turn(d["id"], d["session_id"], d["seq"], d["speaker"], d["text"]) for d in rows[table]],
                        batch))
                    continue
                if table == "entity_names":  # a spelling both know: the import's turns said it too
                    self._merge_spelling_sources(user_id, rows[table])
                # rows whose key already exists are kept as they are: count what was really added
                count = f"SELECT COUNT(*) FROM {table} WHERE user_id = ?"
                before = int(self._all(count, (user_id,))[0][0])
                placed, numbered = self._numbered(user_id, table, cols, batch)
                self._many(user_id, self._upsert_ignore(table, placed), numbered)
                stored[table] = int(self._all(count, (user_id,))[0][0]) - before
        return stored

    def _merge_spelling_sources(self, user_id: str, rows: Sequence[Mapping[str, Any]]) -> None:
        """Imported spellings the user already has for the same entity add the turns that used them
        (or, given by hand in either, become given by hand): forgetting the user's own turns must not
        take a name the imported turns say too."""
        given = {r["norm"]: r for r in rows}
        norms = list(given)
        stored: list[tuple[str, str, str]] = []
        for chunk in chunks(norms, 500):
            stored += self._all(f"SELECT norm, entity_id, learned_from FROM entity_names WHERE user_id = ? "
                                f"AND learned_from IS NOT NULL AND norm IN {self._in(chunk)}", (user_id, *chunk))
        pairs: dict[str, tuple[list[str], list[str]]] = {}
        by_hand: list[tuple[str | None, str, str]] = []
        for norm, entity_id, learned in stored:
            row = given[norm]
            if row["entity_id"] != entity_id:
                continue
            if theirs := row.get("learned_from"):
                pairs[norm] = (json.loads(learned), json.loads(theirs))
            else:
                by_hand.append((None, user_id, norm))
        updates: list[tuple[str | None, str, str]] = [
            (json.dumps(ids), user_id, norm) for norm, ids in self._with_turns(user_id, pairs).items()]
        self._many(user_id, "UPDATE entity_names SET learned_from = ? WHERE user_id = ? AND norm = ?",
                   updates + by_hand)

    # -- jobs ------------------------------------------------------------------------------------------------
    _JOB_SELECT = f"SELECT {', '.join(JOB_COLS)} FROM jobs"

    def insert_job(self, job: Job) -> None:
        self._exec(job.user_id, f"INSERT INTO jobs ({', '.join(JOB_COLS)}) VALUES "
                   f"({', '.join('?' * len(JOB_COLS))})", job_to_row(job))

    def _job_by_id(self, job_id: str) -> Job | None:
        rows = self._all(self._JOB_SELECT + " WHERE id = ?", (job_id,))
        return row_to_job(rows[0]) if rows else None

    def job(self, tenant: str, job_id: str) -> Job | None:
        rows = self._all(self._JOB_SELECT + " WHERE tenant = ? AND id = ?", (tenant, job_id))
        return row_to_job(rows[0]) if rows else None

    def jobs(self, tenant: str, *, user_id: str | None = None, status: JobStatus | None = None,
             limit: int | None = None, offset: int = 0, after: JobPosition | None = None) -> list[Job]:
        sql = self._JOB_SELECT + " WHERE tenant = ?"
        params: list[Any] = [tenant]
        if user_id is not None:
            sql += " AND user_id = ?"
            params.append(user_id)
        if status is not None:
            sql += " AND status = ?"
            params.append(JobStatus(status).value)
        if after is not None:  # the rows the ORDER BY below puts after it
            cond, past = _beyond([("created_at", to_micros(after.created_at)), ("id", after.id)], "<")
            sql += f" AND {cond}"
            params += past
        sql += " ORDER BY created_at DESC, id DESC"
        if limit is not None:
            sql += f" LIMIT {int(limit)} OFFSET {int(offset)}"
        return [row_to_job(r) for r in self._all(sql, params)]

    def claim_job(self, job_id: str, worker: str, now: datetime, lease_until: datetime) -> Job | None:
        t = to_micros(now)
        with self.transaction(f"{JOBS_LOCK}:{job_id}"):
            n = self._exec(JOBS_LOCK, "UPDATE jobs SET status = 'running', worker = ?, lease_until = ?, "
                           "attempts = attempts + 1, started_at = COALESCE(started_at, ?), updated_at = ? "
                           "WHERE id = ? AND (status = 'queued' OR (status = 'running' AND lease_until < ?))",
                           (worker, to_micros(lease_until), t, t, job_id, t))
            return self._job_by_id(job_id) if n else None

    def renew_job(self, job_id: str, worker: str, lease_until: datetime) -> bool:
        with self.transaction(f"{JOBS_LOCK}:{job_id}"):
            self._relax_commit()  # a lost renewal only shortens the lease
            return self._exec(JOBS_LOCK, "UPDATE jobs SET lease_until = ? WHERE id = ? AND worker = ? AND "
                              "status = 'running'", (to_micros(lease_until), job_id, worker)) > 0

    def finish_job(self, job_id: str, worker: str, status: JobStatus, now: datetime,
                   result: dict[str, Any] | None, error: str | None) -> bool:
        t = to_micros(now)
        owner = self._all("SELECT user_id FROM jobs WHERE id = ?", (job_id,))
        lock = owner[0][0] if owner else f"{JOBS_LOCK}:{job_id}"
        with self.transaction(lock):  # the user's lock: a forget of the user does not interleave
            quoted = _quoted_fact_ids(result) if result is not None and owner else set()
            if quoted and len(self.held_fact_ids(lock, sorted(quoted))) < len(quoted):
                result = None  # it quotes a fact forgotten while the job ran (as forgetting drops such results)
            return self._exec(lock, "UPDATE jobs SET status = ?, result = ?, error = ?, "
                              "finished_at = ?, updated_at = ?, lease_until = NULL WHERE id = ? AND worker = ? "
                              "AND status = 'running'",
                              (JobStatus(status).value, None if result is None else json.dumps(result), error,
                               t, t, job_id, worker)) > 0

    def mark_job_sent(self, job_id: str, now: datetime, tenant: str | None = None) -> None:
        sql, params = "UPDATE jobs SET sent_at = ? WHERE id = ? AND sent_at IS NULL", [to_micros(now), job_id]
        if tenant is not None:
            sql += " AND tenant = ?"
            params.append(tenant)
        with self.transaction(f"{JOBS_LOCK}:{job_id}"):
            self._relax_commit()  # losing this mark in a crash only means one more (skipped) delivery
            self._exec(JOBS_LOCK, sql, params)

    def jobs_to_send(self, now: datetime, *, unsent_before: datetime, resend_before: datetime,
                     tenant: str | None = None, in_process: bool = False, orphaned_before: datetime | None = None,
                     limit: int = 100) -> list[Job]:
        """What a sweep (re)sends, oldest first: running jobs whose lease expired; queued jobs never sent that
        were created before ``unsent_before``; and queued jobs whose message may be lost: last sent before
        ``resend_before`` and at least as long ago as the job had waited at that send (since it was first
        started, else created), so a job in a long backlog is re-sent after 1, 2, 4 … bounds, not every
        bound.  ``in_process``: an in-process queue's sweep, which takes only jobs an in-process queue sent or
        ran (``worker`` starting with ``local:``) besides the never-sent ones, and with ``orphaned_before``
        every such job sent before then or dropped unsent (the queue that held it closed or died with its
        process).  Of ``tenant`` only, when given."""
        local = " AND worker LIKE ?" if in_process else ""
        pattern = [IN_PROCESS + "%"] if in_process else []
        t = to_micros(now)
        conds = [f"(status = 'running' AND lease_until < ?{local})",
                 "(status = 'queued' AND sent_at IS NULL AND created_at < ?)",
                 f"(status = 'queued' AND sent_at < ? AND sent_at - COALESCE(started_at, created_at) <= ? - sent_at"
                 f"{local})"]
        params: list[Any] = [t, *pattern, to_micros(unsent_before), to_micros(resend_before), t, *pattern]
        if in_process and orphaned_before is not None:
            conds.append(f"(status = 'queued' AND (sent_at < ? OR sent_at IS NULL){local})")
            params += [to_micros(orphaned_before), *pattern]
        sql = self._JOB_SELECT + f" WHERE ({' OR '.join(conds)})"
        if tenant is not None:
            sql += " AND tenant = ?"
            params.append(tenant)
        return [row_to_job(r) for r in self._all(sql + f" ORDER BY created_at LIMIT {int(limit)}", params)]

    def swap_job_send(self, job_id: str, previous: datetime | None, sent_at: datetime | None,
                      sent_to: str | None) -> bool:
        """Set a queued job's last send to ``sent_at`` and the queue it went to (``sent_to``, kept in ``worker``
        while the job is queued: an in-process runner's name, or None for a broker) if its last send is still
        ``previous`` (None: never sent).  Of several workers sweeping at once one wins; False for the others,
        and when the job left the queue meanwhile."""
        same = "sent_at IS NULL" if previous is None else "sent_at = ?"
        params: list[Any] = [_us(sent_at), sent_to, job_id] + ([] if previous is None else [to_micros(previous)])
        with self.transaction(f"{JOBS_LOCK}:{job_id}"):
            self._relax_commit()  # a lost mark only means one more (skipped) delivery
            return self._exec(JOBS_LOCK, "UPDATE jobs SET sent_at = ?, worker = ? WHERE id = ? AND "
                              f"status = 'queued' AND {same}", params) > 0

    def unsend_jobs(self, job_ids: Sequence[str]) -> int:
        n = 0
        for chunk in chunks(job_ids, 500):  # worker keeps naming the in-process queue: the next one takes them at once
            n += self._exec(JOBS_LOCK, f"UPDATE jobs SET sent_at = NULL WHERE status = 'queued' AND id IN "
                            f"{self._in(chunk)}", chunk)
        return n

    def requeue_job(self, job_id: str, now: datetime) -> bool:
        t = to_micros(now)
        return self._exec(f"{JOBS_LOCK}:{job_id}", "UPDATE jobs SET status = 'queued', worker = NULL, "
                          "lease_until = NULL, sent_at = NULL, updated_at = ? WHERE id = ? AND "
                          "status = 'running' AND lease_until < ?", (t, job_id, t)) > 0

    def delete_finished_jobs(self, finished_before: datetime, *, tenant: str | None = None,
                             limit: int = 1000) -> int:
        where = "status IN ('done', 'failed') AND finished_at < ?"
        params: list[Any] = [to_micros(finished_before)]
        if tenant is not None:
            where += " AND tenant = ?"
            params.append(tenant)
        return self._exec(JOBS_LOCK, f"DELETE FROM jobs WHERE id IN (SELECT id FROM jobs WHERE {where} "
                          f"ORDER BY finished_at LIMIT {int(limit)})", params)

    # -- API keys ----------------------------------------------------------------------------------------------
    def insert_api_key(self, key: ApiKey) -> None:
        self._exec(KEYS_LOCK, f"INSERT INTO api_keys ({', '.join(KEY_COLS)}) VALUES (?, ?, ?, ?, ?, ?)",
                   (key.prefix, key.tenant, key.hash, key.name, to_micros(key.created_at),
                    _us(key.revoked_at)))

    @staticmethod
    def _row_to_key(r: Sequence[Any]) -> ApiKey:
        return ApiKey(prefix=r[0], tenant=r[1], hash=r[2], name=r[3], created_at=_dt(r[4]),  # type: ignore[arg-type]
                      revoked_at=_dt(r[5]))

    def api_key(self, prefix: str) -> ApiKey | None:
        rows = self._all(f"SELECT {', '.join(KEY_COLS)} FROM api_keys WHERE prefix = ?", (prefix,))
        return self._row_to_key(rows[0]) if rows else None

    def api_keys(self, tenant: str | None = None) -> list[ApiKey]:
        sql = f"SELECT {', '.join(KEY_COLS)} FROM api_keys"
        params: tuple[Any, ...] = ()
        if tenant is not None:
            sql += " WHERE tenant = ?"
            params = (tenant,)
        return [self._row_to_key(r) for r in self._all(sql + " ORDER BY created_at, prefix", params)]

    def revoke_api_key(self, prefix: str, now: datetime) -> bool:
        return self._exec(KEYS_LOCK, "UPDATE api_keys SET revoked_at = ? WHERE prefix = ? AND revoked_at IS NULL",
                          (to_micros(now), prefix)) > 0
