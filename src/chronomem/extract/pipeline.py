"""The REAL write path: messages in → verbatim store → chunked extraction → graph update.

:class:`WritePipeline` is what ``Memory.add`` and ``Memory.extract_pending``
delegate to.  Steps (REAL's write path):

1. normalise and validate the whole input first (nothing is written when any
   message is bad);
2. store the messages verbatim, idempotently by id (re-adding known ids costs
   no LLM call);
3. extract the newly stored turns in chunks — ONE structured LLM call per
   chunk, never per turn;
4. resolve times in code, score confidence, label intents
   (:mod:`.extractor`), and hand the candidate facts to ``GraphWriter.apply``,
   which resolves entities and applies the non-destructive update rules;
5. mark the turns extracted.  A chunk whose model output stays malformed
   after the provider's retries keeps its messages and is marked
   :data:`FAILED` so :meth:`WritePipeline.extract_pending` retries it.
"""

from __future__ import annotations

import hashlib
import logging
import uuid
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from ..config import EXTRACTION_METHODS
from ..errors import (ChronomemError, ModelUnavailableError, TruncatedOutputError, ValidationError, log_reason,
                      public_reason)
from ..graph import FactValidator
from ..model import Fact, FactInput, Message, Origin, UpdateReport
from ..providers.base import CallUsage, UsageTotals
from ..validation import check_id, check_name, check_text, check_user
from ..timeutil import parse_time, to_micros, utcnow
from . import casing
from .chunking import DEFAULT_CHUNK_SIZE, DEFAULT_CONTEXT, Chunk, chunk_turns
from .extractor import POSTPROCESS_VERSION as V1_RULES, PROMPT_VERSION, SUBJECT_NOT_GROUNDED, Extractor, canonical_relation
from .line_observations import LineObservationExtractor
from .observations import RULE_FAILED, ObservationExtractor

if TYPE_CHECKING:
    from ..graph import GraphWriter
    from ..providers.modelset import LLMSource
    from ..registry import RelationRegistry
    from ..store.base import Store

log = logging.getLogger(__name__)

PENDING = 0
EXTRACTED = 1
FAILED = 2  # extraction was tried and failed; still pending (store: extracted <> 1)

MESSAGE_FIELDS = frozenset({"speaker", "role", "name", "text", "content", "id", "timestamp"})
DEFAULT_SPEAKER = "user"  # speaker of a bare-string message


@dataclass(frozen=True, slots=True)
class MethodRecipe:
    """What an extraction method is: its extractor, prompt version and post-processing rule set.
    A measured method is frozen — a better prompt or rule set becomes a new method — so a memory
    written by it (and a benchmark keyed on it) can be written again the same way."""

    extractor: type[Extractor]
    prompt: str
    rules: int  # the post-processing rule set (v1: extractor.POSTPROCESS_VERSION, fixed)
    casing: bool = False  # turns typed in lowercase read through a cased copy (:mod:`.casing`)


