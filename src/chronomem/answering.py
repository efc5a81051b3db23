"""Answering a question from memory: REAL graph evidence, the Rsum summary, or both.

:func:`answer` runs the REAL read path (:func:`chronomem.retrieve.search.search`),
adds the user's recursive summary (:mod:`chronomem.summarize.rsum`) as the
method asks, and makes one model call on that context
(:func:`chronomem.retrieve.answer.generate`).  ``Memory.answer`` delegates here.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from .errors import ValidationError
from .retrieve.answer import NOT_MENTIONED, Answer, generate, organisation_hint
from .model import Fact
from .retrieve.beam import SearchConfig
from .retrieve.lookup import asks_the_past, render_state_facts, state_facts, state_relations
from .retrieve.search import ANSWER_CONFIG, Trace, check_query, search
from .retrieve.serialize import undate
from .timeutil import parse_time, utcnow

if TYPE_CHECKING:
    from .providers.modelset import ModelSource
    from .registry import RelationRegistry
    from .store.base import Store
    from .summarize.rsum import RsumMemory

__all__ = ["METHODS", "answer"]

METHODS = ("real", "rsum", "real+rsum")


#: the longest window one point in it stands for: a year (a leap year's 366 days), a season, a month, a day
ONE_POINT = timedelta(days=366)


def _decouple_time(question: str, analysis: dict[str, Any], when: datetime) -> tuple[str, datetime]:
    """Take the question's time window out of its words and into the answer's "as of".

    The search already restricted the evidence to the window ("in 2020"); a small model
    that is asked "where did Maya live in 2020?" looks for "2020" in the evidence and
    says "Not mentioned", while "where did Maya live?" as of mid-2020 it answers.
    ``when`` (the caller's ``as_of``, default now) bounds the new point: a window that
    starts after it ("next year") keeps its words, as nothing recorded by then can hold there.
    So does a window no one point stands for, where more than one value may be the answer: a span of
    years ("between 2010 and 2013", "in the 2010s"), asked as of its end, and a window open towards now
    ("since 2009", "after 2015"), asked as of ``when`` — as of the span's middle or the window's first
    day, the question lost the values held at its other times (session 46).
    """
    text, window = analysis.get("window_text"), analysis.get("window")
    if not text or not window or text not in question:
        return question, when
    start, end = (parse_time(w, "window") if w else None for w in window)
    if start is None and end is None:
        return question, when
    if start is not None and start > when:
        return question, when
    if start is not None and (end is None or end - start > ONE_POINT):
        return question, min(end - timedelta(microseconds=1), when) if end is not None else when
    point: datetime
    if start is not None and end is not None:
        point = end - (end - start) / 2
    else:  # "before 2021": just before the end
        assert end is not None
        point = end - timedelta(days=1)
    point = min(point, when)
    stripped = " ".join(question.replace(text, " ").split()).replace(" ?", "?")
    return stripped, point


def question_window(question: str, analysis: dict[str, Any], when: datetime) -> tuple[datetime | None, datetime] | None:
    """The half-open ``[start, end)`` the question asks about, cut at ``when`` (the caller's ``as_of``: nothing
    after it is known), ``None`` start for "before 2021"; ``None`` when the question has no window of its
    own in its words, or one that starts after ``when`` (it is asked as of ``when``, as without one).  Pure.

    >>> from datetime import timezone
    >>> now = datetime(2026, 1, 1, tzinfo=timezone.utc)
    >>> an = {"window_text": "in 2019", "window": ["2019-01-01T00:00:00+00:00", "2020-01-01T00:00:00+00:00"]}
    >>> [t.date().isoformat() for t in question_window("Where did Maya live in 2019?", an, now)]
    ['2019-01-01', '2020-01-01']
    """
    text, window = analysis.get("window_text"), analysis.get("window")
    if not text or not window or text not in question:
        return None
    start, end = (parse_time(w, "window") if w else None for w in window)
    if start is None and end is None or start is not None and start > when:
        return None
    now = when + timedelta(microseconds=1)  # ``when`` itself is inside
    return start, now if end is None else min(end, now)


#: the least share of a window a fact must hold for to be one of the window's values: the edges of a window
#: read from words are rough ("late 2019" is read as September to December), and so are the days a fact's
#: start or end was resolved to; asked who Linh worked for "in late 2019", the 1.5B model answered with
#: the job that ended on 14 September, listed with the one that began then
EDGE_SHARE = 1 / 8


def window_values(facts: Sequence[Fact], window: tuple[datetime | None, datetime],
                  edge: float = EDGE_SHARE) -> list[Fact]:
    """The ``facts`` (each overlapping ``window``) that hold for at least ``edge`` of it, in their order;
    all of them for a window with no start ("before 2021").  Pure."""
    start, end = window
    if start is None:
        return list(facts)
    least = (end - start) * edge
    return [f for f in facts if min(end, f.valid_to or end) - max(start, f.valid_from or start) >= least]


def holds_throughout(facts: Sequence[Fact], window: tuple[datetime | None, datetime],
                     edge: float = EDGE_SHARE) -> bool:
    """Do ``facts`` (those that hold at some time in ``window``) each hold at every instant of it, so that
    the facts that hold are the same all through the window?  Pure.

    Then one point of the window stands for it: "Where did Maya live in 2019?" asked as of mid-2019 is
    answered by the same facts.  Not when a value starts or ends inside the window (Porto until April
    2019, Lisbon after; Oslo only from September), or with an unknown end inside it.  No facts: true
    (nothing tells the window's times apart).

    A start or end within ``edge`` of the window's length from its edges counts as at the edge (the edges of
    a window read from words are rough, :data:`EDGE_SHARE`).  A superseded fact (valid at no instant) never
    holds throughout.
    """
    start, end = window
    least = timedelta(0) if start is None else (end - start) * edge
    return all((f.valid_from is None or start is not None and f.valid_from <= start + least)
               and (f.valid_to is None or f.valid_to >= end - least) and not f.superseded for f in facts)


def ask_in_window(question: str, analysis: dict[str, Any], when: datetime,
                  held: Sequence[Fact]) -> tuple[str, datetime]:
    """The question as the model is asked it, and its "as of": :func:`_decouple_time`'s one point where
    the state facts ``held`` in the question's window (:func:`question_window`) are the same all through it
    (:func:`holds_throughout`); else the question keeps its words and is asked as of the window's end
    (bounded by ``when``), with every fact of the window before it.  Pure.

    Asked "Did Maya live in Porto?" as of 2 July 2019, with Lisbon (from April 2019) the only fact of that
    instant, the model said no; she lived in Porto until April.  Session 46's gain stays where it is safe:
    a year in which one value held throughout is still asked as of its middle, without the "2019" a small
    model looks for in the evidence and does not find.
    """
    asked, at = _decouple_time(question, analysis, when)
    window = question_window(question, analysis, when)
    if window is None or asked == question or holds_throughout(held, window):
        return asked, at
    return question, window[1] - timedelta(microseconds=1)


#: how the search found a root entity that a state lookup may trust: named in the question (or an
#: alias of it), or the speaker "I" stands for; not a fuzzy embedding or full-text match
_NAMED_ROOTS = frozenset({"name", "alias", "speaker"})


def _state_facts(store: Store, registry: RelationRegistry, trace: Trace, *, user_id: str, as_of: datetime,
                 limit: int | None, min_confidence: float | None, past: bool,
                 window: tuple[datetime | None, datetime] | None = None) -> list[Fact]:
    """The typed facts that answer a state question outright (:func:`chronomem.retrieve.lookup.state_facts`)
    for the entities the question names, at the asked time (``past``: or the last ones that ended by then;
    ``window``: at any time inside it), newest first, at most ``limit`` (``None``: all)."""
    if limit is not None and limit <= 0:
        return []
    relations = state_relations(trace.analysis, registry)
    entity_ids = list(dict.fromkeys(r["entity_id"] for r in trace.roots if r.get("how") in _NAMED_ROOTS))
    return state_facts(store, registry, user_id, entity_ids=entity_ids, relations=relations, as_of=as_of,
                       min_confidence=min_confidence, limit=limit, past=past, window=window)


def answer(store: Store, registry: RelationRegistry, models: ModelSource, question: str, *, user_id: str,
           theta_stable: float, rsum: RsumMemory | None = None, as_of: datetime | str | None = None,
           top_k: int = 10, config: SearchConfig | None = None, method: str = "real+rsum",
           speaker: str | None = None, user_entity: str | None = None, max_tokens: int = 64) -> Answer:
    """Answer ``question`` from ``user_id``'s memory with one LLM call on the evidence.

    The REAL evidence comes from :func:`chronomem.retrieve.search.search` over
    ``store``/``registry`` with ``models``; ``rsum`` (needed unless ``method``
    is ``"real"``) gives the recursive summary and its reply prompt.

    ``method``: ``"real"`` (REAL search, then the answer on the serialised
    evidence), ``"rsum"`` (the recursive summary valid at ``as_of``, with the
    paper's extract-then-use reply prompt) or ``"real+rsum"`` (REAL evidence
    and the summary together; the same as ``"real"`` while no session has
    ended).  Says ``"Not mentioned"`` without calling the model when there is
    no evidence.  ``usage`` counts every model call of the query.
    """
    if method not in METHODS:
        raise ValidationError("method", method, f"unknown answer method; supported: {list(METHODS)}")
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or not 1 <= max_tokens <= 4096:
        raise ValidationError("max_tokens", max_tokens, "must be an integer between 1 and 4096")
    question = check_query(question, "question")
    when = utcnow() if as_of is None else parse_time(as_of, "as_of")
    usage: dict[str, Any] = {"search_llm_calls": 0, "search_llm_tokens": 0, "answer_prompt_tokens": 0,
                             "answer_completion_tokens": 0, "answer_latency_s": 0.0}
    if method != "real" and rsum is None:
        raise ValueError(f"answer method {method!r} needs the Rsum memory (rsum=)")
    summary = rsum.summary(user_id, when) if rsum is not None and method != "real" else ""
    if method == "rsum":
        text, ctx = NOT_MENTIONED, summary
        if summary:
            assert rsum is not None
            r = rsum.reply(user_id, [{"role": "user", "content": question}], as_of=when,
                               max_tokens=max(max_tokens, 128))
            text = r.text.strip() or NOT_MENTIONED
            usage.update(answer_prompt_tokens=r.usage.prompt_tokens,
                         answer_completion_tokens=r.usage.completion_tokens,
                         answer_latency_s=round(r.usage.latency_s, 3))
        usage["llm_calls"] = int(bool(summary))
        usage["tokens"] = usage["answer_prompt_tokens"] + usage["answer_completion_tokens"]
        return Answer(text=text, evidence=[], context_tokens=models.llm.count_tokens(ctx) if ctx else 0,
                      usage=usage, context=ctx, method=method)
    cfg = config if config is not None else ANSWER_CONFIG
    res = search(store, registry, models, question, user_id=user_id, theta_stable=theta_stable, as_of=when,
                 top_k=top_k, config=cfg, speaker=speaker, user_entity=user_entity)
    usage.update(search_llm_calls=res.trace.budget.get("llm_calls", 0),
                 search_llm_tokens=res.trace.budget.get("llm_tokens", 0))
    min_confidence = None if cfg.include_unstable else theta_stable
    window = question_window(question, res.trace.analysis, when)
    held: list[Fact] = []  # the state facts of the whole window tell whether one point stands for it
    if window is not None:
        held = window_values(_state_facts(store, registry, res.trace, user_id=user_id, as_of=when, limit=None,
                                          min_confidence=min_confidence, past=False, window=window), window)
    if window is not None and not holds_throughout(held, window):
        asked, asked_at = ask_in_window(question, res.trace.analysis, when, held)
        direct = held[:max(cfg.state_facts, 0)]
        res.trace.notes.append(f"answer: the state facts change within {res.trace.analysis['window_text']!r}: "
                               "its words kept, every one of them listed, asked as of its end")
    else:  # as of one point (or the window's end, for a span), as before
        asked, asked_at = _decouple_time(question, res.trace.analysis, when)
        direct = _state_facts(store, registry, res.trace, user_id=user_id, as_of=asked_at, limit=cfg.state_facts,
                              min_confidence=min_confidence, past=asked == question and asks_the_past(question))
    if direct:
        res.trace.notes.append(f"answer: {len(direct)} state fact(s) of "
                               f"{', '.join(state_relations(res.trace.analysis, registry))} put first")
    context, context_tokens = res.context, res.context_tokens
    if asked_at != when:  # one "as of" in the prompt: the asked time's
        context = undate(context, when)
        context_tokens += models.llm.count_tokens(context) - models.llm.count_tokens(res.context)
    for block in (render_state_facts(direct, asked_at), f"Summary of earlier conversations:\n{summary}" if summary else ""):
        if block:
            context = f"{block}\n\n{context}" if context.strip() else block
            context_tokens += models.llm.count_tokens(block)
    if not context.strip():
        text = NOT_MENTIONED
    else:
        if cfg.organisation_hint and (hint := organisation_hint(res.trace.analysis, registry)):
            asked = f"{asked} {hint}"
            res.trace.notes.append(f"answer: question asks for an organisation ({hint!r} added)")
        text, u = generate(models.llm, asked, context, as_of=asked_at, max_tokens=max_tokens)
        if u is not None:
            usage.update(answer_prompt_tokens=u.prompt_tokens, answer_completion_tokens=u.completion_tokens,
                         answer_latency_s=round(u.latency_s, 3))
    usage["llm_calls"] = usage["search_llm_calls"] + (0 if not context.strip() else 1)
    usage["tokens"] = (usage["search_llm_tokens"] + usage["answer_prompt_tokens"]
                       + usage["answer_completion_tokens"])
    by_id = {f.id: f for f in res.facts}
    first = {f.id for f in direct}
    evidence = [*direct, *(by_id[i] for i in res.context_fact_ids if i in by_id and i not in first)]
    return Answer(text=text, evidence=evidence, context_tokens=context_tokens, usage=usage,
                  trace=res.trace, context=context, method=method)
