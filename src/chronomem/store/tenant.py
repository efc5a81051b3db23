"""A store bound to one tenant: every user id is namespaced inside the store layer.

:class:`TenantStore` wraps a store and rewrites each ``user_id`` it is given into the
tenant's user key (``"<tenant>\\x1f<user>"``; the default tenant keeps bare user ids, so
databases from before tenants keep working) and rewrites every row it returns back.  So
tenant ``acme``'s user ``u1`` and tenant ``beta``'s ``u1`` are different rows, and nothing
a tenant-bound caller passes can name another tenant's rows: user ids containing the
separator are refused for every tenant, and :meth:`users` lists only this tenant's users.
Jobs are scoped by their tenant column as well.

Only the :class:`~chronomem.store.base.Store` interface, a few read-only attributes and
private internals (for tests and admin tools) pass through; any other public method is
refused rather than forwarded unscoped.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, closing
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

from ..errors import ValidationError
from ..keys import DEFAULT_TENANT, ApiKey, check_tenant
from ..model import (Checkpoint, Entity, EntityPosition, Fact, FactHead, Message, MessagePosition, Session,
                     SessionPosition)
from .base import DUMP_BATCH, Store, UserRows

if TYPE_CHECKING:
    from ..jobs.model import Job, JobPosition, JobStatus

SEP = "\x1f"  # ASCII unit separator: cannot appear in a user id
_PAST_SEP = chr(ord(SEP) + 1)  # "<tenant>" + this follows every "<tenant>\x1f<user>"
_PASSTHROUGH = frozenset({"url", "vector_backend", "meta", "schema_version", "schema", "path",
                          "use_vector_index", "extension_schema", "vector_extension_version"})
T = TypeVar("T", Fact, Message, Entity, Session, Checkpoint)


def user_key(tenant: str, user_id: str, field: str = "user_id") -> str:
    """The store's key for ``user_id`` of ``tenant`` (refuses ids that could name another tenant; an error
    names ``field``)."""
    if not isinstance(user_id, str):
        raise ValidationError(field, user_id, "must be a string")
    if SEP in user_id:
        raise ValidationError(field, user_id, "must not contain the control character \\x1f")
    return user_id if tenant == DEFAULT_TENANT else f"{tenant}{SEP}{user_id}"


def split_key(key: str) -> tuple[str, str]:
    """``(tenant, user_id)`` of a store user key."""
    tenant, sep, user = key.partition(SEP)
    return (tenant, user) if sep else (DEFAULT_TENANT, key)


@dataclass(frozen=True)
class KeySpan:
    """Where the store keys of one tenant's users lie in byte order (the order of both stores' keys):
    from ``low`` on, before ``high`` (``None``: to the end).  The default tenant's keys are the bare user
    ids, among every other tenant's keys: ``bare`` keeps only those."""

    low: str
    high: str | None
    bare: bool

    @classmethod
    def of(cls, tenant: str | None) -> KeySpan:
        """The span of ``tenant``'s keys; ``None``: every key of the store."""
        if tenant is None:
            return cls("", None, False)
        if check_tenant(tenant) == DEFAULT_TENANT:
            return cls("", None, True)
        return cls(tenant + SEP, tenant + _PAST_SEP, False)

    def holds(self, key: str) -> bool:
        """Whether ``key``, found between ``low`` and ``high``, is one of the span's."""
        return not (self.bare and SEP in key)

    @staticmethod
    def past(key: str) -> str:
        """The least key after every key of ``key``'s tenant."""
        return key.partition(SEP)[0] + _PAST_SEP


