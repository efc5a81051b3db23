"""The REAL read path end to end: ``search``.

>>> from chronomem import Memory
>>> from chronomem.retrieve import SearchConfig
>>> mem = Memory(":memory:", embedder=False)
>>> _ = mem.add_facts([{"subject": "Rui", "relation": "sibling_of", "object": "Maya"},
...                    {"subject": "Rui", "relation": "lives_in", "object": "Braga"}], user_id="u1")
>>> res = mem.search("Where does Maya's brother live?", user_id="u1")
>>> res.paths[0].answer
'Braga'

Steps (REAL's read path): anchor the roots (:mod:`.anchoring`), decouple
intents (:mod:`.intents`), run one beam search per intent (:mod:`.beam`, with
counterfactual rules from :mod:`.counterfactual`), merge and rank the paths,
and serialise them under a token budget (:mod:`.serialize`).  Answering on
that evidence (with the Rsum summary) is :mod:`chronomem.answering`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..errors import ChronomemError, ValidationError
from ..limits import MAX_QUERY_CHARS
from ..model import Fact, Intent, Message
from ..prompts import load_template
from ..providers.base import Embedder
from ..timeutil import iso, parse_time, utcnow
from ..validation import check_name
from . import anchoring
from .beam import Budget, BeamSearch, Path, Relevance, SearchConfig, SubSearch
from .intents import (QueryAnalysis, analyze, asks_for_a_date, asks_time_or_state, intents_messages, parse_intents,
                      INTENT_SCHEMA)
from .fusion import asks, pick_groups_within_budget, reciprocal_rank_fusion
from .lookup import asks_the_past
from .serialize import QUOTES_HEADER, SEARCH_HEADER, Context, append_quotes, approx_tokens, quote_line, serialize

if TYPE_CHECKING:
    from ..providers.modelset import ModelSource
    from ..registry import RelationRegistry
    from ..store.base import Store

log = logging.getLogger(__name__)



@dataclass
class Trace:
    """What the search did: roots, intents, each iteration's beams and decisions, pruning, budget."""

    query: str
    user_id: str
    as_of: str | None
    roots: list[dict[str, Any]] = field(default_factory=list)
    analysis: dict[str, Any] = field(default_factory=dict)
    sub_searches: list[dict[str, Any]] = field(default_factory=list)
    iterations: list[dict[str, Any]] = field(default_factory=list)
    budget: dict[str, int] = field(default_factory=dict)
    stats: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    timings_ms: dict[str, float] = field(default_factory=dict)

    @property
    def intents(self) -> list[str]:
        return list(self.analysis.get("intents", []))

    def as_dict(self) -> dict[str, Any]:
        return {"query": self.query, "user_id": self.user_id, "as_of": self.as_of, "roots": self.roots,
                "analysis": self.analysis, "sub_searches": self.sub_searches,
                "iterations": self.iterations, "budget": self.budget, "stats": self.stats,
                "notes": self.notes, "timings_ms": self.timings_ms}


@dataclass
class SearchResult:
    """Ranked facts (derived ones have ``origin == "derived"``), the chosen paths, the context, the trace."""

    facts: list[Fact]
    paths: list[Path]
    context: str
    trace: Trace
    context_tokens: int = 0
    context_fact_ids: list[str] = field(default_factory=list)
    quoted_ids: list[str] = field(default_factory=list)  # turns quoted in the context (sources, then search)

    @property
    def empty(self) -> bool:
        return not self.facts


def check_query(query: Any, field_name: str = "query") -> str:
    if not isinstance(query, str) or not query.strip():
        raise ValidationError(field_name, query, "must be a non-empty string")
    if len(query) > MAX_QUERY_CHARS:
        raise ValidationError(field_name, f"{query[:40]}…", f"is longer than {MAX_QUERY_CHARS} characters")
    return query.strip()


def _check_top_k(top_k: Any) -> int:
    if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= 200:
        raise ValidationError("top_k", top_k, "must be an integer between 1 and 200")
    return top_k


