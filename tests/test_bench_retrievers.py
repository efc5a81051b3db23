"""BM25 against a hand computation, and dense search with a deterministic embedder."""

from __future__ import annotations

import math

import pytest

from chronomem.bench.retrievers import BM25Index, DenseIndex, bm25_tokenize


def test_tokenize_drops_stopwords_and_stems() -> None:
    assert bm25_tokenize("The dogs were running to the park!") == ["dog", "run", "park"]


def test_bm25_scores_match_hand_computation() -> None:
    docs = ["cat cat dog", "dog bird", "fish"]
    idx = BM25Index.build(docs, k1=1.5, b=0.75)
    # N = 3, avgdl = (3 + 2 + 1) / 3 = 2; 'cat' occurs in 1 doc
    idf_cat = math.log(1 + (3 - 1 + 0.5) / (1 + 0.5))
    tf, dl = 2, 3
    expected = idf_cat * tf * 2.5 / (tf + 1.5 * (1 - 0.75 + 0.75 * dl / 2))
    assert idx.scores("cat")[0] == pytest.approx(expected)
    assert idx.scores("cat")[1:] == [0.0, 0.0]
    # 'dog' in 2 docs: the shorter document wins
    hits = idx.search("dog", 5)
    assert [i for i, _ in hits] == [1, 0]
    # no match -> nothing returned
    assert idx.search("elephant", 5) == []
    assert idx.search("the", 5) == []


def test_bm25_rare_terms_outweigh_common_ones() -> None:
    docs = ["I went hiking with Jon", "Jon likes dancing", "Jon opened a dance studio", "Jon bought shoes"]
    idx = BM25Index.build(docs)
    top = idx.search("When did Jon open his dance studio?", 2)
    assert top[0][0] == 2


class BagOfWordsEmbedder:
    """Deterministic test embedder: hashed bag of stems."""

    name = "test-bow"
    dim = 64

    def embed(self, texts: list[str]) -> list[list[float]]:
        out = []
        for t in texts:
            v = [0.0] * self.dim
            for w in bm25_tokenize(t):
                v[sum(map(ord, w)) % self.dim] += 1.0
            n = math.sqrt(sum(x * x for x in v)) or 1.0
            out.append([x / n for x in v])
        return out


def test_dense_index_ranks_by_cosine() -> None:
    docs = ["I adopted a puppy", "We went to the beach", "The puppy loves the beach"]
    idx = DenseIndex.build(docs, BagOfWordsEmbedder(), batch_size=2)
    assert len(idx) == 3
    hits = idx.search("puppy", 3)
    assert hits[0][0] in (0, 2) and hits[-1][0] == 1
    assert hits[0][1] >= hits[1][1] >= hits[2][1]
