"""Response models of the explorer's endpoints (:mod:`.explorer`)."""

from __future__ import annotations

from pydantic import BaseModel, Field

from .schemas import FactOut, IsoTime, StoredMessageOut


class SettingsOut(BaseModel):
    tenant: str = Field(description="the tenant your key belongs to")
    theta_stable: float = Field(description="facts below this confidence are hedged: kept, but not treated as true")
    version: str


class GraphNodeOut(BaseModel):
    id: str
    name: str
    type: str | None = None
    depth: int = Field(description="hops from the centre (0 for the centre)")


class GraphEdgeOut(BaseModel):
    source: str = Field(description="the subject's entity id")
    target: str = Field(description="the object's entity id")
    derived: bool = Field(description="true when a rule derived it (fact.rule names it, fact.support_ids "
                                      "the stored facts it rests on); it is not stored")
    fact: FactOut


class GraphOut(BaseModel):
    center: GraphNodeOut
    as_of: IsoTime
    depth: int
    nodes: list[GraphNodeOut] = Field(description="the other entities, nearest first")
    edges: list[GraphEdgeOut]
    truncated: bool = Field(description="more edges exist than were returned")


class CheckpointOut(BaseModel):
    """An Rsum checkpoint: the recursive summary ``M_seq`` written when ``session_id`` ended."""

    session_id: str
    seq: int
    memory: str
    created_at: IsoTime
    session_time: IsoTime | None = None


class ProvenanceOut(BaseModel):
    fact: FactOut
    sources: list[StoredMessageOut] = Field(description="the stored turns the fact was extracted from")
    versions: list[FactOut] = Field(description="every version of the same subject and relation, and the "
                                                "versions it corrected or was corrected by, oldest first")
    closed_by: FactOut | None = Field(None, description="the fact that closed or corrected this one")
    supports: list[FactOut] = Field(default=[], description="for a derived fact, the stored facts it rests on")
