"""``AsyncMemory``: the :class:`~chronomem.Memory` API for asyncio applications.

Every method is a coroutine with the same name, parameters and result as its
``Memory`` counterpart.  The work runs on the synchronous core in one
dedicated worker thread per instance, so the event loop never blocks on a
model call or a database round trip, and calls on one instance are
serialised (the core is used from one thread at a time, in call order).
Open several instances (or use a server with workers) for parallel work.

>>> import asyncio
>>> async def main():
...     async with AsyncMemory(":memory:", embedder=False) as mem:
...         await mem.add_facts([{"subject": "Maya", "relation": "lives_in", "object": "Porto"}],
...                             user_id="u1")
...         return [f.object for f in await mem.facts(user_id="u1")]
>>> asyncio.run(main())
['Porto']
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, TypeVar

from .config import Config
from .errors import ChronomemError, NotFoundError
from .forgetting import ForgetResult
from .memory import Memory
from .jobs.model import Job, JobPosition, JobStatus
from .jobs.queue import JobQueue
from .model import (Entity, EntityMerge, EntityPosition, Fact, FactInput, FactPosition, Message, MessagePosition,
                    Session, SessionPosition, UpdateReport)
from .providers.base import Embedder, LLM
from .registry import RelationSpec
from .validation import check_id

if TYPE_CHECKING:
    from .extract.pipeline import AddResult
    from .retrieve.answer import Answer
    from .retrieve.options import SearchConfig, SearchOptions
    from .retrieve.search import SearchResult
    from .summarize.buffer import SessionBuffer
    from .summarize.idle import IdleSweep
    from .summarize.lifecycle import SessionEnd

__all__ = ["AsyncMemory"]

log = logging.getLogger(__name__)

T = TypeVar("T")

_LOOK_S = 0.1  # how long past its deadline AsyncMemory.wait lets a look at the job run before it gives up


class AsyncMemory:
    """Asynchronous facade over one :class:`Memory`; see the module docstring.

    Build it like a ``Memory`` (same arguments) or wrap an existing one with
    ``AsyncMemory.wrap(mem)``.  Use it as ``async with`` or call
    :meth:`close`.  When the configuration sets ``session_idle`` (or
    ``CHRONOMEM_SESSION_IDLE``), ``async with`` also runs the idle-session
    sweeper as a background task.
    """

    def __init__(self, location: str | Path | None = None, *, llm: LLM | str | bool | None = None,
                 embedder: Embedder | str | bool | None = None, config: Config | None = None,
                 theta_stable: float | None = None,
                 relations: Sequence[RelationSpec | Mapping[str, Any]] | None = None,
                 buffer: SessionBuffer | bool | str | None = None, tenant: str | None = None,
                 queue: JobQueue | str | None = None) -> None:
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="chronomem")
        try:  # opened on the worker thread that will use it
            self._mem = self._executor.submit(
                Memory, location, llm=llm, embedder=embedder, config=config, theta_stable=theta_stable,
                relations=relations, buffer=buffer, tenant=tenant, queue=queue).result()
        except BaseException:
            self._executor.shutdown(wait=False)
            raise
        self._sweeper: asyncio.Task[None] | None = None
        self._closed = False

    @classmethod
    def wrap(cls, memory: Memory) -> AsyncMemory:
        """An ``AsyncMemory`` over an existing ``Memory`` (closing it closes ``memory``)."""
        if not isinstance(memory, Memory):
            raise TypeError(f"AsyncMemory.wrap needs a Memory, got {type(memory).__name__}")
        self = cls.__new__(cls)
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="chronomem")
        self._mem = memory
        self._sweeper = None
        self._closed = False
        return self

    @property
    def sync(self) -> Memory:
        """The wrapped synchronous ``Memory`` (do not call it while coroutines of this instance run)."""
        return self._mem

    @property
    def config(self) -> Config:
        return self._mem.config

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        """Run ``fn`` on this instance's worker thread, in turn with its coroutines, from any thread
        (say a background thread that shares the ``Memory``: ``amem.submit(amem.sync.end_idle_sessions)``)."""
        if self._closed:
            raise ChronomemError("this AsyncMemory is closed")
        return self._executor.submit(contextvars.copy_context().run, fn, *args, **kwargs)

    async def _run(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        if self._closed:
            raise ChronomemError("this AsyncMemory is closed")
        ctx = contextvars.copy_context()
        call = functools.partial(ctx.run, fn, *args, **kwargs)
        return await asyncio.get_running_loop().run_in_executor(self._executor, call)

    # -- models and relations ----------------------------------------------------------------
    async def use_models(self, *, llm: LLM | str | bool | None = None,
                         embedder: Embedder | str | bool | None = None) -> AsyncMemory:
        """See :meth:`Memory.use_models`; returns this ``AsyncMemory``."""
        await self._run(self._mem.use_models, llm=llm, embedder=embedder)
        return self

    async def warm(self) -> int:
        """See :meth:`Memory.warm`."""
        return await self._run(self._mem.warm)

    async def define_relation(self, name: str, **props: Any) -> RelationSpec:
        return await self._run(self._mem.define_relation, name, **props)

    # -- writing -----------------------------------------------------------------------------
    async def add_facts(self, facts: Sequence[Mapping[str, Any] | FactInput], *, user_id: str,
                        session_id: str | None = None, agent_id: str | None = None) -> UpdateReport:
        return await self._run(self._mem.add_facts, facts, user_id=user_id, session_id=session_id,
                               agent_id=agent_id)

    async def add(self, messages: Any, *, user_id: str, session_id: str | None = None,
                  timestamp: datetime | str | None = None, agent_id: str | None = None,
                  progress: Callable[[int, int], None] | None = None) -> AddResult:
        """See :meth:`Memory.add`; ``progress`` is called on the worker thread."""
        return await self._run(self._mem.add, messages, user_id=user_id, session_id=session_id,
                               timestamp=timestamp, agent_id=agent_id, progress=progress)

    async def extract_pending(self, *, user_id: str, session_id: str | None = None,
                              message_ids: Sequence[str] | None = None,
                              progress: Callable[[int, int], None] | None = None) -> AddResult:
        return await self._run(self._mem.extract_pending, user_id=user_id, session_id=session_id,
                               message_ids=message_ids, progress=progress)

    # -- reading -----------------------------------------------------------------------------
    async def facts(self, *, user_id: str, subject: str | None = None,
                    relation: str | None = None, object: str | None = None,
                    as_of: datetime | str | None = None, include_unstable: bool = False,
                    other_side: bool = True, limit: int | None = None,
                    after: Fact | FactPosition | None = None) -> list[Fact]:
        return await self._run(self._mem.facts, user_id=user_id, subject=subject, relation=relation,
                               object=object, as_of=as_of, include_unstable=include_unstable, other_side=other_side,
                               limit=limit, after=after)

    async def history(self, *, user_id: str, subject: str | None = None,
                      relation: str | None = None, object: str | None = None,
                      include_unstable: bool = True, other_side: bool = True, limit: int | None = None,
                      after: Fact | FactPosition | None = None) -> list[Fact]:
        return await self._run(self._mem.history, user_id=user_id, subject=subject, relation=relation,
                               object=object, include_unstable=include_unstable, other_side=other_side,
                               limit=limit, after=after)

    async def entities(self, *, user_id: str, limit: int | None = None,
                       after: Entity | EntityPosition | None = None) -> list[Entity]:
        return await self._run(self._mem.entities, user_id=user_id, limit=limit, after=after)

    async def alias(self, name: str, alias: str, *, user_id: str) -> Entity:
        return await self._run(self._mem.alias, name, alias, user_id=user_id)

    async def merge_entities(self, name: str, into: str, *, user_id: str) -> EntityMerge:
        return await self._run(self._mem.merge_entities, name, into, user_id=user_id)

    async def search(self, query: str, *, user_id: str, as_of: datetime | str | None = None,
                     top_k: int = 10, options: SearchOptions | None = None, config: SearchConfig | None = None,
                     speaker: str | None = None) -> SearchResult:
        return await self._run(self._mem.search, query, user_id=user_id, as_of=as_of, top_k=top_k, options=options,
                               config=config, speaker=speaker)

    async def answer(self, question: str, *, user_id: str, as_of: datetime | str | None = None,
                     method: str = "real+rsum", top_k: int = 10, options: SearchOptions | None = None,
                     config: SearchConfig | None = None, speaker: str | None = None, max_tokens: int = 64) -> Answer:
        return await self._run(self._mem.answer, question, user_id=user_id, as_of=as_of, method=method,
                               top_k=top_k, options=options, config=config, speaker=speaker, max_tokens=max_tokens)

    # -- sessions ----------------------------------------------------------------------------
    async def end_session(self, *, user_id: str, session_id: str | None = None,
                          ended_at: datetime | str | None = None) -> SessionEnd:
        return await self._run(self._mem.end_session, user_id=user_id, session_id=session_id,
                               ended_at=ended_at)

    async def end_idle_sessions(self, *, now: datetime | str | None = None,
                                idle_seconds: float | None = None) -> IdleSweep:
        return await self._run(self._mem.end_idle_sessions, now=now, idle_seconds=idle_seconds)

    async def summary(self, *, user_id: str, as_of: datetime | str | None = None) -> str:
        return await self._run(self._mem.summary, user_id=user_id, as_of=as_of)

    async def context(self, messages: Sequence[Mapping[str, Any]], *, user_id: str,
                      budget_tokens: int = 2048, strategy: str = "token_budget",
                      keep_turns: int = 6) -> list[dict[str, Any]]:
        return await self._run(self._mem.context, messages, user_id=user_id, budget_tokens=budget_tokens,
                               strategy=strategy, keep_turns=keep_turns)

    # -- forgetting, export / import ---------------------------------------------------------
    async def forget(self, *, user_id: str, fact_id: str | None = None, session_id: str | None = None,
                     everything: bool = False, wait: bool = False, deliver: bool = True) -> ForgetResult:
        """:meth:`Memory.forget`: the later summaries are rewritten by a job (``result.job_id``; await
        :meth:`wait` on it) unless ``wait=True``."""
        return await self._run(self._mem.forget, user_id=user_id, fact_id=fact_id, session_id=session_id,
                               everything=everything, wait=wait, deliver=deliver)

    async def rewrite_summaries(self, *, user_id: str) -> int:
        return await self._run(self._mem.rewrite_summaries, user_id=user_id)

    async def purge_model_cache(self, *, user_id: str) -> int:
        return await self._run(self._mem.purge_model_cache, user_id=user_id)

    async def export(self, *, user_id: str) -> dict[str, Any]:
        return await self._run(self._mem.export, user_id=user_id)

    async def export_to(self, fp: IO[bytes] | str | os.PathLike[str], *, user_id: str) -> dict[str, int]:
        """:meth:`Memory.export_to`; ``fp`` is written from a worker thread."""
        return await self._run(self._mem.export_to, fp, user_id=user_id)

    async def import_(self, data: Mapping[str, Any], *, user_id: str | None = None) -> dict[str, int]:
        return await self._run(self._mem.import_, data, user_id=user_id)

    async def import_from(self, fp: IO[bytes] | str | os.PathLike[str], *,
                          user_id: str | None = None) -> dict[str, int]:
        """:meth:`Memory.import_from`; ``fp`` is read from a worker thread."""
        return await self._run(self._mem.import_from, fp, user_id=user_id)

    # -- idle sweeper --------------------------------------------------------------------------
    def start_idle_sweeper(self, *, interval: float | None = None) -> asyncio.Task[None] | None:
        """Run :meth:`end_idle_sessions` every ``interval`` seconds (default: a quarter of the idle
        timeout, at most a minute) as a task on the running loop.  None when no timeout is configured."""
        from .summarize.idle import sweep_interval

        idle = self._mem.config.session_idle
        if not idle:
            return None
        if self._sweeper is None or self._sweeper.done():
            every = interval if interval is not None else sweep_interval(idle)
            self._sweeper = asyncio.get_running_loop().create_task(self._sweep_forever(every),
                                                                  name="chronomem-idle-sweeper")
        return self._sweeper

    async def _sweep_forever(self, every: float) -> None:
        while True:
            await asyncio.sleep(every)
            try:
                await self.end_idle_sessions()
            except Exception:  # noqa: BLE001 - a failed sweep is retried at the next tick
                log.exception("idle-session sweep failed")

    # -- lifecycle ---------------------------------------------------------------------------
    # -- queued ingestion, tenants and corrections (chronomem.jobs, Memory.correct) ---------------------
    async def submit_messages(self, messages: Any, *, user_id: str, session_id: str | None = None,
                              timestamp: datetime | str | None = None, agent_id: str | None = None,
                              deliver: bool = True) -> Job:
        return await self._run(self._mem.submit_messages, messages, user_id=user_id, session_id=session_id,
                               timestamp=timestamp, agent_id=agent_id, deliver=deliver)

    async def submit_end_session(self, *, user_id: str, session_id: str | None = None,
                                 ended_at: datetime | str | None = None, deliver: bool = True) -> Job:
        return await self._run(self._mem.submit_end_session, user_id=user_id, session_id=session_id,
                               ended_at=ended_at, deliver=deliver)

    async def deliver(self, job: Job | str) -> Job:
        return await self._run(self._mem.deliver, job)

    async def job(self, job_id: str, *, user_id: str | None = None) -> Job:
        return await self._run(self._mem.job, job_id, user_id=user_id)

    async def jobs(self, *, user_id: str | None = None, status: JobStatus | str | None = None,
                   limit: int | None = None, offset: int = 0, after: Job | JobPosition | None = None) -> list[Job]:
        return await self._run(self._mem.jobs, user_id=user_id, status=status, limit=limit, offset=offset,
                               after=after)

    async def wait(self, job: Job | str, *, timeout: float | None = 300.0) -> Job:
        """Poll the job with ``asyncio.sleep`` between looks; :class:`~chronomem.jobs.service.JobTimeoutError`
        once ``timeout`` seconds have passed since the call (give or take one look).

        The looks read the job's row on a thread of the event loop's default executor, not on this instance's
        worker thread: queued there behind another coroutine's long call (an ``add`` waiting on the model) they
        kept the caller past its deadline and missed the job finishing.  The stores are thread-safe (the
        in-process job queue reads them from its own thread too).  What else ``Memory.job`` does, starting the
        in-process queue that runs jobs an earlier process left queued, is asked of the worker once, unawaited.
        """
        from .jobs.service import JobTimeoutError, check_timeout

        job_id = job.id if isinstance(job, Job) else job
        timeout = check_timeout(timeout)  # as Memory.wait: "abc", -1 or NaN are refused, not waited on
        check_id("job_id", job_id)
        self.submit(self._mem.job, job_id)  # its NotFoundError, if any, is the first look's too
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        known = job if isinstance(job, Job) else None  # what a JobTimeoutError reports
        delay = 0.05
        while True:
            look = asyncio.to_thread(self._look, job_id)
            if known is None or deadline is None:
                known = await look  # the first look at a bare id finds the job (or raises NotFoundError)
            else:  # a look held up by the store (another call's long write) is given up past the deadline
                try:
                    known = await asyncio.wait_for(look, max(deadline - loop.time(), 0.0) + _LOOK_S)
                except TimeoutError:
                    pass
            if known.finished:
                return known
            if deadline is not None and loop.time() >= deadline:
                raise JobTimeoutError(known, timeout or 0.0)
            await asyncio.sleep(delay if deadline is None else min(delay, deadline - loop.time()))
            delay = min(delay * 1.5, 1.0)

    def _look(self, job_id: str) -> Job:
        """The job of this tenant as the store holds it now (:meth:`wait`'s look, run off the worker thread)."""
        if self._closed:
            raise ChronomemError("this AsyncMemory is closed")
        found = self._mem.store.job(self._mem.tenant, job_id)
        if found is None:
            raise NotFoundError(f"no job {job_id!r}")
        return found

    async def correct(self, fact_id: str, *, user_id: str, **changes: Any) -> Fact:
        return await self._run(self._mem.correct, fact_id, user_id=user_id, **changes)

    async def users(self, *, limit: int | None = None, after: str | None = None) -> list[str]:
        return await self._run(self._mem.users, limit=limit, after=after)

    async def tenants(self) -> list[str]:
        return await self._run(self._mem.tenants)

    async def sessions(self, *, user_id: str, limit: int | None = None,
                       after: Session | SessionPosition | None = None) -> list[Session]:
        return await self._run(self._mem.sessions, user_id=user_id, limit=limit, after=after)

    async def messages(self, *, user_id: str, session_id: str | None = None, limit: int | None = None,
                       after: Message | MessagePosition | None = None) -> list[Message]:
        return await self._run(self._mem.messages, user_id=user_id, session_id=session_id, limit=limit, after=after)

    async def close(self) -> None:
        """Stop the sweeper, wait for running calls, close the store.

        The close is queued behind the running calls on the worker thread and runs there even if
        this coroutine is cancelled (say by a timeout): the event loop is never blocked on it.  A cancel of
        the caller is raised once the close is queued, never dropped (code after ``async with`` must not run).
        """
        if self._closed:
            return
        self._closed = True  # no new calls from here on
        sweeper = self._sweeper
        try:
            if sweeper is not None and not sweeper.done():
                sweeper.cancel()
                # asyncio.wait, not ``await sweeper``: the sweeper's own CancelledError stays inside it, while
                # a cancel of this coroutine is raised here (awaiting the sweeper told the two apart by nothing)
                await asyncio.wait({sweeper})
        finally:  # cancelled or not, the memory is closed once the running calls are done
            closing = self._executor.submit(self._mem.close)
            self._executor.shutdown(wait=False)  # the worker thread ends after the close it has queued
        await asyncio.shield(asyncio.wrap_future(closing))

    async def __aenter__(self) -> AsyncMemory:
        self.start_idle_sweeper()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"Async{self._mem!r}"


def _borrow_docs() -> None:
    """Each coroutine without a docstring of its own reads as its :class:`Memory` method does
    (``help(AsyncMemory.answer)`` was empty): the same arguments, the same result, awaited."""
    for name, member in vars(AsyncMemory).items():
        twin = getattr(Memory, name, None)
        if callable(member) and not member.__doc__ and twin is not None and twin.__doc__:
            member.__doc__ = f"Awaitable :meth:`Memory.{name}`.\n\n{twin.__doc__}"


_borrow_docs()
