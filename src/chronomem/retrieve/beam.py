"""Evaluator-guided hybrid beam search over the temporal fact graph (REAL retrieval).

One :class:`BeamSearch` runs one sub-search (one intent) from the query's root
entities.  Each iteration:

1. **candidate expansion** — for every active beam, the stored facts touching
   its frontier entity, filtered by temporal validity (at ``as_of``; inside the
   question's time window; or, for EVOLUTION / TEMPORAL / "before" questions,
   every version that started by ``as_of``), ``confidence >= θ_stable`` and
   intent compatibility.  Facts leaving the frontier are walked forward;
   facts pointing at it are walked backward unless their relation is
   symmetric or has an inverse — those are read the other way by the
   counterfactual rules, so the path states them from the walker's side;
2. **path scoring** — ``S_QR``, ``S_LC``, ``S_AS`` (:mod:`.scoring`), with an
   optional LLM evaluator refining ``S_AS`` for uncertain candidates within
   the per-query budget;
3. **per-beam decision** — *stop* when the path is sufficient (``S_AS >=
   stop_threshold``) or no child beats it; *expand* when a child scores
   better; *counterfactual* when expansion failed: no valid neighbour, best
   child's ``S_LC < lc_min``, or no child holds what the question asks for —
   then :func:`.counterfactual.propose` adds derived children;
4. **global pruning** — all children of all beams compete; the best
   ``beam_width`` survive to the next iteration.

Caps: ``max_depth`` hops, ``beam_width`` beams, ``expand_per_beam`` children
per beam, ``max_neighbours`` facts read per entity, ``max_llm_calls`` and
``max_llm_tokens`` per query (shared by the intent classifier, the evaluator).
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Callable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, TypeVar

from ..errors import ChronomemError
from ..model import Fact, FactHead, Intent, Origin
from ..prompts import load_template
from ..providers.base import LLM, Embedder
from ..registry import RelationRegistry
from ..store.base import Store
from ..temporal import overlaps
from ..timeutil import iso
from . import counterfactual as cf
from .anchoring import Anchor
from .options import SearchConfig
from .render import fact_text, fmt_time, render_fact  # noqa: F401 - fact_text, fmt_time: re-exported
from .intents import QueryAnalysis
from .scoring import (
    AnswerSpec,
    answer_sufficiency,
    fact_terms,
    geometric_mean,
    hybrid_relevance,
    lexical_relevance,
    logical_consistency,
    may_share_terms,
    path_score,
    relation_terms,
    term_probes,
    term_set,
)

__all__ = ["BeamSearch", "Budget", "Path", "Relevance", "SearchConfig", "SubSearch", "fact_text", "fmt_time",
           "render_fact"]

log = logging.getLogger(__name__)

FACT_KIND = "fact"
EVALUATOR_PROMPT_VERSION = "evaluate_v1"
EVALUATOR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"sufficient": {"type": "boolean"}, "score": {"type": "number", "minimum": 0, "maximum": 1}},
    "required": ["sufficient", "score"],
}

# How well a fact labelled with intent (column) serves a sub-search of intent (row).
INTENT_COMPAT: Mapping[Intent, Mapping[Intent, float]] = {
    Intent.FACT: {Intent.FACT: 1.0, Intent.TEMPORAL: 0.9, Intent.EVOLUTION: 0.9, Intent.CAUSAL: 0.8,
                  Intent.CONTRAST: 0.8},
    Intent.TEMPORAL: {Intent.TEMPORAL: 1.0, Intent.EVOLUTION: 1.0, Intent.FACT: 0.9, Intent.CAUSAL: 0.7,
                      Intent.CONTRAST: 0.6},
    Intent.EVOLUTION: {Intent.EVOLUTION: 1.0, Intent.TEMPORAL: 0.95, Intent.FACT: 0.9, Intent.CONTRAST: 0.7,
                       Intent.CAUSAL: 0.6},
    Intent.CAUSAL: {Intent.CAUSAL: 1.0, Intent.FACT: 0.8, Intent.TEMPORAL: 0.7, Intent.EVOLUTION: 0.7,
                    Intent.CONTRAST: 0.6},
    Intent.CONTRAST: {Intent.CONTRAST: 1.0, Intent.FACT: 0.85, Intent.EVOLUTION: 0.7, Intent.TEMPORAL: 0.6,
                      Intent.CAUSAL: 0.6},
}


@dataclass
class Budget:
    """LLM calls and tokens one query may spend (shared by every sub-search)."""

    max_calls: int
    max_tokens: int
    calls: int = 0
    tokens: int = 0
    skipped: int = 0  # calls the budget refused

    def allows(self, estimated_tokens: int) -> bool:
        ok = self.calls < self.max_calls and self.tokens + estimated_tokens <= self.max_tokens
        if not ok:
            self.skipped += 1
        return ok

    def spend(self, prompt_tokens: int, completion_tokens: int) -> None:
        self.calls += 1
        self.tokens += prompt_tokens + completion_tokens

    def as_dict(self) -> dict[str, int]:
        return {"llm_calls": self.calls, "llm_tokens": self.tokens, "max_llm_calls": self.max_calls,
                "max_llm_tokens": self.max_tokens, "refused_by_budget": self.skipped}


@dataclass(slots=True)
class Path:
    """A walk from a root entity: facts in walking order and the entities visited."""

    root: Anchor
    intent: Intent
    facts: tuple[Fact, ...] = ()
    nodes: tuple[str, ...] = ()
    names: tuple[str, ...] = ()
    forward: tuple[bool, ...] = ()
    score: float = 0.0
    s_qr: float = 0.0
    s_lc: float = 0.0
    s_as: float = 0.0
    sufficient: bool = False
    evaluated: bool = False  # S_AS refined by the LLM evaluator

    @property
    def frontier(self) -> str:
        return self.nodes[-1]

    @property
    def answer(self) -> str:
        return self.names[-1]

    @property
    def key(self) -> tuple[str, ...]:
        return tuple(f.id for f in self.facts)

    @property
    def derived(self) -> bool:
        return any(f.origin == Origin.DERIVED for f in self.facts)

    def extend(self, f: Fact, forward: bool) -> Path:
        nxt, name = (f.object_id or f.object, f.object) if forward else (f.subject_id or f.subject, f.subject)
        return Path(self.root, self.intent, (*self.facts, f), (*self.nodes, nxt), (*self.names, name),
                    (*self.forward, forward))

    def render(self) -> str:
        if not self.facts:
            return self.root.name
        out = self.names[0]
        for f, fw, name in zip(self.facts, self.forward, self.names[1:]):
            tag = "*" if f.origin == Origin.DERIVED else ""
            out += f" -{f.relation}{tag}-> {name}" if fw else f" <-{f.relation}{tag}- {name}"
        return out

    def as_dict(self) -> dict[str, Any]:
        return {"path": self.render(), "intent": self.intent.value, "score": self.score,
                "s_qr": round(self.s_qr, 4), "s_lc": round(self.s_lc, 4), "s_as": round(self.s_as, 4),
                "sufficient": self.sufficient, "evaluated": self.evaluated,
                "fact_ids": list(self.key)}


@dataclass
class SubSearch:
    """How one intent's sub-search filters facts."""

    intent: Intent
    as_of: datetime
    history: bool = False  # keep closed versions that started by as_of
    window: tuple[datetime | None, datetime | None] | None = None

    def valid(self, f: Fact) -> bool:
        if self.window is not None:
            return not f.superseded and overlaps(f.valid_from, f.valid_to, *self.window) and (
                f.valid_from is None or f.valid_from <= self.as_of)
        if self.history:  # a superseded version held at no instant: not part of any history
            return not f.superseded and (f.valid_from is None or f.valid_from <= self.as_of)
        return f.is_valid_at(self.as_of)

    def describe(self) -> str:
        if self.window is not None:
            return f"overlapping [{iso(self.window[0]) or '-inf'}, {iso(self.window[1]) or 'now'})"
        if self.history:
            return f"every version started by {iso(self.as_of)}"
        return f"valid at {iso(self.as_of)}"


