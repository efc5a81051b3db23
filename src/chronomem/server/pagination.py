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
from datetime import datetime
from typing import Any, TypeVar

from ..errors import ValidationError
from ..keys import DEFAULT_TENANT
from ..jobs.model import JobPosition
from ..model import FactPosition, MessagePosition
from ..store.tenant import user_key
from ..timeutil import from_micros, to_micros
from ..validation import check_user

T = TypeVar("T")
DEFAULT_LIMIT = 50
MAX_LIMIT = 500
_MICROS = (-(2**62), 2**62)  # any instant a datetime holds, in micro-seconds from 1970, lies inside

#: a key's parts by type, per list: ``int`` / ``str``, or ``None`` for an int that may be null
Shape = tuple[type | None, ...]
FACTS: Shape = (None, int, str)  # valid_from, recorded_at (micro-seconds), id
MESSAGES: Shape = (int, str, int)  # timestamp (micro-seconds), session id, seq
JOBS: Shape = (int, str)  # created_at (micro-seconds), id
USERS: Shape = (str,)  # user id


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


def _micros(t: datetime | None) -> int | None:
    return None if t is None else to_micros(t)


def _time(us: int, cursor: str) -> datetime:
    try:
        return from_micros(us)
    except OverflowError:
        raise _refused(cursor) from None


def fact_cursor(p: FactPosition) -> str:
    return encode_after("facts", [_micros(p.valid_from), to_micros(p.recorded_at), p.id])


def fact_position(cursor: str | None) -> FactPosition | None:
    key = decode_after(cursor, "facts", FACTS)
    if key is None or cursor is None:
        return None
    return FactPosition(None if key[0] is None else _time(key[0], cursor), _time(key[1], cursor), key[2])


def message_cursor(p: MessagePosition) -> str:
    return encode_after("messages", [to_micros(p.timestamp), p.session_id, p.seq])


def message_position(cursor: str | None) -> MessagePosition | None:
    key = decode_after(cursor, "messages", MESSAGES)
    if key is None or cursor is None:
        return None
    return MessagePosition(_time(key[0], cursor), key[1], key[2])


def job_cursor(p: JobPosition) -> str:
    return encode_after("jobs", [to_micros(p.created_at), p.id])


def job_position(cursor: str | None) -> JobPosition | None:
    key = decode_after(cursor, "jobs", JOBS)
    if key is None or cursor is None:
        return None
    return JobPosition(_time(key[0], cursor), key[1])


def user_cursor(user_id: str) -> str:
    return encode_after("users", [user_id])


def user_after(cursor: str | None) -> str | None:
    """The user id a cursor of the user list names (one no user could have is refused as the cursor)."""
    key = decode_after(cursor, "users", USERS)
    if key is None or cursor is None:
        return None
    try:
        return user_key(DEFAULT_TENANT, check_user(key[0]))
    except ValidationError:
        raise _refused(cursor) from None


def page_after(items: Sequence[T], name: str, key: Callable[[T], list[Any]], shape: Shape, cursor: str | None,
               limit: int) -> tuple[list[T], str | None]:
    """One page of a whole list read into memory, in ``key`` order, after the cursor's place; and the
    cursor of the next page (``None`` at the end).  Keys of one list must compare (no ``None`` parts)."""
    after = decode_after(cursor, name, shape)
    rest = sorted((x for x in items if after is None or key(x) > after), key=key)
    chunk = rest[:limit]
    return chunk, encode_after(name, key(chunk[-1])) if len(rest) > limit else None
