"""The methods compared on the benchmarks, behind one interface.

A :class:`Method` ingests a conversation once (:meth:`Method.ingest`), then
answers questions (:meth:`Method.answer`) or continues a dialogue
(:meth:`Method.reply`, MSC).  Every method answers with the SAME versioned
prompt (``prompts/answer_v1.txt``, ``prompts/reply_v1.txt``); methods differ
only in the memory they put into ``{context}``.

Implemented here: ``full_context`` (every turn, truncated to the model's
window — the oldest turns go first and the answer says so),
``sliding_window`` (the most recent turns within a token budget), ``bm25`` and
``dense`` (top-k turn retrieval), ``rsum`` (the recursive summary after the
last session, from :mod:`chronomem.summarize.rsum`) and ``bm25+rsum``.
Methods built on chronomem's fact memory (``flat_facts``, ``vanilla_graph``, ``real``,
``real+rsum`` and the REAL ablations ``real-no-*``) live in
:mod:`chronomem.bench.memory_methods`; they are registered in :data:`METHODS`
with the ``Memory`` APIs and ``SearchConfig`` switches they use, and
:func:`make_method` refuses one with :class:`MethodUnavailableError` naming
whatever of those this build lacks.

Prompt files are immutable once results exist: the prompt version (the file
name) is part of every result's configuration key, so a changed prompt must be
a new file (``answer_v2.txt``), never an edit of ``answer_v1.txt``.

Ingestion is shared: the runner gives every method of one conversation the
same :class:`SharedIngest`, so indexes and memories are built once per
configuration and reused across methods and questions.  Memories persist in
SQLite files under ``MethodConfig.memory_dir`` (the runner sets it to
``<out>/memories``), so an ingestion is also shared across runs and resumes.
"""

from __future__ import annotations

import logging
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from ..errors import ConfigError
from ..prompts import PromptTemplate, load_template
from ..providers.base import LLM, Embedder, Messages, UsageTotals
from ..summarize.rsum import MEMORY_DECODING
from .datasets import QA, Conversation, Turn
from .retrievers import BM25Index, DenseIndex

log = logging.getLogger(__name__)

ANSWER_PROMPT = "answer_v1"
REPLY_PROMPT = "reply_v1"
ANSWER_MAX_TOKENS = 48
REPLY_MAX_TOKENS = 96
#: Tokens kept free in the window for the question (full_context truncation).
QUESTION_RESERVE_TOKENS = 160


class MethodUnavailableError(ConfigError):
    """The method cannot run in this build (a component it needs does not exist yet)."""


# --------------------------------------------------------------------------- prompts


def load_prompt(version: str) -> PromptTemplate:
    """The harness's chat template ``bench/prompts/<version>.txt`` (through :mod:`chronomem.prompts`)."""
    return load_template("chronomem.bench", version)


# --------------------------------------------------------------------------- results


# model usage of a question or an ingestion: the model layer's own aggregate
UsageSummary = UsageTotals


@dataclass(slots=True)
class Retrieved:
    """The memory a method puts in front of the question."""

    context: str
    ids: list[str] = field(default_factory=list)  # dia_ids (or fact source ids), best first
    truncated: bool = False
    info: dict[str, Any] = field(default_factory=dict)
    usage: UsageSummary = field(default_factory=UsageSummary)  # LLM calls spent retrieving


@dataclass(slots=True)
class MethodAnswer:
    text: str
    context: str
    context_tokens: int
    retrieved_ids: list[str]
    usage: UsageSummary  # every LLM call for this question (retrieval + answer)
    retrieval_latency_s: float
    answer_latency_s: float
    truncated: bool = False
    info: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class IngestStats:
    seconds: float = 0.0
    usage: UsageSummary = field(default_factory=UsageSummary)
    built: list[str] = field(default_factory=list)  # shared artefacts built (not reused) by this call
    info: dict[str, Any] = field(default_factory=dict)  # what the method's memory holds (file, sessions …)


class SharedIngest:
    """Per-conversation cache of ingestion artefacts, shared by all methods of one run."""

    def __init__(self, conversation: Conversation) -> None:
        self.conversation = conversation
        self._items: dict[str, Any] = {}

    def get_or_build(self, key: str, build: Callable[[], Any], stats: IngestStats | None = None) -> Any:
        if key not in self._items:
            t0 = time.perf_counter()
            self._items[key] = build()
            if stats is not None:
                stats.seconds += time.perf_counter() - t0
                stats.built.append(key)
            log.debug("built %s for %s", key, self.conversation.sample_id)
        return self._items[key]

    def __contains__(self, key: str) -> bool:
        return key in self._items