class Relevance:
    """Query relevance ``S_QR`` of facts: lexical always, embeddings when an embedder is given.

    Vectors of the facts a search touches are read from the store in one
    batch per expansion; facts without a vector are embedded on first need
    (stored ones are written back with ``put_vectors``; derived ones only
    cached for this query).
    """

    def __init__(self, query: str, analysis: QueryAnalysis, store: Store, user_id: str,
                 registry: RelationRegistry, embedder: Embedder | None, alpha: float,
                 stats: dict[str, int]) -> None:
        self.q_terms = analysis.terms
        self.store, self.user_id, self.embedder, self.alpha = store, user_id, embedder, alpha
        self.vocab = {name: relation_terms(name, spec.synonyms, spec.description)
                      for name, spec in registry.specs.items()}
        self.stats = stats
        self._terms: dict[str, set[str]] = {}
        self._cos: dict[str, float] = {}
        self._qvec: list[float] | None = None
        if embedder is not None:
            self._qvec = embedder.embed([query])[0]

    def terms_of(self, f: Fact) -> set[str]:
        t = self._terms.get(f.id)
        if t is None:
            t = self._terms[f.id] = fact_terms(f, self.vocab)
        return t

    def prepare(self, facts: Sequence[Fact]) -> None:
        """Embed, in one batch, the facts that still lack a similarity to the query."""
        if self.embedder is None or self._qvec is None:
            return
        todo = list({f.id: f for f in facts if f.id not in self._cos}.values())
        if not todo:
            return
        q = self._qvec
        qn = math.sqrt(sum(x * x for x in q)) or 1.0
        known = self.store.get_vectors(self.user_id, FACT_KIND, [f.id for f in todo if f.origin != Origin.DERIVED],
                                       self.embedder.name)
        for fid, v in known.items():
            vn = math.sqrt(sum(x * x for x in v)) or 1.0
            self._cos[fid] = sum(a * b for a, b in zip(q, v)) / (qn * vn)
        todo = [f for f in todo if f.id not in known]
        if not todo:
            return
        vecs = self.embedder.embed([f.render() for f in todo])
        stored: list[tuple[str, Sequence[float]]] = []
        for f, v in zip(todo, vecs):
            vn = math.sqrt(sum(x * x for x in v)) or 1.0
            self._cos[f.id] = sum(a * b for a, b in zip(q, v)) / (qn * vn)
            if f.origin != Origin.DERIVED:  # a reading from the other side is made per query, never stored
                stored.append((f.id, v))
        if stored:
            with self.store.transaction(self.user_id):  # a fact forgotten while it was embedded gets no vector
                alive = self.store.held_fact_ids(self.user_id, [i for i, _ in stored])
                stored = [(i, v) for i, v in stored if i in alive]
                self.store.put_vectors(self.user_id, FACT_KIND, stored, self.embedder.name)
            self.stats["embedded_facts"] = self.stats.get("embedded_facts", 0) + len(stored)

    def score(self, facts: Sequence[Fact], root_terms: AbstractSet[str]) -> float:
        """Hybrid relevance of a path; lexical coverage is scaled by the path's *focus*.

        Focus is the share of the path's facts that bring a query term other
        than the root's name: a hop that matches nothing ("Maya married_to
        Tiago" on the way to "where does Maya live") dilutes the path.
        """
        covered = set(root_terms)
        wanted = self.q_terms - root_terms
        useful = 0
        for f in facts:
            t = self.terms_of(f)
            covered |= t
            useful += bool(t & wanted)
        lex = lexical_relevance(self.q_terms, covered)
        if facts and wanted:
            lex *= 0.5 + 0.5 * useful / len(facts)
        sem: float | None = None
        if self.embedder is not None and facts:
            sims = [self._cos[f.id] for f in facts if f.id in self._cos]
            sem = sum(sims) / len(sims) if sims else None
        return hybrid_relevance(lex, sem, self.alpha)


