"""Short-term buffers for the turns of active sessions.

While a session is active its turns live in a :class:`SessionBuffer`: in
process by default (:class:`InMemorySessionBuffer`), in Redis when
``CHRONOMEM_REDIS_URL`` is set (:class:`RedisSessionBuffer`; one round trip
per append or read, sub-millisecond on a local server).  At session end the
buffer is flushed to the long-term store.

Guarantees of both implementations:

- **idempotent append** — a message id already buffered for the session is
  ignored when it comes with the same words (clients may retry), and refused
  with a :class:`~chronomem.errors.ValidationError` that writes nothing when it
  comes with other words: the check and the append are one atomic step, so of
  concurrent appends of one id only one is kept and the others are refused;
- **TTL** — a session without appends for ``ttl_seconds`` is abandoned and
  expires (its turns are discarded unless flushed before);
- **listing** — :meth:`SessionBuffer.active_sessions` lists a user's sessions
  with buffered turns, :meth:`SessionBuffer.pending_sessions` the ones whose
  flush started but did not finish, :meth:`SessionBuffer.open_sessions` every
  user's; :meth:`RedisSessionBuffer.tenants` the tenants (:func:`tenant_prefix`)
  with a buffer in that Redis;
- **resumable flush** — :meth:`SessionBuffer.flush` first moves the buffered
  turns to a *pending* area (atomically), then hands them to ``write`` (the
  long-term write, which must be idempotent by message id, as
  ``store.add_messages`` is), and deletes the pending turns only after
  ``write`` returned.  A crash at any point loses nothing: the next ``flush``
  of that session (or :meth:`SessionBuffer.recover`) writes the pending turns
  again.  Pending turns never expire.  Turns appended while a flush runs stay
  buffered for the next one.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol, runtime_checkable
from urllib.parse import quote, unquote

from ..validation import check_id
from ..errors import ConfigError, StoreError, ValidationError
from ..keys import DEFAULT_TENANT, check_tenant
from ..model import Message
from ..timeutil import at_offset, from_micros, local_offset, parse_time, to_micros

__all__ = [
    "ENV_REDIS_URL",
    "DEFAULT_TTL_SECONDS",
    "SessionBuffer",
    "InMemorySessionBuffer",
    "RedisSessionBuffer",
    "make_buffer",
    "tenant_prefix",
    "message_to_json",
    "message_from_json",
]

log = logging.getLogger(__name__)

ENV_REDIS_URL = "CHRONOMEM_REDIS_URL"
DEFAULT_TTL_SECONDS = 24 * 3600
DEFAULT_PREFIX = "chronomem:"

Writer = Callable[[list[Message]], Any]


@runtime_checkable
class SessionBuffer(Protocol):
    """Buffered turns of active sessions, keyed by (user_id, session_id)."""

    ttl_seconds: int

    def append(self, message: Message) -> bool:
        """Buffer one turn (its ``user_id``/``session_id`` say where); False if its id was already there
        with the same words, a ValidationError (nothing buffered) if with other words."""
        ...

    def extend(self, messages: Iterable[Message]) -> int:
        """Buffer several turns; returns how many were new.  Each session's turns are checked and
        appended atomically: an id clash refuses all of that session's turns in the call."""
        ...

    def read(self, user_id: str, session_id: str) -> list[Message]:
        """The session's buffered turns in append order (pending ones first)."""
        ...

    def active_sessions(self, user_id: str) -> list[str]:
        """Ids of the user's sessions with buffered (or pending) turns, sorted."""
        ...

    def pending_sessions(self, user_id: str) -> list[str]:
        """Ids of the user's sessions whose flush started and did not finish."""
        ...

    def open_sessions(self) -> list[tuple[str, str]]:
        """``(user_id, session_id)`` of every user's sessions with buffered (or pending) turns, sorted."""
        ...

    def idle_sessions(self, before: datetime) -> list[tuple[str, str]]:
        """``(user_id, session_id)`` of every user's sessions whose last turn arrived at or before ``before``."""
        ...

    def flush(self, user_id: str, session_id: str, write: Writer) -> list[Message]:
        """Move the turns to pending, ``write`` them, then forget them; returns what was written."""
        ...

    def recover(self, user_id: str, write: Writer) -> dict[str, int]:
        """Finish every interrupted flush of the user: ``{session_id: turns written}``."""
        ...

    def discard(self, user_id: str, session_id: str) -> int:
        """Drop the session's buffered and pending turns unwritten (forget); returns how many."""
        ...

    def pending_ids(self, user_id: str, session_id: str) -> set[str]:
        """Ids of the session's turns whose flush is in progress: a writer checks, inside the store's
        write transaction, that its batch is still pending (a forget may have discarded it meanwhile)."""
        ...


