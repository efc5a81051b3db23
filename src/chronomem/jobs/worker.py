"""Running jobs: claim with a lease, keep the lease alive, record the outcome, recover the dead.

:class:`JobRunner` is the one place jobs are executed, whatever delivered their ids (the
in-process :class:`~chronomem.jobs.queue.LocalQueue`, or a broker through
:func:`run_worker`).  Delivery is at least once: a job id may arrive twice, or arrive while
the job's worker is dead.  So:

* a job is executed only after :meth:`Store.claim_job` marked it running for this worker
  with a lease (``lease_s``); a heartbeat thread renews the lease while it runs;
* a job that is finished, or running under another worker's live lease, is skipped;
* :meth:`JobRunner.sweep` (every worker runs it periodically) puts jobs whose lease expired
  (their worker was killed) back to queued and sends them again, sends queued jobs that
  never reached the queue (the process died between commit and send), and sends again a job
  still queued :data:`RESEND_LEASES` leases after its last send (its message may be lost: a
  broker dead-letters a message whose deliveries kept failing, and a Redis consumer that was
  killed holds its prefetched messages until Dramatiq's maintenance returns them); the wait
  doubles with the job's age, so a long backlog is not flooded with copies.  A job whose lease
  expired while this very runner is still executing it (its heartbeat came late: a saturated
  machine, a store that was briefly slow) is renewed instead: the worker is evidently alive,
  and requeueing would run the job a second time beside the first.

A finished job (its status, result and error) stays readable for ``CHRONOMEM_JOB_RETENTION``
seconds (default 7 days), then the sweep deletes it (:meth:`JobRunner.purge`, at most every
:data:`PURGE_EVERY_S`): the table would otherwise grow with every batch of turns ever submitted.
"""

from __future__ import annotations

import logging
import math
import os
import socket
import threading
import uuid
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError, StoreError, log_reason, public_reason
from ..store.tenant import split_key
from ..timeutil import utcnow
from .model import IN_PROCESS, Job, JobStatus
from .runner import execute

if TYPE_CHECKING:
    from ..memory import Memory
    from ..store.base import Store

log = logging.getLogger(__name__)

DEFAULT_LEASE_S = 30.0
UNSENT_GRACE_S = 30.0  # a queued job not handed to the queue after this long is sent by the sweeper
# a queued job still waiting this many leases after its last send is sent again (its message may be lost:
# dead-lettered, or held by a dead Redis consumer); a copy that arrives while the first delivery is still
# being retried below is harmless: the claim is exclusive and a finished job is skipped
RESEND_LEASES = 10

# a delivery that cannot claim its job because the store is unreachable is retried by Dramatiq with
# exponential backoff (1 s doubling, at most a minute): 30 retries wait ≈ 13-26 minutes in all; any other
# error escaping the runner (none is expected: a job's own failure is recorded on it) 3 times
STORE_RETRIES = 30
OTHER_RETRIES = 3
RETRY_MIN_BACKOFF_MS = 1000
RETRY_MAX_BACKOFF_MS = 60_000


DEFAULT_RETENTION_S = 7 * 24 * 3600.0
PURGE_EVERY_S = 600.0  # how often a runner's sweep deletes expired jobs
PURGE_BATCH = 1000  # jobs per delete statement: a purge never holds the jobs' lock long
# tenant views a server or a broker's worker keeps between calls; the least recently used beyond this are
# dropped (one is made again when its tenant calls)
MAX_TENANT_VIEWS = 128