# --------------------------------------------------------------------------- rendering


def render_turns(turns: list[Turn], conversation: Conversation) -> str:
    """Turns in conversation order, grouped under dated session headers, each with its dia_id."""
    dates = {s.index: s.date_time_raw for s in conversation.sessions}
    lines: list[str] = []
    current: int | None = None
    for t in turns:
        if t.session != current:
            current = t.session
            when = dates.get(t.session, "")
            lines.append(f"[Session {t.session}{' — ' + when if when else ''}]")
        lines.append(f"({t.dia_id}) {t.render()}")
    return "\n".join(lines)


# --------------------------------------------------------------------------- the interface


@dataclass
class MethodConfig:
    """Settings shared by all methods of one run (part of each result row)."""

    top_k: int = 10
    window_tokens: int = 2000  # sliding_window budget
    rsum_max_sentences: int = 20  # Rsum memory cap (the paper's ~20 sentences)
    #: How Rsum's memory updates are generated (``chronomem.summarize.rsum.MEMORY_DECODINGS``; 2 is
    #: the library's default, 3 appends what a session adds); part of the Rsum methods' ``describe()``.
    rsum_decoding: int = MEMORY_DECODING
    answer_prompt: str = ANSWER_PROMPT
    reply_prompt: str = REPLY_PROMPT
    #: Folder of the memory-based methods' SQLite files (None: in RAM, not resumable).  Not part
    #: of any result's configuration key: where a memory lives does not change its answers.
    memory_dir: str | None = None
    #: ``SearchConfig`` changes for the REAL methods, applied after each method's own overrides
    #: (``chronomem bench locomo --search FIELD=VALUE``; :func:`parse_search_changes`).  They are
    #: part of those methods' ``describe()``, so rows of different settings are kept apart.
    search: tuple[tuple[str, Any], ...] = ()
    #: The memory methods' extraction method (``Config.extraction``: v1, v2, v3); part of their
    #: ingestion key, so memories written by different methods are kept apart.
    extraction: str = "v1"


def parse_search_changes(items: Sequence[str]) -> tuple[tuple[str, Any], ...]:
    """``["fused_weights=0,1,0", "context_tokens=950", "evaluator=false"]`` → SearchConfig changes.

    A value with commas is a tuple of floats, ``true``/``false`` a bool, a number an int or a
    float.  Raises :class:`~chronomem.errors.ValidationError` naming an item that is not
    ``FIELD=VALUE``, an unknown field, or a value ``SearchConfig`` refuses.
    """
    from dataclasses import replace as _replace

    from ..errors import ValidationError
    from ..retrieve import SearchConfig

    known = set(SearchConfig.__dataclass_fields__)
    out: dict[str, Any] = {}
    for item in items:
        key, eq, raw = item.partition("=")
        key, raw = key.strip(), raw.strip()
        if not eq or not key or not raw:
            raise ValidationError("search", item, "must be FIELD=VALUE, e.g. fused_weights=0,1,0")
        if key not in known:
            raise ValidationError("search", item, f"unknown SearchConfig field {key!r}")
        try:
            value: Any
            if "," in raw:
                value = tuple(float(v) for v in raw.split(","))
            elif raw.lower() in ("true", "false"):
                value = raw.lower() == "true"
            else:
                value = float(raw) if any(c in raw for c in ".eE") else int(raw)
        except ValueError:
            raise ValidationError("search", item, "value must be a number, true/false, or numbers joined by commas") \
                from None
        out[key] = value
    _replace(SearchConfig(), **out)  # SearchConfig's own checks name a bad value
    return tuple(sorted(out.items()))