# --------------------------------------------------------------------------- serialisation


def message_to_json(m: Message) -> str:
    """Compact JSON of a :class:`Message` (times as integer microseconds)."""
    return json.dumps(
        {
            "id": m.id,
            "u": m.user_id,
            "s": m.session_id,
            "sp": m.speaker,
            "t": m.text,
            "ts": to_micros(m.timestamp),
            "off": local_offset(m.timestamp),
            "rec": to_micros(m.recorded_at),
            "a": m.agent_id,
            "seq": m.seq,
            "x": m.extracted,
        },
        ensure_ascii=False,
        separators=(",", ":"),
    )


def message_from_json(raw: str | bytes) -> Message:
    return _message_from_dict(json.loads(raw))


def messages_from_json(raws: list[bytes]) -> list[Message]:
    """Decode many buffered turns with one JSON parse."""
    if not raws:
        return []
    return [_message_from_dict(d) for d in json.loads(b"[" + b",".join(_b(r) for r in raws) + b"]")]


def _b(x: bytes | str) -> bytes:
    return x if isinstance(x, bytes) else x.encode()


def _message_from_dict(d: dict[str, Any]) -> Message:
    return Message(
        id=d["id"],
        user_id=d["u"],
        session_id=d["s"],
        speaker=d["sp"],
        text=d["t"],
        timestamp=at_offset(from_micros(d["ts"]), d.get("off")),
        recorded_at=from_micros(d["rec"]),
        agent_id=d.get("a"),
        seq=d.get("seq", 0),
        extracted=d.get("x", False),
    )


def _check_message(m: Any) -> Message:
    if not isinstance(m, Message):
        raise ValidationError("message", m, "expected a chronomem.model.Message")
    for name in ("id", "user_id", "session_id", "speaker"):
        v = getattr(m, name)
        if not isinstance(v, str) or not v.strip():
            raise ValidationError(f"message.{name}", v, "must be a non-empty string")
    if not isinstance(m.text, str):
        raise ValidationError("message.text", m.text, "must be a string")
    parse_time(m.timestamp, "message.timestamp")
    return m


def _same_turn(new: Message, old: Message) -> bool:
    """Whether ``new`` says what the buffered ``old`` of its id says: then it is a retry (a no-op);
    otherwise the id is reused for other words, which must be refused rather than dropped."""
    return (new.session_id, new.speaker, new.text) == (old.session_id, old.speaker, old.text)


def _id_clash(new: Message, old: Message) -> ValidationError:
    """The error for ``new`` reusing the id of the buffered turn ``old`` (the words of
    :func:`chronomem.extract.pipeline.refuse_id_clashes`, which checks the store)."""
    return ValidationError("message.id", new.id,
                           f"is the id of another turn (session {old.session_id!r}, "
                           f"{old.speaker}: {old.text[:40]!r}); give this turn its own id")


def _check_ids(user_id: Any, session_id: Any = "-") -> None:
    check_id("user_id", user_id)
    check_id("session_id", session_id)


