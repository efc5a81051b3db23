"""The public facade: :class:`Memory`.

``Memory`` wires a store, the relation registry, the graph writer and (lazily)
the models together, validates every public argument and scopes everything
by ``user_id``.  Each capability lives in its own module; this file only
delegates.
"""

from __future__ import annotations

import functools
import io
import json
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from contextlib import closing
from datetime import datetime, timedelta
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

from .config import Config
from .extract.entities import FuzzyEntityResolver
from .errors import ChronomemError, ConfigError, NotFoundError, ValidationError, log_reason
from .forgetting import ForgetResult, forget
from .graph import GraphWriter
from .model import (Entity, EntityMerge, EntityPosition, Fact, FactInput, FactPosition, Message, MessagePosition,
                    Session, SessionPosition, UpdateReport)
from .providers.base import Embedder, LLM, UsageTracker
from .providers.cache import cache_owner
from .providers.modelset import ModelSet
from .registry import RelationRegistry, RelationSpec
from .jobs.model import Job, JobPosition, JobStatus
from .jobs.queue import JobQueue
from .jobs.service import JobService
from .keys import DEFAULT_TENANT, check_tenant
from .memo import clear_text_memos
from .store import Store, open_store
from .store.base import UserRows, rows_by_table
from .store.sql import TABLES
from .store.tenant import TenantStore
from .temporal import replaced_by_correction
from .timeutil import iso, local_offset, parse_time, to_micros, utcnow
from .export_reader import ExportReader, OutOfOrder, any_order
from .exports import write_export
from .importing import IMPORT_BATCH, import_batches
from .validation import check_after, check_id, check_limit, check_name, check_text, check_user

if TYPE_CHECKING:  # the write and read paths are imported on first use
    from .extract.pipeline import AddResult, WritePipeline
    from .summarize.buffer import SessionBuffer
    from .summarize.idle import IdleSweep
    from .summarize.lifecycle import SessionEnd, SessionLifecycle
    from .summarize.rsum import RsumMemory
    from .retrieve.answer import Answer
    from .retrieve.options import SearchConfig, SearchOptions
    from .retrieve.search import SearchResult

log = logging.getLogger(__name__)

MAX_IDLE_SECONDS = 100 * 365.25 * 86400  # an idle timeout past which no time arithmetic holds
EXPORT_FORMAT = "chronomem.export"
EXPORT_VERSION = 1

__all__ = ["EXPORT_FORMAT", "EXPORT_VERSION", "ForgetResult", "Memory"]

_P = ParamSpec("_P")
_R = TypeVar("_R")


