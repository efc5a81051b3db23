"""Benchmark adapters for chronomem's fact memory: ``flat_facts``, ``vanilla_graph``, ``real``,
``real+rsum`` and the REAL ablations.

Shared ingestion
    A conversation is ingested ONCE per ingestion configuration (model, extraction
    prompt version, chunking, ``theta_stable``) into a :class:`~chronomem.Memory`
    kept in its own SQLite file, ``<memory_dir>/<sample_id>-<ingest key>.sqlite``
    (the runner puts ``memory_dir`` under ``--out``).  Every LoCoMo turn becomes
    one message: ``id`` = its ``dia_id``, its speaker, its text plus the image
    caption, ``timestamp`` = its session's date; each LoCoMo session is one
    chronomem session.  Facts therefore cite dia_ids in ``source_ids``, which is
    what evidence recall@k is computed from.  All the methods of this module read
    the same ingested graph; they differ only in how they search and render it.

Resuming
    A sidecar journal (``<file>.ingest.json``) records each session whose
    ingestion completed.  A completed session is skipped without touching the
    model; a session that was interrupted (its turns stored, some chunks not
    extracted) is finished with ``Memory.extract_pending``; a session never seen
    is added with ``Memory.add``.  Message ids are idempotent, so a torn journal
    costs at most a cheap re-check, never a duplicate.  Chunks whose extraction
    failed inside a *completed* session are counted in the journal and not
    retried automatically (a deterministic model would fail the same way again).

The answer step
    Every method here answers through :meth:`Method.answer` with the SAME
    prompt as the turn baselines (``prompts/answer_v1.txt``); only ``{context}``
    differs.  ``real`` therefore calls ``Memory.search`` with the configuration
    ``Memory.answer`` uses (:data:`chronomem.retrieve.ANSWER_CONFIG`: evaluator and
    intent fallback on, at most 3 LLM calls per query) minus the turns it adds —
    the published method's graph evidence only (:func:`real_base_config`, fixed);
    the method ``answer`` is exactly what ``Memory.answer`` sends — and puts REAL's serialised
    evidence into the shared prompt instead of REAL's own answer prompt
    (``retrieve/prompts/answer_v1.md``).  The serialised evidence begins with a
    header that explains its notation (intervals, "now", confidence), so the
    legend REAL's own prompt carries reaches the model too.  Like
    ``Memory.answer``, when the search finds nothing the method answers
    "Not mentioned" without calling the model.

Questions are asked "as of" the last session's date (the moment the
conversation ends), not the wall clock.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..graph import FACT_IDENTITY
from ..model import Fact, Origin
from ..providers.base import LLM, CallUsage, ChatExtras, ChatResult, Embedder, LLMWrapper, Messages, Penalties
from ..timeutil import iso
from .datasets import QA, Conversation, Session, Turn
from .methods import (ANSWER_MAX_TOKENS, IngestStats, Method, MethodAnswer, MethodConfig, MethodUnavailableError,
                      Retrieved, SharedIngest, UsageSummary, clean_answer, load_prompt, rsum_config, shared_rsum)

if TYPE_CHECKING:
    from ..memory import Memory
    from ..retrieve.beam import SearchConfig

log = logging.getLogger(__name__)

#: Bump when the way a conversation becomes messages changes (part of the ingest key).
INGEST_VERSION = 1
MEMORY_DIR = "memories"
NOT_MENTIONED = "Not mentioned"
FACT_KIND = "fact"  # the vector kind REAL's Relevance uses for stored facts (retrieve.beam.FACT_KIND)


# --------------------------------------------------------------------------- usage recording


class RecordingLLM(LLMWrapper):
    """An :class:`~chronomem.providers.base.LLM` that forwards every call and keeps its usage.

    The Memory of a benchmark conversation talks to the model through this
    wrapper, so the extraction calls of an ingestion and the search-time calls
    of one question (intents, evaluator) can be attributed to them:
    :meth:`take` returns the calls since the previous :meth:`take`.  The runner
    is single-threaded; one wrapper serves one conversation.
    """

    def __init__(self, inner: LLM) -> None:
        super().__init__(inner)
        self._calls: list[CallUsage] = []

    def chat(self, messages: Messages, *, schema: Any = None, max_tokens: int = 512, temperature: float = 0.0,
             stop: list[str] | None = None, purpose: str = "", penalties: Penalties | None = None,
             grammar: str | None = None) -> ChatResult:
        extras: ChatExtras = {}
        if penalties is not None:
            extras["penalties"] = penalties
        if grammar is not None:
            extras["grammar"] = grammar
        try:
            res = self.inner.chat(messages, schema=schema, max_tokens=max_tokens, temperature=temperature,
                                  stop=stop, purpose=purpose, **extras)
        except Exception as e:  # a failed structured call still cost something; keep it when it says so
            usage = getattr(e, "usage", None)
            if isinstance(usage, CallUsage):
                self._calls.append(usage)
            raise
        self._calls.append(res.usage)
        return res

    def take(self) -> UsageSummary:
        out = UsageSummary()
        for u in self._calls:
            out.add(u)
        self._calls.clear()
        return out


def merge_usage(*parts: UsageSummary) -> UsageSummary:
    """The sum of several usage summaries (a new object; the parts are left alone)."""
    out = UsageSummary()
    for p in parts:
        out.calls += p.calls
        out.cached_calls += p.cached_calls
        out.prompt_tokens += p.prompt_tokens
        out.completion_tokens += p.completion_tokens
        out.latency_s += p.latency_s
    return out


# --------------------------------------------------------------------------- ingestion


@dataclass(frozen=True, slots=True)
class IngestConfig:
    """What determines the graph a conversation is ingested into."""

    llm: str
    extract_prompt: str
    chunk_size: int
    chunk_context: int
    theta_stable: float
    postprocess: int = 1
    version: int = INGEST_VERSION
    extraction: str = "v1"  # the write path's extraction method (Config.extraction)
    identity: int = FACT_IDENTITY  # what makes two facts the same fact (chronomem.graph.FACT_IDENTITY)

    @classmethod
    def for_llm(cls, llm: LLM, extraction: str = "v1") -> IngestConfig:
        from ..config import Config
        from ..extract.chunking import DEFAULT_CHUNK_SIZE, DEFAULT_CONTEXT
        from ..extract.pipeline import method_versions

        prompt, post = method_versions(Config(extraction=extraction).extraction)  # Config names an unknown one
        return cls(llm=llm.name, extract_prompt=prompt, chunk_size=DEFAULT_CHUNK_SIZE,
                   chunk_context=DEFAULT_CONTEXT, theta_stable=Config().theta_stable,
                   postprocess=post, extraction=extraction)

    def key(self) -> str:
        d = asdict(self)
        if d["postprocess"] == 1 and d["extraction"] == "v1":  # keys from before the field existed stay
            del d["postprocess"]
        if d["extraction"] == "v1":  # what they were
            del d["extraction"]
        if d["identity"] == 1:  # memories written before statement-keyed relations
            del d["identity"]
        ident = json.dumps(d, sort_keys=True)
        return hashlib.sha1(ident.encode()).hexdigest()[:10]


def turn_message(t: Turn, session: Session) -> dict[str, Any]:
    """One LoCoMo turn as a ``Memory.add`` message: id = dia_id, caption appended, session date."""
    text = t.text if not t.blip_caption else f"{t.text} [shares an image: {t.blip_caption}]"
    msg: dict[str, Any] = {"id": t.dia_id, "speaker": t.speaker, "text": text}
    when = t.time or session.date_time
    if when is not None:
        msg["timestamp"] = when
    return msg


def session_id_of(conversation: Conversation, session: Session) -> str:
    return f"{conversation.sample_id}:S{session.index}"


def question_time(conversation: Conversation) -> datetime | None:
    """When the questions are asked: the date of the last dated session (None: undated data)."""
    dates = [s.date_time for s in conversation.sessions if s.date_time is not None and s.turns]
    return max(dates) if dates else None


@dataclass
class IngestedMemory:
    """A conversation's Memory, shared by every memory-based method of one run."""

    mem: Memory
    user_id: str
    recorder: RecordingLLM
    path: str
    config: IngestConfig
    as_of: datetime | None
    usage: UsageSummary = field(default_factory=UsageSummary)  # LLM calls spent by this ingestion
    sessions_added: int = 0
    sessions_skipped: int = 0
    sessions_resumed: int = 0
    failed_chunks: int = 0
    embedded_facts: int = 0

    def source_ids(self, facts: Sequence[Fact]) -> list[str]:
        """The dia_ids behind ``facts``, in order, without duplicates (derived facts: their supports')."""
        from ..retrieve.search import source_turn_ids

        return source_turn_ids(self.mem.store, self.user_id, facts)

    def info(self) -> dict[str, Any]:
        return {"memory_file": self.path, "ingest_key": self.config.key(), "sessions_added": self.sessions_added,
                "sessions_resumed": self.sessions_resumed, "sessions_skipped": self.sessions_skipped,
                "failed_chunks": self.failed_chunks, "embedded_facts": self.embedded_facts,
                "as_of": iso(self.as_of) if self.as_of else None}