def _seconds(name: str, default: float, meaning: str, *, forever: bool = False) -> float:
    """The environment's ``name`` as a positive number of seconds (``forever``: ``math.inf`` when
    allowed), ``default`` when unset; anything else is a :class:`ConfigError` that names it."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    if forever and raw.lower() == "forever":
        return math.inf
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not (0 < value < math.inf):
        raise ConfigError(f"{name}={raw!r}: give {meaning} (a positive number of seconds"
                          + (") or 'forever'" if forever else ")"))
    return value


def lease_seconds() -> float:
    """``CHRONOMEM_JOB_LEASE`` seconds (default 30, at least 1): how long a silent worker keeps a job."""
    return max(_seconds("CHRONOMEM_JOB_LEASE", DEFAULT_LEASE_S, "how long a silent worker keeps a job"), 1.0)


def retention_seconds() -> float:
    """``CHRONOMEM_JOB_RETENTION``: seconds a finished job stays readable (default 7 days);
    ``forever`` keeps every job (``math.inf``)."""
    return _seconds("CHRONOMEM_JOB_RETENTION", DEFAULT_RETENTION_S,
                    "how long a finished job is kept, e.g. 604800 for 7 days", forever=True)


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


class JobRunner:
    """Executes jobs from the unbound ``store``; ``memory_for(tenant)`` gives a Memory bound to a tenant."""

    def __init__(self, store: Store, memory_for: Callable[[str], Memory], *, name: str | None = None,
                 lease_s: float | None = None, unsent_grace_s: float = UNSENT_GRACE_S,
                 tenant: str | None = None, retention_s: float | None = None,
                 resend_s: float | None = None) -> None:
        self.store = store
        self.tenant = tenant  # run only this tenant's jobs (the in-process queue of one Memory; see scope)
        self.unsent_grace_s = unsent_grace_s
        self.memory_for = memory_for
        self.name = name or worker_name()
        self.lease_s = lease_s if lease_s is not None else lease_seconds()
        # a queued job still waiting this long after its last send is sent again (see sweep)
        self.resend_s = resend_s if resend_s is not None else RESEND_LEASES * self.lease_s
        # seconds a finished job is kept (math.inf: forever); default $CHRONOMEM_JOB_RETENTION or 7 days
        self.retention_s = retention_s if retention_s is not None else retention_seconds()
        if not self.retention_s > 0:
            raise ConfigError(f"retention_s={retention_s!r}: a finished job must be kept a positive number of seconds")
        self._purged_at: datetime | None = None
        self._running: set[str] = set()  # ids of the jobs this runner is executing now
        self._running_lock = threading.Lock()

    @property
    def in_process(self) -> bool:
        """Whether this is an in-process queue's runner (:class:`~chronomem.jobs.queue.LocalQueue` names it so)."""
        return self.name.startswith(IN_PROCESS)

    @property
    def running(self) -> frozenset[str]:
        """Ids of the jobs this runner is executing at this moment."""
        with self._running_lock:
            return frozenset(self._running)

    def scope(self) -> list[str | None]:
        """The tenants whose jobs this runner sweeps and purges: its own (``tenant``), or ``[None]``, every
        tenant's, for an unbound runner (a broker's worker).  :class:`SharedRunner` widens it to its views'."""
        return [self.tenant]

    def serves(self, tenant: str) -> bool:
        """Whether :meth:`run` runs a job of ``tenant`` sent to it."""
        return self.tenant is None or tenant == self.tenant

    def run(self, job_id: str, tenant: str | None = None) -> Job | None:
        """Claim and execute one job; None when it was not ours to run (finished or held).  ``tenant``: the
        job's, as its sender knew it; a runner bound to tenants runs only a job of a tenant it serves."""
        now = utcnow()
        if self.tenant is not None:
            owner = self.tenant if tenant is None else tenant
            if not self.serves(owner) or self.store.job(owner, job_id) is None:
                log.warning("job %s is not one of tenant %r's; skipped", job_id, owner)
                return None
        job = self.store.claim_job(job_id, self.name, now, now + timedelta(seconds=self.lease_s))
        if job is None:
            log.debug("job %s: finished or held by a live worker; skipped", job_id)
            return None
        tenant, user = split_key(job.user_id)
        job.user_id = user
        stop = threading.Event()
        beat = threading.Thread(target=self._heartbeat, args=(job_id, stop), daemon=True,
                                name=f"chronomem-lease-{job_id[:8]}")
        with self._running_lock:
            self._running.add(job_id)
        try:  # the id stays in _running until the outcome is written: a sweep then renews, not requeues
            beat.start()
            try:
                status, result, error = execute(self.memory_for(tenant), job)
            except Exception as e:  # recorded on the job: the caller polls for it
                # the error is recorded on the job; a log keeps no user text (logs outlive forget)
                log.warning("job %s (%s) failed: %s", job_id, job.kind.value, log_reason(e))
                log.debug("job %s failed", job_id, exc_info=e)
                status, result, error = JobStatus.FAILED, None, public_reason(e)  # tenants read it: no endpoint
            finally:
                stop.set()
                beat.join()
            finished = self.store.finish_job(job_id, self.name, status, utcnow(), result, error)
        finally:
            with self._running_lock:
                self._running.discard(job_id)
        if not finished:
            self._log_lost(tenant, job_id)
        job.status, job.result, job.error = status, result, error
        return job

    def _log_lost(self, tenant: str, job_id: str) -> None:
        """Say why the outcome of a job this runner ran was not recorded."""
        try:
            now = self.store.job(tenant, job_id)
        except Exception as e:  # noqa: BLE001 - only the log line depends on it
            log.warning("job %s: its outcome was not recorded (the job could not be read: %s)", job_id, log_reason(e))
            return
        if now is None:
            log.info("job %s was deleted while it ran (its user or session was forgotten); outcome dropped", job_id)
        elif now.finished:
            log.warning("job %s: its lease ran out before it finished and another worker finished it", job_id)
        elif now.status is JobStatus.RUNNING:
            log.warning("job %s: its lease ran out before it finished; worker %s is running it again",
                        job_id, now.worker)
        else:
            log.warning("job %s: its lease ran out before it finished; it is queued to run again", job_id)

    def _heartbeat(self, job_id: str, stop: threading.Event) -> None:
        while not stop.wait(self.lease_s / 3):
            try:
                if not self.store.renew_job(job_id, self.name, utcnow() + timedelta(seconds=self.lease_s)):
                    return
            except Exception as e:  # the store is briefly unreachable: try again next beat
                log.warning("job %s: lease renewal failed: %s", job_id, e)

    def sweep(self, send: Callable[[Job], None], *, sent_before: datetime | None = None) -> int:
        """Redeliver what may be lost: jobs of dead workers, jobs never sent, and jobs still queued
        ``resend_s`` after their last send (and at least as long as they had waited before it); returns
        how many were sent.  An in-process queue's runner takes only those an in-process queue sent or
        ran besides the never-sent ones (a broker's belong to ``chronomem worker``), and with
        ``sent_before`` every such job sent before then (its queue is gone with its process)."""
        now = utcnow()
        sent = 0
        sent_to = self.name if self.in_process else None  # recorded on the job: see model.IN_PROCESS
        for job in self._to_send(now, sent_before):
            if job.status is JobStatus.RUNNING and job.worker == self.name and job.id in self.running:
                renewed = self.store.renew_job(job.id, self.name, utcnow() + timedelta(seconds=self.lease_s))
                log.warning("job %s: its lease ran out while this worker is still running it (late heartbeat);"
                            " %s", job.id, "renewed" if renewed else "another worker has taken it")
                continue
            if job.status is JobStatus.RUNNING:
                if not self.store.requeue_job(job.id, now):
                    continue
                why, job.sent_at, job.worker = "its worker stopped renewing the lease", None, None
            elif job.sent_at is None:
                why = "it never reached the queue"
            else:
                why = f"still queued {(now - job.sent_at).total_seconds():.0f} s after it was sent (message lost?)"
            at = utcnow()
            # recorded before the send: of several workers sweeping at once only one sends it
            if not self.store.swap_job_send(job.id, job.sent_at, at, sent_to):
                continue
            log.info("job %s: %s; sending it again", job.id, why)
            try:
                send(job)
            except Exception as e:
                log.warning("job %s: could not send it (%s); next sweep retries", job.id, e)
                try:  # as it was: the next sweep tries again rather than waiting a whole resend_s
                    self.store.swap_job_send(job.id, at, job.sent_at, job.worker)
                except Exception as undo:  # noqa: BLE001 - then it is re-sent after resend_s
                    log.warning("job %s: %s", job.id, log_reason(undo))
                continue
            sent += 1
        if self._purged_at is None or now - self._purged_at >= timedelta(seconds=PURGE_EVERY_S):
            self._purged_at = now
            try:
                self.purge(now)
            except Exception as e:  # the next purge retries; sending jobs must not stop for it
                log.warning("deleting expired jobs failed: %s", log_reason(e))
        return sent

    def _to_send(self, now: datetime, sent_before: datetime | None) -> Iterator[Job]:
        """What :meth:`sweep` (re)sends, tenant by tenant of :meth:`scope`."""
        for tenant in self.scope():
            yield from self.store.jobs_to_send(now, unsent_before=now - timedelta(seconds=self.unsent_grace_s),
                                               resend_before=now - timedelta(seconds=self.resend_s), tenant=tenant,
                                               in_process=self.in_process, orphaned_before=sent_before)

    def purge(self, now: datetime | None = None) -> int:
        """Delete the done and failed jobs (of the tenants in :meth:`scope`) that finished more
        than ``retention_s`` ago; how many.  Their status and result are then no longer readable."""
        try:
            before = (now or utcnow()) - timedelta(seconds=self.retention_s)
        except OverflowError:  # forever, or longer ago than a date goes: nothing finished then
            return 0
        deleted = 0
        for tenant in self.scope():
            while True:
                n = self.store.delete_finished_jobs(before, tenant=tenant, limit=PURGE_BATCH)
                deleted += n
                if n < PURGE_BATCH:
                    break
        if deleted:
            log.info("deleted %d job(s) finished before %s (retention %.0f s)", deleted, before.isoformat(),
                     self.retention_s)
        return deleted


