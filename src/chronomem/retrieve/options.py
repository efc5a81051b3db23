"""The read path's configuration: user options and the engine's full knob set.

:class:`SearchOptions` holds the few things an application tunes on
``Memory.search`` / ``Memory.answer`` (context size, quoted turns, embeddings,
model assistance); every field left ``None`` keeps the method's default.
:class:`SearchConfig` is every knob of the engine — caps, thresholds, scoring
weights, counterfactual rules and the ablation switches (``use_validity``,
``use_confidence``, ``use_intents``, ``include_unstable``) the benchmark
harness compares; :meth:`SearchOptions.apply` turns options into one.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field, fields, replace
from typing import Any

from ..errors import ValidationError
from . import counterfactual as cf
from .scoring import Weights

__all__ = ["ABLATION_FLAGS", "SearchConfig", "SearchOptions"]

#: The switches that turn parts of REAL off, for ablations only (the methods BENCHMARKS.md compares).
ABLATION_FLAGS = ("use_validity", "include_unstable", "use_confidence", "use_intents", "counterfactual")


@dataclass(frozen=True)
class SearchConfig:
    """Every knob of the REAL read path: the engine's configuration, for tuning and ablations.

    Defaults are what ``Memory.search`` uses (``Memory.answer`` starts from
    :data:`chronomem.retrieve.search.ANSWER_CONFIG`).  An application normally
    sets a few :class:`SearchOptions` instead; the scoring weights, decision
    thresholds, counterfactual rules and the ablation switches below exist for
    the benchmark harness and experiments.

    Caps
        ``max_depth`` (3) hops from a root; ``beam_width`` (8) paths kept by
        global pruning after each iteration; ``expand_per_beam`` (4) children
        one beam may keep (versions of one relation count once in history
        mode); ``max_neighbours`` (300) stored facts read per entity;
        ``max_roots`` (4) root entities.
    Decisions
        ``stop_threshold`` (0.75): ``S_AS`` at which a path is sufficient and
        stops; ``lc_min`` (0.35): a best child below this consistency means
        expansion failed (→ counterfactual).
    Scoring
        ``weights`` (0.4 S_QR, 0.2 S_LC, 0.4 S_AS); ``alpha`` (0.5): embedding
        share of ``S_QR`` when an embedder is available (lexical only otherwise).
    Counterfactuals
        ``counterfactual`` (on), ``rules`` (all five), ``rule_decay``
        (confidence multiplier per rule), ``chain_hops`` (3) is_a/located_in links.
    Models
        ``embeddings``: ``None`` uses the memory's embedder when it loads (lexical
        fallback otherwise), ``False`` never; ``evaluator`` (off): the LLM
        refines ``S_AS`` for candidates whose cheap ``S_AS`` lies in
        ``evaluator_band`` (0.25–0.75), at most ``evaluator_per_iteration`` (2)
        per iteration; ``intent_llm`` (off): the LLM classifies intents when the
        rules are unsure; ``max_llm_calls`` (4) and ``max_llm_tokens`` (3000)
        cap both per query.
    Ablations (the methods BENCHMARKS.md compares)
        ``use_validity`` (intervals), ``include_unstable`` (no confidence
        stratification: hedged facts are searched too), ``use_confidence`` (path
        scores ignore fact confidence), ``use_intents`` (no decoupling: one FACT
        sub-search).
    Output
        ``context_tokens`` (1200): serialisation budget; ``anchor_similarity``
        (0.7) for embedding anchors; ``lexical_seeds`` (10) facts for full-text anchoring;
        ``min_relevance`` (0.0): paths whose ``S_QR`` is not above it are dropped
        from the result (a path must touch the question somewhere);
        ``context_min_ratio`` (0.5): only paths scoring at least this share of the
        best path's score go into the context (weak paths are noise to a small model);
        ``quote_sources`` (0): after the evidence, quote up to this many of the
        verbatim turns its facts were extracted from (dated, with the speaker), best
        facts first, inside the same ``context_tokens`` budget — the graph finds
        the turns, the turns keep what extraction dropped; ``search_turns`` (0):
        then add up to this many other turns (said by ``as_of``) that full-text
        search over the user's messages finds for the question — the fallback for
        what extraction missed altogether (the context may then hold turns only);
        ``fallback_turns`` (0): when no path clears ``min_relevance`` (or no root
        entity is found), the context is this many full-text hits instead of
        ``search_turns`` — the graph holds nothing about the question, so its
        weak paths would only mislead the answer model (0: ``search_turns``);
        ``turn_replies`` (off): each full-text hit is followed by the next turn of
        its session, its reply, inside the same count of turns — in a conversation
        the answer to a question is often the turn after the one that shares the
        question's words;
        ``fused_turns`` (0: off): the fused read path (:mod:`.fusion`) — instead of
        ``quote_sources`` and ``search_turns``, up to this many turns ranked by
        reciprocal rank fusion of the graph evidence's source turns, full-text hits
        over the turns and full-text hits over the facts (their cited turns); the
        graph evidence keeps ``fused_graph_tokens`` (400) of ``context_tokens`` and
        the turns get the rest; ``fused_weights`` (0.5, 1.0, 0.5) weigh the three
        rankings (graph sources, turn hits, fact hits).  "When" questions get the
        dated graph evidence first, other questions the turns first;
        ``turn_questions`` (off): with ``fused_turns``, a turn that replies to a
        question (the turn before it in its session, said by someone else, asks
        something) is shown with that question, the two charged together to the
        budget — "Femke! In February." says nothing without "Who were you engaged
        to?";
        ``date_quotes`` (off; on in ``answer()``'s ``ANSWER_CONFIG``): for a question that asks
        for a date ("when …", "in what year …": :func:`chronomem.retrieve.intents.asks_for_a_date`),
        each quoted turn's relative time words carry the date they stand for, resolved against the
        time the turn was said ("we got married in May last year [May 2016]";
        :func:`chronomem.timewords.dated_text`) — a small model otherwise answers with the date the
        turn was said.  Other questions' quotes stay verbatim: dated, they lost single-hop answers on
        LoCoMo's tuning samples (BENCHMARKS.md);
        ``fused_turns_first`` (off): with ``fused_turns``, a question that turns
        neither on time nor on a changing state (not "when", no time window or
        change, no single-valued relation such as lives_in:
        :func:`chronomem.retrieve.intents.asks_time_or_state`) gets the turns in
        the whole budget first, and the graph evidence only the room they leave
        (all of it in a memory without turns).  On LoCoMo's tuning questions it is
        level with the default (47.7 against 47.0 official F1, 21 wins, 18 losses;
        BENCHMARKS.md "The graph's share of the answer context"), so it stays off;
        ``expand_query`` (off): with ``fused_turns``, the LLM first writes one
        sentence that could answer the question in the chat's own words (a guessed
        reply, as in HyDE), and the turn hits are the rank fusion of the full-text
        hits for the question and for that sentence — the question's words are
        often not the reply's ("activities with her family" / "we went camping").
        One call of ``max_llm_calls``; skipped (the question alone) without a model
        or budget.  With the local 1.5B model it is level on LoCoMo's tuning questions
        (evidence recall@10 0.700 against 0.705, BENCHMARKS.md), so it stays off;
        ``state_facts`` (4): when a question names someone and asks
        about a state the graph types ("where does Lena work now?", "who is Felix's sister?"),
        ``answer()`` puts up to this many of the typed facts that answer it — that relation, that
        entity on either side, valid at the asked time — before the evidence
        (:func:`chronomem.retrieve.lookup.state_facts`); ``search()`` itself ignores it.
        ``organisation_hint`` (on): a "where" question about a relation whose objects are
        organisations ("where did Nikos work in 2015?") reaches the answer model with
        "Name the employer …, not the town it is in." (:func:`chronomem.retrieve.answer.organisation_hint`);
        off, as asked (the ablation).
        ``past_versions`` (on): a question in the past tense with no time of its own ("Where did Maya
        live?", :func:`chronomem.retrieve.lookup.asks_the_past`) that finds no path valid at ``as_of``
        searches the versions that ended by then, as a history question does — else everything that
        ended reads as nothing known.
    """

    max_depth: int = 3
    beam_width: int = 8
    expand_per_beam: int = 4
    max_neighbours: int = 300
    max_roots: int = 4
    stop_threshold: float = 0.75
    lc_min: float = 0.35
    weights: Weights = Weights()
    alpha: float = 0.5
    counterfactual: bool = True
    rules: frozenset[str] = cf.ALL_RULES
    rule_decay: Mapping[str, float] = field(default_factory=lambda: dict(cf.DEFAULT_DECAY))
    chain_hops: int = 3
    embeddings: bool | None = None
    evaluator: bool = False
    evaluator_band: tuple[float, float] = (0.25, 0.75)
    evaluator_per_iteration: int = 2
    intent_llm: bool = False
    max_llm_calls: int = 4
    max_llm_tokens: int = 3000
    min_intent_compat: float = 0.5
    use_validity: bool = True
    include_unstable: bool = False
    use_confidence: bool = True
    use_intents: bool = True
    context_tokens: int = 1200
    anchor_similarity: float = 0.7
    lexical_seeds: int = 10
    min_relevance: float = 0.0
    context_min_ratio: float = 0.5
    quote_sources: int = 0
    search_turns: int = 0
    fallback_turns: int = 0
    turn_replies: bool = False
    fused_turns: int = 0
    fused_graph_tokens: int = 400
    fused_weights: tuple[float, float, float] = (0.5, 1.0, 0.5)
    fused_turns_first: bool = False
    turn_questions: bool = False
    date_quotes: bool = False
    expand_query: bool = False
    state_facts: int = 4
    organisation_hint: bool = True
    past_versions: bool = True

    def __post_init__(self) -> None:
        for name in ("max_depth", "beam_width", "expand_per_beam", "max_neighbours", "max_roots",
                     "chain_hops", "context_tokens"):
            v = getattr(self, name)
            if not _is_int(v) or v < 1:
                raise ValidationError(f"config.{name}", v, "must be a positive integer")
        for name in ("max_llm_calls", "max_llm_tokens", "evaluator_per_iteration", "lexical_seeds",
                     "quote_sources", "search_turns", "fallback_turns", "fused_turns", "fused_graph_tokens",
                     "state_facts"):
            v = getattr(self, name)
            if not _is_int(v) or v < 0:
                raise ValidationError(f"config.{name}", v, "must be a non-negative integer")
        for name in ("stop_threshold", "lc_min", "alpha", "min_intent_compat", "anchor_similarity",
                     "min_relevance", "context_min_ratio"):
            v = getattr(self, name)
            if not _is_number(v) or not 0.0 <= v <= 1.0:
                raise ValidationError(f"config.{name}", v, "must be in [0, 1]")
        w = self.fused_weights
        if not isinstance(w, tuple) or len(w) != 3 or not all(_is_number(x) and x >= 0 for x in w):
            raise ValidationError("config.fused_weights", w, "must be three non-negative numbers "
                                  "(graph sources, turn hits, fact hits)")
        band = self.evaluator_band
        if (not isinstance(band, tuple) or len(band) != 2 or not all(_is_number(x) and 0.0 <= x <= 1.0 for x in band)
                or band[0] > band[1]):
            raise ValidationError("config.evaluator_band", band, "must be (low, high) with 0 <= low <= high <= 1")
        weights = self.weights
        if not isinstance(weights, Weights) or not all(
                _is_number(x) and x >= 0 for x in (weights.qr, weights.lc, weights.as_)):
            raise ValidationError("config.weights", weights, "must be a Weights of non-negative numbers")
        # A truthy non-bool ("no", 1) would silently turn a switch on: the read path tests them by truth.
        for name in ("counterfactual", "evaluator", "intent_llm", "use_validity", "include_unstable",
                     "use_confidence", "use_intents", "turn_replies", "expand_query", "fused_turns_first",
                     "turn_questions", "date_quotes", "organisation_hint", "past_versions"):
            if not isinstance(getattr(self, name), bool):
                raise ValidationError(f"config.{name}", getattr(self, name), "must be True or False")
        if self.embeddings is not None and not isinstance(self.embeddings, bool):  # checked with `is False`
            raise ValidationError("config.embeddings", self.embeddings, "must be True, False or None")
        if not isinstance(self.rules, AbstractSet) or not all(isinstance(r, str) for r in self.rules):
            raise ValidationError("config.rules", self.rules, "must be a set of rule names")
        unknown = set(self.rules) - cf.ALL_RULES
        if unknown:
            raise ValidationError("config.rules", sorted(unknown), f"unknown rules; known: {sorted(cf.ALL_RULES)}")
        decay = self.rule_decay
        if not isinstance(decay, Mapping) or not all(
                k in cf.ALL_RULES and _is_number(v) and 0.0 <= v <= 1.0 for k, v in decay.items()):
            # a derived fact is never surer than its supports, so a decay above 1 is a mistake
            raise ValidationError("config.rule_decay", decay,
                                  f"must map rule names ({sorted(cf.ALL_RULES)}) to numbers in [0, 1]")


def _is_int(v: object) -> bool:
    """An int that is not a bool (``True`` is an int to Python, never a count to a caller)."""
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: object) -> bool:
    """A finite int or float that is not a bool (NaN would slip past every range comparison)."""
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


@dataclass(frozen=True, slots=True)
class SearchOptions:
    """What an application tunes on ``Memory.search`` / ``Memory.answer``; ``None`` keeps the default.

    ``context_tokens``: the evidence budget in tokens; ``turns``: verbatim turns
    ranked by the fused read path (``SearchConfig.fused_turns``; 0 turns it off);
    ``quote_sources``: verbatim source turns quoted after the facts and
    ``search_turns``: further turns found by full-text search — the layout without
    fusion, so setting either (and not ``turns``) turns the fused path off;
    ``state_facts``: typed facts that answer a state question outright, put first in
    ``answer()``'s context (0 turns it off);
    ``embeddings``: ``False`` scores relevance lexically even
    when an embedder is configured; ``llm_assist``: let the chat model classify
    unclear questions and judge uncertain paths (``max_llm_calls`` per query).
    """

    context_tokens: int | None = None
    turns: int | None = None
    quote_sources: int | None = None
    search_turns: int | None = None
    state_facts: int | None = None
    embeddings: bool | None = None
    llm_assist: bool | None = None
    max_llm_calls: int | None = None
    max_depth: int | None = None

    def __post_init__(self) -> None:
        # Types only: ranges are SearchConfig's to judge (its error names the config field).  A
        # truthy "no" would turn model assistance on, and True would pass as the number 1.
        for f in fields(self):
            v = getattr(self, f.name)
            if f.name in ("embeddings", "llm_assist"):
                if v is not None and not isinstance(v, bool):
                    raise ValidationError(f"options.{f.name}", v, "must be True, False or None")
            elif v is not None and not _is_int(v):
                raise ValidationError(f"options.{f.name}", v, "must be an integer or None")

    def apply(self, base: SearchConfig) -> SearchConfig:
        """``base`` with the options that are set (validated by :class:`SearchConfig`)."""
        changes: dict[str, Any] = {f.name: getattr(self, f.name) for f in fields(self)
                                   if f.name not in ("llm_assist", "turns") and getattr(self, f.name) is not None}
        if self.llm_assist is not None:
            changes.update(evaluator=self.llm_assist, intent_llm=self.llm_assist)
        if self.turns is not None:
            changes["fused_turns"] = self.turns
        elif self.quote_sources is not None or self.search_turns is not None:
            changes["fused_turns"] = 0  # the unfused layout the caller is tuning
        return replace(base, **changes) if changes else base
