"""Turn retrieval baselines: Okapi BM25 and dense (embedding) search.

Both index a list of texts and return ``(index, score)`` pairs, best first.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ..providers.base import Embedder
from .metrics import stem

_TOKEN_RE = re.compile(r"[a-z0-9]+")

#: Small English stopword list (BM25 gains little from function words).
STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being below
    between both but by can could did do does doing down during each few for from further had has have
    having he her here hers herself him himself his how i if in into is it its itself just me more most my
    myself no nor not now of off on once only or other our ours ourselves out over own same she should so
    some such than that the their theirs them themselves then there these they this those through to too
    under until up very was we were what when where which while who whom why will with would you your
    yours yourself yourselves s t d ll m re ve""".split()
)


def bm25_tokenize(text: str) -> list[str]:
    """Lowercase alphanumeric tokens, stopwords removed, Porter-stemmed."""
    return [stem(w) for w in _TOKEN_RE.findall(text.lower()) if w not in STOPWORDS]


@dataclass
class BM25Index:
    """Okapi BM25 (Robertson/Sparck Jones idf with +1 so it stays positive).

    ``score(q, d) = Σ_t idf(t) · f(t,d)·(k1+1) / (f(t,d) + k1·(1 − b + b·|d|/avgdl))``,
    ``idf(t) = ln(1 + (N − n(t) + 0.5)/(n(t) + 0.5))``.
    """

    k1: float = 1.5
    b: float = 0.75
    _tfs: list[Counter[str]] = field(default_factory=list, repr=False)
    _lens: list[int] = field(default_factory=list, repr=False)
    _df: Counter[str] = field(default_factory=Counter, repr=False)
    _avgdl: float = 0.0

    @classmethod
    def build(cls, texts: Sequence[str], k1: float = 1.5, b: float = 0.75) -> BM25Index:
        idx = cls(k1=k1, b=b)
        for text in texts:
            tf = Counter(bm25_tokenize(text))
            idx._tfs.append(tf)
            idx._lens.append(sum(tf.values()))
            idx._df.update(tf.keys())
        idx._avgdl = (sum(idx._lens) / len(idx._lens)) if idx._lens else 0.0
        return idx

    def __len__(self) -> int:
        return len(self._tfs)

    def idf(self, term: str) -> float:
        n = self._df.get(term, 0)
        return math.log(1.0 + (len(self._tfs) - n + 0.5) / (n + 0.5))

    def scores(self, query: str) -> list[float]:
        terms = bm25_tokenize(query)
        out = [0.0] * len(self._tfs)
        if not terms or not self._tfs:
            return out
        avgdl = self._avgdl or 1.0
        for term, qf in Counter(terms).items():
            if term not in self._df:
                continue
            idf = self.idf(term)
            for i, tf in enumerate(self._tfs):
                f = tf.get(term)
                if f:
                    denom = f + self.k1 * (1 - self.b + self.b * self._lens[i] / avgdl)
                    out[i] += qf * idf * f * (self.k1 + 1) / denom
        return out

    def search(self, query: str, k: int) -> list[tuple[int, float]]:
        """Top ``k`` documents with a positive score, best first (ties: earlier document first)."""
        scored = [(i, s) for i, s in enumerate(self.scores(query)) if s > 0]
        scored.sort(key=lambda p: (-p[1], p[0]))
        return scored[:k]


@dataclass
class DenseIndex:
    """Cosine-similarity search over embeddings of the texts."""

    embedder: Embedder
    _matrix: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=np.float32), repr=False)

    @classmethod
    def build(cls, texts: Sequence[str], embedder: Embedder, batch_size: int = 64) -> DenseIndex:
        idx = cls(embedder=embedder)
        rows: list[list[float]] = []
        for start in range(0, len(texts), batch_size):
            rows.extend(embedder.embed(list(texts[start : start + batch_size])))
        idx._matrix = _unit_rows(np.asarray(rows, dtype=np.float32).reshape(len(rows), -1))
        return idx

    def __len__(self) -> int:
        return int(self._matrix.shape[0])

    def search(self, query: str, k: int) -> list[tuple[int, float]]:
        if len(self) == 0:
            return []
        q = _unit_rows(np.asarray(self.embedder.embed([query]), dtype=np.float32).reshape(1, -1))[0]
        sims = self._matrix @ q
        order = np.lexsort((np.arange(len(sims)), -sims))[:k]
        return [(int(i), float(sims[i])) for i in order]


def _unit_rows(m: np.ndarray) -> np.ndarray:
    if m.size == 0:
        return m
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return m / norms