def _check_ttl(ttl_seconds: Any) -> int:
    if isinstance(ttl_seconds, bool) or not isinstance(ttl_seconds, int) or ttl_seconds < 1:
        raise ValidationError("ttl_seconds", ttl_seconds, "must be a positive integer (seconds)")
    return ttl_seconds


# --------------------------------------------------------------------------- in process


@dataclass
class _Session:
    turns: list[Message] = field(default_factory=list)
    pending: list[Message] = field(default_factory=list)
    ids: set[str] = field(default_factory=set)
    touched: float = 0.0


class InMemorySessionBuffer:
    """The default buffer: a dict in this process, guarded by a lock.

    Survives nothing but a failed ``write`` (then the turns stay pending for
    the next flush); use Redis to survive a process crash.
    """

    def __init__(self, *, ttl_seconds: int = DEFAULT_TTL_SECONDS, clock: Callable[[], float] = time.monotonic):
        self.ttl_seconds = _check_ttl(ttl_seconds)
        self._clock = clock
        self._lock = threading.RLock()
        # kept in the order of the sessions' last appends (an append moves its session to the end), so
        # the sessions whose TTL ran out are the first ones: :meth:`_sweep` drops them without a full scan
        self._sessions: dict[tuple[str, str], _Session] = {}
        self._next_expiry = 0.0  # no session expires before this clock reading (as of the last sweep)

    def _expired(self, s: _Session, now: float) -> bool:
        """Whether ``s`` was abandoned: no append for ``ttl_seconds`` and no flush in progress (pending
        turns never expire, as in Redis, where only the buffered turns carry the TTL)."""
        return not s.pending and now - s.touched >= self.ttl_seconds

    def _live(self, key: tuple[str, str]) -> _Session | None:
        s = self._sessions.get(key)
        if s is None:
            return None
        if self._expired(s, self._clock()):
            log.info("buffer: session %r of user %r expired with %d unflushed turns", key[1], key[0], len(s.turns))
            del self._sessions[key]
            return None
        return s

    def _sweep(self) -> None:
        """Drop every abandoned session, as Redis expires keys with no one reading them: without this an
        abandoned session stayed in memory until someone read it or listed the sessions.

        Called by the operations that touch a session.  Cheap when nothing is due (one clock reading):
        the sessions are in the order of their last appends, so the walk stops at the first one still
        live, and the next walk waits until that one can expire.  Sessions with pending turns are
        stepped over (a failed write leaves them; the next flush or ``recover`` writes them)."""
        now = self._clock()
        if now < self._next_expiry:
            return
        expired: list[tuple[str, str]] = []
        self._next_expiry = now + self.ttl_seconds  # a session appended from now on expires after this
        for key, s in self._sessions.items():
            if s.pending:
                continue
            if not self._expired(s, now):
                self._next_expiry = s.touched + self.ttl_seconds
                break
            expired.append(key)
        for key in expired:
            del self._sessions[key]
        if expired:
            log.info("buffer: %d abandoned session(s) expired with their unflushed turns", len(expired))

    def _touch(self, key: tuple[str, str], s: _Session) -> None:
        """Record an append to ``s``: it moves to the end of the expiry order."""
        self._sessions.pop(key, None)
        self._sessions[key] = s
        s.touched = self._clock()

    def _forget_if_empty(self, key: tuple[str, str], s: _Session) -> None:
        """After a write removed pending turns: drop the session if nothing is left, else let the sweep see
        it again (it stepped over the session while its turns were pending)."""
        if not s.pending and not s.turns:
            del self._sessions[key]
        elif not s.pending:
            self._next_expiry = min(self._next_expiry, s.touched + self.ttl_seconds)

    def append(self, message: Message) -> bool:
        return self.extend([message]) == 1

    def extend(self, messages: Iterable[Message]) -> int:
        """Check every turn against the buffered ones, then append the new ones, all under the lock:
        a clash anywhere in the call buffers nothing."""
        msgs = [_check_message(m) for m in messages]
        with self._lock:
            self._sweep()
            seen: dict[tuple[str, str, str], Message] = {}
            for m in msgs:
                key = (m.user_id, m.session_id)
                s = self._live(key)
                old = seen.get((*key, m.id))
                if old is None and s is not None and m.id in s.ids:
                    old = next((t for t in (*s.pending, *s.turns) if t.id == m.id), None)
                if old is not None and not _same_turn(m, old):
                    raise _id_clash(m, old)
                seen.setdefault((*key, m.id), m)
            added = 0
            for m in msgs:
                key = (m.user_id, m.session_id)
                s = self._live(key)
                if s is None:
                    s = _Session()
                self._touch(key, s)
                if m.id not in s.ids:
                    s.ids.add(m.id)
                    s.turns.append(m)
                    added += 1
            return added

    def read(self, user_id: str, session_id: str) -> list[Message]:
        _check_ids(user_id, session_id)
        with self._lock:
            self._sweep()
            s = self._live((user_id, session_id))
            return [*s.pending, *s.turns] if s else []

    def active_sessions(self, user_id: str) -> list[str]:
        _check_ids(user_id)
        with self._lock:
            self._sweep()
            return sorted(sid for (uid, sid) in list(self._sessions) if uid == user_id and self._live((uid, sid)))

    def pending_sessions(self, user_id: str) -> list[str]:
        _check_ids(user_id)
        with self._lock:
            return sorted(sid for (uid, sid), s in self._sessions.items() if uid == user_id and s.pending)

    def open_sessions(self) -> list[tuple[str, str]]:
        with self._lock:
            return sorted(key for key in list(self._sessions) if self._live(key))

    def idle_sessions(self, before: datetime) -> list[tuple[str, str]]:
        with self._lock:
            out = []
            for key in list(self._sessions):
                s = self._live(key)
                turns = [*s.pending, *s.turns] if s else []
                if turns and max(m.recorded_at for m in turns) <= before:
                    out.append(key)
            return sorted(out)

    def flush(self, user_id: str, session_id: str, write: Writer) -> list[Message]:
        _check_ids(user_id, session_id)
        key = (user_id, session_id)
        with self._lock:
            self._sweep()
            s = self._live(key)
            if s is None:
                return []
            s.pending.extend(s.turns)
            s.turns = []
            batch = list(s.pending)
        if batch:
            write(batch)  # an exception leaves the batch pending
        with self._lock:
            s = self._sessions.get(key)
            if s is not None:
                done = {m.id for m in batch}
                s.pending = [m for m in s.pending if m.id not in done]
                self._forget_if_empty(key, s)
        return batch

    def recover(self, user_id: str, write: Writer) -> dict[str, int]:
        return {sid: len(self._flush_pending(user_id, sid, write)) for sid in self.pending_sessions(user_id)}

    def _flush_pending(self, user_id: str, session_id: str, write: Writer) -> list[Message]:
        key = (user_id, session_id)
        with self._lock:
            s = self._sessions.get(key)
            batch = list(s.pending) if s else []
        if batch:
            write(batch)
            with self._lock:
                s = self._sessions.get(key)
                if s is not None:
                    done = {m.id for m in batch}
                    s.pending = [m for m in s.pending if m.id not in done]
                    self._forget_if_empty(key, s)
        return batch

    def discard(self, user_id: str, session_id: str) -> int:
        _check_ids(user_id, session_id)
        with self._lock:
            s = self._sessions.pop((user_id, session_id), None)
            return len(s.turns) + len(s.pending) if s else 0

    def pending_ids(self, user_id: str, session_id: str) -> set[str]:
        _check_ids(user_id, session_id)
        with self._lock:
            s = self._sessions.get((user_id, session_id))
            return {m.id for m in s.pending} if s else set()


