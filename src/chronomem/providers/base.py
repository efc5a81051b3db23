"""The model layer's protocols: what every LLM and embedder looks like.

Everything in chronomem that talks to a model (extraction, the retrieval
evaluator, Rsum, answers, benchmarks) depends only on these protocols.
Concrete providers live next to this module.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

Messages = list[dict[str, str]]  # OpenAI-shaped chat messages: {"role": ..., "content": ...}


@dataclass(slots=True)
class CallUsage:
    """Cost of one model call."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    cached: bool = False  # served from the on-disk response cache
    purpose: str = ""  # e.g. "extract", "rsum", "answer", "evaluate"


@dataclass(slots=True)
class ChatResult:
    """Reply of :meth:`LLM.chat`.  ``data`` holds the validated JSON when a schema was given."""

    text: str
    usage: CallUsage
    data: Any = None


@dataclass
class UsageTotals:
    calls: int = 0
    cached_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0

    def add(self, u: CallUsage) -> None:
        self.calls += 1
        self.cached_calls += int(u.cached)
        self.prompt_tokens += u.prompt_tokens
        self.completion_tokens += u.completion_tokens
        self.latency_s += u.latency_s

    def as_dict(self) -> dict[str, float | int]:
        return {
            "calls": self.calls,
            "cached_calls": self.cached_calls,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "latency_s": round(self.latency_s, 3),
        }


@dataclass
class UsageTracker:
    """Thread-safe aggregate of model usage, overall and per purpose."""

    total: UsageTotals = field(default_factory=UsageTotals)
    by_purpose: dict[str, UsageTotals] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def record(self, u: CallUsage) -> None:
        with self._lock:
            self.total.add(u)
            self.by_purpose.setdefault(u.purpose or "other", UsageTotals()).add(u)

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            return {
                **self.total.as_dict(),
                "by_purpose": {k: v.as_dict() for k, v in sorted(self.by_purpose.items())},
            }


@runtime_checkable
class LLM(Protocol):
    """A chat model.  Implementations: OpenAI-compatible HTTP, embedded llama.cpp."""

    @property
    def name(self) -> str:
        """Stable identifier, part of the response-cache key."""
        ...

    @property
    def context_window(self) -> int:
        """Context size in tokens."""
        ...

    def chat(
        self,
        messages: Messages,
        *,
        schema: dict[str, Any] | type | None = None,
        max_tokens: int = 512,
        temperature: float = 0.0,
        stop: list[str] | None = None,
        purpose: str = "",
    ) -> ChatResult:
        """Run one chat completion.

        With ``schema`` (a JSON schema dict or a pydantic model class) the output
        is constrained where the endpoint allows, repaired, validated and
        returned parsed in ``ChatResult.data``; after the retry budget a
        :class:`~chronomem.errors.StructuredOutputError` carries the raw text.
        """
        ...

    def count_tokens(self, text: str) -> int:
        """Token count with the model's own tokenizer (offline)."""
        ...


class LLMWrapper:
    """Base of wrappers around an :class:`LLM` (usage tracking, caching, recording):
    ``name``, ``context_window`` and ``count_tokens`` pass through to ``inner``;
    subclasses implement ``chat``."""

    def __init__(self, inner: LLM) -> None:
        self.inner = inner

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def context_window(self) -> int:
        return self.inner.context_window

    def count_tokens(self, text: str) -> int:
        return self.inner.count_tokens(text)


@runtime_checkable
class Embedder(Protocol):
    """A text embedding model."""

    @property
    def name(self) -> str: ...

    @property
    def dim(self) -> int: ...

    def embed(self, texts: list[str]) -> list[list[float]]:
        """Unit-normalised vectors, one per text, in order."""
        ...
