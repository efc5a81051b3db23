"""Usage accounting and response caching around any :class:`~.base.LLM`.

``Memory`` (and the benchmark runner) wrap their model in a
:class:`TrackedLLM`; ``tracked.usage`` is the :class:`~.base.UsageTracker`
behind ``mem.usage``.  Cache hits are recorded with ``cached=True``, the
token counts of the original call (so per-query token figures stay the same
on a resumed run) and the real (lookup) latency.
"""

from __future__ import annotations

import time
from typing import Any

from ..errors import StructuredOutputError
from .base import LLM, CallUsage, ChatExtras, ChatResult, LLMWrapper, Messages, Penalties, UsageTracker
from .cache import CachedResponse, ResponseCache, response_key
from .structured import OutputSchema, SchemaLike, to_plain


class TrackedLLM(LLMWrapper):
    """An :class:`~.base.LLM` that records every call in ``usage`` and can serve replies from ``cache``."""

    def __init__(self, inner: LLM, *, usage: UsageTracker | None = None, cache: ResponseCache | None = None) -> None:
        super().__init__(inner)
        self.usage = usage if usage is not None else UsageTracker()
        self.cache = cache

    def __getattr__(self, item: str) -> Any:  # provider extras (load, tokenize, last_timings …)
        if item == "inner":
            raise AttributeError(item)
        return getattr(self.inner, item)

    def __repr__(self) -> str:
        return f"TrackedLLM({self.inner!r}, cache={str(self.cache.path) if self.cache else None})"

    def chat(
        self,
        messages: Messages,
        *,
        schema: SchemaLike | None = None,
        max_tokens: int = 512,
        temperature: float = 0.0,
        stop: list[str] | None = None,
        purpose: str = "",
        penalties: Penalties | None = None,
        grammar: str | None = None,
    ) -> ChatResult:
        key = None
        out = OutputSchema.of(schema) if schema is not None else None
        if self.cache is not None:
            t0 = time.perf_counter()
            key = response_key(
                self.inner.name,
                messages,
                schema=out.fingerprint() if out else None,
                max_tokens=max_tokens,
                temperature=temperature,
                stop=stop,
                penalties=penalties,
                grammar=grammar,
            )
            hit = self.cache.get(key)
            if hit is not None:
                self.cache.own(key)  # a user whose prompt it is shares the entry: forgetting them drops it
                data = out.validate(hit.data) if out is not None and hit.data is not None else hit.data
                usage = CallUsage(
                    prompt_tokens=hit.prompt_tokens,
                    completion_tokens=hit.completion_tokens,
                    latency_s=time.perf_counter() - t0,
                    cached=True,
                    purpose=purpose,
                )
                self.usage.record(usage)
                return ChatResult(text=hit.text, usage=usage, data=data)
        extras: ChatExtras = {}
        if penalties is not None:
            extras["penalties"] = penalties
        if grammar is not None:
            extras["grammar"] = grammar
        try:
            res = self.inner.chat(
                messages, schema=schema, max_tokens=max_tokens, temperature=temperature, stop=stop, purpose=purpose,
                **extras,
            )
        except StructuredOutputError as e:
            spent = getattr(e, "usage", None)
            if isinstance(spent, CallUsage):
                spent.purpose = purpose
                self.usage.record(spent)
            raise
        res.usage.purpose = purpose
        self.usage.record(res.usage)
        if self.cache is not None and key is not None:
            self.cache.put(
                key,
                self.inner.name,
                CachedResponse(
                    text=res.text,
                    data=to_plain(res.data) if out is not None else None,
                    prompt_tokens=res.usage.prompt_tokens,
                    completion_tokens=res.usage.completion_tokens,
                    latency_s=res.usage.latency_s,
                ),
            )
        return res
