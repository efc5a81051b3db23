"""The job side of :class:`~chronomem.Memory`: submit work, look it up, wait for it.

``submit`` stores the turns and the job row in ONE transaction, then hands the job id to
the queue; so every stored turn waiting for extraction has a job, and a crash after the
commit loses nothing (the sweeper sends jobs that never reached the queue).  The job that rewrites
the summaries after a forgotten session is stored the same way, in the forget's transaction
(:meth:`JobService.owe_summary_rewrite`).
"""

from __future__ import annotations

import logging
import time
import uuid
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..errors import ChronomemError, NotFoundError, ValidationError
from ..timeutil import iso, parse_time, utcnow
from ..validation import MAX_ROWS, check_after, check_id, check_limit, check_user
from .model import Job, JobKind, JobPosition, JobStatus
from .queue import BrokerQueue, JobQueue, LocalQueue, job_threads, queue_url
from .runner import add_result_json

if TYPE_CHECKING:
    from ..memory import Memory

log = logging.getLogger(__name__)


class JobTimeoutError(ChronomemError, TimeoutError):
    """A job did not finish within the time the caller was willing to wait."""

    def __init__(self, job: Job, timeout: float) -> None:
        self.job = job
        super().__init__(f"job {job.id} is still {job.status.value} after {timeout:g} s")


def check_timeout(timeout: object) -> float | None:
    """``timeout`` as a wait takes it: seconds, at least 0 and finite, or None to wait for good."""
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, int | float)
                                or not 0 <= timeout < float("inf")):
        raise ValidationError("timeout", timeout, "must be a number of seconds (or None to wait for good)")
    return None if timeout is None else float(timeout)  # a number, checked above