class Method(ABC):
    """A way of giving the model memory of a conversation."""

    name: str = ""
    #: True when ``retrieve`` returns a ranked selection (recall@k applies); False when the
    #: context does not depend on the question (full context, recent window, summary).
    ranked: bool = False

    def __init__(self, llm: LLM, config: MethodConfig | None = None, embedder: Embedder | None = None) -> None:
        self.llm = llm
        self.config = config or MethodConfig()
        self.embedder = embedder
        self.conversation: Conversation | None = None

    # -- ingestion
    def ingest(self, conversation: Conversation, shared: SharedIngest | None = None) -> IngestStats:
        """Make the conversation this method's memory (once per conversation and configuration)."""
        shared = shared if shared is not None else SharedIngest(conversation)
        if shared.conversation is not conversation:
            raise ValueError("SharedIngest belongs to another conversation")
        stats = IngestStats()
        self.conversation = conversation
        self._ingest(conversation, shared, stats)
        return stats

    def _ingest(self, conversation: Conversation, shared: SharedIngest, stats: IngestStats) -> None:
        """Build what :meth:`retrieve` needs (default: nothing)."""

    @abstractmethod
    def retrieve(self, query: str) -> Retrieved:
        """The memory context for ``query``."""

    def describe(self) -> dict[str, Any]:
        """Configuration that identifies this method's results."""
        return {"method": self.name}

    # -- generation (shared by every method; override only if the method answers differently)
    def answer(self, qa: QA) -> MethodAnswer:
        if self.conversation is None:
            raise RuntimeError(f"{self.name}: ingest() a conversation before answer()")
        prompt = load_prompt(self.config.answer_prompt)
        return self._respond(qa.question, lambda ctx: prompt.messages(context=ctx, question=qa.question),
                             max_tokens=ANSWER_MAX_TOKENS, purpose="answer", clean=clean_answer)

    def reply(self, dialogue: list[Turn], speaker: str, other: str) -> MethodAnswer:
        """Next utterance of ``speaker`` after ``dialogue`` (the current session so far)."""
        if self.conversation is None:
            raise RuntimeError(f"{self.name}: ingest() a conversation before reply()")
        prompt = load_prompt(self.config.reply_prompt)
        transcript = "\n".join(t.render() for t in dialogue)
        return self._respond(
            "\n".join(t.render() for t in dialogue[-2:]) or speaker,
            lambda ctx: prompt.messages(context=ctx, dialogue=transcript, speaker=speaker, other=other),
            max_tokens=REPLY_MAX_TOKENS, purpose="reply", stop=["\n"], clean=str.strip)

    def _respond(self, query: str, build: Callable[[str], Messages], *, max_tokens: int, purpose: str,
                 clean: Callable[[str], str], stop: list[str] | None = None) -> MethodAnswer:
        """Retrieve for ``query``, then one model call on the messages ``build(context)`` makes."""
        t0 = time.perf_counter()
        ret = self.retrieve(query)
        t1 = time.perf_counter()
        res = self.llm.chat(build(ret.context), max_tokens=max_tokens, temperature=0.0, stop=stop,
                            purpose=purpose)
        t2 = time.perf_counter()
        usage = UsageSummary(**asdict(ret.usage))
        usage.add(res.usage)
        return MethodAnswer(
            text=clean(res.text),
            context=ret.context,
            context_tokens=self.llm.count_tokens(ret.context),
            retrieved_ids=ret.ids,
            usage=usage,
            retrieval_latency_s=t1 - t0,
            answer_latency_s=t2 - t1,
            truncated=ret.truncated,
            info=ret.info,
        )

    def memory_text(self) -> str | None:
        """The method's standing memory (Rsum's summary), if it keeps one; None otherwise."""
        return None


def clean_answer(text: str) -> str:
    """First non-empty line of the model's reply, without a leading 'Answer:' label."""
    for line in text.strip().splitlines():
        line = line.strip()
        if line:
            low = line.lower()
            for label in ("short answer:", "answer:"):
                if low.startswith(label):
                    line = line[len(label) :].strip()
                    break
            return line
    return ""


# --------------------------------------------------------------------------- turn baselines


class _TurnMethod(Method):
    def _turns(self) -> list[Turn]:
        assert self.conversation is not None
        return self.conversation.turns