class SharedRunner(JobRunner):
    """The in-process runner of one memory and of every tenant view made from it (:meth:`Memory.for_tenant`):
    one queue (a few threads, each tenant on one of them: :class:`~chronomem.jobs.queue.LocalQueue`) runs and
    sweeps all their jobs: :meth:`run` is called from several threads at once, never for two jobs of one
    tenant.  Each view used to start a queue of its own, whose thread kept the view alive and swept the store every
    ``lease_s / 2`` for the rest of the process: a server that had served 300 tenants held 300 such threads.

    Views are held weakly: one its owner dropped leaves :meth:`scope` once collected (its finished jobs
    are then purged by whichever process serves that tenant next, or by ``chronomem worker``), and a job
    of its tenant still queued here runs on a fresh view of the base memory.
    """

    def __init__(self, base: Memory, **kwargs: Any) -> None:
        inner = getattr(base.store, "inner", base.store)
        super().__init__(inner, self._memory_for, tenant=base.tenant, **kwargs)
        self._base = base
        self._views: weakref.WeakValueDictionary[str, Memory] = weakref.WeakValueDictionary()
        self._views_lock = threading.Lock()

    def add_view(self, view: Memory) -> None:
        """Run, sweep and purge ``view``'s tenant's jobs here too, for as long as the view lives."""
        if view.tenant != self.tenant:
            with self._views_lock:
                self._views[view.tenant] = view

    def serves(self, tenant: str) -> bool:
        return True  # a job of any tenant sent to this queue: it runs on that tenant's view (one is made if needed)

    def scope(self) -> list[str | None]:
        with self._views_lock:
            return [self.tenant, *sorted(self._views.keys())]

    def _memory_for(self, tenant: str) -> Memory:
        if tenant == self.tenant:
            return self._base
        with self._views_lock:
            view = self._views.get(tenant)
        return view if view is not None else self._base.for_tenant(tenant)  # which adds it


