"""The data model: messages, sessions, entities and sextuple facts.

A :class:`Fact` is REAL's sextuple ``(h, r, t, [τs, τe], c, ι)`` plus
bookkeeping.  Validity intervals are half-open ``[valid_from, valid_to)`` in
*event* time; ``recorded_at`` is transaction time, so the graph is bi-temporal.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum
from typing import Any, NamedTuple

from .timeutil import iso, parse_optional_time, parse_time
from .validation import check_place


class Intent(str, Enum):
    """What kind of knowledge a fact carries (REAL's ι)."""

    FACT = "FACT"
    CAUSAL = "CAUSAL"
    TEMPORAL = "TEMPORAL"
    CONTRAST = "CONTRAST"
    EVOLUTION = "EVOLUTION"


class Origin(str, Enum):
    """Where a fact came from."""

    STATED = "stated"  # extracted from what a speaker said
    INFERRED = "inferred"  # extracted, but implied rather than said
    DERIVED = "derived"  # produced by a rule at read time, never stored
    IMPORTED = "imported"  # loaded through add_facts / import_
    CORRECTED = "corrected"  # a person's correction of a stored fact (Memory.correct)


class LaterDate(NamedTuple):
    """A statement of a fact said again with a later date than the fact's own, folded into it
    (:mod:`chronomem.temporal`) but kept, so that a stint learned later can take it back:

    * a later start (``Fact.later_starts``: "Maya lives in Lisbon", said in 2021 of a fact held since 2017):
      a value learned later to hold between the two ("Maya lived in Porto from 2018") splits the fact
      there: Lisbon 2017–2018, Porto 2018–2021, Lisbon from 2021;
    * a later end (``Fact.later_ends``: "the cat died in 2022", said of a stint that ended in 2018): a
      start learned later to lie between the two ("we got a cat again in 2020") is ended by it."""

    at: datetime  # the start, or the end, it gave
    recorded_at: datetime  # when that statement was recorded: the split-out stint's ``recorded_at``
    turns: list[str]  # the turns that said it


@dataclass(slots=True)
class Fact:
    """A temporal, confidence-aware edge of the memory graph."""

    id: str
    user_id: str
    subject: str
    relation: str
    object: str
    valid_from: datetime | None
    valid_to: datetime | None
    confidence: float
    intent: Intent
    origin: Origin
    recorded_at: datetime
    source_ids: list[str] = field(default_factory=list)
    session_id: str | None = None
    text: str = ""
    agent_id: str | None = None
    closed_by: str | None = None  # id of the fact whose arrival closed this one
    stated_to: datetime | None = None  # the end as its source stated it, before any closure
    ended_by: list[str] = field(default_factory=list)  # turns whose statement ended it in place
    started_by: list[str] = field(default_factory=list)  # turns whose statement gave it its start later
    # the start was not said but inferred from another fact of its slot (chronomem.temporal): a start
    # said later replaces it, and it is inferred again when its slot is rebuilt
    start_guessed: bool = False
    text_from: list[str] = field(default_factory=list)  # turns whose statement gave it its text later
    # every statement that set its confidence, in order, as (confidence, turn ids): empty until it is said
    # again (chronomem.temporal.confirm); forgetting a statement's turns refolds the rest
    confirmations: list[tuple[float, list[str]]] = field(default_factory=list)
    # the words of the other statements of it, each with the turns that said it (chronomem.temporal.
    # keep_words): forgetting the turns that gave ``text`` leaves it with the next words still said
    other_words: list[tuple[list[str], str]] = field(default_factory=list)
    # its other statements that gave a later start than its own, in order of start (chronomem.temporal)
    later_starts: list[LaterDate] = field(default_factory=list)
    # its endings said after its stated end, in order of end (chronomem.temporal)
    later_ends: list[LaterDate] = field(default_factory=list)
    rule: str | None = None  # for derived facts: the rule that produced it
    support_ids: list[str] = field(default_factory=list)  # for derived facts
    subject_id: str | None = None  # entity ids of the endpoints (set by the store)
    object_id: str | None = None

    def is_valid_at(self, when: datetime) -> bool:
        """Half-open interval test; an unknown start counts as "since ever"; a superseded fact never holds."""
        started = self.valid_from is None or self.valid_from <= when
        return started and not self.superseded and (self.valid_to is None or when < self.valid_to)

    @property
    def is_open(self) -> bool:
        return self.valid_to is None and not self.superseded

    @property
    def superseded(self) -> bool:
        """Replaced by a later statement of another value with the same start (``closed_by``
        names it): kept in history, valid at no instant.  See :mod:`chronomem.temporal`."""
        return self.closed_by is not None and self.valid_to is None

    def render(self) -> str:
        """The one-line natural-language rendering (``text`` when given)."""
        if self.text:
            return self.text
        return f"{self.subject} {self.relation.replace('_', ' ')} {self.object}"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if isinstance(v, datetime):
                v = iso(v)
            elif isinstance(v, Enum):
                v = v.value
            elif f.name == "confirmations":
                v = [[c, list(ids)] for c, ids in v]  # JSON pairs
            elif f.name == "other_words":
                v = [[list(ids), words] for ids, words in v]
            elif f.name in ("later_starts", "later_ends"):
                v = [[iso(s.at), iso(s.recorded_at), list(s.turns)] for s in v]
            elif isinstance(v, list):
                v = list(v)
            out[f.name] = v
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Fact:
        return cls(
            id=d["id"],
            user_id=d["user_id"],
            subject=d["subject"],
            relation=d["relation"],
            object=d["object"],
            valid_from=parse_optional_time(d.get("valid_from"), "valid_from"),
            valid_to=parse_optional_time(d.get("valid_to"), "valid_to"),
            confidence=float(d["confidence"]),
            intent=Intent(d.get("intent", "FACT")),
            origin=Origin(d.get("origin", "imported")),
            recorded_at=parse_time(d["recorded_at"], "recorded_at"),
            source_ids=list(d.get("source_ids") or []),
            session_id=d.get("session_id"),
            text=d.get("text") or "",
            agent_id=d.get("agent_id"),
            closed_by=d.get("closed_by"),
            stated_to=parse_optional_time(d.get("stated_to"), "stated_to"),
            ended_by=list(d.get("ended_by") or []),
            started_by=list(d.get("started_by") or []),
            start_guessed=bool(d.get("start_guessed", False)),
            text_from=list(d.get("text_from") or []),
            confirmations=[(float(c), list(ids)) for c, ids in d.get("confirmations") or []],
            other_words=[(list(ids), str(words)) for ids, words in d.get("other_words") or []],
            later_starts=_later_dates(d, "later_starts"),
            later_ends=_later_dates(d, "later_ends"),
            rule=d.get("rule"),
            support_ids=list(d.get("support_ids") or []),
            subject_id=d.get("subject_id"),
            object_id=d.get("object_id"),
        )


def _later_dates(d: dict[str, Any], name: str) -> list[LaterDate]:
    return [LaterDate(parse_time(at, name), parse_time(recorded, name), list(ids)) for at, recorded, ids in
            d.get(name) or []]


@dataclass(frozen=True, slots=True)
class FactHead:
    """A stored fact's id, ends, relation and times, without its words, sources or statements: what ranks
    the facts of a hub (an entity more facts name than a search reads) before the kept ones are read."""

    id: str
    subject_id: str | None
    subject: str
    relation: str
    object_id: str | None
    object: str
    valid_from: datetime | None
    recorded_at: datetime


@dataclass(frozen=True, slots=True)
class FactPosition:
    """A place in the order facts are listed in (``Memory.facts`` / ``history``): no start first, then by
    ``valid_from``, ``recorded_at`` and id.  ``after=`` a position lists what comes after it, so paging goes
    on where it stopped however facts were added or forgotten meanwhile.  A reading from the other side
    (``origin`` derived, "Jonas married_to Lena" read from "Lena married_to Jonas") stands where its stored
    fact does."""

    valid_from: datetime | None
    recorded_at: datetime
    id: str

    def __post_init__(self) -> None:
        check_place(self, "FactPosition", (("valid_from", datetime, True),
                                            ("recorded_at", datetime, False), ("id", str, False)))

    @classmethod
    def of(cls, fact: Fact) -> FactPosition:
        stored = fact.support_ids[0] if fact.origin is Origin.DERIVED and len(fact.support_ids) == 1 else fact.id
        return cls(fact.valid_from, fact.recorded_at, stored)

    def sort_key(self) -> tuple[Any, ...]:
        """The key listing sorts by (a pure function; keys of facts with and without a start compare)."""
        if self.valid_from is None:
            return (False, self.recorded_at, self.id)
        return (True, self.valid_from, self.recorded_at, self.id)


@dataclass(slots=True)
class Entity:
    """A node of the graph: a person, place, organisation, pet, thing …"""

    id: str
    user_id: str
    name: str  # canonical name: the first spelling seen
    type: str | None = None
    aliases: list[str] = field(default_factory=list)
    created_at: datetime | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "user_id": self.user_id, "name": self.name, "type": self.type,
                "aliases": list(self.aliases), "created_at": iso(self.created_at) if self.created_at else None}