class IngestJournal:
    """Sidecar JSON of completed sessions; written atomically after each session."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.data: dict[str, Any] = {"sessions": {}}
        if path.exists():
            try:
                self.data = json.loads(path.read_text("utf-8"))
            except (OSError, json.JSONDecodeError) as e:
                log.warning("%s unreadable (%s): every session is re-checked (ids are idempotent)", path, e)
        self.data.setdefault("sessions", {})

    def done(self, session_id: str) -> bool:
        return session_id in self.data["sessions"]

    def mark(self, session_id: str, record: dict[str, Any]) -> None:
        self.data["sessions"][session_id] = record
        tmp = self.path.with_suffix(self.path.suffix + ".tmp")
        tmp.write_text(json.dumps(self.data, indent=1, sort_keys=True), "utf-8")
        os.replace(tmp, self.path)


def memory_path(memory_dir: str | Path, conversation: Conversation, config: IngestConfig) -> Path:
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in conversation.sample_id)
    return Path(memory_dir) / f"{safe}-{config.key()}.sqlite"


def ingest_conversation(conversation: Conversation, llm: LLM, embedder: Embedder | None,
                        memory_dir: str | Path | None, extraction: str = "v1") -> IngestedMemory:
    """Ingest ``conversation`` into its Memory file (or continue/skip a previous ingestion).

    ``memory_dir`` None keeps the memory in RAM (not resumable; for tests and
    one-off calls).  With an ``embedder`` every stored fact gets a vector
    (the kind REAL's relevance scoring reads, so it is computed once for all
    methods).  ``extraction`` is the write path's method (``Config.extraction``: v1, v2, v3).
    """
    from ..config import Config
    from ..memory import Memory

    cfg = IngestConfig.for_llm(llm, extraction)
    recorder = RecordingLLM(llm)
    if memory_dir is None:
        location, journal_path = ":memory:", None
    else:
        path = memory_path(memory_dir, conversation, cfg)
        path.parent.mkdir(parents=True, exist_ok=True)
        location, journal_path = str(path), path.with_name(path.name + ".ingest.json")
    mem = Memory(location, llm=recorder, embedder=embedder if embedder is not None else False,
                 config=Config(db=location, theta_stable=cfg.theta_stable, extraction=cfg.extraction))
    user_id = conversation.sample_id
    journal = IngestJournal(journal_path) if journal_path else None
    ing = IngestedMemory(mem=mem, user_id=user_id, recorder=recorder, path=location, config=cfg,
                         as_of=question_time(conversation))
    undated = 0
    for session in conversation.sessions:
        if not session.turns:
            continue
        sid = session_id_of(conversation, session)
        if journal is not None and journal.done(sid):
            ing.sessions_skipped += 1
            continue
        undated += int(session.date_time is None)
        msgs = [turn_message(t, session) for t in session.turns]
        t0 = time.perf_counter()

        def progress(done: int, total: int, sid: str = sid) -> None:
            log.info("ingest %s: chunk %d/%d", sid, done, total)

        res = mem.add(msgs, user_id=user_id, session_id=sid, progress=progress)
        failed = len(res.failed_chunks)
        if res.messages_stored == 0:  # every turn was stored by an interrupted earlier run
            pending = mem.extract_pending(user_id=user_id, session_id=sid)
            failed = len(pending.failed_chunks)
            ing.sessions_resumed += 1
        elif res.messages_skipped:  # part of the session was stored before: finish the rest
            pending = mem.extract_pending(user_id=user_id, session_id=sid)
            failed += len(pending.failed_chunks)
            ing.sessions_resumed += 1
        else:
            ing.sessions_added += 1
        ing.failed_chunks += failed
        if failed:
            log.warning("%s %s: %d chunk(s) failed extraction; their turns stay pending", conversation.sample_id,
                        sid, failed)
        seconds = time.perf_counter() - t0
        log.info("ingested %s (%d turns) in %.0f s, %d failed chunk(s)", sid, len(msgs), seconds, failed)
        if journal is not None:
            journal.mark(sid, {"turns": len(msgs), "failed_chunks": failed, "seconds": round(seconds, 1),
                               "time": iso(datetime.now().astimezone())})
    if journal is not None:
        ing.failed_chunks = sum(int(r.get("failed_chunks", 0)) for r in journal.data["sessions"].values())
    if undated:
        log.warning("%s: %d session(s) have no date; their turns were stamped with the current time",
                    conversation.sample_id, undated)
    if embedder is not None:
        ing.embedded_facts = ensure_fact_vectors(mem, user_id, embedder)
    ing.usage = recorder.take()
    log.info("ingested %s into %s: %s", conversation.sample_id, location, ing.info())
    return ing


def ensure_fact_vectors(mem: Memory, user_id: str, embedder: Embedder, batch: int = 64) -> int:
    """Embed every stored fact that lacks a vector for ``embedder`` (text = ``Fact.render()``)."""
    have = mem.store.vector_ids(user_id, FACT_KIND, embedder.name)
    todo = [f for f in mem.history(user_id=user_id, include_unstable=True)
            if f.id not in have and f.origin != Origin.DERIVED]
    for i in range(0, len(todo), batch):
        part = todo[i:i + batch]
        vecs = embedder.embed([f.render() for f in part])
        mem.store.put_vectors(user_id, FACT_KIND, [(f.id, v) for f, v in zip(part, vecs)], embedder.name)
    return len(todo)


def shared_memory(shared: SharedIngest, llm: LLM, embedder: Embedder | None, config: MethodConfig,
                  stats: IngestStats) -> tuple[IngestedMemory, bool]:
    """The conversation's :class:`IngestedMemory` from ``shared`` (built on first use); True when built now."""
    cfg = IngestConfig.for_llm(llm, config.extraction)
    key = f"memory:{cfg.key()}:{embedder.name if embedder else 'no-embedder'}"
    built = key not in shared
    ing: IngestedMemory = shared.get_or_build(
        key, lambda: ingest_conversation(shared.conversation, llm, embedder, config.memory_dir, config.extraction),
        stats)
    return ing, built