# --------------------------------------------------------------------------- Redis

# Keys of one user share a Redis Cluster hash slot ("{u:<user>}"), so the Lua
# scripts may touch several of them.  Components are percent-encoded, so ids
# containing ':' or '{' cannot collide.
#   <p>{u:<user>}:buf:<session>   LIST  buffered turns (JSON), append order
#   <p>{u:<user>}:ids:<session>   SET   ids of the session's turns (idempotency)
#   <p>{u:<user>}:pend:<session>  LIST  turns of a flush in progress (no TTL)
#   <p>{u:<user>}:active          ZSET  session -> arrival (recorded_at, ms) of its last turn
#   <p>{u:<user>}:pending         SET   sessions with a flush in progress

# Append turns of one session: KEYS buf, ids, active, pend; ARGV ttl (ms), arrival (ms), session, then
# (id, JSON) per turn.  A turn whose id is buffered or pending (or earlier in the call) with other words
# (session, speaker, text) is a clash: the script writes nothing and returns {its position (0-based), the
# JSON of the turn holding the id}.  An id in the set whose turn was flushed meanwhile is a no-op: the
# caller compared the store's copy.  Otherwise it returns how many turns were new.
_APPEND = """
local seen = {}
local held = nil
local function same(a, b)
  local x, y = cjson.decode(a), cjson.decode(b)
  return x.s == y.s and x.sp == y.sp and x.t == y.t
end
for i = 4, #ARGV, 2 do
  local id, raw = ARGV[i], ARGV[i + 1]
  local old = seen[id]
  if old == nil and redis.call('SISMEMBER', KEYS[2], id) == 1 then
    if held == nil then
      held = {}
      for _, key in ipairs({KEYS[4], KEYS[1]}) do
        for _, r in ipairs(redis.call('LRANGE', key, 0, -1)) do held[cjson.decode(r).id] = r end
      end
    end
    old = held[id]
  end
  if old ~= nil and not same(old, raw) then return {(i - 4) / 2, old} end
  if seen[id] == nil then seen[id] = raw end
end
local added = 0
for i = 4, #ARGV, 2 do
  if redis.call('SADD', KEYS[2], ARGV[i]) == 1 then
    redis.call('RPUSH', KEYS[1], ARGV[i + 1])
    added = added + 1
  end
end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
redis.call('PEXPIRE', KEYS[2], ARGV[1])
redis.call('ZADD', KEYS[3], ARGV[2], ARGV[3])
redis.call('PEXPIRE', KEYS[3], ARGV[1])
return added
"""

