"""The graph around one entity at one moment: its stored edges and the edges the rules derive.

The explorer draws this; it reads the same facts the beam search reads (stable ones,
valid at ``as_of``) and asks :func:`.counterfactual.propose` for the derived edges
(symmetry, inverse, hyponymy, containment, temporal inheritance), so the picture shows
exactly what the read path can conclude from that entity.  Nothing is written.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from ..model import Entity, Fact
from ..registry import RelationRegistry
from ..store.base import Store
from . import counterfactual as cf

MAX_DEPTH = 2


@dataclass(slots=True)
class Neighbourhood:
    """Entities within ``depth`` hops of ``center`` (``depths``: entity id → hops) and the edges between them."""

    center: Entity
    as_of: datetime
    depth: int
    entities: dict[str, Entity] = field(default_factory=dict)
    depths: dict[str, int] = field(default_factory=dict)
    stored: list[Fact] = field(default_factory=list)
    derived: list[Fact] = field(default_factory=list)
    truncated: bool = False


def neighbourhood(store: Store, registry: RelationRegistry, user_id: str, center: Entity, *,
                  as_of: datetime, theta: float, depth: int = 1, max_edges: int = 300,
                  rules: frozenset[str] = cf.ALL_RULES) -> Neighbourhood:
    """Stored facts valid at ``as_of`` touching entities up to ``depth`` hops away, plus derived ones.

    Facts below ``theta`` are left out, as the read path leaves them out; at most
    ``max_edges`` edges (``truncated`` says when more were there).
    """
    out = Neighbourhood(center=center, as_of=as_of, depth=depth)
    out.depths[center.id] = 0
    seen: set[str] = set()

    def valid(f: Fact) -> bool:
        return f.is_valid_at(as_of)

    def lookup(subject_ids: Sequence[str], relations: Sequence[str]) -> list[Fact]:
        if not subject_ids:
            return []
        return store.facts(user_id, subject_ids=list(subject_ids), relations=list(relations),
                           min_confidence=theta)

    def add(f: Fact, bucket: list[Fact], hop: int) -> bool:
        if f.id in seen:
            return True
        if len(out.stored) + len(out.derived) >= max_edges:
            out.truncated = True
            return False
        seen.add(f.id)
        bucket.append(f)
        for end in (f.subject_id, f.object_id):
            if end and end not in out.depths:
                out.depths[end] = hop
        return True

    frontier = [center.id]
    for hop in range(1, max(1, min(depth, MAX_DEPTH)) + 1):
        rows = store.facts(user_id, touching=frontier, min_confidence=theta)
        for entity_id in frontier:
            around = [f for f in rows if entity_id in (f.subject_id, f.object_id)]
            for f in around:
                if valid(f) and not add(f, out.stored, hop):
                    break
            for d in cf.propose(entity_id, around, lookup, registry, rules=rules, valid=valid):
                if not add(d, out.derived, hop):
                    break
        frontier = [e for e, h in out.depths.items() if h == hop]
        if not frontier or out.truncated:
            break
    ids = list(out.depths)
    out.entities = {e.id: e for e in store.entities(user_id, ids=ids, with_aliases=False)}
    out.entities.setdefault(center.id, center)
    return out