class TenantViews:
    """A broker worker's tenant views of its base memory, the last ``max_views`` used kept: a view per tenant
    ever served, kept for the life of the worker, grew without bound.  A dropped view owns nothing (the
    store, models and broker are the base memory's), and a job still running on one keeps it alive."""

    def __init__(self, base: Memory, max_views: int = MAX_TENANT_VIEWS) -> None:
        self.base, self.max_views = base, max_views
        self._views: OrderedDict[str, Memory] = OrderedDict()  # least recently used first
        self._lock = threading.Lock()

    def get(self, tenant: str) -> Memory:
        if tenant == self.base.tenant:
            return self.base
        with self._lock:
            view = self._views.get(tenant)
            if view is None:
                view = self._views[tenant] = self.base.for_tenant(tenant)
            self._views.move_to_end(tenant)
            while len(self._views) > self.max_views:
                self._views.popitem(last=False)
            return view

    def __len__(self) -> int:
        return len(self._views)

    def close(self) -> None:
        """Close the views kept (closing a view leaves the base memory and its store open)."""
        with self._lock:
            views, self._views = list(self._views.values()), OrderedDict()
        for view in views:
            view.close()


def warm_or_log(mem: Memory) -> int | None:
    """:meth:`Memory.warm`, with a model that cannot load logged instead of raised (each job or
    request that needs it then fails with its own error); the tokens prefilled, or None."""
    try:
        n = mem.warm()
    except Exception as e:  # noqa: BLE001 - reported here; the callers go on without a warm model
        log.warning("could not warm the model: %s", e)
        return None
    log.info("warm: %d prompt token(s) prefilled", n)
    return n


