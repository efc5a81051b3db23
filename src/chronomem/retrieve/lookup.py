"""Facts looked up by who, what relation and when — no ranking, no model.

:func:`select_facts` is what ``Memory.facts()`` / ``history()`` list: the stored facts of a
subject and/or object at a time, with symmetric and inverse facts read from the other side
("Jonas and I got married" answers ``subject="Jonas", relation="married_to"``).

:func:`state_facts` is the same lookup for a question: when a question names someone and
asks about a state the graph types ("Where does Lena work now?", "Who is Felix's sister?",
"Where did Ravi live in 2015?"), the typed facts of that relation valid at the asked time answer
it outright, and ``answer()`` puts them first in the context (:func:`render_state_facts`).  A
small model then reads "Lena works at Novartis [1 June 2021 -> now)" instead of picking a
place out of "we moved to Basel for the job".
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from ..cjk import has_cjk
from ..model import Fact, FactPosition
from ..registry import RelationRegistry
from ..store.base import Store
from ..temporal import overlaps
from .cjk_questions import CJK_PAST
from .counterfactual import other_side as read_other_side
from .render import fact_dates

__all__ = ["STATE_OBJECT_TYPES", "asks_the_past", "render_state_facts", "select_facts", "state_facts", "state_relations",
           "stored_as"]

#: the object types of the relations whose typed triple answers a question on its own: a place,
#: an employer or school, a job title, a person.  Loose ones (``likes``, ``owns``, ``did``) keep
#: their statements: their objects are handles ("the dance studio"), not answers.
STATE_OBJECT_TYPES = frozenset({"place", "organisation", "role", "person"})

#: how a state fact reads in the answer's context, while it holds and once it has ended by the asked
#: time (``None``: as while it holds); other relations read "subject relation words object".
#: A relation between people reads as the subject's relative, named last ("Lucia's parent is Diego"),
#: the shape of the question ("Who is Lucia's father?") and of the 1.5B model's own replies: read as
#: "Lucia is a child of Diego" it answered "Not mentioned", as "Aiko is Daniel's spouse", "Daniel"
#: (BENCHMARKS.md "Evolving state, session 25").
_PHRASES: Mapping[str, tuple[str | None, str | None]] = {
    "works_at": (None, "{s} worked at {o}"),
    "lives_in": (None, "{s} lived in {o}"),
    "studies_at": (None, "{s} studied at {o}"),
    "job_title": ("{s} works as {o}", "{s} worked as {o}"),
    "married_to": ("{s}'s spouse is {o}", "{s}'s spouse was {o}"),
    "partner_of": ("{s}'s partner is {o}", "{s}'s partner was {o}"),
    "sibling_of": ("{s}'s sibling is {o}", "{s}'s sibling was {o}"),
    "friend_of": ("{s}'s friend is {o}", "{s}'s friend was {o}"),
    "parent_of": ("{s}'s child is {o}", "{s}'s child was {o}"),
    "child_of": ("{s}'s parent is {o}", "{s}'s parent was {o}"),
    "born_in": ("{s} was born in {o}", None),
    "located_in": ("{s} is in {o}", "{s} was in {o}"),
}


def _oldest_first(f: Fact) -> tuple[Any, ...]:
    return FactPosition.of(f).sort_key()


def stored_as(registry: RelationRegistry, relations: Iterable[str] | None) -> list[str]:
    """The relations whose facts, read from the object's side, are one of ``relations``
    (every symmetric or inverse relation when ``None``)."""
    names = relations if relations is not None else registry.names()
    return list(dict.fromkeys(r for name in names if (r := registry.read_from_object(name)) is not None))


def select_facts(store: Store, registry: RelationRegistry, user_id: str, *,
                 subject_ids: Sequence[str] | None = None, object_ids: Sequence[str] | None = None,
                 relations: Sequence[str] | None = None, as_of: datetime | None = None,
                 min_confidence: float | None = None, other_side: bool = True,
                 after: FactPosition | None = None, limit: int | None = None) -> list[Fact]:
    """Stored facts of these subjects/objects/relations valid at ``as_of`` (``None``: every
    version), in :class:`~chronomem.model.FactPosition` order (oldest first); with a side given and
    ``other_side``, symmetric and inverse facts stored from the other side are read from this one
    (marked derived, see :func:`chronomem.retrieve.counterfactual.other_side`).  ``after`` and ``limit``:
    the first ``limit`` of those placed after ``after``."""
    subj = None if subject_ids is None else list(subject_ids)
    obj = None if object_ids is None else list(object_ids)
    rels = None if relations is None else list(relations)
    found = store.facts(user_id, subject_ids=subj, object_ids=obj, relations=rels, as_of=as_of,
                        min_confidence=min_confidence, after=after, limit=limit)
    if not other_side or (subj is None and obj is None):
        return found  # no side asked for: every stored fact is already listed once
    mirror = stored_as(registry, rels)
    if not mirror:
        return found
    # a reading stands where its stored fact does, so the first ``limit`` of either read hold the page's;
    # a fact both reads find (one between two asked entities) is listed as stored
    mirrored = store.facts(user_id, subject_ids=obj, object_ids=subj, relations=mirror, as_of=as_of,
                           min_confidence=min_confidence, after=after, limit=limit)
    listed = {f.id for f in found}
    readings = [r for f in mirrored if f.id not in listed and (r := read_other_side(f, registry)) is not None]
    if not readings:
        return found
    merged = sorted([*found, *readings], key=_oldest_first)
    return merged if limit is None else merged[:limit]


def state_relations(analysis: Mapping[str, Any], registry: RelationRegistry) -> list[str]:
    """The typed state relations a question asks about (its relation words, e.g. "work" →
    ``works_at``, ``job_title``), in the analysis's order; none for a "when" question or one
    about the past as a whole ("used to", "before"), which the dated evidence answers."""
    if analysis.get("wh") == "when" or analysis.get("history"):
        return []
    out: list[str] = []
    for group in (analysis.get("relation_groups") or {}).values():
        for name in group:
            if not registry.is_known(name) or name in out:
                continue
            spec = registry.spec(name)
            if spec.object_type in STATE_OBJECT_TYPES and not spec.by_statement:
                out.append(name)
    return out


def state_facts(store: Store, registry: RelationRegistry, user_id: str, *, entity_ids: Sequence[str],
                relations: Sequence[str], as_of: datetime, min_confidence: float | None,
                limit: int | None, past: bool = False,
                window: tuple[datetime | None, datetime] | None = None) -> list[Fact]:
    """The facts of ``relations`` valid at ``as_of`` that name one of ``entity_ids`` on either side
    (read from the entity's side where the relation allows), at most ``limit``
    (``SearchConfig.state_facts``; ``None``: all), newest first.
    ``past`` (a question in the past tense with no time of its own: "Where did Diego study?"): when
    none holds at ``as_of``, the versions that ended by then, newest first.
    ``window`` (the half-open ``[start, end)`` a question asks about, ``None`` start: since ever): the
    facts that hold at any instant of it instead of at ``as_of`` alone ("Did Maya live in Porto in 2019?"
    is answered by Porto until April and Lisbon after; ``past`` does not apply)."""
    if not entity_ids or not relations:
        return []
    if window is not None:
        found = [f for f in _naming(store, registry, user_id, entity_ids, relations, None, min_confidence)
                 if not f.superseded and overlaps(f.valid_from, f.valid_to, *window)]
        return sorted(found, key=_oldest_first, reverse=True)[:limit]
    found = _naming(store, registry, user_id, entity_ids, relations, as_of, min_confidence)
    if not found and past:
        found = [f for f in _naming(store, registry, user_id, entity_ids, relations, None, min_confidence)
                 if f.valid_to is not None and f.valid_to <= as_of]
    return sorted(found, key=_oldest_first, reverse=True)[:limit]


def _naming(store: Store, registry: RelationRegistry, user_id: str, entity_ids: Sequence[str],
            relations: Sequence[str], as_of: datetime | None, min_confidence: float | None) -> list[Fact]:
    own = select_facts(store, registry, user_id, subject_ids=entity_ids, relations=relations, as_of=as_of,
                       min_confidence=min_confidence)
    seen = {f.id for f in own} | {i for f in own for i in f.support_ids}
    theirs = [f for f in store.facts(user_id, object_ids=list(entity_ids), relations=list(relations),
                                     as_of=as_of, min_confidence=min_confidence) if f.id not in seen]
    return [*own, *theirs]


_PAST = re.compile(r"^\s*(?:where|who|whom|what|which)\b(?:\s+\w+){0,2}?\s+(?:did|was|were|had|used to)\b", re.IGNORECASE)


def asks_the_past(question: str) -> bool:
    """Is ``question`` in the past tense ("Where did Diego study?", "Who was Aiko dating?", in Japanese
    "ディエゴはどこで勉強していましたか")?  Pure.

    >>> asks_the_past("Where did Diego study?"), asks_the_past("Where does Diego work?")
    (True, False)
    >>> asks_the_past("マヤはどこに住んでいましたか?"), asks_the_past("マヤはどこに住んでいますか?")
    (True, False)
    """
    return _PAST.search(question) is not None or (has_cjk(question) and CJK_PAST.search(question) is not None)


def _state_text(f: Fact, as_of: datetime | None) -> str:
    ended = as_of is not None and f.valid_to is not None and f.valid_to <= as_of
    phrase = _PHRASES.get(f.relation, (None, None))[1 if ended else 0]
    if phrase is None:
        return f"{f.subject} {f.relation.replace('_', ' ')} {f.object}"
    return phrase.format(s=f.subject, o=f.object)


def render_state_facts(facts: Sequence[Fact], as_of: datetime | None = None) -> str:
    """The block ``answer()`` puts before the evidence: one typed fact per line, dated as the evidence is,
    in the past tense when it ended by ``as_of`` (the asked time)."""
    if not facts:
        return ""
    lines = [f"- {_state_text(f, as_of)} {fact_dates(f)}" for f in facts]
    return "Facts that answer the question directly:\n" + "\n".join(lines)
