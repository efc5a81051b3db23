"""Writing facts into the graph: validation, entity resolution and the update rules.

:class:`GraphWriter` is the single place where facts enter the store, for
``add_facts`` (structured input) and for the extraction pipeline alike.  It
validates a whole batch before writing anything, then resolves entities and
applies :func:`chronomem.temporal.plan_update` to each fact in one
transaction, so a batch is written completely or not at all.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import fields, replace
from datetime import datetime, timedelta
from enum import Enum
from typing import Any

from .entities import ExactResolver, Resolver, new_id, normalize_name
from .errors import ValidationError
from .limits import MAX_ID_CHARS, MAX_NAME_CHARS, MAX_TEXT_CHARS
from .model import Fact, FactInput, FactPosition, Intent, Origin, UpdateReport
from .registry import RelationRegistry, RelationSpec, statement_identity
from .store.base import Store
from .temporal import in_their_slots, plan_update
from .timeutil import parse_time, utcnow
from .validation import text_problem

FACT_FIELDS = frozenset({
    "subject", "relation", "object", "valid_from", "valid_to", "confidence", "intent", "origin",
    "source_ids", "session_id", "text", "subject_type", "object_type", "agent_id", "id",
})
REQUIRED = ("subject", "relation", "object")

__all__ = ["FACT_FIELDS", "FactInput", "FactValidator", "GraphWriter", "validate_fact"]


def _text(d: Mapping[str, Any], key: str, where: str, *, required: bool) -> str | None:
    v = d.get(key)
    if type(v) is str:  # the common case, checked first: bulk loads validate millions of these
        problem = text_problem(v, _LIMITS.get(key, MAX_NAME_CHARS))  # the same limits on every store
        if problem:
            raise ValidationError(f"{where}.{key}", v[:40], problem)
        s = v.strip()
        if not required or (s and normalize_name(s)):
            return s
    elif v is None:
        if required:
            raise ValidationError(f"{where}.{key}", v, "is required")
        return None
    elif isinstance(v, bool) or not isinstance(v, str | int | float):
        raise ValidationError(f"{where}.{key}", v, "must be a string")
    elif isinstance(v, float) and not math.isfinite(v):  # a number is its digits ("1990"); NaN says nothing
        raise ValidationError(f"{where}.{key}", v, "must be a string or a finite number")
    else:
        return _text({key: str(v)}, key, where, required=required)
    if not s:
        raise ValidationError(f"{where}.{key}", v, "must not be empty")
    raise ValidationError(f"{where}.{key}", v, "has no usable characters")


_OPTIONAL_TEXT = ("session_id", "text", "subject_type", "object_type", "agent_id", "id")
_IDS = frozenset({"session_id", "agent_id", "id"})  # may be left out, but not given blank (ignored before)
_LIMITS = {"text": MAX_TEXT_CHARS, "session_id": MAX_ID_CHARS, "agent_id": MAX_ID_CHARS, "id": MAX_ID_CHARS}
_INTENTS = {i.value: i for i in Intent}
_ORIGINS = {o.value: o for o in Origin}


class FactValidator:
    """Checks the add_facts dicts of one batch and fills the documented defaults.

    Every fact gets every check; what a batch repeats (the same relation
    spelling, the same time string) is worked out once and reused.  Defaults:
    confidence 1.0, intent FACT, origin "imported", ``valid_from`` = now —
    except for an ending (``valid_to`` given, no ``valid_from``), whose start
    stays unknown so it can close the matching open fact.
    """

    def __init__(self, registry: RelationRegistry, *, now: datetime | None = None,
                 default_origin: Origin = Origin.IMPORTED, default_session: str | None = None,
                 default_agent: str | None = None) -> None:
        self.registry = registry
        self.now = now
        self.default_origin = default_origin
        self.default_session = default_session
        self.default_agent = default_agent
        self._relations: dict[str, str] = {}  # spelling -> canonical relation
        self._times: dict[str, datetime] = {}  # ISO string -> parsed time (successes only)

    def __call__(self, d: Mapping[str, Any] | FactInput, index: int = 0) -> FactInput:
        """``d`` checked, with the defaults filled in, as a new :class:`FactInput`."""
        where = f"facts[{index}]"
        if isinstance(d, FactInput):
            return self._typed(d, where)
        if not isinstance(d, Mapping):
            raise ValidationError(where, d, "each fact must be a mapping")
        return self._checked(d, where)

    def _checked(self, d: Mapping[str, Any], where: str) -> FactInput:
        if not FACT_FIELDS.issuperset(d):
            unknown = sorted(set(d) - FACT_FIELDS)[0]
            raise ValidationError(f"{where}.{unknown}", d[unknown],
                                  f"unknown field; allowed: {', '.join(sorted(FACT_FIELDS))}")
        subject = _text(d, "subject", where, required=True)
        obj = _text(d, "object", where, required=True)
        relation = self._relation(_text(d, "relation", where, required=True), where)  # type: ignore[arg-type]
        valid_from, valid_to = self._interval(d, where)
        confidence, intent, origin = _confidence(d, where), _intent(d, where), self._origin(d, where)
        source_ids = _source_ids(d, where)
        extra = {k: None if d.get(k) is None else _text(d, k, where, required=k in _IDS) for k in _OPTIONAL_TEXT}
        return FactInput(
            subject=subject, relation=relation, object=obj, valid_from=valid_from,  # type: ignore[arg-type]
            valid_to=valid_to, confidence=confidence, intent=intent, origin=origin, source_ids=source_ids,
            session_id=extra["session_id"] or self.default_session, text=extra["text"] or "",
            subject_type=extra["subject_type"], object_type=extra["object_type"],
            agent_id=extra["agent_id"] or self.default_agent, id=extra["id"],
        )

    def _typed(self, fi: FactInput, where: str) -> FactInput:
        """The same checks and defaults as for a dict: the record's fields go through the dict path."""
        d = {f.name: getattr(fi, f.name) for f in fields(fi)}
        for k in ("intent", "origin"):  # enum members or their values, as a caller may have set them
            if isinstance(d[k], Enum):
                d[k] = d[k].value
        return self._checked(d, where)

    def _relation(self, spelling: str, where: str) -> str:
        canon = self._relations.get(spelling)
        if canon is None:
            try:
                canon = self._relations[spelling] = self.registry.canonical(spelling)
            except ValidationError as e:
                raise ValidationError(f"{where}.relation", spelling, e.reason) from None
        return canon

    def _time(self, value: Any, field: str) -> datetime:
        if type(value) is not str:
            return parse_time(value, field)
        dt = self._times.get(value)
        if dt is None:
            dt = self._times[value] = parse_time(value, field)
        return dt

    def _interval(self, d: Mapping[str, Any], where: str) -> tuple[datetime | None, datetime | None]:
        raw_to = d.get("valid_to")
        valid_to = None if raw_to is None else self._time(raw_to, f"{where}.valid_to")
        raw_from = d.get("valid_from")
        if raw_from is not None:
            valid_from: datetime | None = self._time(raw_from, f"{where}.valid_from")
        else:
            valid_from = None if valid_to is not None else (self.now or utcnow())
        if valid_from is not None and valid_to is not None and valid_to <= valid_from:
            raise ValidationError(f"{where}.valid_to", raw_to,
                                  f"must be after valid_from ({valid_from.isoformat()})")
        return valid_from, valid_to

    def _origin(self, d: Mapping[str, Any], where: str) -> Origin:
        raw = d.get("origin")
        if not raw:
            origin = self.default_origin
        else:
            found = _ORIGINS.get(str(raw).lower())
            if found is None:
                raise ValidationError(f"{where}.origin", raw, f"must be one of {[o.value for o in Origin]}")
            origin = found
        if origin is Origin.DERIVED:
            raise ValidationError(f"{where}.origin", "derived", "derived facts are never stored as stated")
        return origin


