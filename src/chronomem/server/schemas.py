"""Request and response models of REST v1: what the OpenAPI document shows."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

T = TypeVar("T")
Id = Field(min_length=1, max_length=200)


class ErrorOut(BaseModel):
    """The one error shape: ``error`` is the kind, ``detail`` says what is wrong, ``field`` where."""

    error: str = Field(description="error kind, e.g. ValidationError, NotFoundError, Unauthorized")
    detail: str
    field: str | None = None


class Page(BaseModel, Generic[T]):
    """One page of a list; pass ``next_cursor`` back as ``cursor`` for the next (null: the last page)."""

    items: list[T]
    next_cursor: str | None = None


# -- input ------------------------------------------------------------------------------------
class MessageIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    speaker: str | None = Field(None, max_length=200, description="who said it (or use role)")
    role: str | None = Field(None, max_length=200)
    name: str | None = Field(None, max_length=200)
    text: str | None = Field(None, description="what was said (or use content)")
    content: str | None = None
    id: str | None = Field(None, max_length=200, description="your id; re-sending it is a no-op")
    timestamp: datetime | None = Field(None, description="when it was said (default: now)")


class AddIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    messages: list[MessageIn] = Field(min_length=1, max_length=1000)
    session_id: str | None = Field(None, min_length=1, max_length=200)
    timestamp: datetime | None = None
    agent_id: str | None = Field(None, min_length=1, max_length=200)


class EndSessionIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    ended_at: datetime | None = None


class FactsIn(BaseModel):
    facts: list[dict[str, Any]] = Field(..., max_length=10_000, description="fact dicts as for Memory.add_facts")
    session_id: str | None = Field(None, min_length=1, max_length=200)


class FactPatch(BaseModel):
    """Fields to correct; the others are kept from the old version."""

    model_config = ConfigDict(extra="forbid")

    subject: str | None = Field(None, min_length=1, max_length=500)
    relation: str | None = Field(None, min_length=1, max_length=200)
    object: str | None = Field(None, min_length=1, max_length=500)
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    confidence: float | None = Field(None, gt=0.0, le=1.0)
    intent: Literal["FACT", "CAUSAL", "TEMPORAL", "CONTRAST", "EVOLUTION"] | None = None
    text: str | None = Field(None, max_length=2000)


class QueryIn(BaseModel):
    query: str = Field(min_length=1, max_length=4000)
    as_of: datetime | None = None
    top_k: int = Field(10, ge=1, le=100)


class AskIn(BaseModel):
    question: str = Field(min_length=1, max_length=4000)
    as_of: datetime | None = None
    method: Literal["real", "rsum", "real+rsum"] = "real"


class ChatMessage(BaseModel):
    role: str = Field(min_length=1, max_length=50)
    content: str = Field(max_length=200_000)
    name: str | None = Field(None, max_length=200)


class ContextIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    messages: list[ChatMessage] = Field(min_length=1, max_length=2000)
    budget_tokens: int = Field(2048, ge=64, le=1_000_000)
    strategy: Literal["token_budget", "sliding_window", "summary"] = "token_budget"
    keep_turns: int = Field(6, ge=1, le=1000)


# -- output ------------------------------------------------------------------------------------
class FactOut(BaseModel):
    id: str
    user_id: str
    subject: str
    relation: str
    object: str
    valid_from: datetime | None
    valid_to: datetime | None
    confidence: float
    intent: str
    origin: str
    recorded_at: datetime
    source_ids: list[str] = []
    session_id: str | None = None
    text: str = ""
    agent_id: str | None = None
    closed_by: str | None = None
    stated_to: datetime | None = None
    rule: str | None = None
    support_ids: list[str] = []
    subject_id: str | None = None
    object_id: str | None = None


class JobOut(BaseModel):
    id: str
    kind: Literal["add", "end_session"]
    user_id: str
    session_id: str | None
    status: Literal["queued", "running", "done", "failed"]
    result: dict[str, Any] | None = Field(None, description="the AddResult / SessionEnd once finished")
    error: str | None = None
    attempts: int
    created_at: datetime
    started_at: datetime | None = None
    finished_at: datetime | None = None


class UpdateOut(BaseModel):
    added: list[FactOut]
    closed: list[FactOut]
    reinforced: list[FactOut]


class CorrectionOut(BaseModel):
    fact: FactOut = Field(description="the new version (origin 'corrected')")
    corrected: FactOut = Field(description="the old version, kept in history, closed")


class ForgetOut(BaseModel):
    facts_deleted: int = 0
    messages_deleted: int = 0
    sessions_deleted: int = 0
    entities_deleted: int = 0
    reopened: int = 0
    summaries_rebuilt: int = 0
    cache_entries_deleted: int = 0
    warnings: list[str] = []


class UserOut(BaseModel):
    user_id: str


class SessionOut(BaseModel):
    id: str
    agent_id: str | None = None
    started_at: datetime | None = None
    ended_at: datetime | None = None


class StoredMessageOut(BaseModel):
    id: str
    session_id: str
    seq: int
    speaker: str
    text: str
    timestamp: datetime
    extracted: bool


class EntityOut(BaseModel):
    id: str
    name: str
    type: str | None = None
    aliases: list[str] = []


class SummaryOut(BaseModel):
    user_id: str
    as_of: datetime | None = None
    summary: str = Field(description="the recursive summary after the last session ended by as_of ('' before any)")


class ContextOut(BaseModel):
    messages: list[dict[str, Any]]


class SearchOut(BaseModel):
    facts: list[FactOut]
    context: str
    context_tokens: int
    trace: dict[str, Any]


class AnswerOut(BaseModel):
    text: str
    evidence: list[FactOut]
    context_tokens: int
    usage: dict[str, Any]
    method: str
    trace: dict[str, Any] | None = Field(None, description="the search trace (roots, intents, beam steps); "
                                                          "null for the summary-only method")


class HealthOut(BaseModel):
    status: Literal["ok"]
    version: str
    store: str = Field(description="the store's kind (sqlite or postgresql); never its address")
    queue: str = Field(description="local (in-process), rabbitmq or redis")
    auth: Literal["keys", "open"]
