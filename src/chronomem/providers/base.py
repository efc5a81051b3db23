"""The model layer's protocols: what every LLM and embedder looks like.

Everything in chronomem that talks to a model (extraction, the retrieval
evaluator, Rsum, answers, benchmarks) depends only on these protocols.
Concrete providers live next to this module.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field
from typing import Any, Protocol, TypedDict, runtime_checkable

from ..errors import ValidationError

Messages = list[dict[str, str]]  # OpenAI-shaped chat messages: {"role": ..., "content": ...}


@dataclass(frozen=True, slots=True)
class Penalties:
    """Repetition penalties for one chat call; a field left ``None`` is not sent (the engine's default).

    - ``repeat``: llama.cpp's ``repeat_penalty`` (1.0 = off): the logits of tokens among the last
      64 (``repeat_last_n``) are divided by it.  Not an OpenAI field: OpenAI-compatible servers
      other than llama.cpp's and vLLM's may reject it.
    - ``frequency``: ``frequency_penalty`` (0 = off), minus ``frequency`` × the token's count so
      far from its logit.  OpenAI counts the whole generation, llama.cpp the last 64 tokens.
    - ``presence``: ``presence_penalty`` (0 = off), minus ``presence`` once a token occurred.
    """

    repeat: float | None = None
    frequency: float | None = None
    presence: float | None = None

    def __post_init__(self) -> None:
        for name in ("repeat", "frequency", "presence"):
            value = getattr(self, name)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ValidationError(f"penalties.{name}", value, "must be a finite number or None")
        if self.repeat is not None and self.repeat <= 0:
            raise ValidationError("penalties.repeat", self.repeat, "must be > 0 (1.0 = no penalty)")

    def request_fields(self) -> dict[str, float]:
        """The set penalties as OpenAI/llama.cpp request fields (``{}`` when none is set)."""
        fields = {"repeat_penalty": self.repeat, "frequency_penalty": self.frequency,
                  "presence_penalty": self.presence}
        return {k: float(v) for k, v in fields.items() if v is not None}


class ChatExtras(TypedDict, total=False):
    """Optional :meth:`LLM.chat` arguments a wrapper forwards only when they are set."""

    penalties: Penalties
    grammar: str


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
        penalties: Penalties | None = None,
        grammar: str | None = None,
    ) -> ChatResult:
        """Run one chat completion.

        With ``schema`` (a JSON schema dict or a pydantic model class) the output
        is constrained where the endpoint allows, repaired, validated and
        returned parsed in ``ChatResult.data``; after the retry budget a
        :class:`~chronomem.errors.StructuredOutputError` carries the raw text.
        ``penalties`` (default: none sent) discourage repeated tokens.
        ``grammar`` (no ``schema`` with it): a llama.cpp GBNF grammar for a plain-text reply,
        enforced where the engine can (the embedded model) and otherwise left to the prompt,
        so the caller parses ``ChatResult.text`` tolerantly.
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
