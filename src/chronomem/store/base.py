"""The store interface: everything chronomem persists, scoped by ``user_id``.

Every method takes ``user_id`` first and touches only that user's rows; there
is no method that reads across users except :meth:`Store.users`, which lists
user ids (for copy/migrate tools).  Implementations: :mod:`.sqlite` (embedded
default) and :mod:`.postgres`; both derive from :class:`.sql.SQLStore`, which
holds the one query layer, and pass the same contract tests.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Generator, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, closing
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..model import (Checkpoint, Entity, EntityPosition, Fact, FactHead, FactPosition, Message, MessagePosition,
                     Session, SessionPosition)

if TYPE_CHECKING:
    from ..jobs.model import Job, JobPosition, JobStatus
    from ..keys import ApiKey

#: a user's rows, table by table and a batch at a time (:meth:`Store.iter_user`)
UserRows = Generator[tuple[str, list[dict[str, Any]]], None, None]

#: rows :meth:`Store.iter_user` reads at once by default (a vector row is ~2 KB as floats)
DUMP_BATCH = 1000


def rows_by_table(rows: UserRows) -> dict[str, list[dict[str, Any]]]:
    """``rows`` (as :meth:`Store.iter_user` yields them) read whole, per table; the iterator is closed."""
    out: dict[str, list[dict[str, Any]]] = {}
    with closing(rows):
        for table, batch in rows:
            out.setdefault(table, []).extend(batch)
    return out


class Store(ABC):
    """Abstract persistence for one chronomem memory."""

    url: str
    has_vector_index: bool = False  # True when k-NN uses an ANN index (pgvector); else exact scan

    # -- lifecycle ---------------------------------------------------------
    @abstractmethod
    def close(self) -> None: ...

    @abstractmethod
    def transaction(self, user_id: str) -> AbstractContextManager[None]:
        """A write transaction that serialises writers of ``user_id``.  Nests."""

    @abstractmethod
    def users(self, *, tenant: str | None = None, after: str | None = None,
              limit: int | None = None) -> list[str]:
        """User keys that hold anything, in byte order: ``tenant``'s only when given (its users' keys,
        see :mod:`.tenant`), those after ``after``, at most ``limit``."""

    # -- sessions & messages --------------------------------------------------
    @abstractmethod
    def ensure_session(self, user_id: str, session_id: str, *, started_at: datetime | None = None,
                       agent_id: str | None = None) -> Session: ...

    @abstractmethod
    def end_session(self, user_id: str, session_id: str, ended_at: datetime) -> None: ...

    @abstractmethod
    def sessions(self, user_id: str, *, after: SessionPosition | None = None,
                 limit: int | None = None) -> list[Session]:
        """The user's sessions in :class:`SessionPosition` order (no start first, then by start and id);
        those after ``after``, at most ``limit``."""

    @abstractmethod
    def add_messages(self, user_id: str, messages: Sequence[Message]) -> list[Message]:
        """Store messages idempotently by id; return the ones that were new."""

    @abstractmethod
    def messages(self, user_id: str, *, session_id: str | None = None,
                 ids: Sequence[str] | None = None, pending_only: bool = False,
                 after: MessagePosition | None = None, limit: int | None = None) -> list[Message]:
        """The user's turns matching every given filter, by timestamp, session and place in it
        (:class:`~chronomem.model.MessagePosition`); ``after`` and ``limit``: one page of them."""

    @abstractmethod
    def next_messages(self, user_id: str, ids: Sequence[str]) -> dict[str, Message]:
        """For each message id, the message that follows it in its session (by ``seq``), if any.

        Ids that are unknown or end their session have no entry.
        """

    @abstractmethod
    def previous_messages(self, user_id: str, ids: Sequence[str]) -> dict[str, Message]:
        """For each message id, the message that comes right before it in its session (by ``seq``), if any.

        Ids that are unknown or open their session have no entry.
        """

    @abstractmethod
    def mark_extracted(self, user_id: str, ids: Sequence[str], state: int = 1) -> None:
        """Set the turns' extraction state: 1 done, 0 pending, any other value a failed try (the write
        pipeline's ``FAILED``, 2), which counts as pending.  Any state but 1 leaves a turn already done as it
        is (a racing extraction of the same turns may have committed first)."""

    # -- entities --------------------------------------------------------------
    @abstractmethod
    def entities(self, user_id: str, ids: Sequence[str] | None = None, *, with_aliases: bool = True,
                 after: EntityPosition | None = None, limit: int | None = None) -> list[Entity]:
        """The user's entities (all, or those with ``ids``) by creation time, then id; those after ``after``,
        at most ``limit``.  ``with_aliases=False`` skips loading aliases."""

    def entity_types(self, user_id: str, ids: Sequence[str]) -> dict[str, str | None]:
        """The type of each of the entities ``ids`` that exists (``None`` when it has none)."""
        return {e.id: e.type for e in self.entities(user_id, ids, with_aliases=False)}

    @abstractmethod
    def entity_ids_by_norm(self, user_id: str, norms: Sequence[str]) -> dict[str, str]:
        """Map normalised spellings (names and aliases) to entity ids."""

    @abstractmethod
    def insert_entities(self, user_id: str, entities: Sequence[tuple[Entity, str]], *,
                        learned_from: Mapping[str, Sequence[str]] | None = None) -> None:
        """Insert new entities, each with the normalised form of its canonical name.  ``learned_from``:
        normalised name → the turns that used it, when extraction named the entity (forgetting them all
        takes the name, :meth:`delete_session`); a name without turns was given by hand and stays."""

    @abstractmethod
    def add_alias(self, user_id: str, entity_id: str, alias: str, norm: str,
                  learned_from: Sequence[str] | None = None) -> None:
        """Record ``alias`` (normalised ``norm``) for the entity.  ``learned_from``: the turns that used
        it, when extraction learned it (forgetting them all drops it); None for an alias given by hand."""

    @abstractmethod
    def add_alias_sources(self, user_id: str, sources: Mapping[str, Sequence[str]]) -> None:
        """Record more turns that used learned spellings, aliases and canonical names alike (normalised
        spelling → turn ids); names given by hand are left alone.  A store may keep only one turn of each
        session once a list grows: turns are forgotten with their session."""

    @abstractmethod
    def merge_entities(self, user_id: str, source_id: str, target_id: str) -> list[str]:
        """Make ``source_id`` part of ``target_id``: its facts name the target (id and name), its names
        become the target's, its type fills a target without one; the source entity and its vector go,
        and so do the vectors of the facts that moved (their text changed).  Returns the ids of those
        facts; nothing is done (``[]``) unless both entities exist.  Repetitions the merge makes are
        the caller's to fold (:meth:`chronomem.graph.GraphWriter.merge_entities`)."""

    @abstractmethod
    def mark_given_by_hand(self, user_id: str, norms: Sequence[str]) -> None:
        """The learned spellings ``norms`` (normalised) were given by hand too (a fact written without
        turns, a name a correction changes): forgetting turns no longer takes them."""

    def entity_version(self, user_id: str) -> tuple[int, int] | None:
        """The last change to the spellings of the user's entities (names and aliases) as ``(seq, tag)``,
        ``(0, 0)`` before any; ``None`` when the store logs no changes.  The fuzzy resolver keeps a user's
        spellings between writes and asks this (then :meth:`entities_changed_since`) instead of reading
        every entity again; a store without a log is read whole each time."""
        return None

    def entities_changed_since(self, user_id: str, version: tuple[int, int]) -> list[str] | None:
        """Ids of the entities that gained a spelling (or were created) after ``version``, a value of
        :meth:`entity_version` for this user; ``None`` when the log cannot tell: ``version`` is no longer
        in it (too old, rolled back, or before the first logged change) or a spelling was removed or
        rewritten since (a forget, merge or rename), so a reader must read every entity again."""
        return None

    # -- facts -------------------------------------------------------------------
    @abstractmethod
    def insert_facts(self, user_id: str, facts: Sequence[Fact]) -> None: ...

    @abstractmethod
    def update_facts(self, user_id: str, facts: Sequence[Fact]) -> None:
        """Persist the mutable parts of stored facts (interval, confidence, provenance)."""

    @abstractmethod
    def facts(self, user_id: str, *, ids: Sequence[str] | None = None,
              subject_ids: Sequence[str] | None = None, object_ids: Sequence[str] | None = None,
              touching: Sequence[str] | None = None, relations: Sequence[str] | None = None,
              as_of: datetime | None = None, min_confidence: float | None = None,
              session_id: str | None = None, limit: int | None = None,
              closed_by: Sequence[str] | None = None, after: FactPosition | None = None) -> list[Fact]:
        """Facts matching every given filter, in :class:`~chronomem.model.FactPosition` order (no start first,
        then oldest ``valid_from``, ``recorded_at``, id).

        ``as_of`` keeps facts valid at that instant; ``touching`` matches either endpoint;
        ``closed_by`` keeps facts closed (or corrected) by one of those fact ids; ``after`` keeps the facts
        placed after that position (with ``limit``: one page of a listing).
        """

    @abstractmethod
    def count_facts(self, user_id: str) -> int: ...

    @abstractmethod
    def count_touching(self, user_id: str, entity_ids: Sequence[str]) -> dict[str, int]:
        """How many facts, of any confidence and time, name each entity at either end (an entity named by
        none has no entry): read from the endpoint indexes alone, to tell a hub before reading it."""

    @abstractmethod
    def fact_heads(self, user_id: str, touching: Sequence[str], *,
                   min_confidence: float | None = None) -> list[FactHead]:
        """The heads of the facts :meth:`facts` gives for ``touching`` and ``min_confidence``, in its order:
        what ranks a hub's facts, read without their words, sources and statements."""

    @abstractmethod
    def held_fact_ids(self, user_id: str, ids: Sequence[str]) -> set[str]:
        """Which of ``ids`` name facts of the user: a check of existence that reads no fact."""

    @abstractmethod
    def delete_facts(self, user_id: str, ids: Sequence[str]) -> int: ...

    @abstractmethod
    def drop_fact_copies(self, user_id: str, ids: Sequence[str]) -> None:
        """Drop what was made from these facts as they were: their vectors (embedded again on next need)
        and the results of jobs that quote them.  ``delete_facts`` does it; forgetting calls it for the
        facts whose words it takes back."""

    # -- text and vector search ----------------------------------------------------
    @abstractmethod
    def search_facts_text(self, user_id: str, query: str, limit: int = 20) -> list[tuple[str, float]]:
        """Full-text search over facts: ``(fact_id, score)``, best first."""

    @abstractmethod
    def search_messages_text(self, user_id: str, query: str, limit: int = 20) -> list[tuple[str, float]]: ...

    @abstractmethod
    def put_vectors(self, user_id: str, kind: str, items: Sequence[tuple[str, Sequence[float]]],
                    model: str) -> None: ...

    @abstractmethod
    def knn(self, user_id: str, kind: str, vector: Sequence[float], k: int = 10,
            model: str | None = None) -> list[tuple[str, float]]:
        """Nearest items of ``kind`` for this user: ``(item_id, cosine similarity)``, best first."""

    @abstractmethod
    def vector_ids(self, user_id: str, kind: str, model: str) -> set[str]: ...

    @abstractmethod
    def entities_without_vectors(self, user_id: str, kind: str, model: str) -> list[Entity]:
        """The user's entities that have no ``kind`` vector of ``model``, oldest first, without aliases (the
        ones a search must embed before it compares names with a question's: one read, not every entity)."""

    @abstractmethod
    def get_vectors(self, user_id: str, kind: str, ids: Sequence[str], model: str) -> dict[str, list[float]]:
        """Stored vectors of the given items (missing ones absent)."""

    # -- Rsum checkpoints ------------------------------------------------------------
    @abstractmethod
    def put_checkpoint(self, cp: Checkpoint) -> None: ...

    @abstractmethod
    def checkpoints(self, user_id: str) -> list[Checkpoint]:
        """Oldest first."""

    @abstractmethod
    def checkpoint_heads(self, user_id: str) -> list[tuple[int, str]]:
        """``(seq, session_id)`` of the user's checkpoints, oldest first, without their texts: what a
        session's end checks the chain by (the texts of a long chain are megabytes)."""

    @abstractmethod
    def checkpoint_page(self, user_id: str, *, after_seq: int = 0, limit: int = 50,
                        session_id: str | None = None) -> list[Checkpoint]:
        """Up to ``limit`` of the user's checkpoints after seq ``after_seq``, oldest first (only one
        ``session_id``'s, if given), none past the chain's first gap (:meth:`checkpoint_at`'s run): a page of
        the explorer's list, read alone (every page read the whole chain, texts included)."""

    @abstractmethod
    def checkpoint_at(self, user_id: str, as_of: datetime | None = None) -> Checkpoint | None:
        """The checkpoint valid at ``as_of`` (default: the latest), read alone: a summary is read on every
        ``summary()``, ``context()`` and session end, and the chain grows by one per session.

        Only the run of seqs 1, 2, 3… the chain starts with counts (a gap is a forget's rewrite still owed:
        see :func:`chronomem.summarize.rsum.first_gap`); at ``as_of`` the valid one is the last checkpoint
        of that run before the first whose session time (its creation time when unknown) is after
        ``as_of`` — :func:`chronomem.summarize.rsum.checkpoint_at` is the rule over a whole chain."""

    @abstractmethod
    def delete_checkpoints(self, user_id: str, from_seq: int = 0) -> int: ...

    # -- forgetting ------------------------------------------------------------------
    @abstractmethod
    def delete_session(self, user_id: str, session_id: str) -> list[str]:
        """Delete a session's messages, checkpoints and row (facts are handled by the caller), and the
        spellings only its turns used.  An entity whose name was one of them takes the first spelling still
        said (:func:`chronomem.entities.best_spelling`), in the entity and in the facts naming it;
        their vectors and quoting job results go.  Returns the ids of the entities renamed."""

    @abstractmethod
    def delete_orphan_entities(self, user_id: str) -> int:
        """Delete entities no fact refers to any more (with their names and vectors)."""

    @abstractmethod
    def delete_user(self, user_id: str) -> None:
        """Delete every row of the user, including search indexes and vectors."""

    # -- bulk rows for export / import / copy ------------------------------------------
    @abstractmethod
    def iter_user(self, user_id: str, *, batch: int = DUMP_BATCH) -> UserRows:
        """Every row of the user as ``(table, rows)``: each table in turn (its rows in key order, at most
        ``batch`` a time; a table without rows as one empty batch), all read in one snapshot of the store
        (a read transaction of its own, or the user's write transaction), so the rows agree with each other.
        Exhaust or close the iterator: it holds the transaction."""

    def dump_user(self, user_id: str) -> dict[str, list[dict[str, Any]]]:
        """Every row of the user, per table (:meth:`iter_user` read whole)."""
        return rows_by_table(self.iter_user(user_id))

    @abstractmethod
    def load_user(self, user_id: str, rows: dict[str, list[dict[str, Any]]]) -> dict[str, int]:
        """Insert dumped rows in one transaction (the caller's, when it holds one); rows whose key
        exists are kept as stored.  An import calls it a batch of one table at a time.

        Returns the rows actually added per table.  Callers check the rows first
        (:class:`chronomem.exports.RowChecker`): the store trusts them.
        """

    # -- jobs (chronomem.jobs): keyed by job id; ``user_id`` is the store's user key -----------------
    @abstractmethod
    def insert_job(self, job: Job) -> None:
        """Insert a queued job (inside the caller's transaction when there is one)."""

    @abstractmethod
    def job(self, tenant: str, job_id: str) -> Job | None:
        """The tenant's job with this id, or None (another tenant's job is None too)."""

    @abstractmethod
    def jobs(self, tenant: str, *, user_id: str | None = None, status: JobStatus | None = None,
             limit: int | None = None, offset: int = 0, after: JobPosition | None = None) -> list[Job]:
        """The tenant's jobs (of ``user_id`` when given), newest first; ``after``: those older than it."""

    @abstractmethod
    def claim_job(self, job_id: str, worker: str, now: datetime, lease_until: datetime) -> Job | None:
        """Mark a queued job, or a running one whose lease expired, running for ``worker``.

        Returns the claimed job, or None when it is finished or another worker holds a live lease.
        """

    @abstractmethod
    def renew_job(self, job_id: str, worker: str, lease_until: datetime) -> bool:
        """Extend ``worker``'s lease; False when the worker no longer holds the job."""

    @abstractmethod
    def finish_job(self, job_id: str, worker: str, status: JobStatus, now: datetime,
                   result: dict[str, Any] | None, error: str | None) -> bool:
        """Record the outcome if ``worker`` still holds the job."""

    @abstractmethod
    def mark_job_sent(self, job_id: str, now: datetime, tenant: str | None = None) -> None:
        """Record that the job reached the queue (of ``tenant`` only, when given)."""

    @abstractmethod
    def jobs_to_send(self, now: datetime, *, unsent_before: datetime, resend_before: datetime,
                     tenant: str | None = None, in_process: bool = False, orphaned_before: datetime | None = None,
                     limit: int = 100) -> list[Job]:
        """What a sweep (re)sends, oldest first: running jobs whose lease expired, queued jobs never sent
        (created before ``unsent_before``) and queued jobs whose message may be lost (see
        :meth:`SQLStore.jobs_to_send <chronomem.store.sql.SQLStore.jobs_to_send>`)."""

    @abstractmethod
    def swap_job_send(self, job_id: str, previous: datetime | None, sent_at: datetime | None,
                      sent_to: str | None) -> bool:
        """Record a queued job's send (``sent_at``, the queue ``sent_to``) if its last send is still
        ``previous``: of several sweeping workers one wins."""

    @abstractmethod
    def unsend_jobs(self, job_ids: Sequence[str]) -> int:
        """Mark queued jobs as not handed to any queue (an in-process queue closing with them)."""

    @abstractmethod
    def requeue_job(self, job_id: str, now: datetime) -> bool:
        """Put a running job whose lease expired back to queued (not yet sent)."""

    @abstractmethod
    def delete_finished_jobs(self, finished_before: datetime, *, tenant: str | None = None,
                             limit: int = 1000) -> int:
        """Delete at most ``limit`` done or failed jobs (of ``tenant``) that finished before
        ``finished_before``; how many were deleted.  Queued and running jobs are never touched."""

    # -- API keys (chronomem.keys): not user-scoped; only admin tools and the server use them ------
    @abstractmethod
    def insert_api_key(self, key: ApiKey) -> None: ...

    @abstractmethod
    def api_key(self, prefix: str) -> ApiKey | None: ...

    @abstractmethod
    def api_keys(self, tenant: str | None = None) -> list[ApiKey]: ...

    @abstractmethod
    def revoke_api_key(self, prefix: str, now: datetime) -> bool:
        """Revoke an active key; False when there is no such active key."""

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def iter_users(self) -> Iterator[str]:
        yield from self.users()

    def idle_sessions(self, before: datetime, *, tenant: str | None = None) -> list[tuple[str, str]]:
        """``(user_id, session_id)`` of every session not ended whose last turn was recorded
        (``recorded_at``, arrival time) at or before ``before``; sessions without turns are left out;
        ``tenant``'s users only when given (as :meth:`users` lists them)."""
        out = []
        for user_id in self.users(tenant=tenant):
            for s in self.sessions(user_id):
                if s.ended_at is not None:
                    continue
                arrived = [m.recorded_at for m in self.messages(user_id, session_id=s.id)]
                if arrived and max(arrived) <= before:
                    out.append((user_id, s.id))
        return out
