"""Store administration: ``chronomem migrate`` and ``chronomem copy``.

``migrate`` opens a store (which applies pending migrations under a lock) and
shows its schema version and vector backend.  ``copy`` moves one user's or
every user's memory between any two stores — SQLite ↔ PostgreSQL — row for row
through :meth:`Store.iter_user` / :meth:`Store.load_user`, a batch of rows at a
time, then re-reads the destination beside the source and checks they are equal,
so a copy is lossless or fails.
A copy of the whole store also brings its API keys (their hashes, revoked ones
included), so the service answers the same keys at the new address; the job
history (what a queue ran) is not copied.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from contextlib import closing
from dataclasses import dataclass, field
from itertools import zip_longest
from typing import Annotated, Any, Optional

import typer
from rich.markup import escape

from ..errors import StoreError, ValidationError
from ..keys import DEFAULT_TENANT, check_tenant
from ..store import Store, open_store
from ..store.base import DUMP_BATCH
from ..store.sql import TABLES
from ..store.tenant import split_key, user_key

log = logging.getLogger(__name__)


@dataclass(slots=True)
class CopyReport:
    """Rows copied per user and table."""

    users: dict[str, dict[str, int]] = field(default_factory=dict)
    api_keys: int = 0  # keys the destination did not have

    @property
    def total_rows(self) -> int:
        return sum(sum(t.values()) for t in self.users.values())


def shown_url(url: str) -> str:
    """A store URL as messages show it: a PostgreSQL URL without its password (``user:***@``), as the
    store's own errors show it; a SQLite path or URL as it is (``redact`` would mangle ``sqlite:///``)."""
    if url.split("://", 1)[0] in ("postgresql", "postgres"):
        from ..store.postgres import redact  # psycopg is loaded already: the store is open

        return redact(url)
    return url


def store_info(store: Store) -> dict[str, Any]:
    """Schema version, vector backend and the other ``chronomem_meta`` entries of a SQL store."""
    meta = dict(store._all("SELECT key, value FROM chronomem_meta"))  # type: ignore[attr-defined]
    vec = meta.get("vector_backend") or ("sqlite-vec" if getattr(store, "_vec", False) else "exact")
    version = getattr(store, "vector_extension_version", None)
    if vec == "pgvector" and version:
        vec = f"pgvector {version}"
    return {"url": shown_url(store.url), "schema_version": int(meta.get("schema_version", 0)),
            "vector_backend": vec,
            "has_vector_index": store.has_vector_index,
            "migrated": {k: v for k, v in meta.items() if k.startswith("migrated_")}}


def _has_rows(store: Store, user_id: str) -> bool:
    with closing(store.iter_user(user_id, batch=1)) as rows:  # stops at the first row, not a dump of the user
        return any(batch for _, batch in rows)


def copy_memory(src: Store, dst: Store, users: Sequence[str] | None = None, *,
                replace: bool = False, batch: int = DUMP_BATCH) -> CopyReport:
    """Copy ``users`` (default: all) from ``src`` to ``dst`` losslessly, ``batch`` rows at a time.

    A user who already has data in ``dst`` is refused unless ``replace``, which
    deletes that user's rows there first (in the same transaction as the load).
    Each user is verified after the copy: the destination's rows must equal the source's,
    read again beside them, so a user written to while being copied fails the check (its
    copy would be stale): copy a store nobody writes to, or copy that user again.
    """
    chosen = list(users) if users else src.users()
    known = set(src.users())
    missing = [u for u in chosen if u not in known]
    if missing:  # a key is "tenant\x1fuser" inside the store: say it as a person would
        raise ValidationError("user", shown(missing[0]), f"has no data in {shown_url(src.url)}")
    if not replace:
        busy = [u for u in chosen if _has_rows(dst, u)]
        if busy:
            raise ValidationError("user", shown(busy[0]),
                                  f"already has data in {shown_url(dst.url)}; pass --replace to overwrite")
    report = CopyReport()
    for user in chosen:
        counts = dict.fromkeys(TABLES, 0)
        with closing(src.iter_user(user, batch=batch)) as rows, dst.transaction(user):
            if replace:
                dst.delete_user(user)
            for table, found in rows:
                dst.load_user(user, {table: found})
                counts[table] += len(found)
        if not _same_rows(src, dst, user, batch):
            raise StoreError(f"copy of user {shown(user)!r} to {shown_url(dst.url)} "
                             "does not read back identically")
        report.users[user] = counts
        log.info("copied user %s: %s", user, counts)
    return report


