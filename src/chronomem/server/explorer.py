"""Endpoints the web explorer needs beyond the rest of REST v1: the settings a client reads once,
an entity's neighbourhood with derived edges, Rsum checkpoints by session, a fact's provenance.

Same keys and tenant binding as every /v1 route (:func:`.routes.tenant_memory`).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query
from pydantic import AfterValidator

from .. import __version__
from ..errors import NotFoundError
from ..validation import check_name
from ..memory import Memory
from ..model import Fact
from ..retrieve.neighbourhood import MAX_DEPTH, neighbourhood
from ..timeutil import parse_time, utcnow
from . import pagination
from .explorer_schemas import CheckpointOut, GraphOut, ProvenanceOut, SettingsOut
from .schemas import IsoTime, Page
from .pagination import read_page
from .routes import ERRORS, Cursor, FactId, Limit, Mem, SessionQ, UserId, fact_out

router = APIRouter(prefix="/v1", responses=ERRORS, tags=["explorer"])


def _message_out(m: Any) -> dict[str, Any]:
    return {"id": m.id, "session_id": m.session_id, "seq": m.seq, "speaker": m.speaker, "text": m.text,
            "timestamp": m.timestamp, "extracted": m.extracted}


@router.get("/settings", response_model=SettingsOut)
def settings(mem: Mem) -> dict[str, Any]:
    """Your tenant and the memory's stability threshold (a client shows facts below it as hedged)."""
    return {"tenant": mem.tenant, "theta_stable": mem.config.theta_stable, "version": __version__}


@router.get("/users/{user_id}/graph", response_model=GraphOut)
def graph(user_id: UserId, mem: Mem,
          entity: Annotated[str, Query(min_length=1, max_length=500, description="name or alias of the centre"),
                            AfterValidator(lambda v: check_name("entity", v))],
          as_of: IsoTime | None = None,
          depth: Annotated[int, Query(ge=1, le=MAX_DEPTH, description="hops from the centre")] = 1,
          max_edges: Annotated[int, Query(ge=1, le=1000)] = 300) -> dict[str, Any]:
    """Stored edges valid at ``as_of`` (default now) around ``entity``, and the edges the read path's
    rules derive from them (symmetry, inverse, hyponymy, containment), marked ``derived``."""
    found = mem.resolver.lookup(user_id, [entity]).get(entity)
    centre = mem.store.entities(user_id, ids=[found], with_aliases=False) if found else []
    if not centre:
        raise NotFoundError(f"user {user_id!r} has no entity named {entity!r}")
    when = parse_time(as_of, "as_of") if as_of is not None else utcnow()  # a naive time reads as UTC
    hood = neighbourhood(mem.store, mem.registry, user_id, centre[0], as_of=when,
                         theta=mem.config.theta_stable, depth=depth, max_edges=max_edges)

    def node(entity_id: str) -> dict[str, Any]:
        e = hood.entities.get(entity_id)
        return {"id": entity_id, "name": e.name if e else entity_id, "type": e.type if e else None,
                "depth": hood.depths.get(entity_id, depth)}

    def edge(f: Fact, derived: bool) -> dict[str, Any]:
        return {"source": f.subject_id or f.subject, "target": f.object_id or f.object, "derived": derived,
                "fact": fact_out(f)}

    others = sorted((i for i in hood.depths if i != centre[0].id), key=lambda i: (hood.depths[i], node(i)["name"]))
    return {"center": node(centre[0].id), "as_of": when, "depth": depth, "nodes": [node(i) for i in others],
            "edges": [edge(f, False) for f in hood.stored] + [edge(f, True) for f in hood.derived],
            "truncated": hood.truncated}


@router.get("/users/{user_id}/checkpoints", response_model=Page[CheckpointOut])
def checkpoints(user_id: UserId, mem: Mem,
                session_id: SessionQ = None,
                limit: Limit = pagination.DEFAULT_LIMIT, cursor: Cursor = None) -> dict[str, Any]:
    """Rsum checkpoints, oldest first: the recursive summary written at the end of each session (none past
    a forgotten session whose rewrite is still owed: they may quote it)."""
    after = pagination.decode_after(cursor, "checkpoints", (int,))
    found = mem.store.checkpoint_page(user_id, after_seq=after[0] if after else 0, limit=limit + 1,
                                      session_id=session_id)  # the page alone, not the chain a page
    return read_page(found, limit, lambda c: {"session_id": c.session_id, "seq": c.seq, "memory": c.memory,
                                              "created_at": c.created_at, "session_time": c.session_time},
                     lambda c: pagination.encode_after("checkpoints", [c.seq]))


def _versions(mem: Memory, user_id: str, f: Fact) -> list[Fact]:
    """Versions of ``f``: the facts of its slot (same subject and relation; for a relation of many values at
    once, same object too: the other things Maya likes are not versions of this one), plus what it
    corrected or was corrected by, followed both ways (a correction may rename subject or relation)."""
    if f.subject_id:
        one_value = mem.registry.spec(f.relation).single_valued
        same = mem.store.facts(user_id, subject_ids=[f.subject_id], relations=[f.relation],
                               object_ids=None if one_value or f.object_id is None else [f.object_id])
    else:
        same = [f]
    linked = {x.id: x for x in same}
    linked.setdefault(f.id, f)
    todo = [f]
    while todo:
        cur = todo.pop()
        closed = mem.store.facts(user_id, closed_by=[cur.id])
        for x in closed + (mem.store.facts(user_id, ids=[cur.closed_by]) if cur.closed_by else []):
            if x.id not in linked:
                linked[x.id] = x
                todo.append(x)
    return sorted(linked.values(), key=lambda x: (x.valid_from is not None, x.valid_from or x.recorded_at,
                                                  x.recorded_at))


@router.get("/users/{user_id}/facts/{fact_id}/provenance", response_model=ProvenanceOut)
def provenance(user_id: UserId, fact_id: FactId, mem: Mem) -> dict[str, Any]:
    """A fact with the turns it came from, its other versions and what closed it."""
    found = mem.store.facts(user_id, ids=[fact_id])
    if not found:
        raise NotFoundError(f"user {user_id!r} has no fact {fact_id!r}")
    f = found[0]
    sources = mem.store.messages(user_id, ids=f.source_ids) if f.source_ids else []
    closer = mem.store.facts(user_id, ids=[f.closed_by]) if f.closed_by else []
    supports = mem.store.facts(user_id, ids=f.support_ids) if f.support_ids else []
    return {"fact": fact_out(f), "sources": [_message_out(m) for m in sources],
            "versions": [fact_out(x) for x in _versions(mem, user_id, f)],
            "closed_by": fact_out(closer[0]) if closer else None, "supports": [fact_out(x) for x in supports]}