def _resolve_embedder(models: ModelSource, cfg: SearchConfig, notes: list[str]) -> Embedder | None:
    if cfg.embeddings is False:
        notes.append("embeddings off (config.embeddings=False): S_QR is lexical only")
        return None
    if not models.embeddings_enabled:  # Memory(embedder=False) or the spec "none"
        notes.append("embeddings turned off for this memory: S_QR is lexical only")
        return None
    try:
        return models.embedder
    except (ChronomemError, ImportError, OSError) as e:
        notes.append(f"embedder unavailable ({e.__class__.__name__}: {e}); S_QR is lexical only")
        return None


def _classify_with_llm(models: ModelSource, analysis: QueryAnalysis, budget: Budget, notes: list[str]) -> None:
    try:
        llm = models.llm
    except (ChronomemError, ImportError, OSError) as e:
        notes.append(f"intent LLM unavailable ({e.__class__.__name__}); kept rule intents")
        return
    msgs = intents_messages(analysis.text)
    est = sum(len(m["content"]) for m in msgs) // 4 + 30
    if not budget.allows(est):
        notes.append("intent LLM skipped: budget")
        return
    try:
        r = llm.chat(msgs, schema=INTENT_SCHEMA, max_tokens=30, purpose="intents")
    except ChronomemError as e:
        budget.spend(est, 0)
        notes.append(f"intent LLM failed ({e.__class__.__name__}); kept rule intents")
        return
    budget.spend(r.usage.prompt_tokens or est, r.usage.completion_tokens)
    found = parse_intents(r.data)
    if found:
        analysis.intents = found
        analysis.source = "llm"


EXPAND_PROMPT_VERSION = "expand_v1"
#: The guessed reply is one sentence: a few dozen tokens, cut at the first line break.
EXPAND_MAX_TOKENS = 48


def expand_messages(query: str) -> list[dict[str, str]]:
    """The messages that ask the model for a reply to ``query`` in the chat's own words (``expand_v1``)."""
    t = load_template("chronomem.retrieve", EXPAND_PROMPT_VERSION)
    return [{"role": "system", "content": t.system}, {"role": "user", "content": t.user.format(question=query)}]


def _guess_reply(models: ModelSource, query: str, budget: Budget, notes: list[str]) -> str:
    """One sentence that could answer ``query`` in the chat (``SearchConfig.expand_query``); "" when
    there is no model, no budget or the call fails (the turn search then uses the question alone)."""
    try:
        llm = models.llm
    except (ChronomemError, ImportError, OSError) as e:
        notes.append(f"query expansion skipped: no model ({e.__class__.__name__})")
        return ""
    msgs = expand_messages(query)
    est = sum(len(m["content"]) for m in msgs) // 4 + EXPAND_MAX_TOKENS
    if not budget.allows(est):
        notes.append("query expansion skipped: budget")
        return ""
    try:
        r = llm.chat(msgs, max_tokens=EXPAND_MAX_TOKENS, temperature=0.0, stop=["\n"], purpose="expand")
    except ChronomemError as e:
        budget.spend(est, 0)
        notes.append(f"query expansion failed ({e.__class__.__name__}); the question alone")
        return ""
    budget.spend(r.usage.prompt_tokens or est, r.usage.completion_tokens)
    lines = r.text.strip().splitlines()  # one sentence: a provider that ignores ``stop`` may write on
    guess = " ".join(lines[0].split())[:400] if lines else ""
    if guess:
        notes.append(f"query expansion: {guess}")
    return guess