def _confidence(d: Mapping[str, Any], where: str) -> float:
    conf = d.get("confidence", 1.0)
    if isinstance(conf, bool) or not isinstance(conf, int | float) or math.isnan(conf) or not 0.0 <= conf <= 1.0:
        raise ValidationError(f"{where}.confidence", conf, "must be a number between 0 and 1")
    return float(conf)


def _intent(d: Mapping[str, Any], where: str) -> Intent:
    raw = d.get("intent")
    if not raw:
        return Intent.FACT
    intent = _INTENTS.get(str(raw).upper())
    if intent is None:
        raise ValidationError(f"{where}.intent", raw, f"must be one of {[i.value for i in Intent]}")
    return intent


def _source_ids(d: Mapping[str, Any], where: str) -> list[str]:
    sources = d.get("source_ids") or []
    if isinstance(sources, str | Mapping) or not isinstance(sources, Iterable):
        raise ValidationError(f"{where}.source_ids", sources, "must be a list of message ids")
    out = list(sources)
    for i, s in enumerate(out):  # an id is a turn's id as given: None or 5 would be stored as "None" or "5"
        if not isinstance(s, str) or not s.strip():
            raise ValidationError(f"{where}.source_ids[{i}]", s, "must be a message id (a non-empty string)")
        problem = text_problem(s, MAX_ID_CHARS)
        if problem:
            raise ValidationError(f"{where}.source_ids[{i}]", s[:40], problem)
    return out


