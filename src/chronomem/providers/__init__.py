"""The model layer: LLMs and embedders behind two small protocols.

Most code needs only::

    from chronomem.providers import make_llm, make_embedder

    llm = make_llm()                         # local Qwen2.5-Coder-1.5B, offline
    llm = make_llm("openai:gpt-4o-mini")     # OPENAI_API_KEY from the environment
    llm = make_llm("openai:qwen2.5@http://localhost:8000/v1", cache=True)
    r = llm.chat(messages, schema=MyModel, purpose="extract")
    llm.usage.snapshot()                     # tokens, latency, calls, by purpose

    emb = make_embedder()                    # local all-MiniLM-L6-v2, 384-d

Settings precedence (arguments > environment > config file > defaults) and the
spec strings are documented in :mod:`chronomem.providers.settings`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .base import LLM, CallUsage, ChatResult, Embedder, Messages, Penalties, UsageTotals, UsageTracker
from .cache import EmbeddingCache, ResponseCache, cache_path
from .embeddings import CachedEmbedder
from ..errors import ConfigError
from .settings import (
    NONE,
    EmbedderSettings,
    LLMSettings,
    parse_spec,
    resolve_embedder_settings,
    resolve_llm_settings,
)
from .tracked import TrackedLLM

__all__ = [
    "LLM",
    "CallUsage",
    "CachedEmbedder",
    "ChatResult",
    "Embedder",
    "EmbedderSettings",
    "EmbeddingCache",
    "LLMSettings",
    "Messages",
    "Penalties",
    "ResponseCache",
    "TrackedLLM",
    "UsageTotals",
    "UsageTracker",
    "build_embedder",
    "build_llm",
    "make_embedder",
    "make_llm",
    "parse_spec",
    "resolve_embedder_settings",
    "resolve_llm_settings",
]


def _response_cache(setting: str | None) -> ResponseCache | None:
    if setting is None:
        return None
    return ResponseCache(cache_path(setting))


def build_llm(settings: LLMSettings) -> LLM:
    """The bare provider for resolved settings (no usage tracking, no cache)."""
    if settings.provider == NONE:
        raise ConfigError("no chat model is configured (spec 'none'); choose 'local' or an 'openai:MODEL' spec")
    if settings.provider == "local":
        from .local_llama import LocalLlamaLLM

        return LocalLlamaLLM(settings.model, n_ctx=settings.n_ctx, n_threads=settings.n_threads,
                             fast_forward=settings.fast_forward)
    from .openai_compat import OpenAICompatLLM

    kwargs: dict[str, Any] = {}
    if settings.context_window:
        kwargs["context_window"] = settings.context_window
    return OpenAICompatLLM(
        settings.model or "",
        settings.base_url or "",
        settings.api_key,
        timeout=settings.timeout,
        max_retries=settings.max_retries,
        **kwargs,
    )


def make_llm(
    spec: str | None = None,
    *,
    usage: UsageTracker | None = None,
    cache: bool | str | Path | ResponseCache | None = None,
    config_path: Path | None = None,
    configured: str | None = None,
    **overrides: Any,
) -> TrackedLLM:
    """Resolve settings and return the LLM wrapped in a :class:`TrackedLLM`.

    ``spec`` is a spec string (``local``, ``local:0.5b``, ``local:/p.gguf``,
    ``openai:MODEL``, ``openai:MODEL@URL``); ``overrides`` are
    :class:`LLMSettings` fields (``base_url``, ``api_key``, ``timeout``,
    ``max_retries``, ``n_ctx``, ``n_threads``, ``context_window``, ``fast_forward``).  ``cache``:
    ``True`` for the default response-cache file, a path, a
    :class:`ResponseCache`, ``False`` to force it off, ``None`` to follow
    settings (``CHRONOMEM_LLM_CACHE``, ``[llm] cache``; off by default).
    ``usage`` lets several models share one tracker.  ``configured``: a spec from configuration,
    ranked under the environment (:func:`~.settings.resolve_llm_settings`).
    """
    cache_obj: ResponseCache | None = None
    if isinstance(cache, ResponseCache):
        cache_obj = cache
    elif cache is not None and cache is not False:
        overrides["cache"] = "default" if cache is True else str(cache)
    settings = resolve_llm_settings(spec, config_path=config_path, configured=configured, **overrides)
    if cache is False:
        settings.cache = None
    if cache_obj is None:
        cache_obj = _response_cache(settings.cache)
    return TrackedLLM(build_llm(settings), usage=usage, cache=cache_obj)


def build_embedder(settings: EmbedderSettings) -> Embedder:
    """The bare embedder for resolved settings (no caching)."""
    if settings.provider == NONE:
        raise ConfigError("embeddings are turned off (spec 'none'); choose 'local' or an 'openai:MODEL' spec")
    if settings.provider == "local":
        from .embeddings import LocalEmbedder

        return LocalEmbedder(settings.model, batch_size=settings.batch_size)
    from .openai_compat import OpenAICompatEmbedder

    return OpenAICompatEmbedder(
        settings.model or "", settings.base_url or "", settings.api_key, timeout=settings.timeout
    )


def make_embedder(
    spec: str | None = None,
    *,
    cache: bool | str | Path | EmbeddingCache | None = None,
    config_path: Path | None = None,
    configured: str | None = None,
    **overrides: Any,
) -> CachedEmbedder:
    """Resolve settings and return the embedder with an in-memory cache (and a disk cache if configured).

    ``cache`` works as in :func:`make_llm` (settings: ``CHRONOMEM_EMBEDDER_CACHE``,
    ``[embedder] cache``; off by default).
    """
    disk: EmbeddingCache | None = None
    if isinstance(cache, EmbeddingCache):
        disk = cache
    elif cache is not None and cache is not False:
        overrides["cache"] = "default" if cache is True else str(cache)
    settings = resolve_embedder_settings(spec, config_path=config_path, configured=configured, **overrides)
    if cache is False:
        settings.cache = None
    if disk is None and settings.cache is not None:
        disk = EmbeddingCache(cache_path(settings.cache))
    return CachedEmbedder(build_embedder(settings), disk)