class FullContext(_TurnMethod):
    """Every turn, oldest first; the oldest turns are dropped when the model's window is too small.

    The context does not depend on the question, so it forms a cached prompt
    prefix on llama.cpp (the question comes last in the prompt).
    """

    name = "full_context"

    def _ingest(self, conversation: Conversation, shared: SharedIngest, stats: IngestStats) -> None:
        key = f"full_context:{self.llm.name}:{self.llm.context_window}"
        self._ret: Retrieved = shared.get_or_build(key, self._build, stats)

    def _budget(self) -> int:
        prompt = load_prompt(self.config.answer_prompt)
        overhead = self.llm.count_tokens(prompt.system) + self.llm.count_tokens(prompt.user)
        return self.llm.context_window - overhead - QUESTION_RESERVE_TOKENS - ANSWER_MAX_TOKENS

    def _build(self) -> Retrieved:
        assert self.conversation is not None
        turns = self._turns()
        budget = self._budget()
        full = render_turns(turns, self.conversation)
        total = self.llm.count_tokens(full)
        if total <= budget:
            return Retrieved(context=full, ids=[t.dia_id for t in turns], info={"truncated": False, "tokens": total})
        # drop the oldest turns until the rendering fits (per-line counts, then one exact check)
        costs = [self.llm.count_tokens(f"({t.dia_id}) {t.render()}") + 1 for t in turns]
        start, used = len(turns), 0
        while start > 0 and used + costs[start - 1] + 24 <= budget:  # 24: room for session headers
            start -= 1
            used += costs[start]
        kept = turns[start:]
        context = render_turns(kept, self.conversation)
        while kept and self.llm.count_tokens(context) > budget:
            kept = kept[1:]
            context = render_turns(kept, self.conversation)
        dropped = len(turns) - len(kept)
        log.info("full_context: %s truncated to the model's window, dropped %d oldest turns",
                 self.conversation.sample_id, dropped)
        return Retrieved(
            context=context,
            ids=[t.dia_id for t in kept],
            truncated=True,
            info={
                "truncated": True,
                "dropped_turns": dropped,
                "kept_from": kept[0].dia_id if kept else None,
                "conversation_tokens": total,
                "budget_tokens": budget,
            },
        )

    def retrieve(self, query: str) -> Retrieved:
        r = self._ret
        return Retrieved(context=r.context, ids=list(reversed(r.ids)), truncated=r.truncated, info=dict(r.info))

    def describe(self) -> dict[str, Any]:
        return {"method": self.name, "context_window": self.llm.context_window}


class SlidingWindow(_TurnMethod):
    """The most recent turns that fit in ``config.window_tokens``."""

    name = "sliding_window"

    def _ingest(self, conversation: Conversation, shared: SharedIngest, stats: IngestStats) -> None:
        key = f"sliding_window:{self.llm.name}:{self.config.window_tokens}"
        self._ret: Retrieved = shared.get_or_build(key, self._build, stats)

    def _build(self) -> Retrieved:
        assert self.conversation is not None
        turns = self._turns()
        kept: list[Turn] = []
        used = 0
        for t in reversed(turns):
            cost = self.llm.count_tokens(f"({t.dia_id}) {t.render()}") + 1
            if used + cost > self.config.window_tokens:
                break
            kept.append(t)
            used += cost
        kept.reverse()
        return Retrieved(
            context=render_turns(kept, self.conversation),
            ids=[t.dia_id for t in reversed(kept)],  # most recent first
            info={"window_tokens": self.config.window_tokens, "turns": len(kept)},
        )

    def retrieve(self, query: str) -> Retrieved:
        r = self._ret
        return Retrieved(context=r.context, ids=list(r.ids), info=dict(r.info))

    def describe(self) -> dict[str, Any]:
        return {"method": self.name, "window_tokens": self.config.window_tokens}


def turn_index_text(t: Turn) -> str:
    """What the retrievers index for one turn: speaker, text and image caption."""
    return t.render()


class _TopKTurns(_TurnMethod):
    ranked = True

    def _index(self) -> Any:
        raise NotImplementedError

    def retrieve(self, query: str) -> Retrieved:
        assert self.conversation is not None
        turns = self._turns()
        hits = self._index().search(query, self.config.top_k)
        picked = [turns[i] for i, _ in hits]
        chronological = sorted(picked, key=lambda t: turns.index(t))
        return Retrieved(
            context=render_turns(chronological, self.conversation),
            ids=[t.dia_id for t in picked],
            info={"scores": [round(s, 4) for _, s in hits]},
        )

    def describe(self) -> dict[str, Any]:
        return {"method": self.name, "top_k": self.config.top_k}


class BM25Turns(_TopKTurns):
    """Okapi BM25 over raw turns; the top-k shown in conversation order."""

    name = "bm25"

    def _ingest(self, conversation: Conversation, shared: SharedIngest, stats: IngestStats) -> None:
        self._bm25: BM25Index = shared.get_or_build(
            "bm25_turns", lambda: BM25Index.build([turn_index_text(t) for t in conversation.turns]), stats
        )

    def _index(self) -> BM25Index:
        return self._bm25