_Head = TypeVar("_Head", Fact, FactHead)  # what a hub's cut ranks: whole facts or their heads
_DATE_LIKE = re.compile(r"^\s*(\d{4}(-\d\d){0,2}|\d{1,2} \w+ \d{4}|\w+ \d{1,2},? \d{4})\s*$")


class BeamSearch:
    """One query's search state: shared caches, budget and trace across sub-searches."""

    def __init__(self, *, store: Store, registry: RelationRegistry, user_id: str, theta: float,
                 analysis: QueryAnalysis, spec: AnswerSpec, config: SearchConfig, relevance: Relevance,
                 budget: Budget, llm_factory: Callable[[], LLM | None] | None = None,
                 trace: list[dict[str, Any]] | None = None, stats: dict[str, int] | None = None) -> None:
        self.store, self.registry, self.user_id, self.theta = store, registry, user_id, theta
        self.analysis, self.spec, self.cfg = analysis, spec, config
        self.relevance, self.budget, self.llm_factory = relevance, budget, llm_factory
        self.trace = trace if trace is not None else []
        self.stats = stats if stats is not None else {}
        self._neighbours: dict[str, list[Fact]] = {}
        self._types: dict[str, str | None] = {}
        self._roots: dict[tuple[str, str], tuple[frozenset[str], AnswerSpec]] = {}
        self._date_like: dict[str, bool] = {}  # answer nodes that read as a date
        self._llm: LLM | None = None
        self._llm_failed = False

    # -- graph access ------------------------------------------------------------------------------
    def _min_conf(self) -> float | None:
        return None if self.cfg.include_unstable else self.theta

    def neighbours(self, entity_ids: Sequence[str]) -> None:
        """Load (once per query) the stable stored facts touching each entity; of a hub (more facts than
        ``max_neighbours``) the ones :meth:`_keep_for_question` keeps.  A hub more than twice over is ranked
        on its facts' heads and only the kept facts are read whole (BENCHMARKS.md "A hub over
        `max_neighbours`"): at 3,000 facts a search takes 30 ms instead of 46; just over, reading all whole
        is cheaper."""
        todo = [e for e in dict.fromkeys(entity_ids) if e not in self._neighbours]
        if not todo:
            return
        counts = self.store.count_touching(self.user_id, todo)
        hubs = [e for e in todo if counts.get(e, 0) > 2 * self.cfg.max_neighbours]
        rest = [e for e in todo if counts.get(e, 0) <= 2 * self.cfg.max_neighbours]
        for e in todo:
            self._neighbours[e] = []
        for i in range(0, len(rest), 200):
            chunk = rest[i:i + 200]
            rows = self.store.facts(self.user_id, touching=chunk, min_confidence=self._min_conf())
            self.stats["facts_read"] = self.stats.get("facts_read", 0) + len(rows)
            wanted = set(chunk)
            for f in rows:
                for end in {f.subject_id, f.object_id}:
                    if end in wanted:
                        self._neighbours[end].append(f)
        for e in rest:
            self._neighbours[e] = self._keep_for_question(e, self._neighbours[e])
        for hub in hubs:  # a hub of 20,000 facts: its heads, ranked, then the kept facts whole
            heads = self.store.fact_heads(self.user_id, [hub], min_confidence=self._min_conf())
            self.stats["facts_read"] = self.stats.get("facts_read", 0) + len(heads)
            kept = [h.id for h in self._keep_for_question(hub, heads)]
            whole = {f.id: f for f in self.store.facts(self.user_id, ids=kept)}
            self._neighbours[hub] = [whole[i] for i in kept if i in whole]

    def _keep_for_question(self, entity_id: str, facts: list[_Head]) -> list[_Head]:
        """A hub's facts cut to ``max_neighbours``: first those whose relation or other end carries more of
        the question's words (besides the hub's own name), then the most recent.  The user's own entity is a
        hub after months of talk; cut by recency alone, "where does Maya live" lost her home to three
        hundred likes told since."""
        if len(facts) <= self.cfg.max_neighbours:
            return facts
        own = facts[0].subject if facts[0].subject_id == entity_id else facts[0].object
        wanted = self.relevance.q_terms - term_set(own)
        probes = term_probes(wanted)
        by_relation: dict[str, int] = {}

        def asked(f: _Head) -> int:
            n = by_relation.get(f.relation)
            if n is None:
                vocab = self.relevance.vocab.get(f.relation) or term_set(f.relation.replace("_", " "))
                n = by_relation[f.relation] = len(vocab & wanted)
            other = f.object if f.subject_id == entity_id else f.subject
            return n + (len(term_set(other) & wanted) if may_share_terms(other, probes) else 0)

        ranked = sorted(facts, key=lambda f: (asked(f), f.valid_from is not None, f.valid_from or f.recorded_at),
                        reverse=True)
        return ranked[:self.cfg.max_neighbours]

    def lookup(self, subject_ids: Sequence[str], relations: Sequence[str]) -> list[Fact]:
        if not subject_ids:
            return []
        rows = self.store.facts(self.user_id, subject_ids=list(subject_ids), relations=list(relations),
                                min_confidence=self._min_conf())
        self.stats["facts_read"] = self.stats.get("facts_read", 0) + len(rows)
        return rows

    def entity_types(self, ids: Sequence[str]) -> None:
        todo = [i for i in dict.fromkeys(ids) if i not in self._types]
        if todo:
            self._types.update(self.store.entity_types(self.user_id, todo))
            for i in todo:
                self._types.setdefault(i, None)

    def answer_type(self, p: Path) -> str | None:
        f, fw = p.facts[-1], p.forward[-1]
        node = f.object if fw else f.subject
        date_like = self._date_like.get(node)
        if date_like is None:
            date_like = self._date_like[node] = _DATE_LIKE.match(node) is not None
        if date_like:
            return "time"
        t = self._types.get(p.frontier)
        if t:
            return t
        spec = self.registry.spec(f.relation)
        if fw or spec.symmetric:
            return spec.object_type
        return None

    # -- scoring -------------------------------------------------------------------------------------
    def score(self, paths: Sequence[Path], sub: SubSearch) -> None:
        self.relevance.prepare([f for p in paths for f in p.facts])
        self.entity_types([p.frontier for p in paths if p.facts])
        sv = self._single_valued
        history = sub.history or sub.window is not None
        window = sub.window if self.cfg.use_validity else None
        for p in paths:
            root_terms, spec = self._root_view(p.root)
            p.s_qr = self.relevance.score(p.facts, root_terms)
            p.s_lc = logical_consistency(p.facts, sv, history=history, window=window,
                                         use_confidence=self.cfg.use_confidence)
            p.s_as = answer_sufficiency(
                spec, answer_type=self.answer_type(p), answer_terms=term_set(p.answer),
                path_relations=[f.relation for f in p.facts],
                last_has_time=p.facts[-1].valid_from is not None) if p.facts else 0.0
            compat = _intent_weight(sub.intent, p.facts)
            p.score = path_score(p.s_qr, p.s_lc, p.s_as, self.cfg.weights, compat)
            p.sufficient = p.s_as >= self.cfg.stop_threshold

    def _root_view(self, root: Anchor) -> tuple[frozenset[str], AnswerSpec]:
        """A root's own terms, and the answer spec seen from it (once per root and query)."""
        key = (root.name, root.span)
        view = self._roots.get(key)
        if view is None:
            root_terms = term_set(root.name) | term_set(root.span)
            spec = self.spec
            if spec.yes_no and spec.targets & root_terms:  # "does Maya have a dog" from the root "dog"
                spec = replace(spec, targets=spec.targets - root_terms)
            view = self._roots[key] = (root_terms, spec)
        return view

    def _single_valued(self, relation: str) -> bool:
        return self.registry.spec(relation).single_valued

    # -- the optional LLM evaluator ------------------------------------------------------------------
    def _get_llm(self) -> LLM | None:
        if self._llm is None and not self._llm_failed and self.llm_factory is not None:
            try:
                self._llm = self.llm_factory()
            except (ChronomemError, ImportError, OSError) as e:
                self._llm_failed = True
                self.stats["evaluator_unavailable"] = 1
                log.warning("LLM evaluator unavailable: %s", e)
        return self._llm

    def evaluate(self, paths: Sequence[Path]) -> list[dict[str, Any]]:
        """Refine ``S_AS`` of uncertain candidates with the LLM, within the budget."""
        if not self.cfg.evaluator:
            return []
        lo, hi = self.cfg.evaluator_band
        todo = [p for p in sorted(paths, key=lambda p: -p.score) if p.facts and not p.evaluated
                and lo <= p.s_as < hi][: self.cfg.evaluator_per_iteration]
        notes: list[dict[str, Any]] = []
        for p in todo:
            llm = self._get_llm()
            if llm is None:
                break
            t = load_template("chronomem.retrieve", EVALUATOR_PROMPT_VERSION)
            system, user = t.system, t.user
            evidence = "\n".join(f"- {render_fact(f)}" for f in p.facts)
            msgs = [{"role": "system", "content": system},
                    {"role": "user", "content": user.format(question=self.analysis.text, evidence=evidence)}]
            est = _estimate_tokens(llm, system + user + evidence) + 24
            if not self.budget.allows(est):
                notes.append({"path": p.render(), "evaluator": "skipped: budget"})
                break
            try:
                r = llm.chat(msgs, schema=EVALUATOR_SCHEMA, max_tokens=24, purpose="evaluate")
            except ChronomemError as e:
                self.budget.spend(est, 0)
                notes.append({"path": p.render(), "evaluator": f"failed: {e.__class__.__name__}"})
                continue
            self.budget.spend(r.usage.prompt_tokens or est, r.usage.completion_tokens)
            data = r.data if isinstance(r.data, dict) else {}
            try:
                llm_score = max(0.0, min(1.0, float(data.get("score", 0.0))))
            except (TypeError, ValueError):
                llm_score = 0.0
            if data.get("sufficient") is True:
                llm_score = max(llm_score, 0.8)
            old = p.s_as
            p.s_as = 0.5 * old + 0.5 * llm_score
            p.evaluated = True
            p.score = path_score(p.s_qr, p.s_lc, p.s_as, self.cfg.weights, _intent_weight(p.intent, p.facts))
            p.sufficient = p.s_as >= self.cfg.stop_threshold
            notes.append({"path": p.render(), "evaluator": round(llm_score, 3), "s_as": [round(old, 3),
                                                                                          round(p.s_as, 3)]})
        return notes

    # -- one sub-search ------------------------------------------------------------------------------
    def run(self, roots: Sequence[Anchor], sub: SubSearch) -> list[Path]:
        cfg = self.cfg
        valid = sub.valid if cfg.use_validity else (lambda f: True)
        active = [Path(r, sub.intent, (), (r.entity_id,), (r.name,), ()) for r in roots]
        finished: dict[tuple[str, ...], Path] = {}
        for depth in range(1, cfg.max_depth + 1):
            if not active:
                break
            self.neighbours([b.frontier for b in active])
            it: dict[str, Any] = {"intent": sub.intent.value, "depth": depth, "filter": sub.describe(),
                                  "beams": []}
            pool: list[Path] = []
            for beam in active:
                decision, kept, n_stored, n_derived = self._step(beam, valid, sub)
                it["beams"].append({"path": beam.render(), "score": beam.score, "decision": decision,
                                    "children": n_stored, "derived": n_derived, "kept": len(kept)})
                if decision.startswith("stop"):
                    if beam.facts:
                        finished.setdefault(beam.key, beam)
                else:
                    pool.extend(kept)
            # global pruning
            uniq: dict[tuple[str, ...], Path] = {}
            for p in pool:
                if p.key not in uniq or uniq[p.key].score < p.score:
                    uniq[p.key] = p
            ranked = sorted(uniq.values(), key=lambda p: (-p.score, len(p.facts), p.render()))
            it["evaluator"] = self.evaluate(ranked[: cfg.beam_width * 2])
            ranked.sort(key=lambda p: (-p.score, len(p.facts), p.render()))
            active = ranked[: cfg.beam_width]
            it["pruned"] = len(ranked) - len(active)
            it["kept"] = [p.as_dict() for p in active]
            self.trace.append(it)
        for p in active:  # depth cap reached
            finished.setdefault(p.key, p)
        return sorted(finished.values(), key=lambda p: (-p.score, len(p.facts), p.render()))

    def _step(self, beam: Path, valid: Callable[[Fact], bool], sub: SubSearch) -> tuple[str, list[Path], int, int]:
        """Decide for one beam: stop, expand, or counterfactual; return the kept children."""
        cfg = self.cfg
        if beam.facts and beam.sufficient:
            return "stop (sufficient)", [], 0, 0
        on_path = set(beam.key) | {i for f in beam.facts for i in f.support_ids}
        visited = set(beam.nodes)
        children: list[Path] = []
        for f in self._neighbours.get(beam.frontier, ()):
            if f.id in on_path or not valid(f):
                continue
            if _incompatible(sub.intent, f, cfg.min_intent_compat):
                continue
            if f.subject_id == beam.frontier:
                fw = True
            else:
                spec = self.registry.spec(f.relation)
                if spec.symmetric or spec.inverse:
                    continue  # read from this side by the symmetry / inverse rules
                fw = False
            nxt = f.object_id if fw else f.subject_id
            if nxt in visited:
                continue
            children.append(beam.extend(f, fw))
        self.score(children, sub)
        n_stored = len(children)
        best = max(children, key=lambda p: p.score, default=None)
        failed = (best is None or best.s_lc < cfg.lc_min or not any(c.sufficient for c in children))
        n_derived = 0
        if failed and cfg.counterfactual:
            derived = cf.propose(beam.frontier, self._neighbours.get(beam.frontier, ()), self.lookup,
                                 self.registry, rules=cfg.rules, decay=cfg.rule_decay,
                                 max_hops=cfg.chain_hops, valid=valid)
            extra = [beam.extend(d, True) for d in derived
                     if d.id not in on_path and (d.object_id or d.object) not in visited]
            self.score(extra, sub)
            n_derived = len(extra)
            self.stats["derived"] = self.stats.get("derived", 0) + n_derived
            children.extend(extra)
        better = [c for c in children if c.score > beam.score]
        if not better:
            return ("stop (no valid neighbour)" if not children else "stop (no better child)"), [], n_stored, n_derived
        kept = _select(better, cfg.expand_per_beam, history=sub.history or sub.window is not None)
        used_derived = any(c.facts[-1].origin == Origin.DERIVED for c in kept)
        decision = "counterfactual" if used_derived and n_derived else "expand"
        return decision, kept, n_stored, n_derived


