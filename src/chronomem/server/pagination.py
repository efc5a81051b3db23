"""Opaque ``cursor`` / ``limit`` paging for every list of REST v1."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Sequence
from typing import TypeVar

from ..errors import ValidationError

T = TypeVar("T")
DEFAULT_LIMIT = 50
MAX_LIMIT = 500
MAX_OFFSET = 2**31 - 1  # more items than any list holds; a database takes it as an OFFSET


def encode(offset: int) -> str:
    return base64.urlsafe_b64encode(json.dumps({"o": offset}).encode()).decode().rstrip("=")


def decode(cursor: str | None) -> int:
    """The offset a cursor stands for (0 without one); a cursor not made here is refused."""
    if cursor is None or cursor == "":
        return 0
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        offset = json.loads(raw)["o"]
    except (binascii.Error, ValueError, KeyError, TypeError, UnicodeDecodeError):
        raise ValidationError("cursor", cursor[:60], "not a cursor returned by this API") from None
    if not isinstance(offset, int) or isinstance(offset, bool) or not 0 <= offset <= MAX_OFFSET:
        raise ValidationError("cursor", cursor[:60], "not a cursor returned by this API")
    return offset


def page(items: Sequence[T], offset: int, limit: int) -> tuple[list[T], str | None]:
    """A slice of a full list and the cursor of the next slice."""
    chunk = list(items[offset:offset + limit])
    return chunk, encode(offset + limit) if offset + limit < len(items) else None