#: Extraction methods (``Config.extraction`` names the same ones): "v1" = one call writes
#: sextuples (prompt extract_v3); "v2" = one call writes dated statements, typed into sextuples
#: (prompt observe_v1, :mod:`.observations`); "v3" = v2 with one grammar-fixed slot per line
#: (prompt observe_lines_v1, :mod:`.line_observations`), rules 6, as #21's held-out run writes its
#: memories; "v4" = v3's prompt under rules 7 (small talk dropped, "lives in X and works at Y" both
#: kept, a residence needs living or moving in the statement); "v5" = v3's prompt under rules 8 (an employer,
#: school or job title needs a statement that says so; a shared photo is ``shared_photo``, not owned,
#: a catch-all fact's object is its statement); "v6" = v3's prompt under rules 9 (rules 8, but a
#: catch-all fact keeps its short object and is told from another by its statement); "v7" = v3's
#: prompt under rules 10 (rules 7, and a chunk's catch-all facts told apart by their statements); "v8" =
#: v3's prompt under rules 11 (rules 10, typed facts checked against their statements as rules 8 do, a shared
#: photo a catch-all fact with its object kept, reactions to the other speaker dropped); "v9" = v3's prompt
#: under rules 12 (rules 11, and who a statement is about read from the chunk's lines: :mod:`.speakers`);
#: "v10" / "v11" = v4 / v9 with the state rules (rules 13 / 14, :mod:`.states`: ranges told late, endings
#: that reach their object, moves and departures in a second clause, employers typed as schools, kin
#: named in a line); "v12" = v11 whose check of an employer against its statement reads the ways people
#: say where they work (rules 15: "teaches at", "a designer at", "flies for", "retired from"); "v13" = v10
#: reading each turn typed in lowercase through a cased copy ("moved to berlin" → "moved to Berlin":
#: :mod:`.casing`).
METHOD_RECIPES: dict[str, MethodRecipe] = {
    "v1": MethodRecipe(Extractor, PROMPT_VERSION, V1_RULES),
    "v2": MethodRecipe(ObservationExtractor, ObservationExtractor.default_prompt, 6),
    "v3": MethodRecipe(LineObservationExtractor, LineObservationExtractor.default_prompt, 6),
    "v4": MethodRecipe(LineObservationExtractor, LineObservationExtractor.default_prompt, 7),
    "v5": MethodRecipe(LineObservationExtractor, LineObservationExtractor.default_prompt, 8),
    "v6": MethodRecipe(LineObservationExtractor, LineObservationExtractor.default_prompt, 9),
    "v7": MethodRecipe(LineObservationExtractor, LineObservationExtractor.default_prompt, 10),
    "v8": MethodRecipe(LineObservationExtractor, LineObservationExtractor.default_prompt, 11),
    "v9": MethodRecipe(LineObservationExtractor, LineObservationExtractor.default_prompt, 12),
    "v10": MethodRecipe(LineObservationExtractor, LineObservationExtractor.default_prompt, 13),
    "v11": MethodRecipe(LineObservationExtractor, LineObservationExtractor.default_prompt, 14),
    "v12": MethodRecipe(LineObservationExtractor, LineObservationExtractor.default_prompt, 15),
    "v13": MethodRecipe(LineObservationExtractor, LineObservationExtractor.default_prompt, 13, casing=True),
}
METHODS = EXTRACTION_METHODS
assert tuple(METHOD_RECIPES) == METHODS, "config.EXTRACTION_METHODS and METHOD_RECIPES must name the same methods"
DEFAULT_METHOD = "v10"


def method_versions(method: str) -> tuple[str, int]:
    """The default prompt version and post-processing version of an extraction ``method``: what,
    besides the model, decides the facts it writes (benchmarks key their memories on them)."""
    recipe = METHOD_RECIPES.get(method)
    if recipe is None:
        raise ValidationError("method", method, f"unknown extraction method; one of {', '.join(METHODS)}")
    return recipe.prompt, recipe.rules


@dataclass(slots=True)
class FailedChunk:
    """Turns whose extraction failed: ``error`` for the caller (the error's class and message,
    which a model's reply never reaches: :class:`~chronomem.errors.StructuredOutputError` keeps
    it in ``raw``); ``reason`` is safe to log (no user text: :func:`~chronomem.errors.log_reason`);
    ``public`` is what a service shows its tenants (no model endpoint: :func:`~chronomem.errors.public_reason`)."""

    message_ids: list[str]
    error: str
    reason: str = ""
    public: str = ""

    @classmethod
    def of(cls, message_ids: list[str], e: BaseException) -> FailedChunk:
        return cls(message_ids, f"{type(e).__name__}: {e}"[:500], log_reason(e), public_reason(e, 500))