class TenantStore(Store):
    """``inner`` seen by one tenant.  ``owns_inner``: closing this closes ``inner`` too."""

    def __init__(self, inner: Store, tenant: str = DEFAULT_TENANT, *, owns_inner: bool = True) -> None:
        self.inner: Store = inner.inner if isinstance(inner, TenantStore) else inner
        self.tenant = check_tenant(tenant)
        self.owns_inner = owns_inner
        self.url = self.inner.url
        self._bare = self.tenant == DEFAULT_TENANT

    @property
    def has_vector_index(self) -> bool:  # type: ignore[override]
        return self.inner.has_vector_index

    def __getattr__(self, name: str) -> Any:
        if name in _PASSTHROUGH or (name.startswith("_") and not name.startswith("__")):
            return getattr(self.inner, name)  # read-only facts and internals (tests, admin tools)
        raise AttributeError(f"{name!r} is not available on a tenant-bound store")

    def __repr__(self) -> str:
        return f"TenantStore({self.inner.url!r}, tenant={self.tenant!r})"

    # -- key mapping ----------------------------------------------------------------------
    def _check_own(self, tenant: str | None) -> None:
        """A ``tenant=`` given to this store's cross-user reads must be its own."""
        if tenant is not None and check_tenant(tenant) != self.tenant:
            raise ValidationError("tenant", tenant, f"this store is bound to tenant {self.tenant!r}")

    def _k(self, user_id: str) -> str:
        return user_key(self.tenant, user_id)

    # the default tenant's keys are the bare user ids: rows pass through unchanged (no copies on
    # the bulk paths), after the same check that no id can spell another tenant's key
    def _out(self, obj: T) -> T:
        if self._bare:
            return obj
        obj.user_id = split_key(obj.user_id)[1]
        return obj

    def _outs(self, objs: list[T]) -> list[T]:
        if not self._bare:
            for o in objs:
                o.user_id = split_key(o.user_id)[1]
        return objs

    def _in(self, obj: T) -> T:
        """``obj`` keyed for the inner store (a copy: the caller's object is not changed)."""
        key = self._k(obj.user_id)
        if key == obj.user_id:
            return obj
        c = copy.copy(obj)
        c.user_id = key
        return c

    # -- lifecycle ----------------------------------------------------------------------------
    def close(self) -> None:
        if self.owns_inner:
            self.inner.close()

    def transaction(self, user_id: str) -> AbstractContextManager[None]:
        return self.inner.transaction(self._k(user_id))

    def users(self, *, tenant: str | None = None, after: str | None = None,
              limit: int | None = None) -> list[str]:
        self._check_own(tenant)
        start = None if after is None else user_key(self.tenant, after, "after")
        keys = self.inner.users(tenant=self.tenant, after=start, limit=limit)
        return keys if self._bare else [split_key(k)[1] for k in keys]

    def idle_sessions(self, before: datetime, *, tenant: str | None = None) -> list[tuple[str, str]]:
        self._check_own(tenant)
        return [(split_key(k)[1], sid) for k, sid in self.inner.idle_sessions(before, tenant=self.tenant)]

    # -- sessions & messages --------------------------------------------------------------------
    def ensure_session(self, user_id: str, session_id: str, *, started_at: datetime | None = None,
                       agent_id: str | None = None) -> Session:
        return self._out(self.inner.ensure_session(self._k(user_id), session_id, started_at=started_at,
                                                   agent_id=agent_id))

    def end_session(self, user_id: str, session_id: str, ended_at: datetime) -> None:
        self.inner.end_session(self._k(user_id), session_id, ended_at)

    def sessions(self, user_id: str, *, after: SessionPosition | None = None,
                 limit: int | None = None) -> list[Session]:
        return self._outs(self.inner.sessions(self._k(user_id), after=after, limit=limit))

    def add_messages(self, user_id: str, messages: Sequence[Message]) -> list[Message]:
        new = self.inner.add_messages(self._k(user_id), [self._in(m) for m in messages])
        ids = {m.id for m in new}
        return [m for m in messages if m.id in ids]

    def messages(self, user_id: str, *, session_id: str | None = None,
                 ids: Sequence[str] | None = None, pending_only: bool = False,
                 after: MessagePosition | None = None, limit: int | None = None) -> list[Message]:
        return self._outs(self.inner.messages(self._k(user_id), session_id=session_id, ids=ids,
                                              pending_only=pending_only, after=after, limit=limit))

    def next_messages(self, user_id: str, ids: Sequence[str]) -> dict[str, Message]:
        out = self.inner.next_messages(self._k(user_id), ids)
        return {k: self._out(m) for k, m in out.items()}

    def previous_messages(self, user_id: str, ids: Sequence[str]) -> dict[str, Message]:
        out = self.inner.previous_messages(self._k(user_id), ids)
        return {k: self._out(m) for k, m in out.items()}

    def mark_extracted(self, user_id: str, ids: Sequence[str], state: int = 1) -> None:
        self.inner.mark_extracted(self._k(user_id), ids, state)

    # -- entities ----------------------------------------------------------------------------------
    def entities(self, user_id: str, ids: Sequence[str] | None = None, *, with_aliases: bool = True,
                 after: EntityPosition | None = None, limit: int | None = None) -> list[Entity]:
        return self._outs(self.inner.entities(self._k(user_id), ids, with_aliases=with_aliases, after=after,
                                              limit=limit))

    def entity_types(self, user_id: str, ids: Sequence[str]) -> dict[str, str | None]:
        return self.inner.entity_types(self._k(user_id), ids)

    def entity_ids_by_norm(self, user_id: str, norms: Sequence[str]) -> dict[str, str]:
        return self.inner.entity_ids_by_norm(self._k(user_id), norms)

    def insert_entities(self, user_id: str, entities: Sequence[tuple[Entity, str]], *,
                        learned_from: Mapping[str, Sequence[str]] | None = None) -> None:
        self.inner.insert_entities(self._k(user_id), [(self._in(e), n) for e, n in entities],
                                   learned_from=learned_from)

    def add_alias(self, user_id: str, entity_id: str, alias: str, norm: str,
                  learned_from: Sequence[str] | None = None) -> None:
        self.inner.add_alias(self._k(user_id), entity_id, alias, norm, learned_from)

    def add_alias_sources(self, user_id: str, sources: Mapping[str, Sequence[str]]) -> None:
        self.inner.add_alias_sources(self._k(user_id), sources)

    def mark_given_by_hand(self, user_id: str, norms: Sequence[str]) -> None:
        self.inner.mark_given_by_hand(self._k(user_id), norms)

    def merge_entities(self, user_id: str, source_id: str, target_id: str) -> list[str]:
        return self.inner.merge_entities(self._k(user_id), source_id, target_id)

    def entity_version(self, user_id: str) -> tuple[int, int] | None:
        return self.inner.entity_version(self._k(user_id))

    def entities_changed_since(self, user_id: str, version: tuple[int, int]) -> list[str] | None:
        return self.inner.entities_changed_since(self._k(user_id), version)

    # -- facts ---------------------------------------------------------------------------------------
    def insert_facts(self, user_id: str, facts: Sequence[Fact]) -> None:
        self.inner.insert_facts(self._k(user_id), [self._in(f) for f in facts])

    def update_facts(self, user_id: str, facts: Sequence[Fact]) -> None:
        self.inner.update_facts(self._k(user_id), [self._in(f) for f in facts])

    def facts(self, user_id: str, **kw: Any) -> list[Fact]:
        return self._outs(self.inner.facts(self._k(user_id), **kw))

    def count_facts(self, user_id: str) -> int:
        return self.inner.count_facts(self._k(user_id))

    def count_touching(self, user_id: str, entity_ids: Sequence[str]) -> dict[str, int]:
        return self.inner.count_touching(self._k(user_id), entity_ids)

    def fact_heads(self, user_id: str, touching: Sequence[str], *,
                   min_confidence: float | None = None) -> list[FactHead]:
        return self.inner.fact_heads(self._k(user_id), touching, min_confidence=min_confidence)

    def held_fact_ids(self, user_id: str, ids: Sequence[str]) -> set[str]:
        return self.inner.held_fact_ids(self._k(user_id), ids)

    def delete_facts(self, user_id: str, ids: Sequence[str]) -> int:
        return self.inner.delete_facts(self._k(user_id), ids)

    def drop_fact_copies(self, user_id: str, ids: Sequence[str]) -> None:
        self.inner.drop_fact_copies(self._k(user_id), ids)

    # -- search ----------------------------------------------------------------------------------------
    def search_facts_text(self, user_id: str, query: str, limit: int = 20) -> list[tuple[str, float]]:
        return self.inner.search_facts_text(self._k(user_id), query, limit)

    def search_messages_text(self, user_id: str, query: str, limit: int = 20) -> list[tuple[str, float]]:
        return self.inner.search_messages_text(self._k(user_id), query, limit)

    def put_vectors(self, user_id: str, kind: str, items: Sequence[tuple[str, Sequence[float]]],
                    model: str) -> None:
        self.inner.put_vectors(self._k(user_id), kind, items, model)

    def knn(self, user_id: str, kind: str, vector: Sequence[float], k: int = 10,
            model: str | None = None) -> list[tuple[str, float]]:
        return self.inner.knn(self._k(user_id), kind, vector, k, model)

    def vector_ids(self, user_id: str, kind: str, model: str) -> set[str]:
        return self.inner.vector_ids(self._k(user_id), kind, model)

    def entities_without_vectors(self, user_id: str, kind: str, model: str) -> list[Entity]:
        return self._outs(self.inner.entities_without_vectors(self._k(user_id), kind, model))

    def get_vectors(self, user_id: str, kind: str, ids: Sequence[str], model: str) -> dict[str, list[float]]:
        return self.inner.get_vectors(self._k(user_id), kind, ids, model)

    # -- checkpoints ---------------------------------------------------------------------------------------
    def put_checkpoint(self, cp: Checkpoint) -> None:
        self.inner.put_checkpoint(self._in(cp))

    def checkpoints(self, user_id: str) -> list[Checkpoint]:
        return self._outs(self.inner.checkpoints(self._k(user_id)))

    def checkpoint_heads(self, user_id: str) -> list[tuple[int, str]]:
        return self.inner.checkpoint_heads(self._k(user_id))

    def checkpoint_page(self, user_id: str, *, after_seq: int = 0, limit: int = 50,
                        session_id: str | None = None) -> list[Checkpoint]:
        return self._outs(self.inner.checkpoint_page(self._k(user_id), after_seq=after_seq, limit=limit,
                                                     session_id=session_id))

    def checkpoint_at(self, user_id: str, as_of: datetime | None = None) -> Checkpoint | None:
        cp = self.inner.checkpoint_at(self._k(user_id), as_of)
        return self._out(cp) if cp is not None else None

    def delete_checkpoints(self, user_id: str, from_seq: int = 0) -> int:
        return self.inner.delete_checkpoints(self._k(user_id), from_seq)

    # -- forgetting -------------------------------------------------------------------------------------------
    def delete_session(self, user_id: str, session_id: str) -> list[str]:
        return self.inner.delete_session(self._k(user_id), session_id)

    def delete_orphan_entities(self, user_id: str) -> int:
        return self.inner.delete_orphan_entities(self._k(user_id))

    def delete_user(self, user_id: str) -> None:
        self.inner.delete_user(self._k(user_id))

    # -- dump / load -------------------------------------------------------------------------------------------
    def iter_user(self, user_id: str, *, batch: int = DUMP_BATCH) -> UserRows:
        with closing(self.inner.iter_user(self._k(user_id), batch=batch)) as rows:
            for table, found in rows:
                for r in found:
                    if "user_id" in r:
                        r["user_id"] = user_id
                yield table, found

    def load_user(self, user_id: str, rows: dict[str, list[dict[str, Any]]]) -> dict[str, int]:
        return self.inner.load_user(self._k(user_id), rows)  # the inner store rewrites user_id on every row

    # -- jobs ----------------------------------------------------------------------------------------------------
    def _job_out(self, job: Job | None) -> Job | None:
        if job is None or job.tenant != self.tenant:
            return None
        job.user_id = split_key(job.user_id)[1]
        return job

    def insert_job(self, job: Job) -> None:
        c = copy.copy(job)
        c.tenant, c.user_id = self.tenant, self._k(job.user_id)
        self.inner.insert_job(c)

    def job(self, tenant: str, job_id: str) -> Job | None:
        return self._job_out(self.inner.job(self.tenant, job_id))

    def jobs(self, tenant: str, *, user_id: str | None = None, status: JobStatus | None = None,
             limit: int | None = None, offset: int = 0, after: JobPosition | None = None) -> list[Job]:
        found = self.inner.jobs(self.tenant, user_id=None if user_id is None else self._k(user_id),
                                status=status, limit=limit, offset=offset, after=after)
        return [j for j in map(self._job_out, found) if j is not None]

    def mark_job_sent(self, job_id: str, now: datetime, tenant: str | None = None) -> None:
        self.inner.mark_job_sent(job_id, now, self.tenant)

    # worker bookkeeping and API keys are not a tenant's business: only the unbound store has them
    def _refused(self, what: str) -> Any:
        raise PermissionError(f"{what} needs the unbound store, not one bound to tenant {self.tenant!r}")

    def claim_job(self, job_id: str, worker: str, now: datetime, lease_until: datetime) -> Job | None:
        return self._refused("claim_job")

    def renew_job(self, job_id: str, worker: str, lease_until: datetime) -> bool:
        return self._refused("renew_job")

    def finish_job(self, job_id: str, worker: str, status: JobStatus, now: datetime,
                   result: dict[str, Any] | None, error: str | None) -> bool:
        return self._refused("finish_job")

    def jobs_to_send(self, now: datetime, *, unsent_before: datetime, resend_before: datetime,
                     tenant: str | None = None, in_process: bool = False, orphaned_before: datetime | None = None,
                     limit: int = 100) -> list[Job]:
        return self._refused("jobs_to_send")

    def swap_job_send(self, job_id: str, previous: datetime | None, sent_at: datetime | None,
                      sent_to: str | None) -> bool:
        return self._refused("swap_job_send")

    def unsend_jobs(self, job_ids: Sequence[str]) -> int:
        return self._refused("unsend_jobs")

    def requeue_job(self, job_id: str, now: datetime) -> bool:
        return self._refused("requeue_job")

    def delete_finished_jobs(self, finished_before: datetime, *, tenant: str | None = None,
                             limit: int = 1000) -> int:
        return self._refused("delete_finished_jobs")

    def insert_api_key(self, key: ApiKey) -> None:
        self._refused("insert_api_key")

    def api_key(self, prefix: str) -> ApiKey | None:
        return self._refused("api_key")

    def api_keys(self, tenant: str | None = None) -> list[ApiKey]:
        return self._refused("api_keys")

    def revoke_api_key(self, prefix: str, now: datetime) -> bool:
        return self._refused("revoke_api_key")

    def iter_users(self) -> Iterator[str]:
        yield from self.users()
