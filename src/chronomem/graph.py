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
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from .entities import ExactResolver, Resolver, new_id, normalize_name
from .errors import ValidationError
from .model import Fact, Intent, Origin, UpdateReport
from .registry import RelationRegistry
from .store.base import Store
from .temporal import plan_update
from .timeutil import parse_time, utcnow

FACT_FIELDS = frozenset({
    "subject", "relation", "object", "valid_from", "valid_to", "confidence", "intent", "origin",
    "source_ids", "session_id", "text", "subject_type", "object_type", "agent_id", "id",
})
REQUIRED = ("subject", "relation", "object")


@dataclass(slots=True)
class FactInput:
    """A validated incoming fact, before entity resolution."""

    subject: str
    relation: str
    object: str
    valid_from: datetime | None
    valid_to: datetime | None
    confidence: float
    intent: Intent
    origin: Origin
    source_ids: list[str]
    session_id: str | None
    text: str
    subject_type: str | None
    object_type: str | None
    agent_id: str | None
    id: str | None


def _text(d: Mapping[str, Any], key: str, where: str, *, required: bool) -> str | None:
    v = d.get(key)
    if type(v) is str:  # the common case, checked first: bulk loads validate millions of these
        if "\x00" in v:  # PostgreSQL cannot store it; refuse it on every store alike
            raise ValidationError(f"{where}.{key}", v[:40], "contains a NUL character")
        s = v.strip()
        if not required or (s and normalize_name(s)):
            return s
    elif v is None:
        if required:
            raise ValidationError(f"{where}.{key}", v, "is required")
        return None
    elif isinstance(v, bool) or not isinstance(v, str | int | float):
        raise ValidationError(f"{where}.{key}", v, "must be a string")
    else:
        return _text({key: str(v)}, key, where, required=required)
    if not s:
        raise ValidationError(f"{where}.{key}", v, "must not be empty")
    raise ValidationError(f"{where}.{key}", v, "has no usable characters")


def validate_fact(d: Mapping[str, Any], registry: RelationRegistry, *, index: int = 0,
                  now: datetime | None = None, default_origin: Origin = Origin.IMPORTED,
                  default_session: str | None = None, default_agent: str | None = None) -> FactInput:
    """Check one add_facts dict and fill the documented defaults.

    Defaults: confidence 1.0, intent FACT, origin "imported", ``valid_from`` =
    now — except for an ending (``valid_to`` given, no ``valid_from``), whose
    start stays unknown so it can close the matching open fact.
    """
    where = f"facts[{index}]"
    if not isinstance(d, Mapping):
        raise ValidationError(where, d, "each fact must be a mapping")
    unknown = set(d) - FACT_FIELDS
    if unknown:
        raise ValidationError(f"{where}.{sorted(unknown)[0]}", d[sorted(unknown)[0]],
                              f"unknown field; allowed: {', '.join(sorted(FACT_FIELDS))}")
    subject = _text(d, "subject", where, required=True)
    obj = _text(d, "object", where, required=True)
    rel_raw = _text(d, "relation", where, required=True)
    try:
        relation = registry.canonical(rel_raw)  # type: ignore[arg-type]
    except ValidationError as e:
        raise ValidationError(f"{where}.relation", rel_raw, e.reason) from None
    valid_to = None if d.get("valid_to") is None else parse_time(d["valid_to"], f"{where}.valid_to")
    if d.get("valid_from") is not None:
        valid_from: datetime | None = parse_time(d["valid_from"], f"{where}.valid_from")
    else:
        valid_from = None if valid_to is not None else (now or utcnow())
    if valid_from is not None and valid_to is not None and valid_to <= valid_from:
        raise ValidationError(f"{where}.valid_to", d.get("valid_to"),
                              f"must be after valid_from ({valid_from.isoformat()})")
    conf = d.get("confidence", 1.0)
    if isinstance(conf, bool) or not isinstance(conf, int | float) or math.isnan(conf) or not 0.0 <= conf <= 1.0:
        raise ValidationError(f"{where}.confidence", conf, "must be a number between 0 and 1")
    try:
        intent = Intent(str(d.get("intent") or "FACT").upper())
    except ValueError:
        raise ValidationError(f"{where}.intent", d.get("intent"),
                              f"must be one of {[i.value for i in Intent]}") from None
    try:
        origin = Origin(str(d["origin"]).lower()) if d.get("origin") else default_origin
    except ValueError:
        raise ValidationError(f"{where}.origin", d.get("origin"),
                              f"must be one of {[o.value for o in Origin]}") from None
    if origin is Origin.DERIVED:
        raise ValidationError(f"{where}.origin", "derived", "derived facts are never stored as stated")
    sources = d.get("source_ids") or []
    if isinstance(sources, str) or not isinstance(sources, Iterable):
        raise ValidationError(f"{where}.source_ids", sources, "must be a list of message ids")
    return FactInput(
        subject=subject, relation=relation, object=obj, valid_from=valid_from,  # type: ignore[arg-type]
        valid_to=valid_to, confidence=float(conf), intent=intent, origin=origin,
        source_ids=[str(s) for s in sources],
        session_id=_text(d, "session_id", where, required=False) or default_session,
        text=_text(d, "text", where, required=False) or "",
        subject_type=_text(d, "subject_type", where, required=False),
        object_type=_text(d, "object_type", where, required=False),
        agent_id=_text(d, "agent_id", where, required=False) or default_agent,
        id=_text(d, "id", where, required=False),
    )