def _anchor(store: Store, user_id: str, query: str, analysis: QueryAnalysis, cfg: SearchConfig,
            speaker: str | None, embedder: Embedder | None, stats: dict[str, int],
            notes: list[str]) -> list[anchoring.Anchor]:
    roots = anchoring.anchor_by_name(store, user_id, query)
    if analysis.speaker_refs:
        if speaker:
            a = anchoring.anchor_speaker(store, user_id, speaker)
            if a is None:
                notes.append(f"speaker {speaker!r} is not an entity of this user")
            elif all(r.entity_id != a.entity_id for r in roots):
                roots.insert(0, a)
        else:
            notes.append("the question says I/me/my but no speaker was given")
    if embedder is not None:
        spans = anchoring.unmatched_spans(query, roots)
        first = query.strip().split()[0] if query.strip() else ""
        if roots:  # only name-like leftovers (capitalised, not the first word)
            spans = [s for s in spans if any(w[:1].isupper() for w in s.split() if w != first)]
        else:
            spans = [s for s in spans if len(s.split()) <= 2]
        if spans:
            try:
                stats["embedded_entities"] = stats.get("embedded_entities", 0) + \
                    anchoring.ensure_entity_vectors(store, user_id, embedder)
                for a in anchoring.anchor_by_embedding(store, user_id, spans, embedder, cfg.anchor_similarity):
                    if all(r.entity_id != a.entity_id for r in roots):
                        roots.append(a)
            except (ChronomemError, ImportError, OSError) as e:
                notes.append(f"embedding anchoring failed ({e.__class__.__name__}: {e})")
    if not roots and cfg.lexical_seeds:
        roots = anchoring.anchor_by_text(store, user_id, query, cfg.lexical_seeds)
        if roots:
            notes.append("no entity named in the question: roots from full-text search over facts")
    return roots[: cfg.max_roots]


def _history_for(intent: Intent, analysis: QueryAnalysis) -> bool:
    if intent in (Intent.EVOLUTION, Intent.CAUSAL):
        return True
    if intent == Intent.TEMPORAL:
        return analysis.window is None
    return analysis.history


def _run_sub_search(beam: BeamSearch, roots: list[anchoring.Anchor], sub: SubSearch, found: dict[tuple[str, ...], Path],
                    trace: Trace) -> None:
    """Run one intent's sub-search; its paths join ``found``, the best score kept for a path found twice."""
    trace.sub_searches.append({"intent": sub.intent.value, "filter": sub.describe()})
    for p in beam.run(roots, sub):
        if p.key not in found or found[p.key].score < p.score:
            found[p.key] = p