# Move buffered turns behind any already pending ones; mark the session pending.
_BEGIN_FLUSH = """
local n = redis.call('LLEN', KEYS[1])
if n > 0 then
  local items = redis.call('LRANGE', KEYS[1], 0, -1)
  for i = 1, #items, 500 do
    redis.call('RPUSH', KEYS[2], unpack(items, i, math.min(i + 499, #items)))
  end
  redis.call('DEL', KEYS[1])
end
local p = redis.call('LLEN', KEYS[2])
if p > 0 then redis.call('SADD', KEYS[3], ARGV[1]) end
return redis.call('LRANGE', KEYS[2], 0, -1)
"""

# Remove the pending turns just written (ARGV[2..], matched by value, so a
# concurrent flush never removes turns it did not write).  When nothing else is
# left for the session, forget it entirely.
_END_FLUSH = """
for i = 2, #ARGV do redis.call('LREM', KEYS[1], 1, ARGV[i]) end
if redis.call('LLEN', KEYS[1]) == 0 then
  redis.call('DEL', KEYS[1])
  redis.call('SREM', KEYS[3], ARGV[1])
  if redis.call('LLEN', KEYS[2]) == 0 then
    redis.call('DEL', KEYS[4])
    redis.call('ZREM', KEYS[5], ARGV[1])
  end
end
return 1
"""

_READ = """
local a = redis.call('LRANGE', KEYS[1], 0, -1)
local b = redis.call('LRANGE', KEYS[2], 0, -1)
for i = 1, #b do a[#a + 1] = b[i] end
return a
"""


