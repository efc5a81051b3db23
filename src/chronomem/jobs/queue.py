"""Queue transports: how a job id reaches a worker.

* :class:`LocalQueue` — the embedded default: no broker; background threads in this process
  run the jobs.  Durability comes from the jobs table: a job left queued or running by an
  in-process queue whose process closed or died is picked up by the in-process queue of the
  next process that uses the memory's jobs.  Its sweeping thread, and its first sweep, start with
  :meth:`LocalQueue.start`: on the first submit (a buffered one too, whose job is finished at
  once: the sweep is what deletes finished jobs after ``CHRONOMEM_JOB_RETENTION``), or when the
  job service first reads or waits for a job; merely opening a memory (a CLI read) starts none.
  A memory's tenant views share its queue (:class:`~chronomem.jobs.worker.SharedRunner`): at most
  ``CHRONOMEM_JOB_THREADS`` threads (lanes, default 4) per memory, however many tenants it serves;
  a tenant's jobs all go to one lane, so they run in order, and one tenant's backlog holds up only
  the tenants sharing its lane.  It never takes a job that was
  sent to a broker: ``chronomem worker`` processes, with their own models, run those.
* :class:`BrokerQueue` — Dramatiq over RabbitMQ (``amqp://…``) or Redis (``redis://…``);
  ``chronomem worker`` processes (on any number of machines) consume it.  Dramatiq acks a
  message only after the job ran, so a worker killed mid-job has its messages redelivered
  (RabbitMQ: as soon as the connection drops; Redis: about a minute later, once Dramatiq's
  heartbeat timeout has passed and its next queue maintenance runs).  A message the broker
  lost anyway (dead-lettered after its retries) is re-sent by the workers' sweep.

The URL comes from ``Memory(queue=…)`` or ``CHRONOMEM_QUEUE_URL``; nothing set means local.
"""

from __future__ import annotations

import logging
import os
import queue as _queue
import threading
import time
import zlib
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import ConfigError
from ..timeutil import utcnow
from .model import IN_PROCESS, Job

if TYPE_CHECKING:
    from .worker import JobRunner

log = logging.getLogger(__name__)

ACTOR_NAME = "chronomem_job"
QUEUE_ENV = "CHRONOMEM_QUEUE_URL"
QUEUE_NAME_ENV = "CHRONOMEM_QUEUE_NAME"  # one broker, several memories: give each its own queue
THREADS_ENV = "CHRONOMEM_JOB_THREADS"  # lanes of a memory's in-process queue
DEFAULT_THREADS = 4
MAX_THREADS = 64

# Redis: a consumer silent this long is dead, and the next queue maintenance returns its unacked (prefetched
# or running) messages.  Dramatiq runs maintenance on a random 1 in 1000 broker commands by default; an idle
# worker issues about two a second per queue, so a killed worker's messages waited ~10 minutes.  1 in 20
# brings that to seconds past the timeout; maintenance is cheap unless a dead consumer is found.
REDIS_HEARTBEAT_TIMEOUT_MS = 60_000
REDIS_MAINTENANCE_CHANCE = 50_000  # of Dramatiq's 1,000,000


def queue_name() -> str:
    return os.environ.get(QUEUE_NAME_ENV) or "chronomem"


def job_threads() -> int:
    """``CHRONOMEM_JOB_THREADS``: how many threads (lanes) a memory's in-process queue runs jobs on, shared by
    all its tenants (default 4, 1 to 64).  A bound, not one per tenant: each lane is a thread held
    for the life of the memory; more than one, so a tenant's slow model calls do not hold up every other."""
    raw = os.environ.get(THREADS_ENV, "").strip()
    if not raw:
        return DEFAULT_THREADS
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if not 1 <= value <= MAX_THREADS:
        raise ConfigError(f"{THREADS_ENV}={raw!r}: give how many threads run a memory's in-process jobs "
                          f"(a whole number from 1 to {MAX_THREADS})")
    return value


def lane_of(tenant: str, lanes: int) -> int:
    """The lane (thread) of the in-process queue that runs ``tenant``'s jobs: a stable hash of the tenant, so
    its jobs run in order on one thread (two at once would race on its users' facts)."""
    return zlib.crc32(tenant.encode()) % lanes


class JobQueue(Protocol):
    """Hands a stored job to whatever will run it."""

    def send(self, job: Job) -> None: ...

    def close(self) -> None: ...