def search(store: Store, registry: RelationRegistry, models: ModelSource, query: str, *, user_id: str,
           theta_stable: float, as_of: datetime | str | None = None, top_k: int = 10,
           config: SearchConfig | None = None, speaker: str | None = None,
           user_entity: str | None = None) -> SearchResult:
    """Find the evidence subgraph for ``query`` in ``user_id``'s memory at ``as_of`` (default now).

    Reads ``store`` through the relation ``registry``; ``models`` gives the
    embedder (query relevance, anchoring) and the LLM (intent fallback,
    evaluator), each fetched only when the configuration uses it.  Facts below
    ``theta_stable`` are not followed.

    ``speaker`` (or its alias ``user_entity``) names the entity "I/me/my" refer
    to.  Returns the ranked facts (stored and derived), the best ``top_k``
    paths, their serialised context and the search trace.
    """
    t0 = time.perf_counter()
    query = check_query(query)
    top_k = _check_top_k(top_k)
    cfg = config if config is not None else SearchConfig()
    if not isinstance(cfg, SearchConfig):
        raise ValidationError("config", type(cfg).__name__, "must be a SearchConfig")
    when = utcnow() if as_of is None else parse_time(as_of, "as_of")
    hint = speaker if speaker is not None else user_entity
    if hint is not None and (not isinstance(hint, str) or not hint.strip()):
        raise ValidationError("speaker", hint, "must be a non-empty string (an entity name, alias or id)")
    if hint is not None:
        check_name("speaker", hint)  # no NUL or lone surrogate reaches the store
    trace = Trace(query=query, user_id=user_id, as_of=iso(when))
    stats: dict[str, int] = {}
    budget = Budget(cfg.max_llm_calls, cfg.max_llm_tokens)

    analysis = analyze(query, registry, now=when)
    if not cfg.use_intents:
        analysis.intents = [Intent.FACT]
    elif not analysis.confident and cfg.intent_llm:
        _classify_with_llm(models, analysis, budget, trace.notes)
    trace.analysis = analysis.as_dict()
    if cfg.date_quotes and not asks_for_a_date(analysis):  # the dates serve questions asking one; elsewhere they cost
        cfg = replace(cfg, date_quotes=False)
    elif cfg.date_quotes:
        trace.notes.append("the question asks for a date: quoted turns' time words dated")
    t1 = time.perf_counter()

    embedder = _resolve_embedder(models, cfg, trace.notes)
    relevance: Relevance | None = None
    if embedder is not None:
        try:
            relevance = Relevance(query, analysis, store, user_id, registry, embedder, cfg.alpha, stats)
        except (ChronomemError, ImportError, OSError) as e:
            trace.notes.append(f"embedder failed ({e.__class__.__name__}: {e}); S_QR is lexical only")
            embedder = None
    if relevance is None:
        relevance = Relevance(query, analysis, store, user_id, registry, None, cfg.alpha, stats)
    t2 = time.perf_counter()

    guess = _guess_reply(models, query, budget, trace.notes) if cfg.expand_query and cfg.fused_turns else ""
    roots = _anchor(store, user_id, query, analysis, cfg, hint, embedder, stats, trace.notes)
    trace.roots = [r.as_dict() for r in roots]
    t3 = time.perf_counter()
    if not roots:
        trace.notes.append("no root entity found: the memory has nothing to start from")
        return _turns_only(store, user_id, query, when, cfg, trace, budget, stats, (t0, t1, t2, t3), guess)

    spec = analysis.answer_spec()
    beam = BeamSearch(store=store, registry=registry, user_id=user_id, theta=theta_stable,
                      analysis=analysis, spec=spec, config=cfg, relevance=relevance, budget=budget,
                      llm_factory=lambda: models.llm, trace=trace.iterations, stats=stats)
    found: dict[tuple[str, ...], Path] = {}
    subs = [SubSearch(intent, when, history=_history_for(intent, analysis) and cfg.use_validity,
                      window=analysis.window if cfg.use_validity else None) for intent in analysis.intents]
    for sub in subs:
        _run_sub_search(beam, roots, sub, found, trace)
    if not found and cfg.past_versions and cfg.use_validity and asks_the_past(query) and not any(
            sub.history or sub.window is not None for sub in subs):
        trace.notes.append("nothing found valid now and the question asks the past: the versions that ended searched")
        for sub in subs:
            _run_sub_search(beam, roots, replace(sub, history=True), found, trace)
    t4 = time.perf_counter()
    relevant = [p for p in found.values() if p.s_qr > cfg.min_relevance]
    if len(relevant) < len(found):
        trace.notes.append(f"{len(found) - len(relevant)} paths dropped: query relevance <= {cfg.min_relevance}")
    if not relevant:
        trace.notes.append("no path found" if not found else
                           "no path is relevant enough: the graph holds nothing about the question")
        return _turns_only(store, user_id, query, when, cfg, trace, budget, stats, (t0, t1, t2, t3, t4), guess)
    paths = sorted(relevant, key=lambda p: (-p.score, len(p.facts), p.render()))[:top_k]
    facts: dict[str, Fact] = {}
    for p in paths:
        for f in p.facts:
            facts.setdefault(f.id, f)
    floor = paths[0].score * cfg.context_min_ratio if paths else 0.0
    kept = [p for p in paths if p.score >= floor]
    if cfg.fused_turns and cfg.fused_turns_first and not asks_time_or_state(analysis, registry):
        trace.notes.append("neither time nor a changing state asked: the turns first, the graph in the room left")
        ctx, quoted = _turns_then_graph(store, user_id, query, when, cfg, kept, list(facts.values()),
                                        trace.notes, guess)
    else:
        graph_budget = min(cfg.context_tokens, cfg.fused_graph_tokens) if cfg.fused_turns else cfg.context_tokens
        ctx = serialize(kept, as_of=when, budget_tokens=graph_budget)
        if ctx.truncated:
            trace.notes.append(f"context budget {graph_budget} tokens: some paths left out")
        shown = [facts[i] for i in ctx.fact_ids if i in facts]
        if cfg.fused_turns:
            ctx, quoted = _fused_turns(store, user_id, query, when, cfg, ctx, shown, spec.wants_time, trace.notes,
                                       guess)
        else:
            ctx, quoted = _quote_sources(store, user_id, shown, cfg, ctx, trace.notes)
            ctx, quoted = _search_turns(store, user_id, query, when, cfg, ctx, quoted, trace.notes)
    trace.budget, trace.stats = budget.as_dict(), stats
    trace.timings_ms = _ms(t0, t1, t2, t3, t4, time.perf_counter())
    return SearchResult(list(facts.values()), paths, ctx.text, trace, ctx.tokens, ctx.fact_ids, quoted)