def _user_calls(method: Callable[Concatenate[Memory, _P], _R]) -> Callable[Concatenate[Memory, _P], _R]:
    """Tag the model-cache entries a method writes or reads with its ``user_id`` (and the tenant),
    so that forgetting the user purges them (:mod:`chronomem.providers.cache`)."""

    @functools.wraps(method)
    def tagged(self: Memory, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        user = kwargs.get("user_id")
        if not isinstance(user, str):
            return method(self, *args, **kwargs)
        with cache_owner(self._cache_owner(user)):
            return method(self, *args, **kwargs)

    return tagged


def _waiting_rows(store: Store, buffer: SessionBuffer | None, user_id: str) -> dict[str, list[dict[str, Any]]]:
    """The user's turns waiting in ``buffer`` and not stored, as an export's rows of pending turns, and the
    rows of their sessions (all of them: the export keeps those it did not dump)."""
    waiting = {sid: buffer.read(user_id, sid) for sid in buffer.active_sessions(user_id)} if buffer else {}
    ids = [m.id for turns in waiting.values() for m in turns]
    stored = {m.id for m in store.messages(user_id, ids=ids)} if ids else set()
    out: dict[str, list[dict[str, Any]]] = {"sessions": [], "messages": []}
    for sid, turns in waiting.items():
        turns = [m for m in turns if m.id not in stored]
        if turns:
            out["sessions"].append({"user_id": user_id, "id": sid, "agent_id": turns[0].agent_id,
                                    "started_at": to_micros(min(m.timestamp for m in turns)), "ended_at": None})
        out["messages"] += [{"user_id": user_id, "id": m.id, "session_id": m.session_id,
                             "agent_id": m.agent_id, "seq": m.seq, "speaker": m.speaker, "text": m.text,
                             "ts": to_micros(m.timestamp), "recorded_at": to_micros(m.recorded_at),
                             "extracted": 0, "utc_offset": local_offset(m.timestamp)} for m in turns]
    return out


def _check_binary(fp: object, mode: str) -> None:
    """Refuse a text stream (``open(path, "w")``, ``io.StringIO``) where bytes are read or written: the
    JSON is UTF-8, and a text stream failed with Python's own TypeError halfway through."""
    if isinstance(fp, io.TextIOBase):
        raise ValidationError("fp", type(fp).__name__, f"must be a binary file (open it with {mode!r}) or a path")


def _make_buffer(spec: SessionBuffer | bool | str | None, tenant: str = DEFAULT_TENANT) -> SessionBuffer | None:
    """``None``: Redis when ``CHRONOMEM_REDIS_URL`` is set, else unbuffered; ``True``: buffered
    (Redis when configured, else in process); ``False``: unbuffered; a URL or a buffer object.
    Each tenant's turns wait apart: a Redis buffer (from a URL or given) is moved under the tenant's
    own key prefix (:func:`~chronomem.summarize.buffer.tenant_prefix`), and any other buffer object
    serves one tenant only."""
    if spec is False or (spec is None and not os.environ.get("CHRONOMEM_REDIS_URL")):
        return None
    from .summarize.buffer import RedisSessionBuffer, make_buffer, tenant_prefix

    if spec is None or spec is True or isinstance(spec, str):
        buf: SessionBuffer = make_buffer(spec if isinstance(spec, str) else None)
    else:
        buf = spec
    if isinstance(buf, RedisSessionBuffer):
        return buf if buf.prefix == tenant_prefix(tenant, buf.root) else buf.for_tenant(tenant)
    owner = getattr(buf, "_chronomem_tenant", None)
    if owner is not None and owner != tenant:
        raise ConfigError(f"this session buffer already holds tenant {owner!r}'s turns; a buffer object other "
                          f"than Redis serves one tenant: give tenant {tenant!r} its own, or a Redis URL")
    try:
        buf._chronomem_tenant = tenant  # type: ignore[attr-defined]
    except AttributeError:  # a buffer with __slots__: nothing to mark
        pass
    return buf


def _check_options(options: object) -> SearchOptions:
    from .retrieve.options import SearchOptions

    if not isinstance(options, SearchOptions):
        raise ValidationError("options", type(options).__name__, "must be a SearchOptions")
    return options


class Memory:
    """Long-term memory for one application, many users.

    >>> mem = Memory(":memory:")
    >>> _ = mem.add_facts([{"subject": "Maya", "relation": "lives_in", "object": "Porto",
    ...                     "valid_from": "2018-01-01"}], user_id="u1")
    >>> [f.object for f in mem.facts(user_id="u1", subject="maya")]
    ['Porto']

    Models: ``llm`` and ``embedder`` take a model instance (any object following
    :class:`chronomem.providers.base.LLM` / :class:`~chronomem.providers.base.Embedder`,
    e.g. ``make_llm("openai:gpt-4o-mini")`` or your own), a spec string
    resolved on first use, or ``None`` for the configured default;
    ``embedder=False`` turns embeddings off, ``llm=False`` the chat model (extraction and
    answers then raise :class:`~chronomem.errors.ConfigError`).  :meth:`use_models` swaps them later.

    The rest:

    * ``location``: a SQLite file path (``~`` is the home folder; ``":memory:"``), a ``sqlite:///`` or
      ``postgresql://`` URL, or a :class:`~chronomem.store.Store` (shared: closing this memory leaves it
      open); ``None``: the configured database (``CHRONOMEM_DB``, the config file's ``db``, else
      ``~/.local/share/chronomem/memory.db``).
    * ``config``: a :class:`~chronomem.config.Config` instead of the one the environment and the config
      file give; ``theta_stable`` overrides its confidence below which a fact is a hedge (0.6).
    * ``relations``: more relations, or other properties for known ones (``RelationSpec`` or dicts like
      ``{"name": "mentor_of", "inverse": "mentee_of"}``).
    * ``buffer``: where a session's turns wait until it ends: ``True`` (Redis when
      ``CHRONOMEM_REDIS_URL`` is set, else this process), ``False`` (stored as they arrive), a
      ``redis://`` URL or a buffer object; ``None``: Redis when configured, else none.
    * ``tenant``: the tenant whose users this memory reads and writes (default ``"default"``).
    * ``queue``: where :meth:`submit_messages` sends jobs (and :meth:`forget` the rewrite of later summaries):
      a broker URL (``amqp://``, ``redis://``) or a queue object; ``None``: ``CHRONOMEM_QUEUE_URL``, else a
      thread of this process.

    Close it (or use it as a context manager) to release the store, the queue and the models.
    """

    def __init__(self, location: str | Path | Store | None = None, *, llm: LLM | str | bool | None = None,
                 embedder: Embedder | str | bool | None = None, config: Config | None = None,
                 theta_stable: float | None = None,
                 relations: Sequence[RelationSpec | Mapping[str, Any]] | None = None,
                 buffer: SessionBuffer | bool | str | None = None, tenant: str | None = None,
                 queue: JobQueue | str | None = None) -> None:
        tenant = check_tenant(DEFAULT_TENANT if tenant is None else tenant)  # "" is no tenant, not the default
        self.config = config or Config.load(theta_stable=theta_stable)
        if config is not None and theta_stable is not None:
            self.config = Config(**{**config.__dict__, "theta_stable": theta_stable})
        self._jobs = JobService(self, queue)  # before the store: it may refuse its settings
        buffer_ = _make_buffer(buffer, tenant)  # before the store: it may refuse
        # the store is bound to one tenant (default: "default", whose user keys are the bare ids);
        # a Store object passed in is shared, not owned: closing this Memory leaves it open
        if isinstance(location, Store):
            bound = TenantStore(location, tenant, owns_inner=False)
        else:
            loc = str(location) if location is not None else self.config.db_location
            bound = TenantStore(open_store(loc), tenant)
        self.store: Store = bound
        self.tenant: str = bound.tenant
        self.registry = RelationRegistry()
        self.registry.update(self.config.relations)
        for r in relations or ():
            if isinstance(r, RelationSpec):
                self.registry.define(r)
            else:
                self.registry.update([r])  # checks that it is a mapping
        self.usage = UsageTracker()
        self.resolver = FuzzyEntityResolver(self.store, scope=self.tenant)
        self.graph = GraphWriter(self.store, self.registry, self.config.theta_stable, self.resolver)
        self.models = ModelSet(llm, embedder, default_llm=self.config.llm,
                               default_embedder=self.config.embedder, usage=self.usage)
        self._pipeline: WritePipeline | None = None
        self._rsum: RsumMemory | None = None
        self._session_lifecycle: SessionLifecycle | None = None
        self._buffer: SessionBuffer | None = buffer_
        self._idle_retried: set[tuple[str, str]] = set()  # idle sessions left open once for a failed extraction

    # -- models (created on first use) -----------------------------------------------------
    @property
    def llm(self) -> LLM:
        """The chat model; created from the configured spec on first use."""
        return self.models.llm

    @property
    def embeddings_enabled(self) -> bool:
        """False when embeddings were turned off (``embedder=False`` or the spec ``"none"``)."""
        return self.models.embeddings_enabled

    @property
    def embedder(self) -> Embedder:
        """The embedding model; created from the configured spec on first use."""
        return self.models.embedder

    def use_models(self, *, llm: LLM | str | bool | None = None,
                   embedder: Embedder | str | bool | None = None) -> Memory:
        """Swap the chat model and/or the embedder (instances or specs; ``None`` keeps the current one).

        The write path, summaries and session lifecycle built on the old models
        are rebuilt on next use.  Returns this memory.
        """
        self.models = self.models.replace(llm=llm, embedder=embedder)
        self._pipeline = None
        self._rsum = None
        self._session_lifecycle = None
        return self

    # -- relations ---------------------------------------------------------------------------
    def define_relation(self, name: str, **props: Any) -> RelationSpec:
        """Define or override a relation: ``define_relation("mentor_of", inverse="mentee_of")``."""
        return self.registry.define(name, **props)

    # -- writing structured facts ------------------------------------------------------------
    @_user_calls
    def add_facts(self, facts: Sequence[Mapping[str, Any] | FactInput], *, user_id: str,
                  session_id: str | None = None, agent_id: str | None = None) -> UpdateReport:
        """Add structured facts through the non-destructive update rules.

        Each fact is a :class:`~chronomem.FactInput` or a dict of its fields: ``subject``, ``relation``, ``object`` and optional
        ``valid_from``, ``valid_to``, ``confidence`` (default 1.0), ``intent``
        (default FACT), ``origin`` (default "imported"), ``source_ids``,
        ``session_id``, ``text``, ``subject_type``, ``object_type``.  The whole
        batch is validated first and written in one transaction.
        """
        user_id = check_user(user_id)
        if isinstance(facts, Mapping | str | bytes) or not isinstance(facts, Sequence):
            raise ValidationError("facts", type(facts).__name__, "must be a list of fact dicts")
        for name, value in (("session_id", session_id), ("agent_id", agent_id)):
            if value is not None:
                check_id(name, value)
        return self.graph.apply(user_id, facts, session_id=session_id, agent_id=agent_id)

    # -- writing conversations (REAL write path: chronomem.extract) ------------------------------
    @_user_calls
    def add(self, messages: Any, *, user_id: str, session_id: str | None = None,
            timestamp: datetime | str | None = None, agent_id: str | None = None,
            progress: Callable[[int, int], None] | None = None) -> AddResult:
        """Store conversation turns verbatim and extract facts from them before returning.

        In buffered mode (``Memory(buffer=…)`` or ``CHRONOMEM_REDIS_URL``) the
        turns wait in the session buffer instead, and ``end_session`` writes
        and extracts them.

        ``messages``: a string (one message) or a list of dicts with ``speaker`` or
        ``role``, ``text`` or ``content``, optional ``id`` and ``timestamp``.
        Re-adding the same ids stores nothing twice and costs no model call for turns
        already extracted (turns a crash or a failed call left unextracted are extracted then).  A message
        without an ``id`` gets a hash of its session, speaker, text, timestamp and
        position among identical turns, so posting a conversation twice into the same session stores it
        once when its turns carry timestamps (a turn without one is stamped, and told apart, by its
        arrival, so a repost of it is stored again; give it an ``id``).  One
        LLM call per chunk of turns (never per turn); the result reports the
        facts added, closed and reinforced, warnings, and the usage of the call.
        """
        user_id = check_user(user_id)
        if self._buffer is None:
            return self.pipeline.add(messages, user_id=user_id, session_id=session_id,
                                     timestamp=timestamp, agent_id=agent_id, progress=progress)
        # buffered session: turns wait in the buffer until end_session writes and extracts them (no model
        # call here, so llm=False buffers them too, for a model given before the session ends)
        sid, buf = session_id, self._buffer
        known = 0 if sid is None else (len(buf.read(user_id, sid))
                                       + len(self.store.messages(user_id, session_id=sid)))
        result, msgs = self.pipeline.prepare(messages, user_id=user_id, session_id=sid,
                                             timestamp=timestamp, agent_id=agent_id, next_seq=known)
        from .extract.pipeline import refuse_id_clashes

        # the buffer is read before the store: a turn flushed in between is in one or the other
        refuse_id_clashes(self.store, user_id, msgs,
                          [m for s in buf.active_sessions(user_id) for m in buf.read(user_id, s)])
        in_store = {m.id for m in self.store.messages(user_id, ids=[m.id for m in msgs])}
        try:  # the buffer checks again, atomically with its append: a concurrent add may have taken an id
            result.messages_stored = self._lifecycle().add([m for m in msgs if m.id not in in_store])
        except ValidationError as e:
            if e.field != "message.id":
                raise
            at = next(i for i, m in enumerate(msgs) if m.id == e.value)
            raise ValidationError(f"messages[{at}].id", e.value, e.reason) from None
        result.messages_skipped = len(msgs) - result.messages_stored
        result.warnings.append("buffered: facts are extracted when the session ends (end_session)")
        if not self.models.llm_enabled:
            result.warnings.append("no chat model (llm=False): end_session raises ConfigError, keeping the turns, "
                                   "until one is given (use_models)")
        return result

    @_user_calls
    def extract_pending(self, *, user_id: str, session_id: str | None = None,
                        message_ids: Sequence[str] | None = None,
                        progress: Callable[[int, int], None] | None = None) -> AddResult:
        """Extract stored turns not extracted yet (buffered, or whose chunk failed before);
        ``message_ids`` limits it to those turns."""
        if session_id is not None:
            check_id("session_id", session_id)
        if message_ids is not None:
            if isinstance(message_ids, str) or not isinstance(message_ids, Sequence):
                raise ValidationError("message_ids", message_ids, "must be a list of message ids")
            for i, mid in enumerate(message_ids):
                check_id(f"message_ids[{i}]", mid)
        return self.pipeline.extract_pending(check_user(user_id), session_id, message_ids=message_ids,
                                             progress=progress)

    # -- tenants -----------------------------------------------------------------------------------
    def for_tenant(self, tenant: str) -> Memory:
        """This memory as another tenant sees it: the same store, models, config and job queue
        (its in-process queue too: a few threads, ``CHRONOMEM_JOB_THREADS``, run every view's jobs), user ids
        inside ``tenant``.
        Closing the view leaves them open; closing this memory stops the in-process queue its views share."""
        tenant = check_tenant(tenant)  # None or "" name no tenant: a view of the default one is for_tenant("default")
        from .summarize.buffer import RedisSessionBuffer

        # the view's buffer: the same Redis, under the view's own prefix.  Not an in-process buffer (a view
        # dropped after add() would drop its turns, and another buffer object holds one tenant)
        redis = self._buffer if isinstance(self._buffer, RedisSessionBuffer) else None
        view = Memory(self.store, tenant=tenant, config=self.config, buffer=redis, queue=self._jobs.queue)
        self._jobs.serve(view)  # not a queue thread per view, each kept for the life of the process
        view.registry, view.usage, view.models = self.registry, self.usage, self.models  # models load once
        # one budget of held spellings for the memory and its views (a server keeps 128 views)
        view.resolver = FuzzyEntityResolver(view.store, held=self.resolver.held, scope=view.tenant)
        view.graph = GraphWriter(view.store, view.registry, view.config.theta_stable, view.resolver)
        return view

    # -- queued ingestion (chronomem.jobs) ------------------------------------------------------
    def submit_messages(self, messages: Any, *, user_id: str, session_id: str | None = None,
                        timestamp: datetime | str | None = None, agent_id: str | None = None,
                        deliver: bool = True) -> Job:
        """Like :meth:`add`, but returns as soon as the turns are stored: a worker extracts them.

        Returns the queued :class:`~chronomem.jobs.Job`; poll it with :meth:`job` or block with
        :meth:`wait`.  The queue is ``Memory(queue=…)`` or ``CHRONOMEM_QUEUE_URL`` (RabbitMQ or
        Redis, consumed by ``chronomem worker``), else a background thread of this process.
        ``deliver=False`` only stores the job: hand it to the queue with :meth:`deliver` (a server
        acknowledges first); a job never delivered is sent by a worker's sweep after 30 s.
        """
        return self._jobs.submit(messages, user_id=user_id, session_id=session_id, timestamp=timestamp,
                                 agent_id=agent_id, deliver=deliver)

    def submit_end_session(self, *, user_id: str, session_id: str | None = None,
                           ended_at: datetime | str | None = None, deliver: bool = True) -> Job:
        """Queue :meth:`end_session` on a worker; returns the queued job."""
        return self._jobs.submit_end_session(user_id=user_id, session_id=session_id, ended_at=ended_at,
                                             deliver=deliver)

    def deliver(self, job: Job | str) -> Job:
        """Hand a job stored with ``deliver=False`` (or its id) to the queue."""
        return self._jobs.deliver(job)

    def job(self, job_id: str, *, user_id: str | None = None) -> Job:
        """A job of this tenant (of ``user_id`` when given); NotFoundError otherwise."""
        return self._jobs.get(job_id, user_id=user_id)

    def jobs(self, *, user_id: str | None = None, status: JobStatus | str | None = None,
             limit: int | None = None, offset: int = 0, after: Job | JobPosition | None = None) -> list[Job]:
        """This tenant's jobs (of ``user_id`` when given), newest first; ``after`` (the last job of the page
        before, or its position) pages them where jobs arrive and finish meanwhile, as :meth:`facts`."""
        return self._jobs.list(user_id=user_id, status=status, limit=limit, offset=offset, after=after)

    def wait(self, job: Job | str, *, timeout: float | None = 300.0) -> Job:
        """Block until the job is done or failed; :class:`~chronomem.jobs.service.JobTimeoutError` after ``timeout`` s."""
        return self._jobs.wait(job, timeout=timeout)

    def warm(self) -> int:
        """Load the model and prefill the extraction prompt's shared start in its prompt cache, so
        the first :meth:`add` does not wait for it (the embedded model: ≈ 15 s on 2 cores); returns
        the prompt tokens evaluated, 0 for a remote model.  Workers call it as they start."""
        return self.write_pipeline().warm()

    def write_pipeline(self, *, chunk_size: int | None = None, context: int | None = None,
                       prompt_version: str | None = None, method: str | None = None) -> WritePipeline:
        """A write path over this memory's store, registry, graph writer and models, with its own
        chunking (``chunk_size`` turns per LLM call, ``context`` preceding turns), prompt version
        or extraction ``method`` (``"v1"`` … ``"v13"``, :data:`chronomem.config.EXTRACTION_METHODS`; default:
        ``Config.extraction``, ``"v10"``)."""
        from .extract.pipeline import WritePipeline

        opts: dict[str, Any] = {k: v for k, v in (("chunk_size", chunk_size), ("context", context),
                                                  ("prompt_version", prompt_version)) if v is not None}
        opts["method"] = method or self.config.extraction
        return WritePipeline(store=self.store, registry=self.registry, graph=self.graph, models=self.models,
                             **opts)

    @property
    def pipeline(self) -> WritePipeline:
        """The write path :meth:`add` uses (this memory's chunking and extraction method), built once."""
        if self._pipeline is None:
            self._pipeline = self.write_pipeline(chunk_size=self.config.chunk_size)
        return self._pipeline

    @property
    def buffered(self) -> bool:
        """True when turns wait in the session buffer and are extracted when the session ends."""
        return self._buffer is not None

    @property
    def buffer_is_shared(self) -> bool:
        """True when the session buffer is one other processes read too (Redis), so a worker elsewhere
        can flush it; an in-process buffer lives and dies with this process."""
        from .summarize.buffer import RedisSessionBuffer

        return isinstance(self._buffer, RedisSessionBuffer)

    # -- reading -----------------------------------------------------------------------------------
    def _entity_ids(self, user_id: str, name: str | None, field: str) -> list[str] | None:
        if name is None:
            return None
        check_name(field, name)
        found = self.resolver.lookup(user_id, [name])
        return [found[name]] if name in found else []

    def facts(self, *, user_id: str, subject: str | None = None,
              relation: str | None = None, object: str | None = None,
              as_of: datetime | str | None = None, include_unstable: bool = False,
              other_side: bool = True, limit: int | None = None,
              after: Fact | FactPosition | None = None) -> list[Fact]:
        """Facts valid at ``as_of`` (default: now), oldest first.

        ``subject``/``object`` match names and aliases case-insensitively;
        ``relation`` accepts synonyms.  Facts below ``theta_stable`` are left out
        unless ``include_unstable``.  With ``subject`` or ``object`` given, a symmetric or
        inverse fact stored from the other side is read from this one (``other_side``, on by
        default): after "Jonas and I got married", ``subject="Jonas", relation="married_to"``
        finds ``Jonas married_to Lena``, and ``subject="Lucia", relation="child_of"`` finds
        ``Diego parent_of Lucia`` as ``Lucia child_of Diego``.  Such a reading holds exactly
        when its stored fact does; it is marked ``origin`` derived, ``rule`` symmetry or
        inverse, and ``support_ids`` names the stored fact (the id to :meth:`correct`).

        Pages: ``limit`` facts at most, placed after ``after`` (the last fact of the page before, or its
        :class:`~chronomem.model.FactPosition`).  Paging goes on where it stopped when facts were added or
        forgotten meanwhile; a fact whose own place moves during the walk (a later statement gives it the
        start it lacked) may come twice or not at all, as in any list ordered by what can change::

            page = mem.history(user_id="u", limit=100)
            while page:
                ...
                page = mem.history(user_id="u", limit=100, after=page[-1])
        """
        user_id = check_user(user_id)
        when = utcnow() if as_of is None else parse_time(as_of, "as_of")
        return self._select(user_id, subject, relation, object, when, include_unstable, other_side, limit, after)

    def history(self, *, user_id: str, subject: str | None = None,
                relation: str | None = None, object: str | None = None,
                include_unstable: bool = True, other_side: bool = True, limit: int | None = None,
                after: Fact | FactPosition | None = None) -> list[Fact]:
        """Every stored version — open, closed and (by default) unstable — oldest first
        (``other_side``, ``limit`` and ``after``: as in :meth:`facts`)."""
        user_id = check_user(user_id)
        return self._select(user_id, subject, relation, object, None, include_unstable, other_side, limit, after)

    def _select(self, user_id: str, subject: str | None, relation: str | None, obj: str | None,
                when: datetime | None, include_unstable: bool, other_side: bool, limit: int | None,
                after: Fact | FactPosition | None) -> list[Fact]:
        from .retrieve.lookup import select_facts

        check_limit(limit)
        place: FactPosition | None = check_after(after, Fact, FactPosition)
        relations = None if relation is None else [self.registry.canonical(check_name("relation", relation))]
        return select_facts(self.store, self.registry, user_id,
                            subject_ids=self._entity_ids(user_id, subject, "subject"),
                            object_ids=self._entity_ids(user_id, obj, "object"), relations=relations, as_of=when,
                            min_confidence=None if include_unstable else self.config.theta_stable,
                            other_side=other_side, after=place, limit=limit)

    @_user_calls
    def correct(self, fact_id: str, *, user_id: str, **changes: Any) -> Fact:
        """Correct a stored fact non-destructively: returns the new version (origin ``corrected``).

        ``changes``: any of subject, relation, object, valid_from, valid_to, confidence, intent,
        text, subject_type, object_type.  The old version stays in :meth:`history`, closed, with
        ``closed_by`` pointing at the correction and confidence 0; the new one takes its place among
        the other values of its slot (see :mod:`chronomem.correction`).

        New times are placed by the update rules as any statement is: a ``valid_to`` after the start of
        the slot's next value is kept as the version's ``stated_to``, and its ``valid_to`` stays that start
        (the next value still closes it); a ``valid_from`` moved before another value's start is closed by
        that value.  Compare ``stated_to`` with ``valid_to`` to see whether the asked end held
        (:func:`chronomem.correction.correction_notes` says both in words, as REST's reply does).
        """
        from .correction import correct_fact

        return correct_fact(self, user_id, fact_id, changes)[1]

    def users(self, *, limit: int | None = None, after: str | None = None) -> list[str]:
        """The user ids of this memory's tenant, in byte order; ``limit`` and ``after`` (the last id of the
        page before) page them, each page an indexed read however many users and rows the store holds."""
        check_limit(limit)
        return self.store.users(after=None if after is None else check_id("after", after), limit=limit)

    def tenants(self) -> list[str]:
        """Every tenant that holds a user in this memory's store or turns waiting in the session buffer
        (an admin's view: the idle sweep of ``chronomem session end-idle`` and of the server goes over
        each; :meth:`for_tenant` opens one).  With a Redis buffer (one key prefix per tenant under its
        root) that includes every tenant whose turns wait in that Redis, even with nothing stored yet."""
        from .store.tenant import split_key
        from .summarize.buffer import RedisSessionBuffer

        inner = self.store.inner if isinstance(self.store, TenantStore) else self.store
        found = {split_key(k)[0] for k in inner.users()}
        buf = self._buffer
        if isinstance(buf, RedisSessionBuffer):
            found.update(buf.tenants())  # the tenants' buffers share its Redis, each under its prefix
        elif buf is not None and buf.open_sessions():
            found.add(self.tenant)  # any other buffer holds this tenant's sessions only
        return sorted(found)

    def sessions(self, *, user_id: str, limit: int | None = None,
                 after: Session | SessionPosition | None = None) -> list[Session]:
        """The user's sessions, oldest first (those with no start before them); ``limit`` and ``after`` (the
        last session of the page before, or its position) page them as :meth:`facts` does."""
        check_limit(limit)
        return self.store.sessions(check_user(user_id), after=check_after(after, Session, SessionPosition),
                                   limit=limit)

    def messages(self, *, user_id: str, session_id: str | None = None, limit: int | None = None,
                 after: Message | MessagePosition | None = None) -> list[Message]:
        """The user's stored turns (of one session when given), in conversation order; ``limit`` and
        ``after`` (the last turn of the page before, or its position) page them as :meth:`facts` does."""
        if session_id is not None:
            check_id("session_id", session_id)
        check_limit(limit)
        return self.store.messages(check_user(user_id), session_id=session_id,
                                   after=check_after(after, Message, MessagePosition), limit=limit)

    def entities(self, *, user_id: str, limit: int | None = None,
                 after: Entity | EntityPosition | None = None) -> list[Entity]:
        """The user's entities, oldest first, each with its other names; ``limit`` and ``after`` (the last
        entity of the page before, or its position) page them as :meth:`facts` does."""
        check_limit(limit)
        return self.store.entities(check_user(user_id), after=check_after(after, Entity, EntityPosition), limit=limit)

    @_user_calls
    def alias(self, name: str, alias: str, *, user_id: str) -> Entity:
        """Record that ``alias`` names the same entity as ``name`` ("NYC" → "New York City").

        The alias is given by hand: forgetting turns never takes it.  ``name`` only points at the entity
        (one is created when no entity has that name); a known name keeps what it was."""
        from .entities import normalize_name

        user_id = check_user(user_id)
        for what, v in (("name", name), ("alias", alias)):
            if not isinstance(v, str) or not normalize_name(check_name(what, v)):
                raise ValidationError(what, v, "must be a non-empty name")
        with self.store.transaction(user_id):
            found = self.resolver.lookup(user_id, [name, alias])
            ent_id = found.get(name) or self.resolver.resolve_many(user_id, [(name, None)])[name].id
            other = found.get(alias)
            if other is not None and other != ent_id:
                raise ValidationError("alias", alias, f"already names another entity ({other}); "
                                                      "merge_entities makes the two one")
            self.store.add_alias(user_id, ent_id, alias.strip(), normalize_name(alias))
        return self.store.entities(user_id, ids=[ent_id])[0]

    def merge_entities(self, name: str, into: str, *, user_id: str) -> EntityMerge:
        """Make ``name`` and ``into`` one entity, when resolution kept apart two names of one person, place
        or thing ("Mom" and "Linda").  Each is a name, an alias or an entity id of the user.

        The entity ``into`` stays (its id and name); ``name``'s facts now name it, its names become its
        aliases, and each slot is placed in time order again ("Mom lives in Boston" from 2019 and "Linda
        lives in Chicago" from 2022 become one history).  A fact of one that says again what a fact of the
        other says, inside its interval, is folded in as a repetition is: one fact, both statements'
        turns, the raised confidence (forgetting either statement's turns still takes its part back).
        Nothing is deleted otherwise; it runs in one transaction.  Raises
        :class:`~chronomem.errors.NotFoundError` for an unknown name and
        :class:`~chronomem.errors.ValidationError` when both name the same entity, or when a fact relates
        the two ("Linda friend_of Mom"): merged, it would relate the entity to itself, so the merge is
        refused, naming the facts to correct or forget first.
        """
        user_id = check_user(user_id)
        with self.store.transaction(user_id):
            source, target = (self._entity_named(user_id, what, v) for what, v in (("name", name), ("into", into)))
            if source == target:
                raise ValidationError("name", name, f"names the same entity as {into!r} ({target})")
            # read from either side through the indexes, not every fact of ``name`` (a version a correction
            # replaced is history that holds at no time: it does not count)
            between = [f for a, b in ((source, target), (target, source))
                       for f in self.store.facts(user_id, subject_ids=[a], object_ids=[b])
                       if not replaced_by_correction(f)]
            if between:
                said = "; ".join(f"{f.subject} {f.relation} {f.object} ({f.id})" for f in between[:5])
                raise ValidationError("name", name, f"{len(between)} fact(s) relate it to {into!r}, which merged "
                                      f"would relate the entity to itself: {said}; correct or forget them first")
            moved, folded = self.graph.merge_entities(user_id, source, target)
            entity = self.store.entities(user_id, ids=[target])[0]
        log.info("user %r: merged entity %s into %s (%d facts moved, %d folded)", user_id, source, target,
                 moved, folded)
        return EntityMerge(entity=entity, facts_moved=moved, facts_folded=folded)

    def _entity_named(self, user_id: str, field: str, value: str) -> str:
        """The id of the user's entity that ``value`` names (a name, an alias or an entity id)."""
        from .entities import normalize_name

        if not isinstance(value, str) or not normalize_name(check_name(field, value)):
            raise ValidationError(field, value, "must be a non-empty name or entity id")
        found = self.resolver.lookup(user_id, [value]).get(value)
        if found is None and self.store.entities(user_id, ids=[value], with_aliases=False):
            found = value
        if found is None:
            raise NotFoundError(f"user {user_id!r} has no entity named {value!r}")
        return found

    # -- retrieval (REAL read path: chronomem.retrieve) ----------------------------------------
    @_user_calls
    def search(self, query: str, *, user_id: str, as_of: datetime | str | None = None,
               top_k: int = 10, options: SearchOptions | None = None, config: SearchConfig | None = None,
               speaker: str | None = None) -> SearchResult:
        """Evidence for ``query``: ranked facts (derived ones marked), paths, context and trace.

        ``as_of`` (datetime or ISO string, default now) asks about the past; ``top_k`` paths of
        evidence are kept (the best first);
        ``options`` (:class:`chronomem.SearchOptions`) tunes the context and model
        use; ``config`` (:class:`chronomem.SearchConfig`) replaces the whole engine
        configuration (for experiments; ``options`` then apply on top of it);
        ``speaker`` names the entity "I/me/my" in the query refer to.
        """
        from .retrieve.options import SearchConfig
        from .retrieve.search import search

        if options is not None:
            config = _check_options(options).apply(config if config is not None else SearchConfig())

        user_id = check_user(user_id)
        check_text("query", query)
        when = None if as_of is None else parse_time(as_of, "as_of")
        return search(self.store, self.registry, self.models, query, user_id=user_id,
                      theta_stable=self.config.theta_stable, as_of=when, top_k=top_k, config=config,
                      speaker=speaker)

    @_user_calls
    def answer(self, question: str, *, user_id: str, as_of: datetime | str | None = None,
               method: str = "real+rsum", top_k: int = 10, options: SearchOptions | None = None,
               config: SearchConfig | None = None, speaker: str | None = None, max_tokens: int = 64) -> Answer:
        """Answer ``question`` from the memory with its evidence (``"Not mentioned"`` when it has none).

        ``method``: ``"real+rsum"`` (default: REAL graph evidence plus the session
        summary), ``"real"`` (graph evidence only) or ``"rsum"`` (the summary
        only).  The graph evidence comes with up to 20 verbatim turns ranked for the
        question (the fused read path, ``SearchOptions.turns``; ``quote_sources`` and
        ``search_turns`` select the unfused layout).  A question that names someone and asks about a
        state the graph types ("Where does Lena work now?", "Who is Felix's sister?") gets those typed
        facts first (``SearchOptions.state_facts``), and a time window in the question ("in 2015")
        becomes the time it is asked as of, within ``as_of``.  ``top_k``, ``options`` (applied to the answer's defaults,
        :data:`chronomem.retrieve.ANSWER_CONFIG`), ``config`` and ``speaker`` are as
        in :meth:`search`; ``max_tokens`` bounds the reply.  Orchestration:
        :func:`chronomem.answering.answer`.
        """
        from .answering import METHODS, answer
        from .retrieve.search import ANSWER_CONFIG

        if options is not None:
            config = _check_options(options).apply(config if config is not None else ANSWER_CONFIG)

        user_id = check_user(user_id)
        check_text("question", question)
        if method not in METHODS:
            raise ValidationError("method", method, f"unknown answer method; supported: {list(METHODS)}")
        when = None if as_of is None else parse_time(as_of, "as_of")
        return answer(self.store, self.registry, self.models, question, user_id=user_id,
                      theta_stable=self.config.theta_stable, rsum=self.rsum if method != "real" else None,
                      as_of=when, method=method, top_k=top_k, config=config, speaker=speaker,
                      max_tokens=max_tokens)

    # -- sessions and recursive summaries (Rsum: chronomem.summarize) ------------------------------
    @property
    def rsum(self) -> RsumMemory:
        """The recursive-summary memory (``M_i`` per ended session), created on first use."""
        if self._rsum is None:
            from .summarize.rsum import RsumMemory

            self._rsum = RsumMemory(self.store, self.models.llm, decoding=self.config.rsum_decoding)
        return self._rsum

    @_user_calls
    def end_session(self, *, user_id: str, session_id: str | None = None,
                    ended_at: datetime | str | None = None) -> SessionEnd:
        """Close a session: flush its buffered turns, extract what is left, update the summary.

        Every step can be repeated (the flush is idempotent, extraction runs on
        turns not yet extracted, and an existing checkpoint is recomputed), so
        a crash mid-way is fixed by calling it again.  When extraction fails for
        some turns, the summary is still updated but the session is not marked
        ended (``result.ended`` is False, ``result.extraction.failed_chunks`` says
        why), so the next call or idle sweep extracts them again.
        """
        user_id = check_user(user_id)
        if not isinstance(session_id, str) or not session_id.strip():
            raise ValidationError("session_id", session_id, "is required: the session to end")
        check_id("session_id", session_id)
        return self._lifecycle().end(user_id, session_id, ended_at=ended_at)

    def end_idle_sessions(self, *, now: datetime | str | None = None,
                          idle_seconds: float | None = None) -> IdleSweep:
        """End every session (any user) with no new turn for ``idle_seconds`` (default: the configured
        ``session_idle``, ``CHRONOMEM_SESSION_IDLE``) as of ``now`` (default: the current time).

        Looks in the store (sessions not ended) and in the session buffer, and ends each one like
        :meth:`end_session`, with its last turn's time as the end time.  A session whose end fails
        (say the model is down) is reported in ``failed`` and found again by the next sweep; one whose
        extraction fails again on that sweep is ended anyway (its turns stay marked failed for
        :meth:`extract_pending`).  A session that was ended and then received more turns is not ended
        again by the sweep: end it explicitly.
        """
        from .summarize.idle import IdleSweep, find_idle_sessions

        idle = self.config.session_idle if idle_seconds is None else idle_seconds
        if idle is None:
            raise ConfigError("no idle timeout: set CHRONOMEM_SESSION_IDLE (or session_idle in the config), "
                              "or pass idle_seconds")
        if isinstance(idle, bool) or not isinstance(idle, int | float) or not 0 < idle <= MAX_IDLE_SECONDS:
            raise ValidationError("idle_seconds", idle, f"must be a positive number of seconds, at most "
                                                        f"{MAX_IDLE_SECONDS:.0f} (100 years)")
        when = utcnow() if now is None else parse_time(now, "now")
        sweep = IdleSweep(now=when, idle_seconds=float(idle))
        cutoff = when - timedelta(seconds=float(idle))
        for user_id, session_id in find_idle_sessions([self.store, self._buffer], when, float(idle)):
            turns = self.store.messages(user_id, session_id=session_id)
            if self._buffer is not None:
                turns += self._buffer.read(user_id, session_id)
            if any(m.recorded_at > cutoff for m in turns):
                continue  # a turn arrived while earlier sessions of this sweep were being ended: still active
            ended_at = max((m.timestamp for m in turns), default=when)
            try:
                with cache_owner(self._cache_owner(user_id)):
                    res = self._lifecycle().end(user_id, session_id, ended_at=ended_at)
            except ChronomemError as e:
                log.warning("idle session %r of user %r not ended: %s", session_id, user_id, log_reason(e))
                sweep.failed[(user_id, session_id)] = str(e)
            else:
                key = (user_id, session_id)
                if res.ended:
                    sweep.ended.append(key)
                    self._idle_retried.discard(key)
                elif key not in self._idle_retried:  # left open once: the next sweep tries the turns again
                    self._idle_retried.add(key)
                    failed = res.extraction.failed_chunks
                    sweep.failed[key] = (f"extraction failed for {len(failed)} chunk(s): {failed[0].error}; "
                                         "the session stays open for the next sweep")
                else:  # failed again: ended, so no sweep pays for the same failure (and the summaries) again
                    self.store.end_session(user_id, session_id, ended_at)
                    self._idle_retried.discard(key)
                    sweep.ended.append(key)
                    log.warning("idle session %r of user %r ended although extraction failed twice; its turns "
                                "stay marked failed (extract_pending retries them)", session_id, user_id)
        return sweep

    def summary(self, *, user_id: str, as_of: datetime | str | None = None) -> str:
        """The user's recursive summary after the last session ended by ``as_of`` ("" before any)."""
        from .summarize.rsum import checkpoint_at

        cp = checkpoint_at(self.store, check_user(user_id), as_of)  # reading it needs no chat model
        return cp.memory if cp else ""

    @_user_calls
    def context(self, messages: Sequence[Mapping[str, Any]], *, user_id: str,
                budget_tokens: int = 2048, strategy: str = "token_budget",
                keep_turns: int = 6) -> list[dict[str, Any]]:
        """The message list for the next LLM call: the stored summary as a system message,
        then the conversation compacted to ``budget_tokens`` by ``strategy``
        (``sliding_window``, ``summary`` or ``token_budget``).  Never exceeds the
        budget and never drops the newest user turn.  Without a chat model (``llm=False``)
        ``sliding_window`` and ``token_budget`` count tokens with an offline estimate;
        ``summary`` needs the model and raises :class:`~chronomem.errors.ConfigError`.
        """
        from .providers.openai_compat import estimate_tokens
        from .summarize.compaction import Strategy, compact

        memory = self.summary(user_id=user_id)
        llm: LLM | None = None
        count_tokens: Callable[[str], int] = estimate_tokens
        if self.models.llm_enabled:
            llm = self.llm  # its own tokenizer counts closer than the estimate
            count_tokens = llm.count_tokens
        elif strategy == Strategy.SUMMARY:  # a bad strategy name is left to compact's ValidationError
            raise ConfigError("context(strategy='summary') summarises older turns with the chat model, and this "
                              "Memory has none (llm=False); use 'token_budget' or 'sliding_window', or give a model")
        return compact(messages, memory or None, budget_tokens, strategy, llm, count_tokens,
                       keep_turns=keep_turns).messages

    def _lifecycle(self) -> SessionLifecycle:
        if self._session_lifecycle is None:
            from .summarize.buffer import InMemorySessionBuffer
            from .summarize.lifecycle import SessionLifecycle

            # the summary memory (which needs the chat model) is built when first used: buffering and
            # flushing turns need no model, so llm=False still buffers them for a model given later
            self._session_lifecycle = SessionLifecycle(
                self.store, self._buffer or InMemorySessionBuffer(), lambda: self.rsum,
                extract=lambda u, s: self.extract_pending(user_id=u, session_id=s))
        return self._session_lifecycle

    # -- forgetting ------------------------------------------------------------------------------
    @_user_calls
    def forget(self, *, user_id: str, fact_id: str | None = None, session_id: str | None = None,
               everything: bool = False, wait: bool = False, deliver: bool = True) -> ForgetResult:
        """Delete for real: a fact, a session (its messages, facts, summaries) or the whole user.

        Nothing forgotten stays in search indexes, vectors or the session buffer
        (a buffered session's waiting turns are dropped, never written).  A corrected
        fact goes with the versions its corrections replaced.  Facts that a
        forgotten fact had closed hold again, as if it had never been said.

        Summaries written after a forgotten session quote it too: their texts are erased in the same
        transaction, and rewriting them without it (one model call per later session) is a job on this
        memory's queue (the in-process one unless ``queue=``/``CHRONOMEM_QUEUE_URL`` name a broker):
        ``result.job_id`` and ``result.summaries_pending`` say which and how many.  Until it ran,
        :meth:`summary` reads the summary from before the forgotten session.  A second forget before it
        ran joins it; the user's next :meth:`end_session` does the rewrite first if it is still owed.
        ``wait=True`` rewrites them in this call instead (scripts, tests: as forget used to, a failure
        reported in ``warnings``); ``deliver=False`` stores the job without handing it to the queue (a
        process about to exit: any worker's or server's sweep sends it after 30 s).
        """
        user_id = check_user(user_id)
        for name, value in (("fact_id", fact_id), ("session_id", session_id)):
            if value is not None:
                check_id(name, value)  # e.g. a non-string id, which PostgreSQL would refuse raw
        for name, flag in (("everything", everything), ("wait", wait), ("deliver", deliver)):
            if not isinstance(flag, bool):  # everything="no" must not delete the whole user, nor wait="no" block
                raise ValidationError(name, flag, "must be True or False")
        owed: list[Job] = []  # the rewrite job, stored in the forget's transaction: delivered once it committed

        def schedule(pending: int) -> Job:
            owed.append(self._jobs.owe_summary_rewrite(user_id, pending))
            return owed[-1]

        res = forget(self.store, self.graph, lambda: self.rsum, user_id=user_id, fact_id=fact_id,
                     session_id=session_id, everything=everything, buffer=self._buffer,
                     schedule=None if wait else schedule)
        clear_text_memos()  # memoised names and term sets would keep the forgotten words referenced
        self.resolver.forget_user(user_id)  # the spellings it holds between writes too
        try:
            res.cache_entries_deleted = self.purge_model_cache(user_id=user_id)
        except Exception as e:  # the store is already forgotten: say what is left, do not undo it
            log.warning("forget: purging the model cache failed: %s", log_reason(e))
            res.warnings.append(f"the memory is forgotten but the model cache still holds this user's replies "
                                f"or vectors: purging it failed ({e}); call purge_model_cache(user_id=…) again")
        if owed and owed[-1].sent_at is not None and self._jobs.get(owed[-1].id).status is not JobStatus.QUEUED:
            # the queued job this forget joined was taken by a worker meanwhile: it may have read the chain
            # before this forget committed, and found no gap (PostgreSQL's workers claim without the user's
            # lock).  A job of its own rewrites it; a spare one finds nothing owed and does nothing.
            owed.append(self._jobs.owe_summary_rewrite(user_id, res.summaries_pending))
            res.job_id = owed[-1].id
        # queued after the purge, which would otherwise drop the replies the rewrite has begun to cache
        if deliver and owed and owed[-1].sent_at is None:  # a job already sent (joined) is not sent twice
            self._deliver_rewrite(owed[-1], res)
        return res

    def _deliver_rewrite(self, job: Job, res: ForgetResult) -> None:
        """Hand the summaries' rewrite job to the queue; the forget stands if that fails (the job is stored:
        a sweep sends it)."""
        try:
            self._jobs.deliver(job)
        except Exception as e:  # noqa: BLE001 - e.g. a closed memory's queue; the job waits in the store
            log.warning("forget: the summaries' rewrite job %s is stored but was not queued: %s", job.id,
                        log_reason(e))
            res.warnings.append(f"the later summaries wait for job {job.id}, which could not be queued ({e}); "
                                "a worker's sweep sends it, or call rewrite_summaries(user_id=…)")

    @_user_calls
    def rewrite_summaries(self, *, user_id: str) -> int:
        """Rewrite the user's summaries that a forgotten session left owed (their texts erased, past the
        gap it left in the chain), without it; returns how many were rewritten (0: nothing owed).

        What the ``rewrite_summaries`` job of :meth:`forget` runs; call it to retry one that failed (the
        model was down) or to finish the rewrite in a script.  One model call per summary rewritten;
        repeatable: a crash mid-way leaves the old chain, and a rewrite already done leaves nothing to do.
        """
        return len(self.rsum.replay(check_user(user_id)))

    def purge_model_cache(self, *, user_id: str) -> int:
        """Delete the user's entries from the opt-in model caches (``CHRONOMEM_LLM_CACHE``,
        ``CHRONOMEM_EMBEDDER_CACHE``): every reply and vector made or reused while serving them,
        even if another user's identical prompt shares it.  :meth:`forget` calls it; returns how
        many entries went.  No model is loaded."""
        return self.models.purge_cached(self._cache_owner(check_user(user_id)))

    def _cache_owner(self, user_id: str) -> str:
        return json.dumps([self.tenant, user_id])

    # -- export / import ---------------------------------------------------------------------------
    def export(self, *, user_id: str) -> dict[str, Any]:
        """Everything held for a user as JSON-ready data; :meth:`import_` restores it losslessly.

        Turns still waiting in the session buffer are included as stored turns not extracted yet
        (and their sessions, if new): an export answers "what do you hold about me" in full, and
        importing it stores them so (extract them with :meth:`extract_pending` or :meth:`end_session`).
        A large user's export is large (vectors most of it): :meth:`export_to` writes the same JSON
        holding one batch of rows in memory at a time.
        """
        user_id = check_user(user_id)
        return {**self._export_head(user_id), "tables": rows_by_table(self._export_rows(user_id))}

    def export_to(self, fp: IO[bytes] | str | os.PathLike[str], *, user_id: str) -> dict[str, int]:
        """Write :meth:`export` to ``fp`` (a binary file, or a path: the file is created or replaced) as
        compact UTF-8 JSON, a batch of rows at a time: the memory it takes is a batch's, not the user's.
        Returns the rows written per table."""
        user_id = check_user(user_id)
        if isinstance(fp, str | os.PathLike):
            with open(fp, "wb") as f:
                return self.export_to(f, user_id=user_id)
        _check_binary(fp, "wb")
        with closing(self._export_rows(user_id)) as rows:
            return write_export(fp, self._export_head(user_id), rows)

    def _export_head(self, user_id: str) -> dict[str, Any]:
        return {"format": EXPORT_FORMAT, "version": EXPORT_VERSION, "user_id": user_id, "exported_at": iso(utcnow())}

    def _export_rows(self, user_id: str) -> UserRows:
        """The user's stored rows table by table, each of sessions and messages followed by the rows of the
        turns waiting in the session buffer.  The buffer is read before the dump's snapshot (or lock) is
        taken, so a turn flushed in between is in both: the dump's copy is kept.  A turn flushed after it
        is still in what was read of the buffer: each turn is exported once."""
        waiting = _waiting_rows(self.store, self._buffer, user_id)
        current = None
        with closing(self.store.iter_user(user_id)) as rows:
            for table, batch in rows:
                if current is not None and table != current and waiting.get(current):
                    yield current, waiting.pop(current)  # after the table's last stored row
                current = table
                if waiting.get(table):  # a waiting turn's session is new only if the store has none; a turn
                    held = {r["id"] for r in batch}  # flushed since the buffer was read is the dump's
                    waiting[table] = [r for r in waiting[table] if r["id"] not in held]
                yield table, batch
        if current is not None and waiting.get(current):
            yield current, waiting.pop(current)

    def import_(self, data: Mapping[str, Any], *, user_id: str | None = None) -> dict[str, int]:
        """Load an :meth:`export` (into ``user_id``, default the exported user).  Existing ids are kept.

        Every row is checked (:mod:`chronomem.exports`) as it is written, all in one transaction: a bad
        one is a :class:`ValidationError` naming it, and nothing is written.  Returns the rows added per
        table and ``already_present``: rows skipped because their key was stored already, or facts folded
        into a held fact they say again (a backup restored after the user restated it: never a duplicate).

        Data about entities the user already holds (a backup restored after a forget, or
        another user's "Maya" who is this one's) joins their histories: an entity is matched
        by id, name or alias and keeps its current name, which the imported facts take, and
        the slots the new facts join are placed in time order again (:mod:`chronomem.importing`).
        A large export is better read from its file with :meth:`import_from`.
        """
        if not isinstance(data, Mapping):
            raise ValidationError("data.format", data, f"not a chronomem export (expected format {EXPORT_FORMAT!r})")
        tables = data.get("tables")
        target = self._import_target(data, user_id)
        if not isinstance(tables, Mapping):
            raise ValidationError("data.tables", tables, "missing or not a mapping")
        order = sorted(set(tables) - set(TABLES)) + [t for t in TABLES if t in tables]  # unknown ones refused first
        return import_batches(self.store, self.resolver, self.graph, target, ((t, 0, tables[t]) for t in order))

    def import_from(self, fp: IO[bytes] | str | os.PathLike[str], *, user_id: str | None = None) -> dict[str, int]:
        """:meth:`import_` an export read from the binary file ``fp`` (or the file at that path), as
        :meth:`export_to` writes it, a batch of rows at a time: the memory it takes is a batch's, not the
        export's.  A file whose fields or tables stand in another order (the same JSON with sorted keys) is
        read in a few passes where ``fp`` can seek (a file does; a pipe does not, and is refused); a file that
        is not an export, or not JSON, is a :class:`ValidationError` naming where, with nothing written."""
        if isinstance(fp, str | os.PathLike):
            with open(fp, "rb") as f:
                return self.import_from(f, user_id=user_id)
        _check_binary(fp, "rb")
        seekable = bool(getattr(fp, "seekable", lambda: False)())
        start = fp.tell() if seekable else 0
        reader = ExportReader(fp)
        head = reader.head()
        try:
            if reader.has_tables and ({"format", "version"} - head.keys() or user_id is None and "user_id" not in head):
                raise OutOfOrder("data.format", None, f"not a chronomem export (expected format {EXPORT_FORMAT!r}, "
                                                      "version and user_id before its tables)")
            target = self._import_target(head, user_id)
            if not reader.has_tables:
                raise ValidationError("data.tables", None, "missing or not a mapping")
            return import_batches(self.store, self.resolver, self.graph, target, reader.batches(IMPORT_BATCH))
        except OutOfOrder:  # the same JSON in another order (sorted keys): read again, in a few passes
            if not seekable:
                raise
        fp.seek(start)
        head, batches = any_order(fp, IMPORT_BATCH)
        target = self._import_target(head, user_id)
        return import_batches(self.store, self.resolver, self.graph, target, batches)

    @staticmethod
    def _import_target(head: Mapping[str, Any], user_id: str | None) -> str:
        """The user an export with this head goes to, once its format and version are checked."""
        if head.get("format") != EXPORT_FORMAT:
            raise ValidationError("data.format", head.get("format"),
                                  f"not a chronomem export (expected format {EXPORT_FORMAT!r})")
        version = head.get("version")
        if isinstance(version, bool) or not isinstance(version, int) or version != EXPORT_VERSION:
            raise ValidationError("data.version", version,
                                  f"unsupported export version (this chronomem reads {EXPORT_VERSION})")
        return check_user(user_id if user_id is not None else head.get("user_id"))

    # -- lifecycle -----------------------------------------------------------------------------------
    def close(self) -> None:
        """Stop this memory's job queue (one it made) and close its store (one it opened)."""
        self._jobs.close()
        self.store.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Memory({self.store.url!r})"