class GraphWriter:
    """Applies batches of facts to one store under one registry and threshold."""

    def __init__(self, store: Store, registry: RelationRegistry, theta: float,
                 resolver: Resolver | None = None) -> None:
        self.store = store
        self.registry = registry
        self.theta = theta
        self.resolver: Resolver = resolver or ExactResolver(store)

    def key(self, f: Fact) -> tuple[str, str, str]:
        return self.registry.key(f.subject_id or f.subject, f.relation, f.object_id or f.object)

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
        report = UpdateReport()
        if not facts:
            return report
        with self.store.transaction(user_id):
            # "now" (the default valid_from and the recorded time) is read under the user's
            # write lock, so racing writers' defaults follow the order they are applied in
            now = utcnow()
            inputs = [f if isinstance(f, FactInput) else
                      validate_fact(f, self.registry, index=i, now=now, default_origin=default_origin,
                                    default_session=session_id, default_agent=agent_id)
                      for i, f in enumerate(facts)]
            ents = self.resolver.resolve_many(
                user_id, [(f.subject, f.subject_type) for f in inputs] +
                [(f.object, f.object_type) for f in inputs])
            relations = {f.relation for f in inputs}
            relations |= {inv for r in relations if (inv := self.registry.spec(r).inverse)}
            ids = list({ents[f.subject].id for f in inputs} | {ents[f.object].id for f in inputs})
            pool = {f.id: f for f in self.store.facts(user_id, touching=ids, relations=sorted(relations))}
            by_entity: dict[str, set[str]] = defaultdict(set)
            for f in pool.values():
                by_entity[f.subject_id].add(f.id)  # type: ignore[index]
                by_entity[f.object_id].add(f.id)  # type: ignore[index]
            inserted: dict[str, Fact] = {}
            changed: dict[str, Fact] = {}
            closed: dict[str, Fact] = {}
            reinforced: dict[str, Fact] = {}
            key = self._cached_key()
            for i, fi in enumerate(inputs):
                s, o = ents[fi.subject], ents[fi.object]
                new = Fact(
                    id=fi.id or new_id(), user_id=user_id, subject=s.name, relation=fi.relation,
                    object=o.name, valid_from=fi.valid_from, valid_to=fi.valid_to,
                    confidence=fi.confidence, intent=fi.intent, origin=fi.origin,
                    recorded_at=now + timedelta(microseconds=i),  # strictly ordered within a batch
                    source_ids=fi.source_ids, session_id=fi.session_id, text=fi.text,
                    agent_id=fi.agent_id, subject_id=s.id, object_id=o.id,
                )
                if new.id in pool:
                    raise ValidationError(f"facts[{i}].id", new.id, "a fact with this id already exists")
                spec = self.registry.spec(new.relation)
                family = {spec.name, spec.inverse}
                near = [pool[x] for x in by_entity[s.id] | by_entity[o.id] if pool[x].relation in family]
                plan = plan_update(new, near, spec, key, self.theta)
                for f in plan.changed:
                    pool[f.id] = f
                    (inserted if f.id in inserted else changed)[f.id] = f
                for f in plan.closed:
                    closed[f.id] = f
                if plan.reinforced is not None:
                    reinforced[plan.reinforced.id] = plan.reinforced
                if plan.insert is not None:
                    ins = plan.insert
                    pool[ins.id] = inserted[ins.id] = ins
                    by_entity[s.id].add(ins.id)
                    by_entity[o.id].add(ins.id)
            self.store.insert_facts(user_id, list(inserted.values()))
            self.store.update_facts(user_id, [f for k, f in changed.items() if k not in inserted])
        final = lambda d: [pool[k] for k in d]  # noqa: E731 - report the final state of each fact
        report.added = final(inserted)
        report.closed = [f for f in final(closed) if f.id not in inserted or f.valid_to is not None]
        report.reinforced = final(reinforced)
        return report

    def rebuild(self, user_id: str, facts: Sequence[Fact]) -> list[Fact]:
        """Recompute closures of the slots these facts belong to (after forgetting)."""
        from .temporal import rebuild_slot

        changed: list[Fact] = []
        groups: dict[tuple[str, str], list[Fact]] = defaultdict(list)
        for f in facts:
            groups[(f.subject_id or f.subject, self.registry.spec(f.relation).name)].append(f)
        for (_, rel), members in groups.items():
            spec = self.registry.spec(rel)
            ids = list({m.subject_id for m in members} | {m.object_id for m in members})
            slot = self.store.facts(user_id, touching=ids, relations=[rel])  # type: ignore[arg-type]
            changed.extend(rebuild_slot(slot, spec, self.key, self.theta))
        if changed:
            self.store.update_facts(user_id, changed)
        return changed