def _turns_only(store: Store, user_id: str, query: str, when: datetime, cfg: SearchConfig, trace: Trace,
                budget: Budget, stats: dict[str, int], marks: tuple[float, ...], guess: str = "") -> SearchResult:
    """The result when the graph has no evidence: full-text hits over the turns alone (``fallback_turns``)."""
    turns_cfg = cfg if not cfg.fallback_turns else replace(cfg, search_turns=cfg.fallback_turns)
    if cfg.fused_turns:
        ctx, quoted = _fused_turns(store, user_id, query, when, cfg, Context("", 0, 0), [], False, trace.notes, guess)
    else:
        ctx, quoted = _search_turns(store, user_id, query, when, turns_cfg, Context("", 0, 0), [], trace.notes)
    trace.budget, trace.stats = budget.as_dict(), stats
    t = list(marks) + [time.perf_counter()] * (6 - len(marks))
    trace.timings_ms = _ms(*t)
    return SearchResult([], [], ctx.text, trace, ctx.tokens, [], quoted)


def _turns_in_order(store: Store, user_id: str, ids: list[str]) -> list[Message]:
    """The user's stored turns with these ids, in the order of ``ids`` (missing ones left out)."""
    by_id = {m.id: m for m in store.messages(user_id, ids=ids)} if ids else {}
    return [by_id[i] for i in ids if i in by_id]


def _quote_sources(store: Store, user_id: str, facts: list[Fact], cfg: SearchConfig, ctx: Context,
                   notes: list[str]) -> tuple[Context, list[str]]:
    """Append up to ``cfg.quote_sources`` source turns of the context's ``facts``, best facts first."""
    if not cfg.quote_sources or ctx.empty:
        return ctx, []
    ids = source_turn_ids(store, user_id, facts)[: cfg.quote_sources]
    ctx, quoted = append_quotes(ctx, _turns_in_order(store, user_id, ids), budget_tokens=cfg.context_tokens,
                                dated=cfg.date_quotes)
    if len(quoted) < len(ids):
        notes.append(f"{len(ids) - len(quoted)} source turns not quoted (missing or over budget)")
    return ctx, quoted


def _search_turns(store: Store, user_id: str, query: str, when: datetime, cfg: SearchConfig, ctx: Context,
                  quoted: list[str], notes: list[str]) -> tuple[Context, list[str]]:
    """Append up to ``cfg.search_turns`` full-text hits over the user's turns said by ``when``."""
    if not cfg.search_turns:
        return ctx, quoted
    hits = [i for i, _ in store.search_messages_text(user_id, query, limit=cfg.search_turns + len(quoted))
            if i not in quoted]
    turns = [m for m in _turns_in_order(store, user_id, hits) if m.timestamp <= when][: cfg.search_turns]
    if cfg.turn_replies:
        turns = with_replies(store, user_id, turns, when, set(quoted), cfg.search_turns)
    ctx, added = append_quotes(ctx, turns, budget_tokens=cfg.context_tokens, header=SEARCH_HEADER,
                               dated=cfg.date_quotes)
    if added:
        notes.append(f"{len(added)} turns added by full-text search over the messages")
    return ctx, quoted + added


