"""Split a session's turns into extraction chunks with a little preceding context.

One LLM call per chunk: ``size`` new turns, preceded by up to ``context``
earlier turns that the model sees (to resolve "she", "that place", answers to
questions) but must not extract from.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")

DEFAULT_CHUNK_SIZE = 8
DEFAULT_CONTEXT = 2


@dataclass(frozen=True, slots=True)
class Chunk(Generic[T]):
    """``context`` turns (read-only) followed by ``turns`` (to extract)."""

    context: tuple[T, ...]
    turns: tuple[T, ...]

    @property
    def all(self) -> tuple[T, ...]:
        return self.context + self.turns


def chunk_turns(
    turns: Sequence[T],
    *,
    size: int = DEFAULT_CHUNK_SIZE,
    context: int = DEFAULT_CONTEXT,
    history: Sequence[T] = (),
) -> list[Chunk[T]]:
    """Consecutive chunks of ``size`` turns, each with up to ``context`` preceding turns.

    ``history`` holds turns before ``turns`` (already extracted earlier in the
    same session), so the first chunk still gets its context.  A short last
    chunk (under a third of ``size``) is merged into the previous one, when the
    result stays within ``size + size // 2`` turns, to save a call.
    """
    if size < 1:
        raise ValueError("chunk size must be >= 1")
    if context < 0:
        raise ValueError("context must be >= 0")
    items = list(turns)
    bounds: list[tuple[int, int]] = [(i, min(i + size, len(items))) for i in range(0, len(items), size)]
    if len(bounds) >= 2:
        last_s, last_e = bounds[-1]
        prev_s, _ = bounds[-2]
        if (last_e - last_s) * 3 < size and last_e - prev_s <= size + size // 2:
            bounds[-2:] = [(prev_s, last_e)]
    prior = list(history)
    out: list[Chunk[T]] = []
    for s, e in bounds:
        before = prior + items[:s]
        ctx = tuple(before[len(before) - context :]) if context else ()
        out.append(Chunk(context=ctx, turns=tuple(items[s:e])))
    return out