class JobService:
    """Jobs of one tenant-bound memory; ``queue``: a :class:`JobQueue`, a broker URL, or None
    (``CHRONOMEM_QUEUE_URL``, else the in-process queue)."""

    def __init__(self, mem: Memory, queue: JobQueue | str | None = None) -> None:
        self.mem = mem
        self._queue_spec = queue
        self._queue: JobQueue | None = None
        if self._in_process():
            from .worker import lease_seconds, retention_seconds

            # the in-process queue's settings, refused now rather than after turns are stored
            lease_seconds(), retention_seconds(), job_threads()

    def _in_process(self) -> bool:
        """Whether this memory's jobs run on a thread of this process: the in-process queue of the memory
        this one is a tenant view of, or no queue object and no broker URL given, none configured
        (``CHRONOMEM_QUEUE_URL``)."""
        spec = self._queue_spec
        if isinstance(spec, LocalQueue):
            return True
        return (spec is None or isinstance(spec, str)) and queue_url(spec) is None

    @property
    def queue(self) -> JobQueue:
        if self._queue is None:
            spec = self._queue_spec
            if spec is not None and not isinstance(spec, str):
                self._queue = spec
            elif (url := queue_url(spec)) is not None:
                self._queue = BrokerQueue(url)
            else:
                from .worker import SharedRunner

                # one runner, at most CHRONOMEM_JOB_THREADS threads, for this memory and its tenant views: see serve()
                self._queue = LocalQueue(SharedRunner(self.mem))
        return self._queue

    def serve(self, view: Memory) -> None:
        """Have this memory's in-process queue run, sweep and purge the jobs of ``view`` (a tenant view made
        with :meth:`Memory.for_tenant`, given this queue) while the view lives; a broker's or a queue object
        the caller gave needs nothing: it is shared as it is."""
        from .worker import SharedRunner

        queue = self.queue
        if isinstance(queue, LocalQueue) and isinstance(queue.runner, SharedRunner):
            queue.runner.add_view(view)

    def _start_local(self) -> None:
        """Start the in-process queue, where this memory's jobs run in this process, the first time its
        jobs are used (submit, job, jobs, wait): its first sweep runs the jobs an earlier process left
        queued, and its sweeps delete finished jobs once ``CHRONOMEM_JOB_RETENTION`` has passed.  Opening a
        memory starts no thread (CLI reads stay cheap); no broker is opened here."""
        if self._in_process() and isinstance(queue := self.queue, LocalQueue):
            queue.start()

    def _new_job(self, kind: JobKind, user_id: str, session_id: str | None,
                 payload: dict[str, Any]) -> Job:
        now = utcnow()
        return Job(id=uuid.uuid4().hex, tenant=self.mem.tenant, user_id=user_id, kind=kind,
                   status=JobStatus.QUEUED, created_at=now, updated_at=now, session_id=session_id,
                   payload=payload)

    def _send(self, job: Job) -> Job:
        try:
            self.queue.send(job)
        except ChronomemError:
            raise
        except Exception as e:  # the broker is down: the job is stored; the sweeper sends it later
            log.warning("job %s stored but not sent (%s); a worker's sweep sends it", job.id, e)
            return job
        self.mem.store.mark_job_sent(job.id, utcnow())
        return job

    def deliver(self, job: Job | str) -> Job:
        """Hand a stored job (or the job of that id) to the queue (what :meth:`submit` does unless
        ``deliver=False``)."""
        if not isinstance(job, Job):
            job = self.get(job)  # an id (NotFoundError when it names no job of the tenant), else refused
        return job if job.finished else self._send(job)

    def submit(self, messages: Any, *, user_id: str | None, session_id: str | None = None,
               timestamp: datetime | str | None = None, agent_id: str | None = None,
               deliver: bool = True) -> Job:
        """Store the turns now; extract them on a worker.  Returns the queued job.

        In buffered mode the turns go to the session buffer (no model call) and the job is
        done at once: extraction happens when the session ends.  The in-process queue starts all the
        same: a job finished at once is deleted after ``CHRONOMEM_JOB_RETENTION`` by its sweep, and no
        other call of a buffered memory may ever start it (sessions end without jobs).
        """
        user_id = check_user(user_id)
        self._start_local()
        mem = self.mem
        store = mem.store
        if mem.buffered:  # nothing to extract until the session ends
            res = mem.add(messages, user_id=user_id, session_id=session_id, timestamp=timestamp,
                          agent_id=agent_id)
            job = self._new_job(JobKind.ADD, user_id, res.session_id, {"buffered": True})
            job.status, job.result = JobStatus.DONE, add_result_json(res)
            job.finished_at = job.started_at = utcnow()
            store.insert_job(job)
            return job
        with store.transaction(user_id):
            res = mem.pipeline.add(messages, user_id=user_id, session_id=session_id,
                                    timestamp=timestamp, agent_id=agent_id, extract=False)
            # the new turns, and those sent again that a failed extraction left pending: sending the same
            # turns again is the retry, as for add() (a job with none of them was done and extracted nothing)
            new_ids = list(res.message_ids) + list(res.retry_ids)
            job = self._new_job(JobKind.ADD, user_id, res.session_id, {
                "message_ids": new_ids, "messages_stored": res.messages_stored,
                "messages_skipped": res.messages_skipped, "warnings": list(res.warnings)})
            if not new_ids:  # every turn was known and extracted: nothing to do
                job.status, job.result = JobStatus.DONE, add_result_json(res)
                job.started_at = job.finished_at = job.created_at
            store.insert_job(job)
        return self.deliver(job) if deliver else job

    def submit_end_session(self, *, user_id: str | None, session_id: str | None,
                           ended_at: datetime | str | None = None, deliver: bool = True) -> Job:
        """Queue :meth:`Memory.end_session`; returns the queued job."""
        user_id = check_user(user_id)
        if not isinstance(session_id, str) or not session_id.strip():
            raise ValidationError("session_id", session_id, "is required: the session to end")
        check_id("session_id", session_id)
        self._start_local()  # as submit: the queue whose sweep deletes the job once its retention passed
        when = None if ended_at is None else iso(parse_time(ended_at, "ended_at"))
        if self.mem.buffered and not self.mem.buffer_is_shared and not isinstance(self.queue, LocalQueue):
            # a worker elsewhere cannot read this process's buffer (it ended the session with nothing and
            # the turns died with the process): they are stored here first, pending, for the job to extract
            self.mem._lifecycle().flush(user_id, session_id)  # noqa: SLF001 - the memory this service serves
        job = self._new_job(JobKind.END_SESSION, user_id, session_id, {"ended_at": when})
        with self.mem.store.transaction(user_id):
            self.mem.store.insert_job(job)
        return self.deliver(job) if deliver else job

    def owe_summary_rewrite(self, user_id: str, pending: int) -> Job:
        """The queued job that rewrites ``user_id``'s summaries after a forgotten session: the one already
        waiting, else a new one, stored but not delivered (the caller delivers it once its transaction
        committed: a worker must not look for the job, or the gap, before they are there).

        :func:`chronomem.forgetting.forget` calls it inside its transaction, so two forgets of one user
        never store two jobs; only a *queued* job is joined, as it reads the chain when it runs, after this
        forget (one already running may have read it before, and its rewrite would miss this forget's gap
        until its commit saw the chain change).  ``pending``: the summaries waiting, for the record.
        """
        check_user(user_id)
        queued = self.mem.store.jobs(self.mem.tenant, user_id=user_id, status=JobStatus.QUEUED)
        waiting = [j for j in queued if j.kind is JobKind.REWRITE_SUMMARIES]
        if waiting:
            return waiting[-1]  # the oldest (newest first): there is one unless a store was copied in
        job = self._new_job(JobKind.REWRITE_SUMMARIES, user_id, None, {"summaries_pending": pending})
        self.mem.store.insert_job(job)
        return job

    def get(self, job_id: str, *, user_id: str | None = None) -> Job:
        """The job (of ``user_id`` when given); NotFoundError for unknown ids and other tenants' jobs."""
        check_id("job_id", job_id)
        if user_id is not None:
            check_user(user_id)
        self._start_local()
        job = self.mem.store.job(self.mem.tenant, job_id)
        if job is None or (user_id is not None and job.user_id != user_id):
            raise NotFoundError(f"no job {job_id!r}")
        return job

    def list(self, *, user_id: str | None = None, status: JobStatus | str | None = None,
             limit: int | None = None, offset: int = 0, after: Job | JobPosition | None = None) -> list[Job]:
        wanted: JobStatus | None = None
        if status is not None:
            try:
                wanted = JobStatus(status)
            except ValueError:
                raise ValidationError("status", status, f"one of {[s.value for s in JobStatus]}") from None
        if user_id is not None:
            check_user(user_id)
        check_limit(limit)
        self._start_local()
        if isinstance(offset, bool) or not isinstance(offset, int) or not 0 <= offset <= MAX_ROWS:
            raise ValidationError("offset", offset, f"must be a whole number from 0 to {MAX_ROWS}")
        return self.mem.store.jobs(self.mem.tenant, user_id=user_id, status=wanted, limit=limit, offset=offset,
                                   after=check_after(after, Job, JobPosition))

    def wait(self, job: Job | str, *, timeout: float | None = 300.0, poll_s: float = 0.05) -> Job:
        """Poll until the job is done or failed; :class:`JobTimeoutError` after ``timeout`` seconds."""
        job_id = job.id if isinstance(job, Job) else job
        timeout = check_timeout(timeout)
        deadline = None if timeout is None else time.monotonic() + timeout
        delay = poll_s
        while True:
            current = self.get(job_id)
            if current.finished:
                return current
            if deadline is not None and time.monotonic() >= deadline:
                raise JobTimeoutError(current, timeout or 0.0)
            time.sleep(delay)
            delay = min(delay * 1.5, 1.0)

    def close(self) -> None:
        """Stop the queue this service created (a queue passed in belongs to the caller)."""
        if self._queue is not None and self._queue is not self._queue_spec:
            self._queue.close()