# --------------------------------------------------------------------------- rendering


def render_triple(f: Fact) -> str:
    """``Caroline attends LGBTQ support group``: subject, relation, object; no time, no confidence."""
    return f"{f.subject} {f.relation.replace('_', ' ')} {f.object}"


def render_fact_lines(facts: Sequence[Fact], header: str, render: Callable[[Fact], str]) -> str:
    if not facts:
        return ""
    lines = [header] + [f"- {render(f)}" for f in facts]
    return "\n".join(lines)


# --------------------------------------------------------------------------- methods


class _MemoryMethod(Method):
    """Base of the methods that read an ingested chronomem Memory."""

    ranked = True

    def __init__(self, llm: LLM, config: MethodConfig | None = None, embedder: Embedder | None = None) -> None:
        super().__init__(llm, config, embedder)
        self._mem: IngestedMemory | None = None

    def _ingest(self, conversation: Conversation, shared: SharedIngest, stats: IngestStats) -> None:
        self._mem, built = shared_memory(shared, self.llm, self.embedder, self.config, stats)
        if built:
            stats.usage = self._mem.usage
        stats.info = self._mem.info()

    @property
    def memory(self) -> IngestedMemory:
        if self._mem is None:
            raise RuntimeError(f"{self.name}: ingest() a conversation before retrieve()")
        return self._mem

    def answer(self, qa: QA) -> MethodAnswer:
        """The shared answer step; without any evidence, "Not mentioned" and no model call (as ``Memory.answer``)."""
        if self.conversation is None:
            raise RuntimeError(f"{self.name}: ingest() a conversation before answer()")
        t0 = time.perf_counter()
        ret = self.retrieve(qa.question)
        t1 = time.perf_counter()
        if ret.context.strip():
            ans = self._answer_from(qa, ret)
            ans.retrieval_latency_s = t1 - t0
            return ans
        return MethodAnswer(text=NOT_MENTIONED, context="", context_tokens=0, retrieved_ids=ret.ids,
                            usage=ret.usage, retrieval_latency_s=t1 - t0, answer_latency_s=0.0,
                            info={**ret.info, "no_evidence": True})

    def _answer_from(self, qa: QA, ret: Retrieved) -> MethodAnswer:
        """Method.answer's generation on an already retrieved context."""
        t1 = time.perf_counter()
        prompt = load_prompt(self.config.answer_prompt)
        res = self.llm.chat(prompt.messages(context=ret.context, question=qa.question),
                            max_tokens=ANSWER_MAX_TOKENS, temperature=0.0, purpose="answer")
        t2 = time.perf_counter()
        usage = merge_usage(ret.usage)
        usage.add(res.usage)
        return MethodAnswer(text=clean_answer(res.text), context=ret.context,
                            context_tokens=self.llm.count_tokens(ret.context), retrieved_ids=ret.ids, usage=usage,
                            retrieval_latency_s=0.0, answer_latency_s=t2 - t1, truncated=ret.truncated,
                            info=ret.info)

    def describe(self) -> dict[str, Any]:
        ingest = IngestConfig.for_llm(self.llm, self.config.extraction).key()
        return {"method": self.name, "top_k": self.config.top_k, "ingest": ingest,
                "embedder": self.embedder.name if self.embedder else None}