class LocalQueue:
    """Runs jobs on background threads of this process (no broker): ``lanes`` of them at most (default
    :func:`job_threads`), each started by its first job.  A job goes to its tenant's lane (:func:`lane_of`),
    so a tenant's jobs run one at a time, in order, while the tenants of other lanes run beside them.  The
    lane of the runner's own tenant also sweeps (:meth:`_loop`): one sweeper, and a memory without tenant
    views still runs a single thread."""

    def __init__(self, runner: JobRunner, lanes: int | None = None) -> None:
        if not runner.in_process:  # its name marks the jobs it holds, so later sweeps know them (model.IN_PROCESS)
            runner.name = IN_PROCESS + runner.name
        self.runner = runner
        self.lanes = job_threads() if lanes is None else lanes
        if not 1 <= self.lanes <= MAX_THREADS:
            raise ConfigError(f"lanes={lanes!r}: an in-process queue runs 1 to {MAX_THREADS} threads")
        # per lane: its jobs as (tenant, job id), None to stop; its thread, once its first job came
        self._qs: list[_queue.Queue[tuple[str, str] | None]] = [_queue.Queue() for _ in range(self.lanes)]
        self._threads: list[threading.Thread | None] = [None] * self.lanes
        self._sweeper = 0 if runner.tenant is None else lane_of(runner.tenant, self.lanes)
        self._lock = threading.Lock()
        self._closed = False
        self._started = utcnow()

    def start(self) -> None:
        """Start the sweeping lane: its first sweep runs at once (the jobs an earlier process left)."""
        self._start_lane(self._sweeper)

    def _start_lane(self, lane: int) -> None:
        with self._lock:
            if self._threads[lane] is None and not self._closed:
                name = "chronomem-jobs" if lane == self._sweeper else f"chronomem-jobs-{lane}"
                thread = self._threads[lane] = threading.Thread(target=self._loop, args=(lane,), daemon=True,
                                                                name=name)
                thread.start()

    def send(self, job: Job) -> None:
        if self._closed:
            raise ConfigError("the memory is closed: its job queue accepts no more jobs")
        self.start()
        try:  # recorded as ours (the service then finds it sent): only in-process queues take it over later
            self.runner.store.swap_job_send(job.id, None, utcnow(), self.runner.name)
        except Exception as e:  # noqa: BLE001 - the job still runs here; the service's mark records the send
            log.warning("job %s: could not record its in-process queue (%s)", job.id, e)
        self._put(job.tenant, job.id)

    def _put(self, tenant: str, job_id: str) -> None:
        """Queue a job on its tenant's lane, whose thread starts with its first job."""
        lane = lane_of(tenant, self.lanes)
        self._start_lane(lane)
        self._qs[lane].put((tenant, job_id))

    def _loop(self, lane: int) -> None:
        q = self._qs[lane]
        sweeps = lane == self._sweeper
        if sweeps:
            # jobs a previous process left behind, the ones it had taken into its own in-process queue included
            # (a job that another live process still holds is claimed once, run once); never a broker's
            self._sweep(sent_before=self._started)
        while True:
            try:  # the sweeping lane sweeps again once it has been idle half a lease; the others only wait
                item = q.get(timeout=self.runner.lease_s / 2 if sweeps else None)
            except _queue.Empty:
                self._sweep()
                continue
            if item is None:
                return
            tenant, job_id = item
            try:
                self.runner.run(job_id, tenant)
            except Exception:  # the store failed; the job stays queued/running and is swept later
                log.exception("job %s could not be run", job_id)

    def _sweep(self, sent_before: datetime | None = None) -> None:
        try:
            self.runner.sweep(lambda j: self._put(j.tenant, j.id), sent_before=sent_before)
        except Exception:
            log.exception("job sweep failed")

    def close(self, timeout: float = 30.0) -> None:
        """Finish the jobs in progress (up to ``timeout`` in all), then stop every lane; queued jobs stay
        queued, marked unsent (still naming this queue), so the next in-process queue's first sweep runs them
        at once, and any other sweep (a worker's included) sends them after its grace."""
        with self._lock:  # no lane starts after this
            self._closed = True
            started = [(q, t) for q, t in zip(self._qs, self._threads, strict=True) if t is not None]
        dropped = []
        for q, _ in started:
            while True:  # drop what has not started: it is in the jobs table and resumes later
                try:
                    item = q.get_nowait()
                except _queue.Empty:
                    break
                if item is not None:
                    dropped.append(item[1])
            q.put(None)
        deadline = time.monotonic() + timeout
        for _, thread in started:
            thread.join(max(0.0, deadline - time.monotonic()))
        if dropped:
            try:
                self.runner.store.unsend_jobs(dropped)
            except Exception:  # the store is failing: the next process's first sweep still finds them
                log.exception("could not mark %d queued job(s) unsent", len(dropped))


def make_broker(url: str) -> Any:
    """A Dramatiq broker for ``amqp://`` / ``redis://`` URLs."""
    try:
        import dramatiq  # noqa: F401
    except ImportError as e:  # pragma: no cover - depends on installed extras
        raise ConfigError(f"a broker queue needs: pip install 'chronomem[queue]' ({e})") from e
    if url.startswith(("amqp://", "amqps://")):
        from dramatiq.brokers.rabbitmq import RabbitmqBroker

        return RabbitmqBroker(url=url, confirm_delivery=True)
    if url.startswith(("redis://", "rediss://")):
        from dramatiq.brokers.redis import RedisBroker

        return RedisBroker(url=url, heartbeat_timeout=REDIS_HEARTBEAT_TIMEOUT_MS,
                           maintenance_chance=REDIS_MAINTENANCE_CHANCE)
    raise ConfigError(f"unsupported queue URL {url.split('@')[-1]!r}: use amqp://… (RabbitMQ), "
                      "redis://… (Redis) or leave CHRONOMEM_QUEUE_URL unset for the in-process queue")


class BrokerQueue:
    """Sends job ids to ``chronomem worker`` processes through a Dramatiq broker."""

    def __init__(self, url: str, broker: Any | None = None) -> None:
        self.url = url
        self.broker = broker if broker is not None else make_broker(url)
        self.queue_name = queue_name()
        self.broker.declare_queue(self.queue_name)

    def send(self, job: Job) -> None:
        import dramatiq

        self.broker.enqueue(dramatiq.Message(queue_name=self.queue_name, actor_name=ACTOR_NAME,
                                             args=(job.id,), kwargs={}, options={}))

    def close(self) -> None:
        self.broker.close()


def queue_url(explicit: str | None = None) -> str | None:
    """The configured broker URL, or None for the in-process queue."""
    url = explicit if explicit is not None else os.environ.get(QUEUE_ENV)
    return url or None
