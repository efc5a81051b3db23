"""Counterfactual inference: logical rules that propose evidence the graph does not state.

When normal expansion fails (no valid neighbour, low consistency, or no child
that holds what the question asks for), the beam search asks these rules for
alternative hypotheses around the beam's frontier entity:

* **symmetry** — ``A sibling_of B`` ⇒ ``B sibling_of A`` (registry ``symmetric``);
* **inverse** — ``A parent_of B`` ⇒ ``B child_of A`` (registry ``inverse``);
* **hyponymy** — ``A r X ∧ X is_a Y (∧ Y is_a Z …)`` ⇒ ``A r Y`` (and ``A r Z``):
  has_pet Sunny ∧ Sunny is_a golden retriever ∧ golden retriever is_a dog ⇒
  has_pet dog; for ``r = is_a`` this is transitivity;
* **containment** — ``A r X ∧ X located_in Y`` ⇒ ``A r Y`` for relations whose
  object is a place (lives_in Kyoto ∧ Kyoto located_in Japan ⇒ lives_in Japan);
* **temporal inheritance** — a state holds until it is closed, so a derived fact
  holds while all its supports hold (the intersection of their intervals); and
  a timeless classification or containment (``is_a``, ``located_in``) learned
  at some time also held before it was mentioned, unless it was ended.

Every derived fact has ``origin = Origin.DERIVED``, ``rule`` (``+``-joined when
rules chain), ``support_ids`` (the stored facts it rests on) and a confidence
below its supports' (product × a per-rule decay).  Derived facts live only in
search results; nothing here writes to a store.  All functions are pure;
:func:`propose` gets stored facts only through the ``lookup`` callable it is
given.
"""

from __future__ import annotations

import hashlib
from dataclasses import replace
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime

from ..model import Fact, Origin
from ..registry import RelationRegistry
from .scoring import common_validity

SYMMETRY = "symmetry"
INVERSE = "inverse"
HYPONYMY = "hyponymy"
CONTAINMENT = "containment"
TEMPORAL_INHERITANCE = "temporal_inheritance"
ALL_RULES: frozenset[str] = frozenset({SYMMETRY, INVERSE, HYPONYMY, CONTAINMENT, TEMPORAL_INHERITANCE})

#: confidence multiplier per rule application (derived facts are never surer than their supports)
DEFAULT_DECAY: Mapping[str, float] = {
    SYMMETRY: 0.95, INVERSE: 0.95, HYPONYMY: 0.9, CONTAINMENT: 0.85, TEMPORAL_INHERITANCE: 0.9,
}

IS_A = "is_a"
LOCATED_IN = "located_in"
#: relations whose truth does not depend on when they were mentioned
TIMELESS = frozenset({IS_A, LOCATED_IN})

Lookup = Callable[[Sequence[str], Sequence[str]], list[Fact]]
"""``lookup(subject_ids, relations)`` → stored stable facts with those subjects and relations."""


def _stored_supports(facts: Iterable[Fact]) -> list[str]:
    out: list[str] = []
    for f in facts:
        ids = f.support_ids if f.origin == Origin.DERIVED else [f.id]
        for i in ids:
            if i not in out:
                out.append(i)
    return out


def derived_id(rule: str, relation: str, subject: str, obj: str, support_ids: Sequence[str]) -> str:
    """A derived fact's id: the same reading of the same stored facts always gets the same one."""
    digest = hashlib.sha1("|".join([rule, relation, subject, obj, *support_ids]).encode()).hexdigest()[:16]
    return f"derived:{digest}"


def derive(supports: Sequence[Fact], rule: str, *, subject: str, subject_id: str | None,
           relation: str, obj: str, object_id: str | None,
           decay: Mapping[str, float] = DEFAULT_DECAY,
           interval: tuple[datetime | None, datetime | None] | None = None) -> Fact | None:
    """A derived fact resting on ``supports``; ``None`` when the supports never hold together.

    Validity is the intersection of the supports' intervals (temporal
    inheritance) unless ``interval`` is given; confidence is the product of
    the supports' confidences times the rule's decay (per rule when chained).
    """
    if any(s.superseded for s in supports):  # it held at no instant, so nothing follows from it
        return None
    if interval is None:
        interval = common_validity(supports)
        if interval is None:
            return None
    conf = 1.0
    for s in supports:
        conf *= s.confidence
    own_rules = [r for r in rule.split("+") if r]
    inherited = [r for s in supports if s.origin == Origin.DERIVED and s.rule for r in s.rule.split("+")]
    for r in own_rules:
        conf *= decay.get(r, 0.9)
    full_rule = "+".join(dict.fromkeys([*inherited, *own_rules]))
    support_ids = _stored_supports(supports)
    first = supports[0]
    return Fact(
        id=derived_id(full_rule, relation, subject_id or subject, object_id or obj, support_ids), user_id=first.user_id, subject=subject, relation=relation, object=obj,
        valid_from=interval[0], valid_to=interval[1], confidence=round(conf, 6), intent=first.intent,
        origin=Origin.DERIVED, recorded_at=max(s.recorded_at for s in supports),
        source_ids=list(dict.fromkeys(i for s in supports for i in s.source_ids)),
        session_id=first.session_id, agent_id=first.agent_id, rule=full_rule,
        support_ids=support_ids, subject_id=subject_id, object_id=object_id,
    )