class RedisSessionBuffer:
    """Session buffer in Redis; each operation is one atomic script or command."""

    def __init__(
        self,
        client: Any,
        *,
        ttl_seconds: int = DEFAULT_TTL_SECONDS,
        prefix: str = DEFAULT_PREFIX,
        clock: Callable[[], float] = time.time,
        root: str | None = None,
    ) -> None:
        self.ttl_seconds = _check_ttl(ttl_seconds)
        if not isinstance(prefix, str):
            raise ValidationError("prefix", prefix, "must be a string")
        self.prefix = prefix
        # the prefix the tenants' buffers sit under (:func:`tenant_prefix`, :meth:`for_tenant`)
        self.root = prefix if root is None else root
        self._r = client
        self._clock = clock
        self._append = client.register_script(_APPEND)
        self._begin = client.register_script(_BEGIN_FLUSH)
        self._end = client.register_script(_END_FLUSH)
        self._read = client.register_script(_READ)

    @classmethod
    def from_url(cls, url: str, **kwargs: Any) -> RedisSessionBuffer:
        try:
            import redis
        except ImportError:  # pragma: no cover - depends on the environment
            raise ConfigError(f"{ENV_REDIS_URL} is set but redis-py is missing: pip install 'chronomem[redis]'") from None
        try:
            client = redis.Redis.from_url(url)
        except ValueError as exc:
            raise ValidationError("redis_url", url, str(exc)) from None
        return cls(client, **kwargs)

    # -- keys ----------------------------------------------------------------

    def _user(self, user_id: str) -> str:
        return f"{self.prefix}{{u:{quote(user_id, safe='')}}}"

    def _keys(self, user_id: str, session_id: str) -> dict[str, str]:
        u, s = self._user(user_id), quote(session_id, safe="")
        return {
            "buf": f"{u}:buf:{s}",
            "ids": f"{u}:ids:{s}",
            "pend": f"{u}:pend:{s}",
            "active": f"{u}:active",
            "pending": f"{u}:pending",
        }

    def _call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except Exception as exc:
            if type(exc).__module__.startswith("redis"):
                raise StoreError(f"redis session buffer: {exc}") from exc
            raise

    # -- operations ----------------------------------------------------------

    def append(self, message: Message) -> bool:
        return self.extend([message]) == 1

    def extend(self, messages: Iterable[Message]) -> int:
        """One script call per session (pipelined), each checking and appending its turns atomically."""
        msgs = [_check_message(m) for m in messages]
        if not msgs:
            return 0
        groups: dict[tuple[str, str], list[Message]] = {}
        for m in msgs:
            groups.setdefault((m.user_id, m.session_id), []).append(m)
        if len(groups) == 1:  # the usual call (one session): one round trip, no pipeline
            return self._check_added(msgs, self._call(self._append, **self._append_call(msgs)))
        pipe = self._r.pipeline(transaction=False)
        for turns in groups.values():
            self._append(**self._append_call(turns), client=pipe)
        return sum(self._check_added(turns, res) for turns, res in zip(groups.values(), self._call(pipe.execute)))

    def _append_call(self, turns: list[Message]) -> dict[str, Any]:
        """The ``_APPEND`` arguments for ``turns`` of one session."""
        k = self._keys(turns[0].user_id, turns[0].session_id)
        args: list[Any] = [self.ttl_seconds * 1000, _arrival_ms(turns[-1]), turns[0].session_id]
        for m in turns:
            args += [m.id, message_to_json(m)]
        return {"keys": [k["buf"], k["ids"], k["active"], k["pend"]], "args": args}

    @staticmethod
    def _check_added(turns: list[Message], res: Any) -> int:
        """How many turns ``_APPEND`` added, or the ValidationError of the clash it refused."""
        if isinstance(res, list):
            raise _id_clash(turns[int(res[0])], message_from_json(res[1]))
        return int(res)

    def read(self, user_id: str, session_id: str) -> list[Message]:
        _check_ids(user_id, session_id)
        k = self._keys(user_id, session_id)
        return messages_from_json(self._call(self._read, keys=[k["pend"], k["buf"]]))

    def active_sessions(self, user_id: str) -> list[str]:
        _check_ids(user_id)
        u = self._user(user_id)
        members = [_s(x) for x in self._call(self._r.zrange, f"{u}:active", 0, -1)]
        pending = set(self.pending_sessions(user_id))
        alive: list[str] = []
        expired: list[str] = []
        for sid in members:
            k = self._keys(user_id, sid)
            if sid in pending or self._call(self._r.exists, k["buf"]):
                alive.append(sid)
            else:
                expired.append(sid)
        if expired:  # the turns expired with their TTL; drop the stale index entries
            self._call(self._r.zrem, f"{u}:active", *expired)
        return sorted(set(alive) | pending)

    def pending_sessions(self, user_id: str) -> list[str]:
        _check_ids(user_id)
        return sorted(_s(x) for x in self._call(self._r.smembers, f"{self._user(user_id)}:pending"))

    def for_tenant(self, tenant: str) -> RedisSessionBuffer:
        """The buffer of ``tenant`` in the same Redis, under this buffer's root (:func:`tenant_prefix`):
        a buffer given to ``Memory(tenant=…)`` or to its tenant views serves each tenant apart."""
        return RedisSessionBuffer(self._r, ttl_seconds=self.ttl_seconds, prefix=tenant_prefix(tenant, self.root),
                                  clock=self._clock, root=self.root)

    def open_sessions(self) -> list[tuple[str, str]]:
        users = {user_id for name in ("active", "pending") for user_id, _ in self._user_keys(name)}
        return sorted((user_id, sid) for user_id in users for sid in self.active_sessions(user_id))

    def tenants(self, root: str | None = None) -> list[str]:
        """The tenants with buffered (or pending) turns in this Redis, whose buffers sit under ``root``
        (default: this buffer's root) as :func:`tenant_prefix` lays them out (other prefixes are ignored),
        sorted."""
        root = self.root if root is None else root
        found: set[str] = set()
        for name in ("active", "pending"):
            for key in self._scan(_glob_escape(root) + "*{u:*}:" + name):
                head = _s(key)[len(root):].partition("{u:")[0]  # user ids are quoted: no '{' in them
                if head == "":
                    found.add(DEFAULT_TENANT)
                elif head.startswith("t:") and head.endswith(":") and _is_tenant(head[2:-1]):
                    found.add(head[2:-1])
        return sorted(found)

    def idle_sessions(self, before: datetime) -> list[tuple[str, str]]:
        # every user's "active" index (session -> recorded_at of its last turn, ms)
        cutoff = int(before.timestamp() * 1000)
        out: set[tuple[str, str]] = set()
        for user_id, key in self._user_keys("active"):
            quiet = {_s(x) for x in self._call(self._r.zrangebyscore, key, "-inf", cutoff)}
            if quiet:
                live = set(self.active_sessions(user_id))  # drops sessions whose turns expired
                out.update((user_id, sid) for sid in quiet & live)
        # a flush that failed leaves its turns pending, with no TTL, while the "active" index above
        # expires: those sessions are found from the pending sets, by their own last arrival
        for user_id, key in self._user_keys("pending"):
            for sid in (_s(x) for x in self._call(self._r.smembers, key)):
                turns = self.read(user_id, sid)
                if turns and max(m.recorded_at for m in turns) <= before:
                    out.add((user_id, sid))
        return sorted(out)

    def _user_keys(self, name: str) -> list[tuple[str, str]]:
        """``(user_id, key)`` of every user's ``<p>{u:<user>}:<name>`` key."""
        out = []
        for key in self._scan(_glob_escape(self.prefix) + "{u:*}:" + name):
            inner = _s(key)[len(self.prefix):]
            if inner.startswith("{u:") and inner.endswith("}:" + name):
                out.append((unquote(inner[3:-len("}:" + name)]), _s(key)))
        return out

    def _scan(self, pattern: str) -> list[bytes | str]:
        """Every key matching the glob ``pattern`` (SCAN: never blocks the server)."""
        keys: list[bytes | str] = self._call(lambda: list(self._r.scan_iter(match=pattern, count=500)))
        return keys

    def flush(self, user_id: str, session_id: str, write: Writer) -> list[Message]:
        _check_ids(user_id, session_id)
        k = self._keys(user_id, session_id)
        raw = self._call(self._begin, keys=[k["buf"], k["pend"], k["pending"]], args=[session_id])
        batch = messages_from_json(raw)
        if batch:
            write(batch)  # an exception leaves the batch pending
        self._finish(user_id, session_id, raw)
        return batch

    def _finish(self, user_id: str, session_id: str, raw: list[bytes]) -> None:
        k = self._keys(user_id, session_id)
        self._call(
            self._end,
            keys=[k["pend"], k["buf"], k["pending"], k["ids"], k["active"]],
            args=[session_id, *raw],
        )

    def recover(self, user_id: str, write: Writer) -> dict[str, int]:
        done: dict[str, int] = {}
        for sid in self.pending_sessions(user_id):
            k = self._keys(user_id, sid)
            raw = self._call(self._r.lrange, k["pend"], 0, -1)
            batch = messages_from_json(raw)
            if batch:
                write(batch)
            self._finish(user_id, sid, raw)
            done[sid] = len(batch)
        return done

    def discard(self, user_id: str, session_id: str) -> int:
        _check_ids(user_id, session_id)
        k = self._keys(user_id, session_id)
        pipe = self._r.pipeline(transaction=True)
        pipe.llen(k["buf"])
        pipe.llen(k["pend"])
        pipe.delete(k["buf"], k["pend"], k["ids"])
        pipe.zrem(k["active"], session_id)
        pipe.srem(k["pending"], session_id)
        res = self._call(pipe.execute)
        return int(res[0]) + int(res[1])

    def pending_ids(self, user_id: str, session_id: str) -> set[str]:
        _check_ids(user_id, session_id)
        k = self._keys(user_id, session_id)
        return {m.id for m in messages_from_json(self._call(self._r.lrange, k["pend"], 0, -1))}


