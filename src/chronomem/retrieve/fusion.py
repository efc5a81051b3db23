"""The fused read path: one ranked list of turns from several retrievers, under one token budget.

``answer()`` gives the model verbatim turns besides REAL's graph evidence.  Which
turns is decided by reciprocal rank fusion (Cormack et al., 2009) of:

* the source turns of the facts the graph search put in the context, best facts first (REAL);
* full-text hits over the turns, each indexed with the turn before it (store migration 0007/0004),
  so the reply to a question's words is found too;
* full-text hits over the facts (names, relation words, the statement text, resolved dates),
  mapped to the turns they cite: what extraction made explicit ("on 20 May 2023 Maya ...") meets
  the question's words even when the turn said "yesterday" and "I".

Pure functions here; the store access is in :mod:`.search`.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TypeVar

T = TypeVar("T", bound=Hashable)

#: RRF's rank constant.  The usual 60 flattens the lists; with a handful of lists whose first ranks
#: matter most, 10 found more gold turns in the top 10 on LoCoMo conv-26/30/42 (BENCHMARKS.md
#: "Fused read path").
RRF_K = 10


def reciprocal_rank_fusion(rankings: Sequence[Sequence[T]], *, k: int = RRF_K,
                           weights: Sequence[float] | None = None) -> list[T]:
    """Items of all ``rankings`` ordered by ``sum(w / (k + rank))`` (rank from 1), best first.

    An item missing from a list gets nothing from it; ties keep the order in which the
    items were first seen (list by list), so the result is deterministic.
    """
    if weights is not None and len(weights) != len(rankings):
        raise ValueError("one weight per ranking")
    score: dict[T, float] = {}
    for j, ranking in enumerate(rankings):
        w = 1.0 if weights is None else weights[j]
        seen: set[T] = set()
        for rank, item in enumerate(ranking, start=1):
            if item in seen:  # a list that repeats an item counts it once, at its best rank
                continue
            seen.add(item)
            score[item] = score.get(item, 0.0) + w / (k + rank)
    order = {item: i for i, item in enumerate(score)}
    return sorted(score, key=lambda item: (-score[item], order[item]))


def pick_within_budget(ranked: Sequence[T], costs: Sequence[int], budget: int, limit: int) -> list[T]:
    """The best-ranked items whose costs fit ``budget`` together, at most ``limit`` of them.

    An item that does not fit is skipped and a cheaper later one may still be taken.
    """
    out: list[T] = []
    used = 0
    for item, cost in zip(ranked, costs):
        if len(out) >= limit:
            break
        if used + cost > budget:
            continue
        out.append(item)
        used += cost
    return out