def validate_fact(d: Mapping[str, Any] | FactInput, registry: RelationRegistry, *, index: int = 0,
                  now: datetime | None = None, default_origin: Origin = Origin.IMPORTED,
                  default_session: str | None = None, default_agent: str | None = None) -> FactInput:
    """Check one add_facts dict and fill the documented defaults (see :class:`FactValidator`)."""
    return FactValidator(registry, now=now, default_origin=default_origin, default_session=default_session,
                         default_agent=default_agent)(d, index)


#: Version of what makes two facts the same fact (benchmarks key their memories on it):
#: 1: (subject, relation, object) up to symmetry and inverses;
#: 2: and the statement too, for a relation keyed by it (``RelationSpec.by_statement``: "did").
FACT_IDENTITY = 2


def slot_family(registry: RelationRegistry, relation: str) -> tuple[RelationSpec, tuple[str, ...]]:
    """The spec that decides ``relation``'s slots, and the relations whose facts share them.

    A relation and its inverse share their facts ("Carol manages Maya" is "Maya reports_to Carol").  When
    the inverse is the single-valued one, it decides: a manager stated from either side replaces the last
    (:func:`chronomem.temporal.in_slot` reads each fact from the single-valued side).
    """
    spec = registry.spec(relation)
    if not spec.single_valued and spec.inverse is not None:
        other = registry.spec(spec.inverse)
        if other.single_valued:
            spec = other
    return spec, tuple(dict.fromkeys(r for r in (spec.name, spec.inverse) if r is not None))


#: entities listed as both subjects and objects of one read of a batch's many-valued facts at most (the
#: statement holds them twice, under SQLite's 32,766 parameters with the chunked side's 2,000)
_KEYED_ENDS = 2000


class _Batch:
    """The facts one ``apply`` can touch, indexed by (entity id, relation), and what it changed.

    Each incoming fact is planned by :func:`chronomem.temporal.plan_update`
    against the facts of its relation family (the relation and its inverse)
    touching its subject or object, stored or inserted earlier in the batch.
    """

    def __init__(self, registry: RelationRegistry, theta: float, key: Callable[[Fact], tuple[str, str, str]],
                 stored: Iterable[Fact]) -> None:
        self.registry = registry
        self.theta = theta
        self.key = key
        self.pool: dict[str, Fact] = {}
        self._by_slot: dict[tuple[str | None, str], dict[str, None]] = {}  # insertion-ordered id sets
        self._by_key: dict[tuple[str, str, str], dict[str, None]] = {}
        self._families: dict[str, tuple[RelationSpec, tuple[str, ...]]] = {}
        self.inserted: dict[str, Fact] = {}
        self.changed: dict[str, Fact] = {}
        self.closed: dict[str, Fact] = {}
        self.reinforced: dict[str, Fact] = {}
        for f in stored:
            self._index(f)

    def _index(self, f: Fact) -> None:
        self.pool[f.id] = f
        for entity in (f.subject_id, f.object_id):
            self._by_slot.setdefault((entity, f.relation), {})[f.id] = None
        self._by_key.setdefault(self.key(f), {})[f.id] = None

    def _family(self, relation: str) -> tuple[RelationSpec, tuple[str, ...]]:
        found = self._families.get(relation)
        if found is None:
            found = self._families[relation] = slot_family(self.registry, relation)
        return found

    def _near(self, new: Fact, family: tuple[str, ...]) -> list[Fact]:
        ids: dict[str, None] = {}
        for rel in family:
            for entity in (new.subject_id, new.object_id):
                found = self._by_slot.get((entity, rel))
                if found:
                    ids.update(found)
        return [self.pool[x] for x in ids]

    def add(self, new: Fact) -> None:
        """Plan ``new`` against the facts it can interact with and record the outcome.  In a many-valued
        slot only the same fact said before can (``plan_update`` compares keys there): the facts of its
        key, not every fact of its subject ("Maya likes …" a thousand times made a batch quadratic)."""
        spec, family = self._family(new.relation)
        near = self._near(new, family) if spec.single_valued else [
            self.pool[x] for x in self._by_key.get(self.key(new), ())]
        plan = plan_update(new, near, spec, self.key, self.theta)
        for f in plan.changed:
            self.pool[f.id] = f
            (self.inserted if f.id in self.inserted else self.changed)[f.id] = f
        for f in plan.closed:
            self.closed[f.id] = f
        if plan.reinforced is not None:
            self.reinforced[plan.reinforced.id] = plan.reinforced
        for f in [*([plan.insert] if plan.insert is not None else []), *plan.split]:
            self._index(f)
            self.inserted[f.id] = f

    def report(self) -> UpdateReport:
        """The final state of each fact the batch added, closed or reinforced."""
        pool = self.pool
        return UpdateReport(
            added=[pool[k] for k in self.inserted],
            closed=[pool[k] for k in self.closed if k not in self.inserted or pool[k].valid_to is not None],
            reinforced=[pool[k] for k in self.reinforced])


