"""Exact nearest neighbours by cosine similarity, for a store without a vector index.

PostgreSQL without pgvector (or with ``vector_index=off``) and SQLite without the sqlite-vec extension read
the user's vectors and rank them here.  A vector of zeros has no direction: its similarity to anything is 0
(not an error, not NaN), as sqlite-vec's distance is read when it has none to give.  Norms are taken in
float64, so vectors with very large or very small (finite float32) components are ranked by their
direction like any other.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def cosine_similarities(matrix: np.ndarray, vector: Sequence[float]) -> np.ndarray:
    """The cosine similarity of each float32 row of ``matrix`` to ``vector``; 0 where either has no length.
    Pure.  The rows are read in float64, where any float32's square fits (1e30 squared is 0 or inf in
    float32); the question, given in any floats, is made a :func:`unit_vector` first.

    >>> cosine_similarities(np.array([[2.0, 0.0], [0.0, 0.0], [1e30, 1e30]], dtype=np.float32), [1.0, 0.0])
    array([1.        , 0.        , 0.70710678])
    """
    m = np.asarray(matrix, dtype=np.float64)
    norms = np.linalg.norm(m, axis=1)
    return np.divide(m @ np.asarray(unit_vector(vector)), norms, out=np.zeros(len(m)), where=norms > 0)


def unit_vector(vector: Sequence[float]) -> list[float]:
    """``vector`` scaled to length 1 (computed in float64); a vector of zeros stays zeros.  Pure.

    >>> unit_vector([0.0, 3e-30]), unit_vector([0.0, 0.0])
    ([0.0, 1.0], [0.0, 0.0])
    """
    q = np.asarray(vector, dtype=np.float64)
    scale = np.abs(q).max() if q.size else 0.0
    if not scale > 0:
        return q.tolist()
    q = q / scale
    return (q / np.linalg.norm(q)).tolist()


def exact_knn(rows: Sequence[tuple[str, bytes]], vector: Sequence[float], k: int) -> list[tuple[str, float]]:
    """The ``k`` rows (item id, float32 vector bytes, little-endian) most similar to ``vector``, with their
    similarity, most similar first (ties in the rows' order)."""
    if not rows:
        return []
    mat = np.frombuffer(b"".join(r[1] for r in rows), dtype="<f4").reshape(len(rows), -1)
    sims = cosine_similarities(mat, vector)
    order = np.argsort(-sims, kind="stable")[:k]
    return [(rows[i][0], float(sims[i])) for i in order]