def _select(children: list[Path], k: int, *, history: bool) -> list[Path]:
    """The best ``k`` children; in history mode versions of one relation count as one slot."""
    ranked = sorted(children, key=lambda p: (-p.score, p.render()))
    if not history:
        return ranked[:k]
    slots: dict[tuple[str, bool], list[Path]] = {}
    for c in ranked:
        slots.setdefault((c.facts[-1].relation, c.forward[-1]), []).append(c)
    out: list[Path] = []
    for _slot, members in list(slots.items())[:k]:
        out.extend(members[:8])
    return out


def _intent_weight(intent: Intent, facts: Sequence[Fact]) -> float:
    if not facts:
        return 1.0
    row = INTENT_COMPAT[intent]
    return geometric_mean(tuple(row.get(f.intent, 0.5) for f in facts))  # every weight is at least 0.5


def _incompatible(intent: Intent, f: Fact, minimum: float) -> bool:
    """True when the fact's intent is too far from the sub-search's to be expanded."""
    return INTENT_COMPAT[intent].get(f.intent, 0.5) < minimum


def _estimate_tokens(llm: LLM, text: str) -> int:
    try:
        return int(llm.count_tokens(text))
    except (ChronomemError, AttributeError, NotImplementedError, TypeError):
        return len(text) // 4 + 1