@dataclass(slots=True)
class AddResult:
    """What one ``add`` / ``extract_pending`` did: the turns stored (``messages_stored``, ``message_ids``;
    ``messages_skipped``: ids already stored, ``retry_ids`` of them not extracted yet), extracted (``messages_extracted``, in ``chunks`` model calls),
    the facts ``added``, ``closed`` (a new value of a single-valued relation ended them) and ``reinforced``
    (said again), the turns whose extraction failed (``failed_chunks``, pending for a retry), ``warnings``,
    and ``usage``: the model's ``calls``, ``cached_calls``, ``prompt_tokens``, ``completion_tokens`` and
    ``latency_s`` (all 0 when no call was made)."""

    session_id: str | None
    messages_stored: int = 0  # newly stored (re-sent ids are not counted)
    messages_skipped: int = 0  # ids that were already stored
    messages_extracted: int = 0
    chunks: int = 0  # LLM extraction calls attempted
    added: list[Fact] = field(default_factory=list)
    closed: list[Fact] = field(default_factory=list)
    reinforced: list[Fact] = field(default_factory=list)
    failed_chunks: list[FailedChunk] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    usage: dict[str, Any] = field(default_factory=lambda: UsageTotals().as_dict())
    session_ids: list[str] = field(default_factory=list)  # every session touched
    message_ids: list[str] = field(default_factory=list)  # ids of the newly stored turns
    retry_ids: list[str] = field(default_factory=list)  # ids sent again, stored but not extracted yet

    @property
    def facts_added(self) -> int:
        return len(self.added)

    @property
    def facts_closed(self) -> int:
        return len(self.closed)

    @property
    def facts_reinforced(self) -> int:
        return len(self.reinforced)

    @property
    def ok(self) -> bool:
        return not self.failed_chunks

    def summary(self) -> str:
        return (
            f"session {self.session_id}: {self.messages_stored} stored, {self.messages_skipped} already known, "
            f"{self.chunks} extraction call(s), facts +{self.facts_added} closed {self.facts_closed} "
            f"reinforced {self.facts_reinforced}"
            + (f", {len(self.failed_chunks)} chunk(s) left for re-extraction" if self.failed_chunks else "")
        )


# ------------------------------------------------------------------ input normalisation


@dataclass(slots=True)
class _Incoming:
    id: str | None
    speaker: str
    text: str
    timestamp: datetime | None


def _content_text(value: Any, where: str) -> str:
    if isinstance(value, str):
        if "\x00" in value:  # PostgreSQL cannot store it; refuse it on every store alike
            raise ValidationError(where, value[:40], "contains a NUL character")
        return value
    if isinstance(value, list):  # OpenAI multi-part content: accept text parts only
        parts = []
        for i, p in enumerate(value):
            if isinstance(p, Mapping) and p.get("type") == "text" and isinstance(p.get("text"), str):
                parts.append(p["text"])
            else:
                kind = p.get("type") if isinstance(p, Mapping) else type(p).__name__
                raise ValidationError(f"{where}[{i}]", kind, "only text content can be stored")
        return "\n".join(parts)
    raise ValidationError(where, type(value).__name__, "must be text (a string)")


