"""Request and response models of REST v1: what the OpenAPI document shows."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Generic, Literal, TypeVar

from pydantic import (BaseModel, BeforeValidator, ConfigDict, Field, PlainSerializer, ValidationInfo, WithJsonSchema,
                      field_validator)

from ..errors import ValidationError
from ..limits import MAX_ID_CHARS, MAX_NAME_CHARS, MAX_QUERY_CHARS, MAX_TEXT_CHARS
from ..timeutil import iso, parse_time

T = TypeVar("T")


def _iso_time(v: Any, keep_offset: bool = False, field: str = "time") -> Any:
    """A time arrives as an ISO-8601 string, read as on every other surface (a naive one as UTC).

    Pydantic alone would take a bare number, or a string of one, as Unix seconds: ``as_of=2020`` would
    ask about 1970.  ``field`` names it as :func:`chronomem.timeutil.parse_time` reads names: a fact's
    ``valid_from``/``valid_to`` also take a year or a month ("2020", "2020-06"), as ``Memory.correct`` does.
    """
    if isinstance(v, datetime):
        return v
    if not isinstance(v, str):
        raise ValueError("must be an ISO-8601 date or datetime string, e.g. 2024-05-01 or "
                         "2024-05-01T09:30:00+02:00")
    try:
        return parse_time(v, field, keep_offset=keep_offset)
    except ValidationError as e:
        raise ValueError(e.reason) from None


# Times are written as the library, the CLI and MCP write them (chronomem.timeutil.iso): UTC as "+00:00",
# never pydantic's "Z"; in the OpenAPI document they stay date-time strings.
_DATE_TIME = WithJsonSchema({"type": "string", "format": "date-time"}, mode="serialization")
IsoTime = Annotated[datetime, BeforeValidator(_iso_time), PlainSerializer(iso, when_used="json"), _DATE_TIME]
# a turn's time keeps its UTC offset: its time words are read on the speaker's clock (chronomem.timeexpr)
TurnTime = Annotated[datetime, BeforeValidator(lambda v: _iso_time(v, keep_offset=True)),
                     PlainSerializer(datetime.isoformat, when_used="json"), _DATE_TIME]


def _validity_time(v: Any, info: ValidationInfo) -> Any:
    return _iso_time(v, field=info.field_name or "time")


# where a fact's validity starts or ends: also a year or a month, as its first instant (chronomem.timeutil)
ValidityTime = Annotated[datetime, BeforeValidator(_validity_time), PlainSerializer(iso, when_used="json"),
                         _DATE_TIME]
MAX_TOP_K = 200  # chronomem.retrieve.search checks the same bound


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

    speaker: str | None = Field(None, max_length=MAX_NAME_CHARS, description="who said it (or use role)")
    role: str | None = Field(None, max_length=MAX_NAME_CHARS)
    name: str | None = Field(None, max_length=MAX_NAME_CHARS)
    text: str | None = Field(None, description="what was said (or use content)")
    content: str | None = Field(None, description="what was said (or use text; not both)")
    id: str | None = Field(None, max_length=MAX_ID_CHARS, description="your id; re-sending it is a no-op")
    timestamp: TurnTime | None = Field(None, description="when it was said, ISO-8601 (default: now; naive: UTC; "
                                                         "an offset is kept: time words read on that clock)")


class AddIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    messages: list[MessageIn] = Field(min_length=1, max_length=1000)
    session_id: str | None = Field(None, min_length=1, max_length=MAX_ID_CHARS)
    timestamp: TurnTime | None = None
    agent_id: str | None = Field(None, min_length=1, max_length=MAX_ID_CHARS)


class EndSessionIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    ended_at: IsoTime | None = None


class FactsIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    facts: list[dict[str, Any]] = Field(..., max_length=10_000, description="fact dicts as for Memory.add_facts")
    session_id: str | None = Field(None, min_length=1, max_length=MAX_ID_CHARS)
    agent_id: str | None = Field(None, min_length=1, max_length=MAX_ID_CHARS,
                                 description="the agent that learned them (a fact's own agent_id wins)")


class FactPatch(BaseModel):
    """Fields to correct; the others are kept from the old version."""

    model_config = ConfigDict(extra="forbid")

    subject: str | None = Field(None, min_length=1, max_length=MAX_NAME_CHARS)
    relation: str | None = Field(None, min_length=1, max_length=MAX_NAME_CHARS)
    object: str | None = Field(None, min_length=1, max_length=MAX_NAME_CHARS)
    subject_type: str | None = Field(None, min_length=1, max_length=MAX_NAME_CHARS)
    object_type: str | None = Field(None, min_length=1, max_length=MAX_NAME_CHARS)
    valid_from: ValidityTime | None = None
    valid_to: ValidityTime | None = None
    confidence: float | None = Field(None, gt=0.0, le=1.0)
    intent: Literal["FACT", "CAUSAL", "TEMPORAL", "CONTRAST", "EVOLUTION"] | None = None
    text: str | None = Field(None, max_length=MAX_TEXT_CHARS)


class QueryIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARS)
    as_of: IsoTime | None = None
    top_k: int = Field(10, ge=1, le=MAX_TOP_K)
    speaker: str | None = Field(None, min_length=1, max_length=MAX_NAME_CHARS,
                                description="who asks: resolves first-person questions (\"where do I live?\")")


class AskIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    question: str = Field(min_length=1, max_length=MAX_QUERY_CHARS)
    as_of: IsoTime | None = None
    method: Literal["real", "rsum", "real+rsum"] = Field(
        "real+rsum", description="real+rsum: graph evidence and the session summary (as Memory.answer); "
                                 "real: graph evidence and stored turns; rsum: the summary only")
    top_k: int = Field(10, ge=1, le=MAX_TOP_K)
    speaker: str | None = Field(None, min_length=1, max_length=MAX_NAME_CHARS,
                                description="who asks: resolves first-person questions (\"where do I live?\")")


class ContentPart(BaseModel):
    """One part of a message's content, as OpenAI's chat API takes it: ``{"type": "text", "text": …}``, an
    image (``{"type": "image_url", "image_url": {…}}``) or any other type, passed on as sent."""

    model_config = ConfigDict(extra="allow")

    type: str = Field(min_length=1, max_length=50)


class FunctionCall(BaseModel):
    model_config = ConfigDict(extra="allow")

    name: str = Field(min_length=1, max_length=200)
    arguments: Annotated[str, Field(max_length=200_000)] | dict[str, Any] | list[Any] | None = Field(
        None, description="the arguments as the model wrote them: a JSON string (OpenAI), an object (Ollama)")


class ToolCall(BaseModel):
    """One tool call of an assistant turn, as the chat API takes it: ``{"id": …, "type": "function",
    "function": {"name": …, "arguments": "…"}}``; other fields (another type's) pass as sent."""

    model_config = ConfigDict(extra="allow")

    id: str | None = Field(None, min_length=1, max_length=200)
    type: str | None = Field(None, min_length=1, max_length=50)
    function: FunctionCall | None = None


class ChatMessage(BaseModel):
    """A chat message as OpenAI's chat API takes it, tool rounds included: an assistant turn that calls tools
    (``tool_calls``, its ``content`` null or left out) and the results (``role: "tool"``, ``tool_call_id``);
    the other fields an SDK's message carries (OpenAI's ``refusal``, ``annotations``, ``audio``,
    ``function_call``; Ollama's ``tool_name``, ``thinking``, ``images``) pass as sent."""

    model_config = ConfigDict(extra="forbid")

    role: str = Field(min_length=1, max_length=50)
    tool_calls: list[ToolCall] | None = Field(None, max_length=128, description="an assistant turn's tool calls")
    function_call: FunctionCall | None = Field(None, description="OpenAI's older single call, as sent")
    refusal: str | None = Field(None, max_length=200_000, description="an assistant's refusal (OpenAI), as sent")
    content: Annotated[str, Field(max_length=200_000)] | Annotated[list[ContentPart], Field(max_length=100)] | None \
        = Field(None, validate_default=True,
                description="the text, or a list of content parts (text beside images), as the chat API takes it; "
                            "null or left out only beside tool_calls, function_call or refusal")
    name: str | None = Field(None, max_length=200)
    tool_call_id: str | None = Field(None, min_length=1, max_length=200,
                                     description="a tool result: the id of the call it answers")
    annotations: list[Any] | None = Field(None, max_length=1000, description="OpenAI's annotations, as sent")
    audio: dict[str, Any] | None = Field(None, description="OpenAI's audio reference, as sent")
    tool_name: str | None = Field(None, max_length=200, description="Ollama: the tool a result came from")
    thinking: str | None = Field(None, max_length=200_000, description="Ollama: the model's thinking, as sent")
    images: list[str] | None = Field(None, max_length=100, description="Ollama: a message's images, as sent")

    @field_validator("content")
    @classmethod
    def _content_or_calls(cls, v: Any, info: ValidationInfo) -> Any:
        if v is None and not any(info.data.get(k) for k in ("tool_calls", "function_call", "refusal")):
            raise ValueError("a message needs content, unless it is an assistant turn that calls tools or refuses")
        return v


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
    valid_from: IsoTime | None
    valid_to: IsoTime | None
    confidence: float
    intent: str
    origin: str
    recorded_at: IsoTime
    source_ids: list[str] = []
    session_id: str | None = None
    text: str = ""
    agent_id: str | None = None
    closed_by: str | None = None
    stated_to: IsoTime | None = None
    ended_by: list[str] = Field([], description="turns whose statement ended it in place")
    started_by: list[str] = Field([], description="turns whose statement gave it its start later")
    start_guessed: bool = Field(False, description="its start was not said but inferred from the facts "
                                                   "around it (a start said later replaces it)")
    text_from: list[str] = Field([], description="turns whose statement gave it its text")
    confirmations: list[tuple[float, list[str]]] = Field(
        [], description="each statement that set its confidence, in order: [confidence, turn ids]")
    other_words: list[tuple[list[str], str]] = Field(
        [], description="the words of its other statements, each with its turns: [turn ids, words]")
    later_starts: list[tuple[IsoTime, IsoTime, list[str]]] = Field(
        [], description="its other statements that gave a later start than its own: [start, recorded, turn ids]; "
                        "a value learned later to hold in between splits the fact there")
    later_ends: list[tuple[IsoTime, IsoTime, list[str]]] = Field(
        [], description="its endings said after its stated end: [end, recorded, turn ids]; a stint of it learned "
                        "later to start in between ends there")
    rule: str | None = None
    support_ids: list[str] = []
    subject_id: str | None = None
    object_id: str | None = None


class JobOut(BaseModel):
    id: str
    kind: Literal["add", "end_session", "rewrite_summaries"] = Field(
        description="add: extract stored turns; end_session: end a session; rewrite_summaries: the summaries "
                    "written after a forgotten session, without it")
    user_id: str
    session_id: str | None
    status: Literal["queued", "running", "done", "failed"]
    result: dict[str, Any] | None = Field(None, description="the AddResult / SessionEnd once finished; "
                                                           "rewrite_summaries: {summaries_rewritten: n}")
    error: str | None = None
    attempts: int
    created_at: IsoTime
    started_at: IsoTime | None = None
    finished_at: IsoTime | None = None


class UpdateOut(BaseModel):
    added: list[FactOut]
    closed: list[FactOut]
    reinforced: list[FactOut]


class CorrectionOut(BaseModel):
    fact: FactOut = Field(description="the new version (origin 'corrected')")
    corrected: FactOut = Field(description="the old version, kept in history, closed")
    notes: list[str] = Field(default_factory=list,
                             description="what the update rules did not keep as asked: an end after the next "
                                         "value's start, which still closes the version there; a start moved "
                                         "before another value's, which now closes a version that held")


class ForgetOut(BaseModel):
    facts_deleted: int = 0
    messages_deleted: int = 0
    sessions_deleted: int = 0
    entities_deleted: int = 0
    entities_renamed: int = Field(0, description="entities whose name only the forgotten turns said; "
                                                 "they now carry another spelling still said")
    reopened: int = 0
    rejoined: int = Field(0, description="stints of one fact that a forgotten value had kept apart, folded into "
                                         "the first of them again")
    summaries_rebuilt: int = Field(0, description="later summaries rewritten without the session before the reply "
                                                  "(the library's wait=True; 0 over REST)")
    summaries_pending: int = Field(0, description="later summaries that quoted the forgotten session: erased now, "
                                                  "rewritten without it by the job `job_id`; until then the "
                                                  "summary read is the one from before the session")
    job_id: str | None = Field(None, description="the rewrite_summaries job (GET /v1/jobs/{job_id}); null when no "
                                                 "later summary waits")
    cache_entries_deleted: int = 0
    warnings: list[str] = []


class UserOut(BaseModel):
    user_id: str


class SessionOut(BaseModel):
    id: str
    agent_id: str | None = None
    started_at: IsoTime | None = None
    ended_at: IsoTime | None = None


class StoredMessageOut(BaseModel):
    id: str
    session_id: str
    seq: int
    speaker: str
    text: str
    timestamp: TurnTime
    extracted: bool


class EntityOut(BaseModel):
    id: str
    name: str
    type: str | None = None
    aliases: list[str] = []


class AliasIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, max_length=MAX_NAME_CHARS,
                      description="a name or alias of the entity (created when no entity has it)")
    alias: str = Field(min_length=1, max_length=MAX_NAME_CHARS,
                       description="one more name for it, given by hand: forgetting turns never takes it")


class MergeIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, max_length=MAX_NAME_CHARS,
                      description="a name, alias or entity id: the entity that becomes part of `into`")
    into: str = Field(min_length=1, max_length=MAX_NAME_CHARS,
                      description="a name, alias or entity id: the entity that stays (its id and name)")


class MergeOut(BaseModel):
    entity: EntityOut
    facts_moved: int = Field(description="facts that named `name` and now name the entity")
    facts_folded: int = Field(description="of them, those that said again what the entity already held: "
                                          "folded into its fact as repetitions")


class SummaryOut(BaseModel):
    user_id: str
    as_of: IsoTime | None = None
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