class FlatFacts(_MemoryMethod):
    """Mem0-style: the extracted facts as flat text, dense vector search top-k; no graph, no time filter.

    Every stored fact counts, closed and low-confidence ones included; the
    context lists the top-k fact texts, best first, without intervals or
    confidence.
    """

    name = "flat_facts"

    def _ingest(self, conversation: Conversation, shared: SharedIngest, stats: IngestStats) -> None:
        if self.embedder is None:
            raise MethodUnavailableError("flat_facts needs an embedder (--embedder)")
        super()._ingest(conversation, shared, stats)

    def retrieve(self, query: str) -> Retrieved:
        ing = self.memory
        assert self.embedder is not None
        qvec = self.embedder.embed([query])[0]
        hits = ing.mem.store.knn(ing.user_id, FACT_KIND, qvec, k=self.config.top_k, model=self.embedder.name)
        by_id = {f.id: f for f in ing.mem.store.facts(ing.user_id, ids=[i for i, _ in hits])} if hits else {}
        facts = [by_id[i] for i, _ in hits if i in by_id]
        context = render_fact_lines(facts, "Memories:", lambda f: f.render())
        return Retrieved(context=context, ids=ing.source_ids(facts),
                         info={"facts": len(facts), "scores": [round(s, 4) for _, s in hits]})