def _s(x: bytes | str) -> str:
    return x.decode() if isinstance(x, bytes) else x


def _arrival_ms(m: Message) -> int:
    """The "active" index score of a turn: when it reached the memory (``recorded_at``), in ms."""
    return to_micros(m.recorded_at) // 1000


def _is_tenant(name: str) -> bool:
    try:
        check_tenant(name)
    except ValidationError:
        return False
    return True


def tenant_prefix(tenant: str, root: str = DEFAULT_PREFIX) -> str:
    """The key prefix of ``tenant``'s Redis buffer under ``root``, as ``Memory`` lays them out: ``root``
    itself for the default tenant (keys from before tenants keep working), ``<root>t:<tenant>:`` for others."""
    return root if tenant == DEFAULT_TENANT else f"{root}t:{check_tenant(tenant)}:"


def _glob_escape(text: str) -> str:
    """``text`` as a literal in a Redis glob pattern."""
    return "".join("\\" + c if c in "*?[]\\" else c for c in text)


# --------------------------------------------------------------------------- factory


def make_buffer(
    redis_url: str | None = None,
    *,
    ttl_seconds: int = DEFAULT_TTL_SECONDS,
    prefix: str = DEFAULT_PREFIX,
    env: dict[str, str] | None = None,
) -> SessionBuffer:
    """Redis buffer when ``redis_url`` (or ``$CHRONOMEM_REDIS_URL``) is set, else in process."""
    url = redis_url or (env if env is not None else os.environ).get(ENV_REDIS_URL) or None
    if url:
        return RedisSessionBuffer.from_url(url, ttl_seconds=ttl_seconds, prefix=prefix)
    return InMemorySessionBuffer(ttl_seconds=ttl_seconds)
