"""What a job does, and its outcome as JSON.

Every kind is safe to run again after a crash: an ``add`` job extracts only those of its
turns that are not marked extracted yet (a chunk's facts and its "extracted" mark commit in
one transaction), ending a session is repeatable (:meth:`Memory.end_session`), and rewriting the
summaries after a forgotten session rewrites only what is still owed (:meth:`Memory.rewrite_summaries`:
nothing once the chain has no gap, whoever closed it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..timeutil import iso
from .model import Job, JobKind, JobStatus

if TYPE_CHECKING:
    from ..extract.pipeline import AddResult
    from ..memory import Memory
    from ..summarize.lifecycle import SessionEnd


def add_result_json(res: AddResult) -> dict[str, Any]:
    return {"session_id": res.session_id, "session_ids": list(res.session_ids),
            "messages_stored": res.messages_stored, "messages_skipped": res.messages_skipped,
            "messages_extracted": res.messages_extracted, "chunks": res.chunks,
            "added": [f.to_dict() for f in res.added], "closed": [f.to_dict() for f in res.closed],
            "reinforced": [f.to_dict() for f in res.reinforced],
            "failed_chunks": [{"message_ids": c.message_ids, "error": c.public or c.error} for c in res.failed_chunks],
            "warnings": list(res.warnings), "usage": dict(res.usage)}


def session_end_json(end: SessionEnd) -> dict[str, Any]:
    cp = end.checkpoint
    out: dict[str, Any] = {"flushed": len(end.flushed), "stored": len(end.stored),
                           "summary": None if cp is None else cp.memory,
                           "checkpoint_seq": None if cp is None else cp.seq,
                           "session_time": None if cp is None else iso(cp.session_time)}
    ext = end.extraction
    out["extraction"] = add_result_json(ext) if hasattr(ext, "failed_chunks") else None
    return out


def execute(mem: Memory, job: Job) -> tuple[JobStatus, dict[str, Any] | None, str | None]:
    """Run ``job`` on ``mem`` (bound to the job's tenant): ``(status, result, error)``.

    An extraction that leaves chunks failed (the model kept answering badly, or was down)
    is ``failed`` with the result attached; its turns stay pending for a later retry.
    """
    if job.kind is JobKind.ADD:
        res = mem.extract_pending(user_id=job.user_id, session_id=job.session_id,
                                  message_ids=list(job.payload.get("message_ids", [])))
        out = add_result_json(res)
        out["messages_stored"] = int(job.payload.get("messages_stored", 0))
        out["messages_skipped"] = int(job.payload.get("messages_skipped", 0))
        out["warnings"] = list(job.payload.get("warnings", [])) + out["warnings"]
        if res.failed_chunks:
            return JobStatus.FAILED, out, res.failed_chunks[0].public or res.failed_chunks[0].error
        return JobStatus.DONE, out, None
    if job.kind is JobKind.END_SESSION:
        assert job.session_id is not None
        end = mem.end_session(user_id=job.user_id, session_id=job.session_id,
                              ended_at=job.payload.get("ended_at"))
        out = session_end_json(end)
        ext = end.extraction
        if getattr(ext, "failed_chunks", None):
            return JobStatus.FAILED, out, ext.failed_chunks[0].public or ext.failed_chunks[0].error
        return JobStatus.DONE, out, None
    if job.kind is JobKind.REWRITE_SUMMARIES:  # counts only: a result never quotes a summary
        return JobStatus.DONE, {"summaries_rewritten": mem.rewrite_summaries(user_id=job.user_id)}, None
    raise ValueError(f"unknown job kind {job.kind!r}")  # pragma: no cover - the enum has three kinds