class DenseTurns(_TopKTurns):
    """Cosine similarity of turn embeddings to the question embedding; top-k in conversation order."""

    name = "dense"

    def _ingest(self, conversation: Conversation, shared: SharedIngest, stats: IngestStats) -> None:
        if self.embedder is None:
            raise MethodUnavailableError("dense needs an embedder (--embedder)")
        emb = self.embedder
        self._dense: DenseIndex = shared.get_or_build(
            f"dense_turns:{emb.name}",
            lambda: DenseIndex.build([turn_index_text(t) for t in conversation.turns], emb),
            stats,
        )

    def _index(self) -> DenseIndex:
        return self._dense

    def describe(self) -> dict[str, Any]:
        return {"method": self.name, "top_k": self.config.top_k,
                "embedder": self.embedder.name if self.embedder else None}


# --------------------------------------------------------------------------- Rsum


def rsum_turn(t: Turn) -> dict[str, str]:
    """A turn as Rsum's memory update sees it (an image's caption appended to the text)."""
    text = t.text if not t.blip_caption else f"{t.text} [shares an image: {t.blip_caption}]"
    return {"speaker": t.speaker, "text": text}


@dataclass(slots=True)
class RsumState:
    memory: str
    per_session: list[str]  # M_1 … M_N
    usage: UsageSummary


def build_rsum(llm: LLM, conversation: Conversation, max_sentences: int,
               decoding: int = MEMORY_DECODING) -> RsumState:
    """``M_i = LLM(S_i, M_{i-1}, P_m)`` over every session, in order (chronomem.summarize.rsum);
    ``decoding``: the update's revision (default: the library's)."""
    from ..summarize.rsum import NO_MEMORY, update_memory

    memory = NO_MEMORY
    usage = UsageSummary()
    checkpoints: list[str] = []
    for session in conversation.sessions:
        if not session.turns:
            continue
        upd = update_memory(llm, [rsum_turn(t) for t in session.turns], memory,
                            max_sentences=max_sentences, session_time=session.date_time,
                            decoding=decoding)
        for u in upd.usages:
            usage.add(u)
        memory = upd.memory
        checkpoints.append(memory)
    return RsumState(memory=memory, per_session=checkpoints, usage=usage)


def rsum_config(config: MethodConfig) -> dict[str, Any]:
    """What determines the Rsum memory, for the ``describe()`` of the methods that show it."""
    from ..summarize.rsum import MEMORY_APPEND_PROMPT, MEMORY_POSTPROCESS, MEMORY_PROMPT

    prompt = MEMORY_PROMPT if config.rsum_decoding < 3 else f"{MEMORY_PROMPT}+{MEMORY_APPEND_PROMPT}"
    return {"max_sentences": config.rsum_max_sentences, "memory_prompt": prompt,
            "memory_postprocess": MEMORY_POSTPROCESS, "memory_decoding": config.rsum_decoding}


def shared_rsum(llm: LLM, conversation: Conversation, shared: SharedIngest, config: MethodConfig,
                stats: IngestStats) -> tuple[RsumState, bool]:
    """The conversation's Rsum memory, built once for every method that uses it; True if built by this call."""
    key = f"rsum:{llm.name}:{config.rsum_max_sentences}:{config.rsum_decoding}"
    built = key not in shared
    return shared.get_or_build(
        key, lambda: build_rsum(llm, conversation, config.rsum_max_sentences, config.rsum_decoding), stats), built


class RsumMethod(Method):
    """The recursive-summary memory ``M_N`` after the last session, as the whole context."""

    name = "rsum"

    def _ingest(self, conversation: Conversation, shared: SharedIngest, stats: IngestStats) -> None:
        self._rsum, built = shared_rsum(self.llm, conversation, shared, self.config, stats)
        if built:
            stats.usage = self._rsum.usage

    def retrieve(self, query: str) -> Retrieved:
        return Retrieved(context=self._rsum.memory, info={"memory_sessions": len(self._rsum.per_session)})

    def memory_text(self) -> str | None:
        return self._rsum.memory

    def describe(self) -> dict[str, Any]:
        return {"method": self.name, **rsum_config(self.config)}