# -- single rules ----------------------------------------------------------------------------
def symmetric_reverse(f: Fact, registry: RelationRegistry,
                      decay: Mapping[str, float] = DEFAULT_DECAY) -> Fact | None:
    """``A r B`` with symmetric ``r`` ⇒ ``B r A``."""
    if not registry.spec(f.relation).symmetric:
        return None
    return derive([f], SYMMETRY, subject=f.object, subject_id=f.object_id, relation=f.relation,
                  obj=f.subject, object_id=f.subject_id, decay=decay)


def inverse_reverse(f: Fact, registry: RelationRegistry,
                    decay: Mapping[str, float] = DEFAULT_DECAY) -> Fact | None:
    """``A r B`` with ``inverse(r) = s`` ⇒ ``B s A``."""
    inv = registry.spec(f.relation).inverse
    if not inv:
        return None
    return derive([f], INVERSE, subject=f.object, subject_id=f.object_id,
                  relation=registry.canonical(inv), obj=f.subject, object_id=f.subject_id, decay=decay)


def reverse(f: Fact, registry: RelationRegistry, rules: frozenset[str] = ALL_RULES,
            decay: Mapping[str, float] = DEFAULT_DECAY) -> Fact | None:
    """The fact read from its object's side, by symmetry or inverse, when a rule allows it."""
    if SYMMETRY in rules:
        d = symmetric_reverse(f, registry, decay)
        if d is not None:
            return d
    if INVERSE in rules:
        return inverse_reverse(f, registry, decay)
    return None


def other_side(f: Fact, registry: RelationRegistry) -> Fact | None:
    """A stored fact read from its object's side, for listing facts rather than proposing them.

    ``Lena married_to Jonas`` → ``Jonas married_to Lena`` (symmetry), ``Diego parent_of Lucia``
    → ``Lucia child_of Diego`` (inverse); ``None`` for any other relation.  Unlike
    :func:`reverse` the reading is not a hypothesis: it keeps the stored fact's interval,
    confidence and closure (``closed_by``, ``stated_to``), so it holds exactly when the fact does.
    It is marked like every derived fact (``origin`` derived, ``rule``, ``support_ids`` = the
    stored fact; its id is the one :func:`reverse` gives the same reading)."""
    relation = registry.read_from_object(f.relation)
    if relation is None:
        return None
    rule = SYMMETRY if registry.spec(f.relation).symmetric else INVERSE
    return replace(f, id=derived_id(rule, relation, f.object_id or f.object, f.subject_id or f.subject, [f.id]),
                   subject=f.object, subject_id=f.object_id, relation=relation, object=f.subject,
                   object_id=f.subject_id, origin=Origin.DERIVED, rule=rule, support_ids=[f.id])


def chain_up(start: Fact, links: Mapping[str, Sequence[Fact]], rule: str, *, max_hops: int = 3,
             decay: Mapping[str, float] = DEFAULT_DECAY) -> list[Fact]:
    """Follow ``links`` (entity id → its is_a / located_in facts) from ``start``'s object.

    ``A r X`` with ``X → Y → Z`` yields ``A r Y`` and ``A r Z`` (each resting on
    every fact of its chain).  Cycles are cut; at most ``max_hops`` links.
    """
    out: list[Fact] = []
    frontier: list[tuple[list[Fact], str]] = [([start], start.object_id or "")]
    seen = {start.subject_id, start.object_id}
    for _ in range(max_hops):
        nxt: list[tuple[list[Fact], str]] = []
        for chain, node in frontier:
            for link in links.get(node, ()):
                if link.object_id in seen:
                    continue
                seen.add(link.object_id)
                supports = [*chain, link]
                d = derive(supports, rule, subject=start.subject, subject_id=start.subject_id,
                           relation=start.relation, obj=link.object, object_id=link.object_id,
                           decay=decay)
                if d is not None:
                    out.append(d)
                    nxt.append((supports, link.object_id or ""))
        frontier = nxt
        if not frontier:
            break
    return out


