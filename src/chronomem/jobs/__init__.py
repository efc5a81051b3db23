"""Queued ingestion, and the rewrite of the summaries after a forgotten session: the job record
(:mod:`.model`), the queue transports (:mod:`.queue`), what a job does (:mod:`.runner`) and the
worker (:mod:`.worker`)."""

from .model import Job, JobKind, JobPosition, JobStatus

__all__ = ["Job", "JobKind", "JobPosition", "JobStatus"]