def real_base_config() -> SearchConfig:
    """REAL's read path as ``Memory.answer`` ran it, with the graph evidence only (no turns).

    The base of ``real`` and its ablations (and of ``real+turns`` and the other variants,
    which name what they add in their overrides).  It is fixed here, not derived from
    :data:`~chronomem.retrieve.ANSWER_CONFIG`, because these methods' result keys hold only
    their overrides: a change of ``Memory.answer``'s defaults must not change what a saved
    ``real`` row means.  The bench method ``answer`` runs ``ANSWER_CONFIG`` itself.
    """
    from ..retrieve import SearchConfig

    return SearchConfig(evaluator=True, intent_llm=True, max_llm_calls=3, max_llm_tokens=2000)


class RealMethod(_MemoryMethod):
    """REAL temporal graph search (``Memory.search`` with ``Memory.answer``'s configuration, no quotes)."""

    name = "real"
    #: ``SearchConfig`` fields set by this method on top of :func:`real_base_config` (the ablation switches).
    overrides: dict[str, Any] = {}
    #: How the evidence is written: "real" (REAL's serialiser: intervals, confidence, derivations) or
    #: "triples" (subject relation object only).
    rendering: str = "real"

    def search_config(self) -> SearchConfig:
        from ..retrieve import SearchConfig

        known = {f for f in SearchConfig.__dataclass_fields__}
        missing = sorted(set(self.search_overrides()) - known)
        if missing:
            raise MethodUnavailableError(f"{self.name} needs SearchConfig.{', SearchConfig.'.join(missing)}, "
                                         "which chronomem.retrieve does not have")
        return replace(self.base_config(), **self.search_overrides())

    def base_config(self) -> SearchConfig:
        """The configuration the overrides apply to (:func:`real_base_config`)."""
        return real_base_config()

    def search_overrides(self) -> dict[str, Any]:
        """The method's own ``overrides``, then the run's ``MethodConfig.search`` changes."""
        return {**self.overrides, **dict(self.config.search)}

    def retrieve(self, query: str) -> Retrieved:
        ing = self.memory
        ing.recorder.take()  # calls of earlier steps are not this question's
        res = ing.mem.search(query, user_id=ing.user_id, as_of=ing.as_of, top_k=self.config.top_k,
                             config=self.search_config())
        usage = ing.recorder.take()
        by_id = {f.id: f for f in res.facts}
        shown = [by_id[i] for i in res.context_fact_ids if i in by_id]
        if self.rendering == "triples":
            context = render_fact_lines(shown, "Facts:", render_triple)
        else:
            context = res.context
        info = {"facts": len(shown), "paths": len(res.paths), "intents": res.trace.intents,
                "quoted_ids": list(res.quoted_ids),
                "search_llm_calls": res.trace.budget.get("llm_calls", 0), "notes": res.trace.notes[:5],
                "search_ms": res.trace.timings_ms.get("total")}
        ids = ing.source_ids(shown)
        ids += [i for i in res.quoted_ids if i not in ids]  # turns quoted by full-text search come last
        return Retrieved(context=context, ids=ids, usage=usage, info=info)

    def describe(self) -> dict[str, Any]:
        d = super().describe()
        d["search"] = {k: (sorted(v) if isinstance(v, frozenset) else v)
                       for k, v in sorted(self.search_overrides().items())}
        d["rendering"] = self.rendering
        if self.rendering == "real":
            from ..retrieve.serialize import CONTEXT_FORMAT

            d["context_format"] = CONTEXT_FORMAT
        from ..store.fulltext import FULL_TEXT_VERSION

        d["full_text"] = FULL_TEXT_VERSION  # full-text turn hits and anchoring seeds
        d["as_of"] = "last_session"
        return d