def normalize_messages(messages: Any) -> list[_Incoming]:
    """Validate caller input; raise :class:`ValidationError` naming the field.

    Accepts a bare string (one message by ``"user"``), one dict, or a list of
    strings/dicts.  Dict keys: ``speaker`` | ``role`` (+ optional ``name``,
    which wins as the speaker), ``text`` | ``content``, optional ``id`` and
    ``timestamp``.  Unknown keys, empty or non-text content, missing speakers
    and duplicate ids are errors.
    """
    if isinstance(messages, str | Mapping):
        messages = [messages]
    if not isinstance(messages, Sequence) or isinstance(messages, bytes):
        raise ValidationError("messages", type(messages).__name__, "must be a string, a message dict or a list of them")
    if not messages:
        raise ValidationError("messages", messages, "must not be empty")
    out: list[_Incoming] = []
    seen: set[str] = set()
    for i, m in enumerate(messages):
        where = f"messages[{i}]"
        if isinstance(m, str):
            m = {"speaker": DEFAULT_SPEAKER, "text": m}
        if not isinstance(m, Mapping):
            raise ValidationError(where, type(m).__name__, "must be a string or a dict")
        unknown = sorted(set(m) - MESSAGE_FIELDS)
        if unknown:
            raise ValidationError(f"{where}.{unknown[0]}", m[unknown[0]],
                                  f"unknown field; allowed: {', '.join(sorted(MESSAGE_FIELDS))}")
        speaker_key = next((k for k in ("name", "speaker", "role") if m.get(k) is not None), None)
        if speaker_key is None:
            raise ValidationError(f"{where}.speaker", None, "each message needs a speaker (or role)")
        speaker = m[speaker_key]
        check_name(f"{where}.{speaker_key}", speaker)  # the same limits on every store (chronomem.limits)
        if m.get("text") is not None and m.get("content") is not None and m["text"] != m["content"]:
            # which of two different texts was meant cannot be told: one would be dropped without a word
            raise ValidationError(f"{where}.content", str(m["content"])[:40], "give the turn's words as text or "
                                                                             "as content, not both")
        text_key = "text" if m.get("text") is not None else "content"
        if m.get(text_key) is None:
            raise ValidationError(f"{where}.text", None, "each message needs text (or content)")
        text = check_text(f"{where}.{text_key}", _content_text(m[text_key], f"{where}.{text_key}"))
        if not text.strip():
            raise ValidationError(f"{where}.{text_key}", m[text_key], "must not be empty")
        mid = m.get("id")
        if mid is not None:
            if isinstance(mid, bool) or not isinstance(mid, str | int) or not str(mid).strip():
                raise ValidationError(f"{where}.id", mid, "must be a non-empty string or integer")
            mid = check_id(f"{where}.id", str(mid).strip())
            if mid in seen:
                raise ValidationError(f"{where}.id", mid, "duplicate id in this call")
            seen.add(mid)
        ts = None if m.get("timestamp") is None else parse_time(m["timestamp"], f"{where}.timestamp",
                                                                 keep_offset=True)
        out.append(_Incoming(mid, speaker.strip(), text, ts))
    return out


def content_message_id(session_id: str, speaker: str, text: str, timestamp: datetime, occurrence: int = 0) -> str:
    """The default id of a turn: a hash of its session, speaker, text and timestamp, and ``occurrence``
    (0 for the first turn with those four in one call, 1 for the next …), as 32 hex digits.

    Posting the same conversation again therefore yields the same ids, and the store (idempotent by
    id) keeps one copy.  A turn without a timestamp gets the time it arrived, so two "ok"s sent
    one minute apart stay two turns.
    """
    key = "\x1f".join((session_id, speaker, text, str(to_micros(timestamp)), str(occurrence)))
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]


def _default_ids(incoming: Sequence[_Incoming], session_id: str, times: Sequence[datetime]) -> list[str]:
    seen: dict[tuple[str, str, datetime], int] = {}
    ids = []
    for m, ts in zip(incoming, times):
        if m.id is not None:  # the caller's id wins
            ids.append(m.id)
            continue
        k = (m.speaker, m.text, ts)
        seen[k] = seen.get(k, -1) + 1
        ids.append(content_message_id(session_id, m.speaker, m.text, ts, seen[k]))
    return ids


# ------------------------------------------------------------------ the pipeline