def inherit_timeless(f: Fact, decay: Mapping[str, float] = DEFAULT_DECAY) -> Fact | None:
    """A timeless fact (``is_a``, ``located_in``) not ended by its source held before it was mentioned."""
    if f.relation not in TIMELESS or f.stated_to is not None or f.valid_to is not None:
        return None
    if f.valid_from is None:
        return None  # already holds since ever
    return derive([f], TEMPORAL_INHERITANCE, subject=f.subject, subject_id=f.subject_id,
                  relation=f.relation, obj=f.object, object_id=f.object_id, decay=decay,
                  interval=(None, None))


def place_like(relation: str, registry: RelationRegistry) -> bool:
    return (registry.spec(relation).object_type or "") == "place"


# -- the proposal step used by the beam search -----------------------------------------------------
def propose(frontier_id: str, neighbours: Sequence[Fact], lookup: Lookup, registry: RelationRegistry, *,
            rules: frozenset[str] = ALL_RULES, decay: Mapping[str, float] = DEFAULT_DECAY,
            max_hops: int = 3, valid: Callable[[Fact], bool] = lambda f: True) -> list[Fact]:
    """Derived facts leaving ``frontier_id``, from its stored ``neighbours`` and the rules.

    ``neighbours`` are stored stable facts touching the frontier, *before* the
    caller's validity filter (so temporal inheritance can look at the ones it
    dropped); ``valid`` is that filter, applied to every stored support and
    every derived fact.  ``lookup`` fetches is_a / located_in links for
    hyponymy and containment chains.
    """
    out: dict[str, Fact] = {}

    def add(d: Fact | None) -> None:
        if d is not None and d.id not in out and valid(d):
            out[d.id] = d

    base: list[Fact] = []
    for f in neighbours:
        if f.origin == Origin.DERIVED:
            continue
        if valid(f):
            if f.subject_id == frontier_id:
                base.append(f)
            elif f.object_id == frontier_id:
                d = reverse(f, registry, rules, decay)
                if d is not None and valid(d):
                    add(d)
                    base.append(d)
        elif TEMPORAL_INHERITANCE in rules and f.subject_id == frontier_id:
            d = inherit_timeless(f, decay)
            if d is not None and valid(d):
                add(d)
                base.append(d)

    chain_rel: list[str] = []
    if HYPONYMY in rules:
        chain_rel.append(IS_A)
    if CONTAINMENT in rules:
        chain_rel.append(LOCATED_IN)
    if not chain_rel or not base:
        return list(out.values())
    links = _links(lookup, [f.object_id for f in base if f.object_id], chain_rel, max_hops, valid,
                   TEMPORAL_INHERITANCE in rules, decay)
    isa = {k: [x for x in v if x.relation == IS_A] for k, v in links.items()}
    loc = {k: [x for x in v if x.relation == LOCATED_IN] for k, v in links.items()}
    for f in base:
        if HYPONYMY in rules:
            for d in chain_up(f, isa, HYPONYMY, max_hops=max_hops, decay=decay):
                add(d)
        if CONTAINMENT in rules and place_like(f.relation, registry):
            for d in chain_up(f, loc, CONTAINMENT, max_hops=max_hops, decay=decay):
                add(d)
    return list(out.values())


def _links(lookup: Lookup, start_ids: Sequence[str], relations: Sequence[str], max_hops: int,
           valid: Callable[[Fact], bool], inherit: bool,
           decay: Mapping[str, float]) -> dict[str, list[Fact]]:
    """Entity id → its valid is_a / located_in facts, up to ``max_hops`` levels from ``start_ids``."""
    links: dict[str, list[Fact]] = {}
    todo = list(dict.fromkeys(start_ids))
    for _ in range(max_hops):
        todo = [i for i in todo if i not in links]
        if not todo:
            break
        for i in todo:
            links[i] = []
        found = lookup(todo, relations)
        nxt: list[str] = []
        for f in found:
            sid = f.subject_id
            if sid is None or sid not in links:
                continue
            if not valid(f):
                if not inherit:
                    continue
                g = inherit_timeless(f, decay)  # keeps f's subject_id
                if g is None or not valid(g):
                    continue
                f = g
            links[sid].append(f)
            if f.object_id:
                nxt.append(f.object_id)
        todo = nxt
    return links