class GraphWriter:
    """Applies batches of facts to one store under one registry and threshold."""

    def __init__(self, store: Store, registry: RelationRegistry, theta: float,
                 resolver: Resolver | None = None) -> None:
        self.store = store
        self.registry = registry
        self.theta = theta
        self.resolver: Resolver = resolver or ExactResolver(store)

    def key(self, f: Fact) -> tuple[str, str, str]:
        """The fact's identity: (subject, relation, object) up to symmetry and inverses, and for a
        relation keyed by its statement (``RelationSpec.by_statement``) the statement too."""
        k = self.registry.key(f.subject_id or f.subject, f.relation, f.object_id or f.object)
        if f.text and self.registry.spec(f.relation).by_statement:
            return k[0], k[1], f"{k[2]}\n{statement_identity(f.text)}"
        return k

    def _cached_key(self) -> Callable[[Fact], tuple[str, str, str]]:
        """``key`` memoised by fact id for one batch (a fact's endpoints never change)."""
        cache: dict[str, tuple[str, str, str]] = {}

        def key(f: Fact) -> tuple[str, str, str]:
            k = cache.get(f.id)
            if k is None:
                k = cache[f.id] = self.key(f)
            return k
        return key

    def apply(self, user_id: str, facts: Sequence[Mapping[str, Any] | FactInput], *,
              session_id: str | None = None, agent_id: str | None = None,
              default_origin: Origin = Origin.IMPORTED) -> UpdateReport:
        """Validate ``facts`` (``add_facts`` dicts or :class:`FactInput` records), then write them
        through the update rules in one transaction: all of them or, on any error, none."""
        if not facts:
            return UpdateReport()
        with self.store.transaction(user_id):
            # "now" (the default valid_from and the recorded time) is read under the user's
            # write lock, so racing writers' defaults follow the order they are applied in
            now = utcnow()
            check = FactValidator(self.registry, now=now, default_origin=default_origin,
                                  default_session=session_id, default_agent=agent_id)
            inputs = [check(f, i) for i, f in enumerate(facts)]
            given = {fi.id: i for i, fi in enumerate(inputs) if fi.id}
            if given:  # an id of any stored fact, not only of the ones this batch can touch
                for taken in self.store.facts(user_id, ids=list(given)):
                    raise ValidationError(f"facts[{given[taken.id]}].id", taken.id,
                                          "a fact with this id already exists")
            used: dict[str, dict[str, None]] = {}  # spelling -> the turns that said it (a learned alias keeps them)
            for f in inputs:
                for name in (f.subject, f.object):
                    used.setdefault(name, {}).update(dict.fromkeys(f.source_ids))
            ents = self.resolver.resolve_many(
                user_id, [(f.subject, f.subject_type) for f in inputs] +
                [(f.object, f.object_type) for f in inputs], sources={n: list(ids) for n, ids in used.items()})
            batch = self._load_batch(user_id, [(f.relation, ents[f.subject].id, ents[f.object].id) for f in inputs])
            for i, fi in enumerate(inputs):
                s, o = ents[fi.subject], ents[fi.object]
                new = Fact(
                    id=fi.id or new_id(), user_id=user_id, subject=s.name, relation=fi.relation,
                    object=o.name, valid_from=fi.valid_from, valid_to=fi.valid_to,
                    confidence=fi.confidence, intent=fi.intent, origin=fi.origin or default_origin,
                    recorded_at=now + timedelta(microseconds=i),  # strictly ordered within a batch
                    source_ids=fi.source_ids, session_id=fi.session_id, text=fi.text,
                    agent_id=fi.agent_id, subject_id=s.id, object_id=o.id,
                )
                if new.id in batch.pool:
                    raise ValidationError(f"facts[{i}].id", new.id, "a fact with this id already exists")
                batch.add(new)
            self._write(user_id, batch)
        return batch.report()

    def replan(self, user_id: str, facts: Sequence[Fact]) -> UpdateReport:
        """Write ``facts``, statements already checked and resolved (stored endpoints, ids, recorded times),
        through the update rules again, in order, in one transaction: the endings left of a fact whose start
        was forgotten (:func:`chronomem.unsaying.unsay`).  A fact ``plan_update`` inserts keeps its id,
        so the fact it was planned from must be gone from the store first."""
        if not facts:
            return UpdateReport()
        with self.store.transaction(user_id):
            batch = self._load_batch(user_id, [(f.relation, f.subject_id or f.subject, f.object_id or f.object)
                                               for f in facts])
            for f in facts:
                batch.add(f)
            self._write(user_id, batch)
        return batch.report()

    def _write(self, user_id: str, batch: _Batch) -> None:
        self.store.insert_facts(user_id, list(batch.inserted.values()))
        self.store.update_facts(user_id, [f for k, f in batch.changed.items() if k not in batch.inserted])

    def _load_batch(self, user_id: str, facts: Sequence[tuple[str, str, str]]) -> _Batch:
        """The stored facts a batch of facts, given as (relation, subject id, object id), can interact with
        (:meth:`_Batch.add`): for a fact of a single-valued slot, its relation family touching its subject or
        object; for a many-valued one, the facts of its key, which name the same two entities ("Maya likes
        song 9" meets "Maya likes song 9", not the thousands of Maya's other likes, which were read whole for
        each batch)."""
        wide: tuple[set[str], set[str]] = (set(), set())  # relations, entity ids
        keyed: tuple[set[str], set[str]] = (set(), set())
        for relation, subject_id, object_id in facts:
            spec, family = slot_family(self.registry, relation)
            relations, ids = wide if spec.single_valued else keyed
            relations.update(family)
            ids.update((subject_id, object_id))
        if len(keyed[1]) > _KEYED_ENDS:  # both ends listed would pass a statement's parameter limit: read wide
            wide[0].update(keyed[0])
            wide[1].update(keyed[1])
            keyed = (set(), set())
        stored: dict[str, Fact] = {}
        if wide[0]:
            stored.update((f.id, f) for f in self.store.facts(user_id, touching=sorted(wide[1]),
                                                              relations=sorted(wide[0])))
        if keyed[0]:
            ends = sorted(keyed[1])
            stored.update((f.id, f) for f in self.store.facts(user_id, subject_ids=ends, object_ids=ends,
                                                              relations=sorted(keyed[0])))
        ordered = sorted(stored.values(), key=lambda f: FactPosition.of(f).sort_key())  # as one read gave them
        return _Batch(self.registry, self.theta, self._cached_key(), ordered)

    def merge_entities(self, user_id: str, source_id: str, target_id: str) -> tuple[int, int]:
        """Make the entity ``source_id`` part of ``target_id`` (two names resolution kept apart: "Mom" and
        "Linda"), in one transaction.  Its facts and names move to the target; a fact of one that says
        again what a fact of the other says, inside that one's interval, is folded into the older one as a
        repetition is (:func:`~chronomem.temporal.fold_repetition`: its turns, its raise, still undoable
        by forgetting; what it said again after that one's end stays a stint of its own:
        :func:`~chronomem.temporal.beyond_its_end`); then every slot of the target is placed in time order
        again, as after forgetting.
        Where one of the two is an ending with no start ("left Oporto in 2015" beside "Porto from 2010"), the
        later one is written again through the update rules instead (:meth:`replan`: it ends the stint, or
        gives the ending its start), not folded away with its end.  Returns (facts moved, of them folded)."""
        from .temporal import beyond_its_end, fold_repetition, foldable, is_stable, said_inside

        def startless(f: Fact) -> bool:
            return f.valid_from is None and f.stated_to is not None

        with self.store.transaction(user_id):
            moved = set(self.store.merge_entities(user_id, source_id, target_id))
            facts = sorted(self.store.facts(user_id, touching=[target_id]), key=lambda f: f.recorded_at)
            kept: dict[tuple[str, str, str], list[Fact]] = defaultdict(list)
            changed: dict[str, Fact] = {}
            folded: list[str] = []
            again: list[Fact] = []  # said again of the other entity's stint, to write through the rules
            stints: list[Fact] = []  # said again after the end of the stint a fact folds into: their own
            for f in facts:
                k = self.key(f)
                # only across the two entities: each one's own history stays as it was written
                others = [g for g in kept[k] if (g.id in moved) != (f.id in moved) and foldable(g)
                          and is_stable(g, self.theta) == is_stable(f, self.theta)] if foldable(f) else []
                if others and (startless(f) or any(startless(g) for g in others)):
                    again.append(replace(f, valid_from=None if f.start_guessed else f.valid_from, start_guessed=False,
                                         valid_to=f.stated_to, stated_to=None, closed_by=None))
                    continue
                host = next((g for g in others if said_inside(g, f.valid_from, f.stated_to or f.valid_to)), None)
                if host is None:
                    kept[k].append(f)
                else:
                    f, stint = beyond_its_end(host, f, self.theta)
                    if stint is not None:
                        stints.append(stint)
                        kept[k].append(stint)
                    new = fold_repetition(host, f, self.theta)
                    kept[k][kept[k].index(host)] = changed[host.id] = new
                    folded.append(f.id)
            self.store.update_facts(user_id, list(changed.values()))
            self.store.delete_facts(user_id, [*folded, *(f.id for f in again)])
            self.store.insert_facts(user_id, stints)
            self.rebuild(user_id, [f for group in kept.values() for f in group])
            back = {f.id for f in self.replan(user_id, again).added}
        return len(moved), len(folded) + sum(f.id not in back for f in again)

    def rebuild(self, user_id: str, facts: Sequence[Fact]) -> list[Fact]:
        """Recompute closures of the slots these facts belong to (after forgetting, a merge, an import); stints
        split out of a fact cut before a later start of its are inserted.  Returns the facts changed and added."""
        from .temporal import rebuild_slot

        changed: list[Fact] = []
        split: list[Fact] = []  # stints split out of a fact cut before a later start of its
        for spec, slot in self._slots(user_id, facts):
            held = {f.id for f in slot}
            for f in rebuild_slot(slot, spec, self.key, self.theta):
                (changed if f.id in held else split).append(f)
        if split:
            self.store.insert_facts(user_id, split)
        if changed:
            self.store.update_facts(user_id, changed)
        return [*changed, *split]

    def rejoin(self, user_id: str, facts: Sequence[Fact]) -> int:
        """Fold into one fact the stints of it that a value now forgotten kept apart, in the slots of ``facts``
        (:func:`~chronomem.temporal.abutting_repetitions`: "Lisbon", "Porto", "Lisbon again", Porto forgotten,
        is one Lisbon fact with a later start, as if Porto had never been said), and place those slots in
        order again.  Returns how many stints were folded (and deleted)."""
        from .temporal import abutting_repetitions, fold_repetition

        host_of: dict[str, str] = {}  # folded fact id -> the fact it went into
        hosts: dict[str, Fact] = {}
        with self.store.transaction(user_id):
            for _, slot in self._slots(user_id, facts):
                for g, f in abutting_repetitions(slot, self.key, self.theta):
                    into = host_of.get(g.id, g.id)
                    host = hosts.get(into, g)
                    hosts[into] = fold_repetition(replace(host, valid_to=host.stated_to, closed_by=None), f, self.theta)
                    host_of[f.id] = into
            if host_of:
                self.store.update_facts(user_id, list(hosts.values()))
                self.store.delete_facts(user_id, list(host_of))
                self.rebuild(user_id, list(hosts.values()))
        return len(host_of)

    def _slots(self, user_id: str, facts: Sequence[Fact]) -> list[tuple[RelationSpec, list[Fact]]]:
        """The stored facts of the slots ``facts`` belong to, slot by slot (grouped by holder and relation
        family), with each slot's relation."""
        out: list[tuple[RelationSpec, list[Fact]]] = []
        groups: dict[tuple[str, str], list[Fact]] = defaultdict(list)
        for f in facts:
            groups[(f.subject_id or f.subject, slot_family(self.registry, f.relation)[0].name)].append(f)
        for (_, rel), members in groups.items():
            spec, family = slot_family(self.registry, rel)
            ids = list({m.subject_id for m in members} | {m.object_id for m in members})
            near = self.store.facts(user_id, touching=ids, relations=list(family))  # type: ignore[arg-type]
            # only the members' own slots: a fact that shares an endpoint but not a slot ("Tom works_at
            # Acme" beside Maya's) would be replayed without what closed it, and come back open
            ours = in_their_slots(members, spec, self.key)
            out.append((spec, [f for f in near if ours(f)]))
        return out