class BM25RsumMethod(BM25Turns):
    """BM25 top-k turns plus the Rsum memory (the paper's complementary combination)."""

    name = "bm25+rsum"

    def _ingest(self, conversation: Conversation, shared: SharedIngest, stats: IngestStats) -> None:
        super()._ingest(conversation, shared, stats)
        self._rsum, built = shared_rsum(self.llm, conversation, shared, self.config, stats)
        if built:
            stats.usage = self._rsum.usage

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), **rsum_config(self.config)}

    def retrieve(self, query: str) -> Retrieved:
        turns = super().retrieve(query)
        context = f"Summary of all sessions:\n{self._rsum.memory}\n\nRelevant turns:\n{turns.context}"
        return Retrieved(context=context, ids=turns.ids, info=turns.info)

    def memory_text(self) -> str | None:
        return self._rsum.memory


# --------------------------------------------------------------------------- registry

MethodFactory = Callable[[LLM, MethodConfig, "Embedder | None"], Method]


@dataclass(frozen=True, slots=True)
class MethodInfo:
    name: str
    description: str
    factory: MethodFactory | None = None
    needs_embedder: bool = False
    #: ``Memory`` methods the adapter calls; the method is refused, naming them, when any is missing.
    needs_memory_api: tuple[str, ...] = ()
    needs_options: tuple[str, ...] = ()  # ``SearchConfig`` fields (read-path switches) the adapter sets


def _cls_factory(cls: type[Method]) -> MethodFactory:
    def make(llm: LLM, config: MethodConfig, embedder: Embedder | None) -> Method:
        return cls(llm, config, embedder)

    return make


def _memory_factory(name: str) -> MethodFactory:
    def make(llm: LLM, config: MethodConfig, embedder: Embedder | None) -> Method:
        from .memory_methods import make_memory_method  # imports chronomem.Memory on first use

        return make_memory_method(name, llm, config, embedder)

    return make


#: The Memory APIs every memory-based adapter calls (memory_methods.ingest_conversation / retrieve).
_MEMORY_API = ("add", "extract_pending", "search", "history")

