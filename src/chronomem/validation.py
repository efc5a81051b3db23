"""Checks of caller-supplied identifiers and text, shared by every layer.

Each raises :class:`~chronomem.errors.ValidationError` naming the field.  The limits
(:mod:`chronomem.limits`) are the same for every store, so whatever one store accepts
the other accepts too.
"""

from __future__ import annotations

import unicodedata
from datetime import datetime, timezone
from typing import Any

from .errors import ValidationError
from .limits import MAX_ID_CHARS, MAX_NAME_BYTES, MAX_NAME_CHARS, MAX_TEXT_CHARS


def text_problem(value: str, max_chars: int) -> str | None:
    """Why ``value`` cannot be stored (NUL, not UTF-8 encodable, too long), or None.  A name (``max_chars``
    :data:`MAX_NAME_CHARS`) must also fit :data:`MAX_NAME_BYTES` of UTF-8, as given and as matched."""
    if len(value) > max_chars:
        return f"is too long ({len(value)} characters; the limit is {max_chars})"
    if "\x00" in value:
        return "contains a NUL character"
    if not value.isascii():
        try:
            size = len(value.encode("utf-8"))
        except UnicodeEncodeError as e:
            return f"is not valid Unicode text ({e.reason} at position {e.start})"
        if max_chars == MAX_NAME_CHARS:
            folded = len(unicodedata.normalize("NFKC", value).casefold().encode("utf-8"))
            if max(size, folded) > MAX_NAME_BYTES:
                return (f"is too long ({max(size, folded)} bytes of UTF-8{' once case-folded' * (folded > size)}; "
                        f"the limit is {MAX_NAME_BYTES})")
    return None


def check_text(name: str, value: Any, max_chars: int = MAX_TEXT_CHARS) -> str:
    """A storable string: encodable as UTF-8, no NUL, at most ``max_chars`` characters."""
    if not isinstance(value, str):
        raise ValidationError(name, value, "must be a string")
    problem = text_problem(value, max_chars)
    if problem:
        raise ValidationError(name, value[:40], problem)
    return value


def check_name(name: str, value: Any) -> str:
    """A non-empty, storable name (entity, relation, speaker)."""
    if not isinstance(value, str) or not value.strip():
        raise ValidationError(name, value, "must be a non-empty string")
    return check_text(name, value, MAX_NAME_CHARS)


def check_id(name: str, value: Any) -> str:
    """A non-empty, storable string id (``session_id``, ``agent_id``, ``fact_id`` …)."""
    if not isinstance(value, str) or not value.strip():
        raise ValidationError(name, value, "must be a non-empty string")
    return check_text(name, value, MAX_ID_CHARS)


def check_user(user_id: Any) -> str:
    """``user_id`` is required everywhere: every memory belongs to a user."""
    if user_id is None:
        raise ValidationError("user_id", user_id, "is required: every memory belongs to a user")
    return check_id("user_id", user_id)


_KINDS = {"datetime": "a datetime", "str": "a string", "int": "a whole number"}


def check_place(place: object, kind: str, parts: tuple[tuple[str, type, bool], ...]) -> None:
    """The parts of a place in a list (``FactPosition``, ``MessagePosition``, ``JobPosition``), each
    ``(attribute, type, may be None)``: a bad one is refused by name when the position is made, not as a
    database error when a page is read (an id holding NUL, which SQLite took and PostgreSQL refused).  A
    naive time is read as UTC, as every other time chronomem is given (``timeutil``); it was read as the
    machine's local time."""
    for name, want, optional in parts:
        value = getattr(place, name)
        if (value is not None or not optional) and (isinstance(value, bool) or not isinstance(value, want)):
            raise ValidationError(f"{kind}.{name}", value, f"must be {_KINDS.get(want.__name__, want.__name__)}"
                                  + (" or None" * optional))
        if isinstance(value, str) and (problem := text_problem(value, MAX_ID_CHARS)):
            raise ValidationError(f"{kind}.{name}", value[:40], problem)
        if isinstance(value, datetime) and value.tzinfo is None:
            object.__setattr__(place, name, value.replace(tzinfo=timezone.utc))  # frozen: made once, here


def check_after(after: Any, item: type, position: type) -> Any:
    """A page's ``after``: the last ``item`` of the page before (made its ``position``), a ``position``, or
    ``None`` (the list's start)."""
    if isinstance(after, item):
        return position.of(after)  # type: ignore[attr-defined]
    if after is None or isinstance(after, position):
        return after
    raise ValidationError("after", after, f"must be a {item.__name__} of the page before, a {position.__name__} "
                                          "or None")


MAX_ROWS = 2**31 - 1  # a LIMIT or OFFSET any store takes (PostgreSQL's bigint, SQLite's integers)


def check_limit(limit: Any) -> int | None:
    """A page's ``limit``: a whole number from 1 to :data:`MAX_ROWS`, or ``None`` for all."""
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or not 0 < limit <= MAX_ROWS):
        raise ValidationError("limit", limit, f"must be a whole number from 1 to {MAX_ROWS}, or None for all")
    return limit