def _fused_turns(store: Store, user_id: str, query: str, when: datetime, cfg: SearchConfig, ctx: Context,
                 graph_facts: list[Fact], graph_first: bool, notes: list[str],
                 guess: str = "", header: str | None = None) -> tuple[Context, list[str]]:
    """The fused read path (:mod:`.fusion`): up to ``cfg.fused_turns`` turns said by ``when``, ranked by
    reciprocal rank fusion of the graph evidence's source turns, full-text hits over the turns and the
    turns cited by full-text hits over the facts, within what ``cfg.context_tokens`` leaves after the
    graph evidence.  The turns are shown in the order they were said; the ids come back in rank order.
    ``graph_first`` puts the (dated) graph evidence before the turns, else after them.  ``guess``: a
    reply the model guessed (``expand_query``); the turn hits are then the rank fusion of the hits for
    the question and for the guess; ``header`` heads the turns (default: "Source turns:" when the graph
    has sources, else the search header).  ``cfg.turn_questions``: a reply comes with the question it
    answers (its id after the ranked ones)."""
    pool = 4 * cfg.fused_turns
    from_graph = source_turn_ids(store, user_id, graph_facts)
    from_turns = [i for i, _ in store.search_messages_text(user_id, query, limit=pool)]
    if guess:
        for_guess = [i for i, _ in store.search_messages_text(user_id, guess, limit=pool)]
        from_turns = reciprocal_rank_fusion([from_turns, for_guess])
    fact_hits = [i for i, _ in store.search_facts_text(user_id, query, limit=pool)]
    by_id = {f.id: f for f in store.facts(user_id, ids=fact_hits)} if fact_hits else {}
    from_facts = source_turn_ids(store, user_id, [by_id[i] for i in fact_hits if i in by_id])
    ranked = reciprocal_rank_fusion([from_graph, from_turns, from_facts], weights=cfg.fused_weights)
    turns = [m for m in _turns_in_order(store, user_id, ranked[:pool]) if m.timestamp <= when]
    header = header or (QUOTES_HEADER if from_graph else SEARCH_HEADER)
    room = cfg.context_tokens - ctx.tokens - approx_tokens(header)
    groups = _with_questions(store, user_id, turns) if cfg.turn_questions else [[m] for m in turns]
    turn_by_id = {m.id: m for g in groups for m in g}
    costs = {i: approx_tokens(quote_line(m, cfg.date_quotes)) + 1 for i, m in turn_by_id.items()}
    chosen = pick_groups_within_budget([[m.id for m in g] for g in groups], costs, room, cfg.fused_turns)
    picked = [turn_by_id[i] for i in chosen]
    said = sorted(picked, key=lambda m: (m.timestamp, m.session_id, m.seq))
    if graph_first or ctx.empty:
        out, _ = append_quotes(ctx, said, budget_tokens=cfg.context_tokens, header=header, dated=cfg.date_quotes)
    else:  # the turns first, then the graph evidence
        turns_ctx, _ = append_quotes(Context("", 0, 0), said, budget_tokens=cfg.context_tokens, header=header,
                                     dated=cfg.date_quotes)
        out = _turns_then(turns_ctx, ctx)
    if picked:
        notes.append(f"{len(picked)} turns by rank fusion (graph sources {len(from_graph)}, "
                     f"turn hits {len(from_turns)}, fact hits {len(fact_hits)})")
    shown = set(chosen)
    hits = [m.id for m in turns if m.id in shown]  # in rank order; then the questions shown with them
    ranked_shown = set(hits)
    return out, hits + [i for i in chosen if i not in ranked_shown]


def _with_questions(store: Store, user_id: str, turns: Sequence[Message]) -> list[list[Message]]:
    """Each turn, after the question it replies to when the turn before it in its session asks one of
    its speaker (``SearchConfig.turn_questions``)."""
    before = store.previous_messages(user_id, [m.id for m in turns])
    return [[q, m] if (q := before.get(m.id)) is not None and asks(q.text, q.speaker, m.speaker) else [m]
            for m in turns]


def _turns_then_graph(store: Store, user_id: str, query: str, when: datetime, cfg: SearchConfig,
                      paths: list[Path], graph_facts: list[Fact], notes: list[str],
                      guess: str = "") -> tuple[Context, list[str]]:
    """``fused_turns_first``: the fused turns in the whole ``cfg.context_tokens`` first, then the graph
    evidence in the room they leave (all of it when the memory holds no turns, as after ``add_facts``)."""
    turns, quoted = _fused_turns(store, user_id, query, when, cfg, Context("", 0, 0), graph_facts, False, notes,
                                 guess, header=SEARCH_HEADER)
    room = cfg.context_tokens - turns.tokens - (1 if turns.text else 0)
    graph = serialize(paths, as_of=when, budget_tokens=room) if room > 0 else Context("", 0, 0)
    return _turns_then(turns, graph), quoted


