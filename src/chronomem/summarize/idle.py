"""Ending sessions that went quiet: the idle timeout (``CHRONOMEM_SESSION_IDLE``).

A session is *idle* when no new turn arrived for ``idle_seconds`` (arrival
time: a message's ``recorded_at`` in the store, the last append in a
buffer; the turns' own event timestamps may lie in the past).
:func:`find_idle_sessions` lists them from the long-term store (sessions not
ended yet) and from the session buffer; :meth:`chronomem.Memory.end_idle_sessions`
ends each one exactly as ``end_session`` does (flush, extract, Rsum update),
with the time of its last turn as the end time.

Long-lived processes run :class:`IdleSweeper` (a daemon thread) or
``AsyncMemory``'s sweeper task; tests call ``end_idle_sessions(now=...)``
with a chosen clock instead of sleeping.  Ending is idempotent, so two
sweepers racing on the same session do the work twice but write one result.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Protocol

__all__ = ["IdleSweep", "IdleSweeper", "find_idle_sessions", "start_idle_sweeper", "sweep_interval"]

log = logging.getLogger(__name__)


class _IdleSource(Protocol):
    def idle_sessions(self, before: datetime) -> list[tuple[str, str]]: ...


@dataclass(slots=True)
class IdleSweep:
    """What one sweep did."""

    now: datetime
    idle_seconds: float
    ended: list[tuple[str, str]] = field(default_factory=list)  # (user_id, session_id)
    failed: dict[tuple[str, str], str] = field(default_factory=dict)  # left for the next sweep, with the error


def find_idle_sessions(sources: list[Any], now: datetime, idle_seconds: float) -> list[tuple[str, str]]:
    """``(user_id, session_id)`` pairs idle at ``now`` in any of ``sources`` (stores, buffers), sorted."""
    before = now - timedelta(seconds=idle_seconds)
    found: set[tuple[str, str]] = set()
    for src in sources:
        if src is None:
            continue
        lister = getattr(src, "idle_sessions", None)
        if lister is None:
            log.warning("%s cannot list idle sessions; its sessions are not ended by the idle timeout",
                        type(src).__name__)
            continue
        found.update(lister(before))
    return sorted(found)


def sweep_interval(idle_seconds: float) -> float:
    """How often to sweep: a quarter of the timeout, between 1 s and 60 s."""
    return min(60.0, max(1.0, idle_seconds / 4))


class IdleSweeper:
    """A daemon thread that calls ``sweep()`` every ``interval`` seconds until :meth:`stop`.

    ``sweep`` is typically ``mem.end_idle_sessions``; an exception in one
    sweep is logged and the next one runs as planned.
    """

    def __init__(self, sweep: Callable[[], Any], interval: float, *, name: str = "chronomem-idle-sweeper"):
        if not interval > 0:
            raise ValueError(f"interval must be > 0 seconds, got {interval!r}")
        self._sweep = sweep
        self.interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)

    def start(self) -> IdleSweeper:
        self._thread.start()
        return self

    def run_once(self) -> Any:
        try:
            return self._sweep()
        except Exception:  # noqa: BLE001 - a background loop must survive one bad sweep
            log.exception("idle-session sweep failed; retrying in %.0f s", self.interval)
            return None

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self.run_once()

    def stop(self, timeout: float | None = None) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def __enter__(self) -> IdleSweeper:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_idle_sweeper(mem: Any, *, sweep: Callable[[], Any] | None = None) -> IdleSweeper | None:
    """Start the sweeper of a long-lived process (server, worker) when ``mem.config.session_idle`` is set.

    ``sweep`` defaults to ``mem.end_idle_sessions``; pass a wrapper to run it where the process
    runs its other calls on ``mem``.  Returns the started sweeper (``stop()`` it at shutdown), or
    None when no idle timeout is configured.
    """
    idle = mem.config.session_idle
    if not idle:
        return None
    log.info("ending sessions idle for %.0f s (sweep every %.0f s)", idle, sweep_interval(idle))
    return IdleSweeper(sweep or mem.end_idle_sessions, sweep_interval(idle)).start()