class VanillaGraph(RealMethod):
    """Triples without time, confidence, intents or counterfactuals: the graph search with all of REAL off.

    Search: no validity filter, unstable facts included, one FACT sub-search,
    no counterfactual rules, no evaluator; context: bare triples.  (Path
    scoring still multiplies logical consistency by fact confidence: the read
    path has no switch for that.)
    """

    name = "vanilla_graph"
    overrides = {"use_validity": False, "include_unstable": True, "use_confidence": False, "use_intents": False, "intent_llm": False,
                 "counterfactual": False, "evaluator": False}
    rendering = "triples"


class RealSources(RealMethod):
    """REAL evidence followed by the verbatim turns its facts came from (``SearchConfig.quote_sources``).

    The graph search chooses the turns; quoting them gives the answer model
    what a lossy extraction left out (a small model's facts are coarse).
    """

    name = "real+sources"
    overrides = {"quote_sources": 8}


class RealTurns(RealMethod):
    """REAL evidence, its source turns, then the turns full-text search finds for the question.

    For what extraction missed altogether: the graph answers what it holds, the
    raw turns cover the rest (and the context is turns only when no entity of
    the question is in the graph).
    """

    name = "real+turns"
    overrides = {"quote_sources": 8, "search_turns": 5}


class RealReplies(RealMethod):
    """``real+turns`` whose full-text hits each bring the next turn of their session (``turn_replies``).

    Same number of turns: fewer hits, each followed by its reply.  A LoCoMo
    question usually shares its words with a turn that asks or mentions the
    thing, and the answer is often the reply; BM25's recall of the gold turns at
    an equal number of turns rises by 4–9 points this way on conv-30, conv-26
    and conv-42 (``benchmarks/bench_fulltext.py``).
    """

    name = "real+replies"
    overrides = {"quote_sources": 8, "search_turns": 5, "turn_replies": True}


