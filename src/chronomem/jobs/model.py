"""The job record: one unit of queued work (extracting stored turns, ending a session, rewriting the
summaries written after a forgotten session).

A job is persisted in the memory's store; the queue transport only carries its id.  Its
``status`` moves ``queued → running → done | failed``; a ``running`` job whose lease
expired (its worker died) goes back to ``queued`` and is delivered again.

``worker`` names the runner of a running job; while the job is queued it names the queue its last send
went to: an in-process queue's runner (:data:`IN_PROCESS` + its name; kept when that queue closes and
drops the job unsent), or None for a broker (or never sent).  So the sweep of an in-process queue can
tell the jobs it may take over (those an in-process queue held, gone with its process) from the ones a
broker holds for ``chronomem worker`` processes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum
from typing import Any

from ..timeutil import iso
from ..validation import check_place


IN_PROCESS = "local:"  # starts the name of an in-process queue's runner, and so ``worker`` of the jobs it holds


class JobKind(str, Enum):
    ADD = "add"  # extract the turns a submit stored (payload: message_ids)
    END_SESSION = "end_session"  # flush, extract what is left, update the summary
    REWRITE_SUMMARIES = "rewrite_summaries"  # the user's summaries after a forgotten session, without it


class JobStatus(str, Enum):
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"

    @property
    def finished(self) -> bool:
        return self in (JobStatus.DONE, JobStatus.FAILED)


@dataclass(slots=True)
class Job:
    """A queued unit of work and, once finished, its outcome (``result`` or ``error``)."""

    id: str
    tenant: str
    user_id: str
    kind: JobKind
    status: JobStatus
    created_at: datetime
    updated_at: datetime
    session_id: str | None = None
    payload: dict[str, Any] = field(default_factory=dict)
    result: dict[str, Any] | None = None  # the AddResult / SessionEnd as JSON
    error: str | None = None
    attempts: int = 0
    worker: str | None = None
    lease_until: datetime | None = None
    sent_at: datetime | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None

    @property
    def finished(self) -> bool:
        return self.status.finished

    def to_dict(self) -> dict[str, Any]:
        """The public view (no worker bookkeeping, no tenant)."""
        return {"id": self.id, "kind": self.kind.value, "user_id": self.user_id,
                "session_id": self.session_id, "status": self.status.value, "result": self.result,
                "error": self.error, "attempts": self.attempts, "created_at": iso(self.created_at),
                "started_at": iso(self.started_at) if self.started_at else None,
                "finished_at": iso(self.finished_at) if self.finished_at else None}


@dataclass(frozen=True, slots=True)
class JobPosition:
    """A place in the job list, newest first (by ``created_at``, then id, both descending): ``after=`` a
    position lists the older jobs, so paging goes on where it stopped while jobs arrive or finish."""

    created_at: datetime
    id: str

    def __post_init__(self) -> None:
        check_place(self, "JobPosition", (("created_at", datetime, False), ("id", str, False)))

    @classmethod
    def of(cls, job: Job) -> JobPosition:
        return cls(job.created_at, job.id)