def _same_rows(a: Store, b: Store, user_id: str, batch: int) -> bool:
    """Whether two stores hold the same rows for the user, read side by side a batch at a time."""
    with closing(a.iter_user(user_id, batch=batch)) as left, closing(b.iter_user(user_id, batch=batch)) as right:
        return all(x == y for x, y in zip_longest(left, right))


def copy_api_keys(src: Store, dst: Store) -> int:
    """Copy the API keys ``dst`` lacks (by prefix), revoked ones too; a key revoked in ``src`` is revoked
    in ``dst``.  A prefix ``dst`` holds for another secret is refused.  Returns the keys added."""
    have = {k.prefix: k for k in dst.api_keys()}
    added = 0
    for key in src.api_keys():
        old = have.get(key.prefix)
        if old is None:
            dst.insert_api_key(key)
            added += 1
        elif old.hash != key.hash or old.tenant != key.tenant:
            raise ValidationError("api key", key.prefix,
                                  f"is in {shown_url(dst.url)} for another secret or tenant")
        elif key.revoked_at is not None and old.revoked_at is None:
            dst.revoke_api_key(key.prefix, key.revoked_at)
    return added


def shown(user_key: str) -> str:
    """A store user key as a person reads it: ``u1``, or ``u1 (tenant acme)``."""
    tenant, user = split_key(user_key)
    return user if tenant == DEFAULT_TENANT else f"{user} (tenant {tenant})"


def migrate_cmd(db: Annotated[Optional[str], typer.Option(
        "--db", help="Database path or URL (default: $CHRONOMEM_DB or the user data dir)")] = None) -> None:
    """Apply pending schema migrations and show the schema version.  A migration that rewrites a large
    SQLite file takes a while (schema 14: ~25 s for 850 MB); on a terminal a spinner says so."""
    from contextlib import nullcontext

    from .core import db_location, status
    from .render import console

    waiting = status.status("opening the store and applying its migrations…") if status.is_terminal else nullcontext()
    with waiting, open_store(db_location(db)) as store:
        info = store_info(store)
    console.print(f"{escape(info['url'])}: schema version {info['schema_version']}, "
                  f"vectors: {info['vector_backend']}"
                  f"{' (ANN index)' if info['has_vector_index'] else ' (exact per-user k-NN)'}", soft_wrap=True)


def copy_cmd(src_url: Annotated[str, typer.Argument(help="Source store: path, sqlite:///…, postgresql://…")],
             dst_url: Annotated[str, typer.Argument(help="Destination store (created/migrated if needed)")],
             user: Annotated[Optional[list[str]], typer.Option(
                 "--user", "-u", help="Copy only this user (repeatable); default: every user")] = None,
             replace: Annotated[bool, typer.Option(
                 "--replace", help="Overwrite users that already have data in the destination")] = False,
             tenant: Annotated[Optional[str], typer.Option(
                 "--tenant", help="The tenant of the --user ids (default: the default tenant)")] = None) -> None:
    """Copy a memory (one user or all) between stores, e.g. SQLite → PostgreSQL, losslessly.  A copy of
    every user also copies the API keys; the job history is not copied.  The source must exist: a
    mistyped SRC file is refused, not created empty and "copied"."""
    from ..config import expand_db_location
    from .core import require_existing_db
    from .render import console

    if tenant is not None:
        check_tenant(tenant)
        if not user:
            raise ValidationError("--tenant", tenant, "names the tenant of the --user ids; give --user too")
    keys = [user_key(tenant or DEFAULT_TENANT, u) for u in user] if user else None
    require_existing_db(src_url, "SRC")
    with open_store(expand_db_location(src_url)) as src, open_store(expand_db_location(dst_url)) as dst:
        rep = copy_memory(src, dst, keys, replace=replace)
        if not user:  # the whole store: its keys too, or the service would refuse every client after a move
            rep.api_keys = copy_api_keys(src, dst)
    for u, tables in rep.users.items():
        console.print(f"{shown(u)}: " + ", ".join(f"{n} {t}" for t, n in tables.items() if n), soft_wrap=True,
                      markup=False)
    keys_note = f", {rep.api_keys} API key(s)" if not user else ""
    console.print(f"copied {len(rep.users)} user(s), {rep.total_rows} rows{keys_note}; verified identical",
                  soft_wrap=True)


def register(app: typer.Typer) -> None:
    app.command("migrate")(migrate_cmd)
    app.command("copy")(copy_cmd)