@dataclass(frozen=True, slots=True)
class EntityPosition:
    """A place in the order entities are listed in (``Memory.entities``): by creation time, then id.
    ``after=`` a position lists the entities after it."""

    created_at: datetime
    id: str

    def __post_init__(self) -> None:
        check_place(self, "EntityPosition", (("created_at", datetime, False), ("id", str, False)))

    @classmethod
    def of(cls, entity: Entity) -> EntityPosition:
        return cls(entity.created_at, entity.id)  # type: ignore[arg-type]  # a stored entity has its time


@dataclass(slots=True)
class EntityMerge:
    """What :meth:`chronomem.Memory.merge_entities` did: the entity both names now denote, how many facts
    moved to it, and how many of those said again what it already held (folded in as repetitions)."""

    entity: Entity
    facts_moved: int = 0
    facts_folded: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"entity": self.entity.to_dict(), "facts_moved": self.facts_moved, "facts_folded": self.facts_folded}


@dataclass(slots=True)
class Message:
    """A verbatim conversation turn: the source of truth facts point back to."""

    id: str
    user_id: str
    session_id: str
    speaker: str
    text: str
    timestamp: datetime  # event time: when it was said, on the speaker's clock when given with an offset
    recorded_at: datetime
    agent_id: str | None = None
    seq: int = 0  # position inside the session
    extracted: bool = False  # has the write path processed this turn?