def retry_delivery(retries: int, error: BaseException) -> bool:
    """Dramatiq's ``retry_when`` for a delivery that raised: whether to deliver it again (with backoff).
    A store that is down (the actor raises ``Retry`` from the StoreError) is waited out (:data:`STORE_RETRIES`)."""
    store_down = isinstance(error, StoreError) or isinstance(error.__cause__, StoreError)
    return retries < (STORE_RETRIES if store_down else OTHER_RETRIES)


def run_worker(db: str, url: str, *, threads: int = 1, lease_s: float | None = None,
               stop: threading.Event | None = None, llm: str | None = None,
               embedder: str | bool | None = None, resend_s: float | None = None) -> None:
    """Consume jobs from the broker at ``url`` until ``stop`` is set (``chronomem worker``).

    One process runs ``threads`` jobs at a time; start more processes, on as many machines
    as you like, to scale out.  Every tenant's jobs are run here, each on a Memory bound to
    the job's tenant.
    """
    import dramatiq

    from ..memory import Memory
    from ..store import open_store
    from .queue import ACTOR_NAME, BrokerQueue, make_broker, queue_name

    stop = stop or threading.Event()
    broker = make_broker(url)
    sender = BrokerQueue(url, broker)
    store = open_store(db)
    base = Memory(store, llm=llm, embedder=embedder, queue=sender)  # the models every tenant shares
    views = TenantViews(base)
    runner = JobRunner(store, views.get, lease_s=lease_s, resend_s=resend_s)
    warm_or_log(base)  # the first job should not pay for the extraction prompt's prefix

    def chronomem_job(job_id: str) -> None:
        try:
            runner.run(job_id)
        except StoreError as e:  # expected while the store is down: one line, not Dramatiq's traceback
            log.warning("job %s: %s; delivered again later", job_id, log_reason(e))
            raise dramatiq.Retry(log_reason(e)) from e

    # retries cover only infrastructure errors (the store unreachable while claiming): a message whose
    # retries run out is dead-lettered, and only the sweep's re-send (after resend_s) would bring the job
    # back.  A job's own failure is recorded on the job.  No time limit: the lease covers stuck workers.
    dramatiq.actor(broker=broker, actor_name=ACTOR_NAME, queue_name=queue_name(), retry_when=retry_delivery,
                   min_backoff=RETRY_MIN_BACKOFF_MS, max_backoff=RETRY_MAX_BACKOFF_MS,
                   time_limit=24 * 3600 * 1000)(chronomem_job)
    worker = dramatiq.Worker(broker, worker_threads=max(1, threads), worker_timeout=500)
    log.info("worker %s: %d thread(s) on %s, lease %.0f s", runner.name, threads, queue_name(), runner.lease_s)
    worker.start()
    try:
        while True:  # the first sweep too: a store that is briefly down must not stop the worker
            try:
                runner.sweep(sender.send)
            except Exception as e:
                log.warning("job sweep failed: %s", e)
            if stop.wait(runner.lease_s / 3):
                break
    finally:
        worker.stop()
        broker.close()
        views.close()
        base.close()
        store.close()
