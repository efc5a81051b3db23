"""Opaque ``cursor`` / ``limit`` paging for every list of REST v1.

A cursor names the place of the last item sent in its list's order (the ``id`` and times that order it),
not a count of items: a fact forgotten or a turn stored between two pages moves nothing, so a walk
through a list returns each item that stayed once (the job list too, newest first, while jobs arrive at
its front and leave a status filter as they finish).  A cursor is for the list it came from; one of
another list, or one not made here, is refused (422, field ``cursor``).
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, TypeVar

from ..errors import ValidationError
from ..jobs.model import JobPosition
from ..keys import DEFAULT_TENANT
from ..model import EntityPosition, FactPosition, MessagePosition, SessionPosition
from ..store.tenant import user_key
from ..timeutil import from_micros, to_micros
from ..validation import check_user

T = TypeVar("T")
P = TypeVar("P")
DEFAULT_LIMIT = 50
MAX_LIMIT = 500
_MICROS = (-(2**62), 2**62)  # any instant a datetime holds, in micro-seconds from 1970, lies inside

#: a key's parts by type, per list: ``int`` / ``str``, or ``None`` for an int that may be null
Shape = tuple[type | None, ...]


def _pack(payload: dict[str, Any]) -> str:
    raw = json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _unpack(cursor: str) -> Any:
    try:
        return json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (binascii.Error, ValueError, UnicodeDecodeError):
        raise _refused(cursor) from None


def _refused(cursor: str, why: str = "not a cursor returned by this API") -> ValidationError:
    return ValidationError("cursor", cursor[:60], why)


def encode_after(name: str, key: Sequence[Any]) -> str:
    """The cursor of the place ``key`` in list ``name``."""
    return _pack({"l": name, "a": list(key)})


def decode_after(cursor: str | None, name: str, shape: Shape) -> list[Any] | None:
    """The key a cursor of list ``name`` names (``None`` without one: the list's start)."""
    if cursor is None or cursor == "":
        return None
    raw = _unpack(cursor)
    if not isinstance(raw, dict) or not isinstance(key := raw.get("a"), list):
        raise _refused(cursor)
    if raw.get("l") != name:
        raise _refused(cursor, f"a cursor of another list; this one is {name}'s")
    if len(key) != len(shape):
        raise _refused(cursor)
    for part, kind in zip(key, shape, strict=True):
        if kind is None and part is None:
            continue
        if isinstance(part, bool) or not isinstance(part, int if kind is None else kind):
            raise _refused(cursor)
        if isinstance(part, int) and not _MICROS[0] < part < _MICROS[1]:
            raise _refused(cursor)
    return key


@dataclass(frozen=True)
class Listing(Generic[P]):
    """A list the store pages, and how the place of an item (``P``, a position) is written in its cursors:
    ``key`` turns a place into the cursor's parts (of ``shape``), ``place`` turns them back; a key no
    place could have (a time out of range, an id no user holds) is refused as the cursor."""

    name: str
    shape: Shape
    key: Callable[[P], list[Any]]
    place: Callable[[list[Any]], P]

    def cursor(self, place: P) -> str:
        return encode_after(self.name, self.key(place))

    def after(self, cursor: str | None) -> P | None:
        """The place a cursor of this list names (``None`` without one: the list's start)."""
        key = decode_after(cursor, self.name, self.shape)
        if key is None or cursor is None:
            return None
        try:
            return self.place(key)
        except (OverflowError, ValueError):  # ValidationError is a ValueError
            raise _refused(cursor) from None


def _micros(t: datetime | None) -> int | None:
    return None if t is None else to_micros(t)


def _time(us: int | None) -> datetime | None:
    return None if us is None else from_micros(us)


def _user(user_id: str) -> str:
    return user_key(DEFAULT_TENANT, check_user(user_id))  # refuses an id that could name another tenant's key


#: valid_from (null: none), recorded_at (micro-seconds), id
FACTS: Listing[FactPosition] = Listing(
    "facts", (None, int, str), lambda p: [_micros(p.valid_from), to_micros(p.recorded_at), p.id],
    lambda k: FactPosition(_time(k[0]), from_micros(k[1]), k[2]))
#: timestamp (micro-seconds), session id, seq
MESSAGES: Listing[MessagePosition] = Listing(
    "messages", (int, str, int), lambda p: [to_micros(p.timestamp), p.session_id, p.seq],
    lambda k: MessagePosition(from_micros(k[0]), k[1], k[2]))
#: created_at (micro-seconds), id: newest first
JOBS: Listing[JobPosition] = Listing(
    "jobs", (int, str), lambda p: [to_micros(p.created_at), p.id], lambda k: JobPosition(from_micros(k[0]), k[1]))
#: user id
USERS: Listing[str] = Listing("users", (str,), lambda u: [u], lambda k: _user(k[0]))
#: created_at (micro-seconds), id
ENTITIES: Listing[EntityPosition] = Listing(
    "entities", (int, str), lambda p: [to_micros(p.created_at), p.id],
    lambda k: EntityPosition(from_micros(k[0]), k[1]))
#: started (0 / 1), started_at (micro-seconds, 0 when not started), id
SESSIONS: Listing[SessionPosition] = Listing(
    "sessions", (int, int, str),
    lambda p: [0, 0, p.id] if p.started_at is None else [1, to_micros(p.started_at), p.id],
    lambda k: SessionPosition(from_micros(k[1]) if k[0] else None, k[2]))


def page_after(items: Sequence[T], name: str, key: Callable[[T], list[Any]], shape: Shape, cursor: str | None,
               limit: int) -> tuple[list[T], str | None]:
    """One page of a whole list read into memory, in ``key`` order, after the cursor's place; and the
    cursor of the next page (``None`` at the end).  Keys of one list must compare (no ``None`` parts)."""
    after = decode_after(cursor, name, shape)
    rest = sorted((x for x in items if after is None or key(x) > after), key=key)
    chunk = rest[:limit]
    return chunk, encode_after(name, key(chunk[-1])) if len(rest) > limit else None


def paged(items: Sequence[T], name: str, key: Callable[[T], list[Any]], shape: Shape, cursor: str | None,
          limit: int, out: Callable[[T], Any] | None = None) -> dict[str, Any]:
    """One page of a list read whole (``name``'s, in ``key`` order), each item made a reply by ``out``
    (only the page's)."""
    chunk, nxt = page_after(items, name, key, shape, cursor, limit)
    return {"items": chunk if out is None else [out(x) for x in chunk], "next_cursor": nxt}


def read_page(found: Sequence[T], limit: int, out: Callable[[T], Any], cursor_of: Callable[[T], str]) -> dict[str, Any]:
    """The page of a list the store read from the cursor's place: ``found`` holds ``limit + 1`` items when
    more follow."""
    chunk = found[:limit]
    return {"items": [out(x) for x in chunk], "next_cursor": cursor_of(chunk[-1]) if len(found) > limit else None}