class RealFloor(RealMethod):
    """``real+turns`` that drops paths of query relevance ``S_QR`` <= 0.5 and, when none is left, answers from turns.

    With no path relevant enough the graph holds nothing about the question:
    the context is then 15 full-text hits over the turns (``fallback_turns``)
    instead of weak paths and 5 hits.  On conv-30, questions whose best path
    had ``S_QR`` < 0.5 were where ``real+turns`` lost most to BM25; with
    stopwords dropped from the full-text query the floor no longer helps there
    (40.0 against 41.0 official F1, with 24 % fewer context tokens).
    """

    name = "real+floor"
    overrides = {"quote_sources": 8, "search_turns": 5, "min_relevance": 0.5, "fallback_turns": 15}


class RealFts(RealMethod):
    """REAL evidence, then the turns full-text search finds for the question, without quoting sources.

    The same two halves as ``real+turns`` split differently: on conv-30 the
    full-text hits reached more of the gold turns than the facts' own source
    turns did (context recall 0.729 against 0.657 at a similar size), so the
    turn budget goes to the hits.
    """

    name = "real+fts"
    overrides = {"search_turns": 12}


class RealFused(RealMethod):
    """The fused read path (``SearchConfig.fused_turns``, :mod:`chronomem.retrieve.fusion`): REAL's graph
    evidence in 400 tokens, then turns ranked by reciprocal rank fusion of its source turns, full-text
    hits over the turns (indexed with the turn before each) and the turns cited by full-text hits over
    the facts.  Its retrieved ids are the fused turns in rank order, as BM25's are."""

    name = "real+fused"
    overrides = {"fused_turns": 20}

    def retrieve(self, query: str) -> Retrieved:
        return quoted_first(super().retrieve(query))


def quoted_first(ret: Retrieved) -> Retrieved:
    """``ret`` with the ids of the turns its context quotes first, in rank order, then the rest."""
    quoted = list(ret.info.get("quoted_ids") or [])
    shown = set(quoted)
    return Retrieved(context=ret.context, ids=quoted + [i for i in ret.ids if i not in shown], usage=ret.usage,
                     info=ret.info)


