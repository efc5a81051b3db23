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

from collections.abc import Hashable, Mapping, Sequence
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


def pick_groups_within_budget(groups: Sequence[Sequence[T]], costs: Mapping[T, int], budget: int,
                              limit: int) -> list[T]:
    """The best-ranked groups whose items fit ``budget`` together, at most ``limit`` groups; their items
    without repeats, group by group.

    A group goes in whole or not at all (a reply and the question it answers); an item an earlier
    group took costs nothing again.  A group that does not fit is skipped and a cheaper later one may
    still be taken.

    >>> pick_groups_within_budget([("q", "a"), ("b",), ("a", "c")], {"q": 2, "a": 3, "b": 9, "c": 1}, 7, 5)
    ['q', 'a', 'c']
    """
    out: dict[T, None] = {}
    used = taken = 0
    for group in groups:
        if taken >= limit:
            break
        new = [item for item in dict.fromkeys(group) if item not in out]
        cost = sum(costs[item] for item in new)
        if used + cost > budget:
            continue
        out.update(dict.fromkeys(new))
        used += cost
        taken += 1
    return list(out)


def asks(question: str, asker: str, reply_speaker: str) -> bool:
    """Whether a turn said by ``asker`` is a question put to whoever said the next turn, ``reply_speaker``:
    another speaker, and a question mark in it ("Nice! Where was that?").

    >>> asks("Who were you engaged to before Jonas?", "Ana", "Lena")
    True
    >>> asks("Who knows.", "Ana", "Lena"), asks("Right?", "Lena", "Lena")
    (False, False)
    """
    return asker != reply_speaker and "?" in question