def _turns_then(turns: Context, graph: Context) -> Context:
    """One context: the quoted ``turns``, then the ``graph`` evidence (whose paths and facts it reports)."""
    if graph.empty:
        return turns
    text = f"{turns.text}\n{graph.text}" if turns.text else graph.text
    return Context(text=text, tokens=approx_tokens(text), paths=graph.paths, fact_ids=graph.fact_ids,
                   truncated=graph.truncated)


def with_replies(store: Store, user_id: str, hits: Sequence[Message], when: datetime, shown: set[str],
                 limit: int) -> list[Message]:
    """``hits`` in rank order, each followed by its reply (the session's next turn, said by ``when``),
    skipping turns already ``shown`` or listed; at most ``limit`` turns (``SearchConfig.turn_replies``)."""
    replies = store.next_messages(user_id, [m.id for m in hits])
    out: dict[str, Message] = {}
    for m in hits:
        for t in (m, replies.get(m.id)):
            if t is not None and t.id not in shown and t.id not in out and t.timestamp <= when:
                out[t.id] = t
    return list(out.values())[:limit]


def source_turn_ids(store: Store, user_id: str, facts: Sequence[Fact]) -> list[str]:
    """Source turn ids of ``facts`` in order, without repeats; derived facts cite their supports' turns."""
    out: dict[str, None] = {}
    for f in facts:
        sources = list(f.source_ids)
        if not sources and f.support_ids:
            sources = [s for g in store.facts(user_id, ids=list(f.support_ids)) for s in g.source_ids]
        for s in sources:
            out.setdefault(s, None)
    return list(out)


def _ms(t0: float, t1: float, t2: float, t3: float, t4: float, t5: float) -> dict[str, float]:
    return {"analyse": round((t1 - t0) * 1000, 2), "embed_query": round((t2 - t1) * 1000, 2),
            "anchor": round((t3 - t2) * 1000, 2), "beam": round((t4 - t3) * 1000, 2),
            "serialise": round((t5 - t4) * 1000, 2), "total": round((t5 - t0) * 1000, 2)}


#: ``answer()`` runs with the model loaded anyway, so the evaluator and the intent
#: fallback are on, under a small per-query budget.  The context is the fused read path
#: (:mod:`.fusion`): REAL's dated graph evidence in 400 of 840 approximate tokens, then up
#: to 20 verbatim turns ranked by the turn index (each turn indexed with the one before it)
#: — weights (0, 1, 0): with the 1.5B model's facts, ranking turns by the graph's sources or
#: by fact hits lowered the gold turns' recall (BENCHMARKS.md "Fused read path").  On the
#: 3 × 40 tuning sample of LoCoMo conv-26/30/42 (local 1.5B model, same answer prompt):
#: 44.0 official F1 against BM25 top-20's 38.0 (1.16×; 31 wins, 25 losses, sign test
#: p = 0.50) and the unfused ``quote_sources=8, search_turns=5`` layout's 36.4, at BM25
#: top-20's context size (median 1,073 model tokens at 850 approximate tokens against
#: 1,069; 840 keeps it at or under).  Facts loaded with ``add_facts`` have no source
#: turns: their graph evidence stands alone.  A question that asks for a date gets its quoted turns'
#: relative time words dated (``date_quotes``, session 32: on the same tuning samples 46.9 → 49.3,
#: 7 wins, 0 losses, all temporal; on the evolving sets' date questions 7 wins, 4 losses).
ANSWER_CONFIG = SearchConfig(evaluator=True, intent_llm=True, max_llm_calls=3, max_llm_tokens=2000,
                             fused_turns=20, fused_weights=(0.0, 1.0, 0.0), context_tokens=840,
                             date_quotes=True)
