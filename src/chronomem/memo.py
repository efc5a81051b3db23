"""Bounded memos of pure functions over user text, dropped together when a user is forgotten.

Name normalisation, stemming and term sets run on the same names and renderings over and over,
so they are memoised (``functools.lru_cache``).  A memo keeps its arguments alive: the names and
statements of a user the memory has forgotten would stay referenced in the process until pushed
out.  :func:`text_memo` memoises a function and enrols it; :func:`clear_text_memos` (called by
``Memory.forget``) empties every enrolled memo.  They refill from the next calls at no other cost.

Static data (prompt files, the casing word lists, relation spellings) is memoised with plain
``functools`` caches: it holds nothing a user said.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any, Protocol, TypeVar

__all__ = ["clear_text_memos", "text_memo"]

_F = TypeVar("_F", bound=Callable[..., Any])


class _Clearable(Protocol):
    def cache_clear(self) -> None: ...


_ENROLLED: list[_Clearable] = []  # filled once, at import time of the modules that memoise


def text_memo(maxsize: int) -> Callable[[_F], _F]:
    """``functools.lru_cache(maxsize)``, enrolled for :func:`clear_text_memos`."""

    def wrap(fn: _F) -> _F:
        memoised = lru_cache(maxsize=maxsize)(fn)
        _ENROLLED.append(memoised)
        return memoised  # type: ignore[return-value]

    return wrap


def clear_text_memos() -> int:
    """Empty every memo of user text; returns how many memos were cleared."""
    for memo in _ENROLLED:
        memo.cache_clear()
    return len(_ENROLLED)