#: Every method BENCHMARKS.md compares.  A memory-based method
#: lists the ``Memory`` methods and ``SearchConfig`` fields its adapter uses
#: (``needs_memory_api`` / ``needs_options``); it is refused, naming them, when
#: this build lacks any.
METHODS: dict[str, MethodInfo] = {
    m.name: m
    for m in [
        MethodInfo("full_context", "every turn, truncated to the model's window (oldest dropped)",
                   _cls_factory(FullContext)),
        MethodInfo("sliding_window", "the most recent turns within --window-tokens", _cls_factory(SlidingWindow)),
        MethodInfo("bm25", "BM25 over raw turns, top-k", _cls_factory(BM25Turns)),
        MethodInfo("dense", "embedding search over raw turns, top-k", _cls_factory(DenseTurns), needs_embedder=True),
        MethodInfo("rsum", "recursive summary memory M_N (Wang et al.)", _cls_factory(RsumMethod)),
        MethodInfo("bm25+rsum", "BM25 top-k turns plus the Rsum memory", _cls_factory(BM25RsumMethod)),
        # --- chronomem's fact memory (chronomem.bench.memory_methods), one shared ingestion
        MethodInfo("flat_facts", "extracted facts as flat text + vector search top-k, no graph/time (Mem0-style)",
                   _memory_factory("flat_facts"), needs_embedder=True, needs_memory_api=_MEMORY_API),
        MethodInfo("vanilla_graph", "graph search over bare triples: no time, confidence, intents or counterfactuals",
                   _memory_factory("vanilla_graph"), needs_embedder=True, needs_memory_api=_MEMORY_API,
                   needs_options=("use_validity", "include_unstable", "use_confidence", "use_intents",
                                  "counterfactual", "evaluator")),
        MethodInfo("real", "REAL temporal graph retrieval (Memory.search as Memory.answer runs it)",
                   _memory_factory("real"), needs_embedder=True, needs_memory_api=_MEMORY_API),
        MethodInfo("real+rsum", "REAL evidence plus the Rsum memory", _memory_factory("real+rsum"),
                   needs_embedder=True, needs_memory_api=_MEMORY_API),
        MethodInfo("real+sources", "REAL evidence plus the verbatim source turns of its facts",
                   _memory_factory("real+sources"), needs_embedder=True, needs_memory_api=_MEMORY_API,
                   needs_options=("quote_sources",)),
        MethodInfo("real+turns", "REAL evidence, its source turns, then full-text hits over the turns",
                   _memory_factory("real+turns"), needs_embedder=True, needs_memory_api=_MEMORY_API,
                   needs_options=("quote_sources", "search_turns")),
        MethodInfo("real+fts", "REAL evidence, then 12 full-text hits over the turns (no source quotes)",
                   _memory_factory("real+fts"), needs_embedder=True, needs_memory_api=_MEMORY_API,
                   needs_options=("search_turns",)),
        MethodInfo("real+replies", "real+turns whose full-text hits each bring their reply, in as many turns",
                   _memory_factory("real+replies"), needs_embedder=True, needs_memory_api=_MEMORY_API,
                   needs_options=("quote_sources", "search_turns", "turn_replies")),
        MethodInfo("real+fused", "fused read path: graph evidence, then turns by rank fusion of its sources, "
                   "turn hits and fact hits", _memory_factory("real+fused"), needs_embedder=True,
                   needs_memory_api=_MEMORY_API, needs_options=("fused_turns",)),
        MethodInfo("answer", "exactly what Memory.answer retrieves (chronomem.retrieve.ANSWER_CONFIG)",
                   _memory_factory("answer"), needs_embedder=True, needs_memory_api=_MEMORY_API),
        MethodInfo("real+floor", "real+turns without paths of query relevance <= 0.5; turns alone when none is left",
                   _memory_factory("real+floor"), needs_embedder=True, needs_memory_api=_MEMORY_API,
                   needs_options=("quote_sources", "search_turns", "min_relevance", "fallback_turns")),
        MethodInfo("real-no-intervals", "REAL ablation: no validity intervals", _memory_factory("real-no-intervals"),
                   needs_embedder=True, needs_memory_api=_MEMORY_API, needs_options=("use_validity",)),
        MethodInfo("real-no-confidence", "REAL ablation: no confidence (unstable facts in, scores ignore it)",
                   _memory_factory("real-no-confidence"), needs_embedder=True, needs_memory_api=_MEMORY_API,
                   needs_options=("include_unstable", "use_confidence")),
        MethodInfo("real-no-intents", "REAL ablation: no intent decoupling", _memory_factory("real-no-intents"),
                   needs_embedder=True, needs_memory_api=_MEMORY_API, needs_options=("use_intents",)),
        MethodInfo("real-no-evaluator", "REAL ablation: no semantic evaluator", _memory_factory("real-no-evaluator"),
                   needs_embedder=True, needs_memory_api=_MEMORY_API, needs_options=("evaluator",)),
        MethodInfo("real-no-counterfactuals", "REAL ablation: no counterfactual inference",
                   _memory_factory("real-no-counterfactuals"), needs_embedder=True, needs_memory_api=_MEMORY_API,
                   needs_options=("counterfactual",)),
    ]
}


def unavailable_reason(name: str) -> str | None:
    """Why ``name`` cannot run in this build, or None when it can."""
    info = METHODS.get(name)
    if info is None:
        return f"unknown method {name!r}; known: {', '.join(METHODS)}"
    if info.needs_memory_api:
        import chronomem

        memory_cls = getattr(chronomem, "Memory", None)
        missing = [a for a in info.needs_memory_api if not callable(getattr(memory_cls, a, None))]
        if missing:
            return (f"{name} is not available: it needs chronomem.Memory."
                    f"{', Memory.'.join(missing)}, which this build does not have")
    if info.needs_options:
        from ..retrieve.beam import SearchConfig

        lacking = [o for o in info.needs_options if o not in SearchConfig.__dataclass_fields__]
        if lacking:
            return (f"{name} is not available: it needs the read-path switch SearchConfig."
                    f"{', SearchConfig.'.join(lacking)}, which chronomem.retrieve does not have")
    if info.factory is None:
        return f"{name} is not available: no benchmark adapter (chronomem.bench.methods.METHODS[{name!r}].factory)"
    return None


def available_methods() -> list[str]:
    return [n for n in METHODS if unavailable_reason(n) is None]


def make_method(name: str, llm: LLM, config: MethodConfig | None = None, embedder: Embedder | None = None) -> Method:
    """Instantiate a registered method, or raise :class:`MethodUnavailableError` saying why not."""
    reason = unavailable_reason(name)
    if reason is not None:
        raise MethodUnavailableError(reason)
    info = METHODS[name]
    if info.needs_embedder and embedder is None:
        raise MethodUnavailableError(f"{name} needs an embedder (--embedder)")
    assert info.factory is not None
    return info.factory(llm, config or MethodConfig(), embedder)
