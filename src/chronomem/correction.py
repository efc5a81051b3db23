"""Correcting a stored fact without destroying it.

:func:`correct_fact` writes a new version with origin ``corrected`` and keeps the old one
in the history: the old version is closed (``valid_to`` = the correction time if it was
still open), points at its correction (``closed_by``) and gets confidence 0, so no query
treats it as true at any time, while ``history`` still shows what was believed and when.
The new version then takes its place among the user's other facts of its slot (and the old
version's slot, when the relation or subject changed), as if it had been said instead of the
old one: the slot is rebuilt from the stated intervals (:meth:`chronomem.graph.GraphWriter.rebuild`),
so a corrected start neither leaves a gap nor overlaps the value before it, and a fact the old
version had closed holds again if the new one no longer closes it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .errors import NotFoundError, ValidationError
from .entities import new_id
from .graph import FactValidator
from .model import Fact, Origin
from .timeutil import iso, utcnow
from .validation import check_id, check_user

if TYPE_CHECKING:
    from .memory import Memory

CORRECTABLE = frozenset({"subject", "relation", "object", "valid_from", "valid_to", "confidence",
                         "intent", "text", "subject_type", "object_type"})


def correct_fact(mem: Memory, user_id: str | None, fact_id: str,
                 changes: Mapping[str, Any]) -> tuple[Fact, Fact]:
    """Apply ``changes`` to fact ``fact_id`` as a new version: ``(old, new)``."""
    user_id = check_user(user_id)
    check_id("fact_id", fact_id)
    if not isinstance(changes, Mapping) or not changes:
        raise ValidationError("changes", changes, f"give at least one of {sorted(CORRECTABLE)}")
    unknown = sorted(set(changes) - CORRECTABLE)
    if unknown:
        raise ValidationError(unknown[0], changes[unknown[0]],
                              f"cannot be corrected; correctable fields: {sorted(CORRECTABLE)}")
    store = mem.store
    with store.transaction(user_id):
        found = store.facts(user_id, ids=[fact_id])
        if not found:
            raise NotFoundError(f"user {user_id!r} has no fact {fact_id!r}")
        old = found[0]
        if old.closed_by is not None and old.confidence == 0.0:
            raise ValidationError("fact_id", fact_id, f"was already corrected by {old.closed_by}; "
                                  "correct that version")
        now = utcnow()
        renamed = any(k in changes for k in ("subject", "relation", "object"))
        draft: dict[str, Any] = {
            "subject": old.subject, "relation": old.relation, "object": old.object,
            # the end as stated: an end inferred from the next value is inferred again by the rebuild below
            "valid_from": old.valid_from, "valid_to": old.stated_to,
            "confidence": old.confidence, "intent": old.intent.value,
            "text": "" if renamed else old.text, "source_ids": list(old.source_ids),
            "session_id": old.session_id, "agent_id": old.agent_id, "origin": Origin.CORRECTED.value}
        draft.update(changes)
        if draft["valid_from"] is None and "valid_from" not in changes:
            draft.pop("valid_from")
        try:
            fi = FactValidator(mem.registry, now=now, default_origin=Origin.CORRECTED)(draft, 0)
        except ValidationError as e:  # the validator speaks of a batch ("facts[0].valid_to"): name the change
            field = e.field.removeprefix("facts[0].")
            if field == "valid_to" and "valid_from" in changes and "valid_to" not in changes \
                    and old.stated_to is not None:  # a new start at or after the end the fact keeps
                raise ValidationError("valid_from", changes["valid_from"],
                                      f"must be before the fact's end ({old.stated_to.isoformat()}); "
                                      "give valid_to too to move the end") from None
            raise ValidationError(field, e.value, e.reason) from None
        # a name the correction changes is the user's own (given by hand); one it keeps was said by the
        # old version's turns, and forgetting them must still take it (the correction goes with them)
        said = {name: list(old.source_ids) for key, name in (("subject", fi.subject), ("object", fi.object))
                if key not in changes}
        ents = mem.resolver.resolve_many(user_id, [(fi.subject, fi.subject_type), (fi.object, fi.object_type)],
                                         sources=said)
        s, o = ents[fi.subject], ents[fi.object]
        new = Fact(id=new_id(), user_id=user_id, subject=s.name, relation=fi.relation, object=o.name,
                   valid_from=fi.valid_from, valid_to=fi.valid_to, confidence=fi.confidence,
                   intent=fi.intent, origin=Origin.CORRECTED, recorded_at=now, source_ids=fi.source_ids,
                   session_id=fi.session_id, text=fi.text, agent_id=fi.agent_id, stated_to=fi.valid_to,
                   subject_id=s.id, object_id=o.id,
                   # the other statements' words describe what it says unless the correction renames it
                   other_words=[] if renamed or "text" in changes else list(old.other_words))
        store.insert_facts(user_id, [new])
        if old.valid_to is None or old.valid_to > now:
            # corrected before it began: superseded (closed_by set, valid_to None, never valid), as the
            # tie rule writes it, not an empty interval an import would read as that anyway
            old.valid_to = now if old.valid_from is None or old.valid_from < now else None
        old.closed_by, old.confidence = new.id, 0.0
        store.update_facts(user_id, [old])
        mem.graph.rebuild(user_id, [old, new])  # the new version takes the old one's place in time
        new = store.facts(user_id, ids=[new.id])[0]
    return old, new


def correction_notes(old: Fact, new: Fact, changes: Mapping[str, Any]) -> list[str]:
    """What of the asked ``changes`` the update rules did not keep as the user may expect, in words: an end
    after the start of the slot's next value (that value still closes the version there); a start moved
    before another value's, which now closes the version that held until now.  Empty when it holds as
    asked.  (A start equal to another value's is no case: the correction, said last, wins the tie.)  Pure.

    >>> from datetime import datetime, timezone as tz
    >>> from dataclasses import replace
    >>> from chronomem.model import Intent
    >>> d = lambda y: datetime(y, 1, 1, tzinfo=tz.utc)
    >>> f = Fact(id="f2", user_id="u", subject="Maya", relation="lives_in", object="Porto", valid_from=d(2015),
    ...          valid_to=d(2018), stated_to=d(2020), closed_by="f9", confidence=1.0, intent=Intent.FACT,
    ...          origin=Origin.CORRECTED, recorded_at=d(2024))
    >>> [note[:59] for note in correction_notes(replace(f, id="f1"), f, {"valid_to": "2020"})]
    ['valid_to: the version holds until 2018-01-01T00:00:00+00:00']
    """
    notes = []
    if "valid_to" in changes and new.stated_to is not None and new.valid_to is not None \
            and new.valid_to < new.stated_to:
        notes.append(f"valid_to: the version holds until {iso(new.valid_to)}, where fact {new.closed_by} of the same "
                     f"slot begins; its asked end ({iso(new.stated_to)}) is kept as stated_to")
    if "valid_from" in changes and "valid_to" not in changes and old.stated_to is None and old.closed_by == new.id \
            and new.stated_to is None and new.valid_to is not None and new.closed_by is not None:
        notes.append(f"valid_from: fact {new.closed_by} of the same slot begins after the corrected start and closes "
                     f"this version at {iso(new.valid_to)}: it no longer holds after that")
    return notes