class AnswerDefault(RealMethod):
    """Exactly what ``Memory.answer`` retrieves: :data:`chronomem.retrieve.ANSWER_CONFIG`, whatever it
    is at this commit (its non-default fields are part of the result key, so rows recorded under
    other defaults are kept apart).  Its retrieved ids are the quoted turns first, in rank order.
    The harness never ends a session, so its memories hold no Rsum summary and this is also what
    ``Memory.answer``'s default method (``real+rsum``) sends."""

    name = "answer"

    def base_config(self) -> SearchConfig:
        from ..retrieve import ANSWER_CONFIG

        return ANSWER_CONFIG

    def retrieve(self, query: str) -> Retrieved:
        return quoted_first(super().retrieve(query))

    def describe(self) -> dict[str, Any]:
        from ..retrieve import SearchConfig

        d = super().describe()
        cfg, default = self.search_config(), SearchConfig()
        d["answer_config"] = {k: getattr(cfg, k) for k in sorted(SearchConfig.__dataclass_fields__)
                              if getattr(cfg, k) != getattr(default, k)}
        return d


class RealRsum(RealMethod):
    """REAL evidence plus the Rsum memory M_N (the same summary the ``rsum`` method uses)."""

    name = "real+rsum"

    def _ingest(self, conversation: Conversation, shared: SharedIngest, stats: IngestStats) -> None:
        super()._ingest(conversation, shared, stats)
        self._rsum, built = shared_rsum(self.llm, conversation, shared, self.config, stats)  # the one rsum uses
        if built:
            stats.usage = merge_usage(stats.usage, self._rsum.usage)

    def retrieve(self, query: str) -> Retrieved:
        ret = super().retrieve(query)
        evidence = ret.context or "(no facts found)"
        context = f"Summary of all sessions:\n{self._rsum.memory}\n\nRelevant facts:\n{evidence}"
        return Retrieved(context=context, ids=ret.ids, usage=ret.usage, info=ret.info)

    def memory_text(self) -> str | None:
        return self._rsum.memory

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), **rsum_config(self.config)}


def _ablation(method_name: str, switches: dict[str, Any], doc: str) -> type[RealMethod]:
    return type(method_name.replace("-", "_").title().replace("_", ""), (RealMethod,),
                {"name": method_name, "overrides": switches, "__doc__": doc})


#: REAL ablations: one switch of the read path each (the methods BENCHMARKS.md compares).
ABLATIONS: dict[str, dict[str, Any]] = {
    "real-no-intervals": {"use_validity": False},
    "real-no-confidence": {"include_unstable": True, "use_confidence": False},
    "real-no-intents": {"use_intents": False, "intent_llm": False},
    "real-no-evaluator": {"evaluator": False},
    "real-no-counterfactuals": {"counterfactual": False},
}

MEMORY_METHODS: dict[str, type[_MemoryMethod]] = {
    "flat_facts": FlatFacts,
    "vanilla_graph": VanillaGraph,
    "real": RealMethod,
    "real+rsum": RealRsum,
    "real+sources": RealSources,
    "real+turns": RealTurns,
    "real+fts": RealFts,
    "real+floor": RealFloor,
    "real+replies": RealReplies,
    "real+fused": RealFused,
    "answer": AnswerDefault,
    **{name: _ablation(name, sw, f"REAL with SearchConfig overrides {sw}") for name, sw in ABLATIONS.items()},
}


def make_memory_method(name: str, llm: LLM, config: MethodConfig, embedder: Embedder | None) -> Method:
    cls = MEMORY_METHODS.get(name)
    if cls is None:
        raise MethodUnavailableError(f"no memory adapter for {name!r}; known: {', '.join(MEMORY_METHODS)}")
    method = cls(llm, config, embedder)
    if isinstance(method, RealMethod):
        method.search_config()  # refuse now, not mid-run, when a switch does not exist
    return method
