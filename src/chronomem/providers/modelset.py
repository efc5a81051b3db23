"""The models one memory uses, created on first use.

:class:`ModelSet` is the one dependency the write path, the read path and the
summaries take for their models: nothing loads a model until a step needs it,
and a memory that only stores structured facts never loads one.  Pass model
instances to inject your own (any object following :class:`~.base.LLM` /
:class:`~.base.Embedder`), spec strings to choose a provider
(``"local"``, ``"openai:MODEL@URL"``, …), ``None`` for the configured default.
"""

from __future__ import annotations

from typing import Protocol

from ..errors import ConfigError
from .base import LLM, Embedder, UsageTracker
from .cache import EmbeddingCache, ResponseCache, cache_path

__all__ = ["LLMSource", "ModelSet", "ModelSource"]


class LLMSource(Protocol):
    """Where a component gets its chat model (created on first use)."""

    @property
    def llm(self) -> LLM: ...


class ModelSource(LLMSource, Protocol):
    """Where a component gets its chat model and its embedder (each created on first use)."""

    @property
    def embeddings_enabled(self) -> bool: ...

    @property
    def embedder(self) -> Embedder: ...


def _turned_on(choice: object, default: str | None) -> bool:
    """False for a model turned off: ``False``, or the spec ``"none"`` (given, or the configured
    default when ``choice`` is ``None``)."""
    if choice is False:
        return False
    return (default if choice is None else choice) != "none"


class ModelSet:
    """A chat model and an embedder, each an instance or a spec resolved on first use.

    ``embedder=False`` (or the spec ``"none"``) turns embeddings off: the read
    path then scores relevance lexically.  ``llm=False`` (or ``"none"``) means no
    chat model at all: structured facts, search and history work; a step that needs
    the model (extraction, answers, summaries) raises :class:`~chronomem.errors.ConfigError`
    instead of loading the default one, and the read path's optional model steps are skipped.
    """

    def __init__(self, llm: LLM | str | bool | None = None, embedder: Embedder | str | bool | None = None, *,
                 default_llm: str | None = None, default_embedder: str | None = None,
                 usage: UsageTracker | None = None) -> None:
        self._llm = llm
        self._embedder = embedder
        self.default_llm = default_llm
        self.default_embedder = default_embedder
        self.usage = usage if usage is not None else UsageTracker()

    def replace(self, *, llm: LLM | str | bool | None = None,
                embedder: Embedder | str | bool | None = None) -> ModelSet:
        """A model set with ``llm`` and/or ``embedder`` swapped (``None`` keeps this one's), same usage tracker."""
        return ModelSet(llm if llm is not None else self._llm,
                        embedder if embedder is not None else self._embedder,
                        default_llm=self.default_llm, default_embedder=self.default_embedder, usage=self.usage)

    @property
    def llm_enabled(self) -> bool:
        """False when the chat model was turned off (``llm=False`` or the spec ``"none"``)."""
        return _turned_on(self._llm, self.default_llm)

    @property
    def llm(self) -> LLM:
        """The chat model; created from its spec on first use."""
        if not self.llm_enabled:
            raise ConfigError("this Memory has no chat model (llm=False or spec 'none'); "
                              "pass llm='local', an 'openai:MODEL' spec or an LLM object to extract or answer")
        if self._llm is None or isinstance(self._llm, bool | str):
            from . import make_llm

            made: LLM = make_llm(self._llm if isinstance(self._llm, str) else None,
                                 configured=self.default_llm, usage=self.usage)
            self._llm = made
            return made
        assert not isinstance(self._llm, bool | str)
        return self._llm

    @property
    def embeddings_enabled(self) -> bool:
        """False when embeddings were turned off (``embedder=False`` or the spec ``"none"``)."""
        return _turned_on(self._embedder, self.default_embedder)

    @property
    def embedder(self) -> Embedder:
        """The embedding model; created from its spec on first use."""
        if not self.embeddings_enabled:
            raise ConfigError("embeddings are turned off for this Memory (embedder=False or spec 'none')")
        if self._embedder is None or isinstance(self._embedder, bool | str):
            from . import make_embedder

            made: Embedder = make_embedder(self._embedder if isinstance(self._embedder, str) else None,
                                           configured=self.default_embedder)
            self._embedder = made
            return made
        assert not isinstance(self._embedder, bool | str)
        return self._embedder

    def purge_cached(self, owner: str) -> int:
        """Delete ``owner``'s entries from the model caches this set uses (see :mod:`.cache`),
        without creating a model: a spec not used yet is resolved to its cache setting only."""
        deleted = 0
        if self.llm_enabled:
            if self._llm is None or isinstance(self._llm, bool | str):
                from .settings import resolve_llm_settings

                path = resolve_llm_settings(self._llm if isinstance(self._llm, str) else None,
                                            configured=self.default_llm).cache
                deleted += _purge_file(ResponseCache, path, owner)
            elif isinstance(cache := getattr(self._llm, "cache", None), ResponseCache):
                deleted += cache.purge_owner(owner)
        if self.embeddings_enabled:
            if self._embedder is None or isinstance(self._embedder, bool | str):
                from .settings import resolve_embedder_settings

                path = resolve_embedder_settings(self._embedder if isinstance(self._embedder, str) else None,
                                                 configured=self.default_embedder).cache
                deleted += _purge_file(EmbeddingCache, path, owner)
            elif callable(purge := getattr(self._embedder, "purge_owner", None)):
                deleted += int(purge(owner))
        return deleted


def _purge_file(kind: type[ResponseCache] | type[EmbeddingCache], setting: str | None, owner: str) -> int:
    """Purge ``owner`` from the cache file a setting names (``None``: no cache; ``"default"``).  A file that
    does not exist yet holds nothing, and is created all the same: it records the purge, which a call of
    another process that began before it and creates the file later must see (:mod:`.cache`)."""
    if setting is None:
        return 0
    cache = kind(cache_path(setting))
    try:
        return cache.purge_owner(owner)
    finally:
        cache.close()
