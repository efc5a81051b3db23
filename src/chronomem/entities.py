"""Entity resolution: map a spelling to one node of the user's graph.

The core resolver matches exactly on normalised spellings — canonical names
and recorded aliases — and creates an entity (canonical name = first spelling
seen) when nothing matches.  Every spelling that extraction used remembers the
turns that used it (``sources``), the canonical name included: forgetting all
of them forgets the spelling, and an entity whose name goes takes the first
spelling still said (:func:`best_spelling`); a spelling the caller wrote
(no turns) is given by hand and stays.  The write path plugs in a stronger resolver
(fuzzy and embedding matching) with the same interface.  Resolution never
crosses users: every lookup is scoped by ``user_id`` in the store.
"""

from __future__ import annotations

import re
import unicodedata
import os
from collections.abc import Mapping, Sequence
from typing import Protocol

from .errors import ValidationError
from .memo import text_memo
from .model import Entity
from .store.base import Store
from .timeutil import utcnow

_SPACE = re.compile(r"\s+")
_EDGE_PUNCT = "\"'`.,;:!?()[]{}<>"


@text_memo(maxsize=65536)
def normalize_name(name: str) -> str:
    """Case- and spacing-insensitive form of a spelling: ``" New  York "`` → ``"new york"``."""
    text = unicodedata.normalize("NFKC", name).casefold().strip().strip(_EDGE_PUNCT).strip()
    return _SPACE.sub(" ", text)


def new_id() -> str:
    """A random 128-bit id as 32 hex digits (same shape as ``uuid4().hex``, cheaper)."""
    return os.urandom(16).hex()


class Resolver(Protocol):
    def resolve_many(self, user_id: str, names: Sequence[tuple[str, str | None]], *,
                     create: bool = True, sources: Mapping[str, Sequence[str]] | None = None) -> dict[str, Entity]:
        """Resolve ``(spelling, type)`` pairs; returns spelling → entity (missing ones absent if not create).

        ``sources``: spelling → the turns that used it, recorded with an alias the resolver learns
        (``Store.add_alias``), so that forgetting those turns forgets the alias."""
        ...


class ExactResolver:
    """Exact and alias matching on normalised spellings."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def lookup(self, user_id: str, names: Sequence[str]) -> dict[str, str]:
        """spelling → entity id for spellings already known (no creation)."""
        norms = {n: normalize_name(n) for n in names}
        found = self.store.entity_ids_by_norm(user_id, list(set(norms.values())))
        return {n: found[v] for n, v in norms.items() if v in found}

    def resolve_many(self, user_id: str, names: Sequence[tuple[str, str | None]], *,
                     create: bool = True, sources: Mapping[str, Sequence[str]] | None = None) -> dict[str, Entity]:
        spellings = _check_spellings(names)
        known = self.lookup(user_id, spellings)
        ents = {e.id: e for e in self.store.entities(user_id, ids=list(set(known.values())), with_aliases=False)}
        out: dict[str, Entity] = {n: ents[i] for n, i in known.items() if i in ents}
        again: dict[str, dict[str, None]] = {}  # norm -> the turns that used one of its spellings now
        by_hand: set[str] = set()
        for n in out:
            if sources and sources.get(n):
                again.setdefault(normalize_name(n), {}).update(dict.fromkeys(sources[n]))
            else:
                by_hand.add(normalize_name(n))
        if again:  # a learned spelling said again: forgetting one of its turns must not drop it
            self.store.add_alias_sources(user_id, {norm: list(ids) for norm, ids in again.items()})
        if by_hand:  # written by the caller, not cited from turns (add_facts, a correction): theirs, kept
            self.store.mark_given_by_hand(user_id, sorted(by_hand))
        if create:
            out.update(self.create(user_id, [(n, t) for n, t in names if n not in out], sources=sources))
        return out

    def create(self, user_id: str, names: Sequence[tuple[str, str | None]], *,
               sources: Mapping[str, Sequence[str]] | None = None) -> dict[str, Entity]:
        """Create entities for spellings that are known to match none (one per normalised form).

        For callers that have just looked the spellings up (:meth:`resolve_many`,
        the fuzzy resolver), so they are not looked up again.  ``sources``: spelling →
        the turns that used it, recorded with the new canonical name (none: a name given by hand).
        """
        spellings = _check_spellings(names)
        types = {n: t for n, t in names if t}
        out: dict[str, Entity] = {}
        by_norm: dict[str, Entity] = {}
        said: dict[str, dict[str, None]] = {}  # norm -> the turns that used one of its spellings
        now = utcnow()
        for n in spellings:
            norm = normalize_name(n)
            said.setdefault(norm, {}).update(dict.fromkeys((sources or {}).get(n) or ()))
            if norm in by_norm:  # two spellings of one new entity in the same batch
                out[n] = by_norm[norm]
                continue
            by_norm[norm] = out[n] = Entity(id=new_id(), user_id=user_id, name=n.strip(),
                                            type=types.get(n), created_at=now)
        if by_norm:
            self.store.insert_entities(user_id, [(e, norm) for norm, e in by_norm.items()],
                                       learned_from={norm: list(ids) for norm, ids in said.items() if ids})
        return out


def best_spelling(spellings: Sequence[tuple[str, Sequence[str] | None]],
                  said_at: Mapping[str, tuple[int, int]] | None = None) -> str | None:
    """The name an entity takes when forgetting took the turns that said its name, as if those turns had
    never been said: the first spelling seen, as a new entity's name is.

    ``spellings``: the entity's remaining ``(spelling, turns that used it)`` pairs, turns ``None`` for a
    name given by hand; ``said_at``: turn id → a sortable place in the conversation (when it was said).
    The spelling whose first turn came earliest wins; then one whose turns the store does not place (the
    most of them first); a name given by hand only when nothing said remains (it has no time);
    alphabetical order settles ties.  ``None`` when no spelling remains."""
    if not spellings:
        return None
    placed = said_at or {}

    def rank(s: tuple[str, Sequence[str] | None]) -> tuple[int, tuple[int, int], int, str, str]:
        name, turns = s
        when = [placed[t] for t in turns or () if t in placed]
        kind = 0 if when else 1 if turns is not None else 2
        return kind, min(when, default=(0, 0)), -len(turns or ()), name.casefold(), name

    return min(spellings, key=rank)[0]


def _check_spellings(names: Sequence[tuple[str, str | None]]) -> list[str]:
    """The distinct spellings of ``(spelling, type)`` pairs, in order; each must survive normalisation."""
    spellings = list(dict.fromkeys(n for n, _ in names))
    for s in spellings:
        if not normalize_name(s):
            raise ValidationError("entity", s, "name is empty after normalisation")
    return spellings