class WritePipeline:
    """The write path over a store: messages in, facts through ``graph`` out.

    Built from what it uses: the ``store`` for the verbatim turns, the relation
    ``registry`` the extractor is told about, the ``graph`` writer that applies
    the update rules, and ``models`` whose ``llm`` is fetched when the first
    chunk is extracted.  ``chunk_size`` turns per LLM call with ``context``
    preceding turns shown for understanding only.
    """

    def __init__(
        self,
        *,
        store: Store,
        registry: RelationRegistry,
        graph: GraphWriter,
        models: LLMSource,
        chunk_size: int = DEFAULT_CHUNK_SIZE,
        context: int = DEFAULT_CONTEXT,
        prompt_version: str | None = None,
        method: str = DEFAULT_METHOD,
    ) -> None:
        if method not in METHODS:
            raise ValidationError("method", method, f"unknown extraction method; one of {', '.join(METHODS)}")
        if chunk_size < 1:
            raise ValidationError("chunk_size", chunk_size, "must be >= 1")
        if context < 0:
            raise ValidationError("context", context, "must be >= 0")
        self.store = store
        self.registry = registry
        self.graph = graph
        self.models = models
        self.chunk_size = chunk_size
        self.context = context
        self.method = method
        self.prompt_version = prompt_version
        self._extractor: Extractor | None = None

    # -- public ------------------------------------------------------------------------
    def prepare(
        self,
        messages: Any,
        *,
        user_id: str,
        session_id: str | None = None,
        timestamp: datetime | str | None = None,
        agent_id: str | None = None,
        next_seq: int = 0,
    ) -> tuple[AddResult, list[Message]]:
        """Validate ``messages`` and turn them into :class:`Message` rows (nothing is written).

        Per-message timestamps override ``timestamp``; with neither, the
        current time is used and the result says so.
        """
        user_id = check_user(user_id)
        if session_id is not None:
            check_id("session_id", session_id)
        if agent_id is not None:
            check_id("agent_id", agent_id)
        base_ts = None if timestamp is None else parse_time(timestamp, "timestamp", keep_offset=True)
        incoming = normalize_messages(messages)  # all validation before any write
        result = AddResult(session_id=session_id or uuid.uuid4().hex)
        sid = result.session_id
        assert sid is not None
        result.session_ids = [sid]
        now = utcnow()
        missing_ts = sum(1 for m in incoming if m.timestamp is None) if base_ts is None else 0
        if missing_ts:
            result.warnings.append(
                f"no timestamp given for {missing_ts} message(s); used the current time ({now.isoformat()})"
            )
        # identical fallback times would lose the order; keep it with microsecond steps
        times = [m.timestamp or base_ts or (now + timedelta(microseconds=i)) for i, m in enumerate(incoming)]
        ids = _default_ids(incoming, sid, times)
        msgs = [Message(
            id=mid, user_id=user_id, session_id=sid, speaker=m.speaker, text=m.text, timestamp=ts,
            recorded_at=now, agent_id=agent_id, seq=next_seq + i,
        ) for i, (m, mid, ts) in enumerate(zip(incoming, ids, times))]
        return result, msgs

    def add(
        self,
        messages: Any,
        *,
        user_id: str,
        session_id: str | None = None,
        timestamp: datetime | str | None = None,
        agent_id: str | None = None,
        extract: bool = True,
        progress: Callable[[int, int], None] | None = None,
    ) -> AddResult:
        """Store ``messages`` verbatim (idempotently by id) and extract facts from the new ones.

        ``extract=False`` only stores (call :meth:`extract_pending` later).
        ``progress(done, total)`` is called after each chunk.
        """
        store = self.store
        result, msgs = self.prepare(messages, user_id=user_id, session_id=session_id, timestamp=timestamp,
                                    agent_id=agent_id)
        sid = result.session_id
        assert sid is not None
        with store.transaction(user_id):
            refuse_id_clashes(store, user_id, msgs)
            existing = store.messages(user_id, session_id=sid)
            next_seq = max((m.seq for m in existing), default=-1) + 1
            for i, m in enumerate(msgs):
                m.seq = next_seq + i
            store.ensure_session(user_id, sid, started_at=min(x.timestamp for x in msgs), agent_id=agent_id)
            new = store.add_messages(user_id, msgs)
        result.messages_stored = len(new)
        result.messages_skipped = len(msgs) - len(new)
        result.message_ids = [m.id for m in new]
        # turns sent again that are stored but not extracted (a crash or a failed chunk left them so):
        # the natural retry is to send the same turns again, so it extracts them too (a queued job too)
        fresh = {m.id for m in new}
        resent = [m.id for m in msgs if m.id not in fresh]
        again = store.messages(user_id, ids=resent, pending_only=True) if resent else []
        result.retry_ids = [m.id for m in again]
        if again:
            result.warnings.append(f"{len(again)} turn(s) sent again were stored but not extracted yet; "
                                   + ("extracting them now" if extract else "queued with the new ones"))
        if not extract:
            return result
        todo = sorted([*new, *again], key=lambda m: m.seq)  # all of session sid (id clashes were refused)
        if todo:
            self._extract(user_id, todo, result, agent_id=agent_id, progress=progress)
        return result

    def extract_pending(
        self,
        user_id: str,
        session_id: str | None = None,
        *,
        message_ids: Sequence[str] | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> AddResult:
        """Extract every stored turn not yet extracted (new, buffered, or failed before);
        ``message_ids`` limits it to those turns (a queued job extracts only its own)."""
        user_id = check_user(user_id)
        pending = self.store.messages(user_id, session_id=session_id, pending_only=True,
                                      ids=None if message_ids is None else list(message_ids))
        result = AddResult(session_id=session_id)
        result.session_ids = list(dict.fromkeys(m.session_id for m in pending))
        if pending:
            self._extract(user_id, pending, result, agent_id=None, progress=progress)
        return result

    # -- internals -------------------------------------------------------------------------
    def warm(self) -> int:
        """Prefill the extraction prompt's shared start (its system prompt, ≈ 740 tokens for v3) in a
        local model's prompt cache, so the first chunk does not pay for it (≈ 15 s on 2 cores);
        returns the tokens evaluated.  A no-op (0) for models without a prompt cache of their own
        to fill (remote endpoints cache prefixes themselves)."""
        prefill = getattr(self.models.llm, "prefill", None)
        if not callable(prefill):
            return 0
        return int(prefill(self.extractor().head()))

    def extractor(self) -> Extractor:
        if self._extractor is None:
            reg = self.registry
            recipe = METHOD_RECIPES[self.method]
            if issubclass(recipe.extractor, ObservationExtractor):  # each class brings its own cap
                self._extractor = recipe.extractor(self.models.llm, canonical=lambda r: canonical_relation(r, reg),
                                                   prompt_version=self.prompt_version or recipe.prompt,
                                                   rules=recipe.rules)
            else:
                self._extractor = Extractor(
                    self.models.llm, relations=reg.names(), canonical=lambda r: canonical_relation(r, reg),
                    prompt_version=self.prompt_version or recipe.prompt,
                )
        return self._extractor

    def plan_chunks(self, user_id: str, todo: Sequence[Message]) -> list[Chunk[Message]]:
        """Chunks per session in conversation order; context comes from the whole session."""
        chunks: list[Chunk[Message]] = []
        by_session: dict[str, list[Message]] = {}
        for m in todo:
            by_session.setdefault(m.session_id, []).append(m)
        for sid, msgs in by_session.items():
            session = self.store.messages(user_id, session_id=sid)
            pos = {m.id: i for i, m in enumerate(session)}
            msgs.sort(key=lambda m: pos.get(m.id, len(pos)))
            for ch in chunk_turns(msgs, size=self.chunk_size, context=0):
                first = pos.get(ch.turns[0].id)
                ctx: tuple[Message, ...] = ()
                if first is not None and self.context:
                    ctx = tuple(session[max(0, first - self.context):first])
                chunks.append(Chunk(context=ctx, turns=ch.turns))
        return chunks

    def known_names(self, user_id: str, todo: Sequence[Message]) -> casing.Names | None:
        """The names a lowercase turn is read with (:mod:`.casing`): place names and those the user's
        memory holds; ``None`` when the method reads turns as typed or none of ``todo`` is uncased."""
        if not METHOD_RECIPES[self.method].casing or not any(casing.uncased(m.text) for m in todo):
            return None
        return casing.places().learned(e.name for e in self.store.entities(user_id, with_aliases=False))

    def _extract(
        self,
        user_id: str,
        todo: Sequence[Message],
        result: AddResult,
        *,
        agent_id: str | None,
        progress: Callable[[int, int], None] | None,
    ) -> None:
        chunks = self.plan_chunks(user_id, todo)
        totals = UsageTotals()
        try:
            extractor = self.extractor()
        except ModelUnavailableError as e:
            # a failure like a model's: the turns stay pending, the caller (a job: failed, not done) sees why
            result.warnings.append(f"no extraction model available ({type(e).__name__}); messages stored, "
                                   "extraction pending")
            result.failed_chunks.append(FailedChunk.of([m.id for m in todo], e))
            return
        report = UpdateReport()
        names = self.known_names(user_id, todo)
        queue = deque(chunks)
        n = 0
        while queue:
            chunk = queue.popleft()
            n += 1
            ids = [m.id for m in chunk.turns]
            result.chunks += 1
            try:
                cres = extractor.run(casing.reading_copy(chunk, names) if names is not None else chunk)
            except TruncatedOutputError as e:
                totals_add(totals, getattr(e, "usage", None))
                if len(chunk.turns) > 1:  # the reply did not fit: ask again about half the turns at a time
                    half = len(chunk.turns) // 2
                    result.warnings.append(f"the model's reply for turns {ids[0]}..{ids[-1]} was cut off; "
                                           "retrying them as two smaller chunks")
                    before = chunk.context + chunk.turns[:half]
                    queue.extendleft([Chunk(context=before[max(0, len(before) - self.context):] if self.context else (),
                                            turns=chunk.turns[half:]),
                                      Chunk(context=chunk.context, turns=chunk.turns[:half])])
                    continue
                log.warning("extraction of turn %s failed: the reply was cut off: %s", ids[0], log_reason(e))
                result.failed_chunks.append(FailedChunk.of(ids, e))
                result.warnings.append(f"the model's reply for turn {ids[0]} was cut off even alone; "
                                       "marked for re-extraction")
                self._mark_failed(user_id, ids)
                continue
            except ModelUnavailableError as e:
                totals_add(totals, getattr(e, "usage", None))
                # the warning names the kind (a service shows warnings to tenants); the failed chunk, the words
                result.warnings.append(f"extraction model unavailable ({type(e).__name__}); remaining turns left "
                                       "pending")
                result.failed_chunks.append(FailedChunk(ids, str(e), log_reason(e), public_reason(e, 500)))
                self._mark_failed(user_id, ids)
                break
            except Exception as e:  # malformed output after retries, model error, schema mismatch
                totals_add(totals, getattr(e, "usage", None))
                # WARNING names the error's class (and a message only where it quotes no user text);
                # DEBUG only: the whole message, which may quote the turns or the model's reply
                log.warning("extraction of %d turn(s) failed: %s", len(ids), log_reason(e))
                log.debug("extraction of turns %s failed: %s: %s", ids, type(e).__name__, e)
                result.failed_chunks.append(FailedChunk.of(ids, e))
                result.warnings.append(f"extraction failed for turns {ids[0]}..{ids[-1]}; marked for re-extraction")
                self._mark_failed(user_id, ids)
                if progress:
                    progress(n, n + len(queue))
                continue
            totals_add(totals, cres.usage)
            result.warnings.extend(note for note in cres.notes if note.startswith((SUBJECT_NOT_GROUNDED, RULE_FAILED)))
            facts = self._valid(cres.candidates, result)
            try:
                # the facts and the turns' "extracted" mark commit together: a crash between them
                # would re-extract the turns and reinforce their facts a second time
                with self.store.transaction(user_id):
                    facts, gone = self._sourced(user_id, ids, facts)
                    rep = self.graph.apply(user_id, facts, agent_id=agent_id, default_origin=Origin.STATED)
                    self.store.mark_extracted(user_id, [i for i in ids if i not in gone], EXTRACTED)
            except ChronomemError as e:
                log.warning("graph update failed for %d turn(s): %s", len(ids), log_reason(e))
                log.debug("graph update of turns %s failed: %s: %s", ids, type(e).__name__, e)
                result.failed_chunks.append(FailedChunk.of(ids, e))
                result.warnings.append(f"graph update failed for turns {ids[0]}..{ids[-1]}; marked for re-extraction")
                self._mark_failed(user_id, ids)
                continue
            if gone:
                result.warnings.append(f"{len(gone)} of turns {ids[0]}..{ids[-1]} were forgotten or extracted by "
                                       "another call while the model read them; nothing was written for them")
            report.merge(rep)
            log.info("chunk %d/%d (%d turns): %d candidate(s) → +%d closed %d reinforced %d; %s",
                     n, n + len(queue), len(ids), len(facts), len(rep.added), len(rep.closed),
                     len(rep.reinforced), cres.usage)
            result.messages_extracted += len(ids) - len(gone)
            if progress:
                progress(n, n + len(queue))
        result.added.extend(report.added)
        result.closed.extend(report.closed)
        result.reinforced.extend(report.reinforced)
        result.usage = totals.as_dict()

    def _mark_failed(self, user_id: str, ids: Sequence[str]) -> None:
        """Mark the turns failed, for re-extraction; when the store cannot take even that (a full disk),
        they stay pending, which a retry extracts as well."""
        try:
            self.store.mark_extracted(user_id, ids, FAILED)
        except ChronomemError as e:
            log.warning("could not mark %d turn(s) failed (%s); they stay pending", len(ids), log_reason(e))

    def _sourced(self, user_id: str, ids: Sequence[str],
                 facts: list[FactInput]) -> tuple[list[FactInput], set[str]]:
        """``facts`` less what another writer settled during the model call, and the chunk's turns it settled.

        Run inside the write transaction, which no other writer of the same user interleaves with.
        A chunk turn is settled when it was forgotten meanwhile, or extracted meanwhile by a racing
        call (``add`` beside ``end_session``, a job run again after its lease ran out): its facts are
        then gone or already written, and writing them again would resurrect or reinforce them twice.
        A fact keeps the cited turns that still exist and goes when the chunk turns it cites are all
        settled (or, citing none of them, when the whole chunk is).
        """
        cited = {s for f in facts for s in f.source_ids}
        found = self.store.messages(user_id, ids=sorted(cited | set(ids)))
        alive = {m.id for m in found}
        fresh = {m.id for m in found if not m.extracted and m.id in ids}
        settled = {i for i in ids if i not in fresh}
        if not settled and cited <= alive:
            return facts, settled
        kept = []
        for f in facts:
            mine = [s for s in f.source_ids if s in ids]
            if (any(s in fresh for s in mine) if mine else bool(fresh)):
                f.source_ids = [s for s in f.source_ids if s in alive]
                kept.append(f)
        return kept, settled

    def _valid(self, cands: Sequence[FactInput], result: AddResult) -> list[FactInput]:
        """Drop extracted facts the graph would reject, so one bad fact cannot sink the chunk."""
        check = FactValidator(self.registry, default_origin=Origin.STATED)
        out = []
        for c in cands:
            try:
                check(c)
            except ValidationError as e:
                result.warnings.append(f"skipped extracted fact {c.text!r}: {e}")
                continue
            out.append(c)
        return out


def totals_add(totals: UsageTotals, usage: CallUsage | None) -> None:
    if usage is not None:
        totals.add(usage)


def refuse_id_clashes(store: Store, user_id: str, msgs: Sequence[Message],
                      buffered: Sequence[Message] = ()) -> None:
    """A ValidationError when a turn's id is stored already for another turn (another session,
    speaker or text), or waits in the session buffer (``buffered``) as another turn: ids name turns,
    so re-sending one is a no-op, and reusing one for new words must not lose them silently.
    Nothing is written."""
    known = {m.id: m for m in buffered}
    known.update((m.id, m) for m in store.messages(user_id, ids=[m.id for m in msgs]))
    for i, m in enumerate(msgs):
        old = known.get(m.id)
        if old is not None and (old.session_id, old.speaker, old.text) != (m.session_id, m.speaker, m.text):
            raise ValidationError(f"messages[{i}].id", m.id,
                                  f"is the id of another turn (session {old.session_id!r}, "
                                  f"{old.speaker}: {old.text[:40]!r}); give this turn its own id")