@dataclass(frozen=True, slots=True)
class MessagePosition:
    """A place in the order turns are listed in (``Memory.messages``): by timestamp, session, then place in
    the session.  ``after=`` a position lists the turns after it."""

    timestamp: datetime
    session_id: str
    seq: int

    def __post_init__(self) -> None:
        check_place(self, "MessagePosition", (("timestamp", datetime, False),
                                               ("session_id", str, False), ("seq", int, False)))

    @classmethod
    def of(cls, message: Message) -> MessagePosition:
        return cls(message.timestamp, message.session_id, message.seq)


@dataclass(slots=True)
class Session:
    id: str
    user_id: str
    started_at: datetime | None = None
    ended_at: datetime | None = None
    agent_id: str | None = None


@dataclass(frozen=True, slots=True)
class SessionPosition:
    """A place in the order sessions are listed in (``Memory.sessions``): those with no start first, then by
    ``started_at``, then id.  ``after=`` a position lists the sessions after it."""

    started_at: datetime | None
    id: str

    def __post_init__(self) -> None:
        check_place(self, "SessionPosition", (("started_at", datetime, True), ("id", str, False)))

    @classmethod
    def of(cls, session: Session) -> SessionPosition:
        return cls(session.started_at, session.id)


@dataclass(slots=True)
class Checkpoint:
    """An Rsum memory ``M_i`` written at the end of a session."""

    user_id: str
    session_id: str
    seq: int
    memory: str
    created_at: datetime
    session_time: datetime | None = None


@dataclass(slots=True)
class FactInput:
    """One fact on its way into the graph: what the extractor produces and ``add_facts`` accepts.

    The one record from the extractor to the store: :class:`chronomem.graph.GraphWriter`
    validates it (texts, relation spelling, interval, confidence), fills the
    defaults (``valid_from`` = now unless it is an ending, the batch's
    session and agent, ``origin`` = the writer's default when ``None``),
    resolves the entities and stores it as a :class:`Fact`.  ``add_facts``
    dicts use the same field names.
    """

    subject: str
    relation: str
    object: str
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    confidence: float = 1.0
    intent: Intent = Intent.FACT
    origin: Origin | None = None  # None: the writer's default (IMPORTED for add_facts, STATED for extraction)
    source_ids: list[str] = field(default_factory=list)
    session_id: str | None = None
    text: str = ""
    subject_type: str | None = None
    object_type: str | None = None
    agent_id: str | None = None
    id: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """The ``add_facts`` dict of this fact (unset optional fields left out)."""
        d: dict[str, Any] = {
            "subject": self.subject, "relation": self.relation, "object": self.object,
            "valid_from": self.valid_from, "valid_to": self.valid_to, "confidence": self.confidence,
            "intent": self.intent.value, "source_ids": list(self.source_ids), "session_id": self.session_id,
            "text": self.text,
        }
        if self.origin is not None:
            d["origin"] = self.origin.value
        for k in ("subject_type", "object_type", "agent_id", "id"):
            if getattr(self, k):
                d[k] = getattr(self, k)
        return d


@dataclass(slots=True)
class UpdateReport:
    """What one write did to the graph (returned by ``add_facts``/``add``).

    ``added`` holds every fact the write stored: the statements' own, and the stints split out of stored
    facts that a value placed by the write cut where they had been said again later
    (:class:`LaterDate`): "Porto from 2018" leaves Lisbon 2017–2018, closed, and a new Lisbon from 2021.
    """

    added: list[Fact] = field(default_factory=list)
    closed: list[Fact] = field(default_factory=list)
    reinforced: list[Fact] = field(default_factory=list)

    def merge(self, other: UpdateReport) -> None:
        self.added.extend(other.added)
        self.closed.extend(other.closed)
        self.reinforced.extend(other.reinforced)
