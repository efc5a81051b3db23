"""``chronomem keys``: API keys of the REST service, one tenant each."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Optional

import typer

from .core import DbOpt, db_location, require_existing_db

if TYPE_CHECKING:
    from ..store.base import Store

app = typer.Typer(help="API keys for `chronomem serve`: each key is bound to one tenant.",
                  no_args_is_help=True)


def _store(db: str | None, *, existing: bool = False) -> Store:
    """The store at ``db`` (default: the configured one); ``existing``: for ``list`` and ``revoke``, which
    only read or change keys, refuse a database file that does not exist rather than create it."""
    from ..store import open_store

    if existing:
        require_existing_db(db)
    return open_store(db_location(db))


@app.command("create")
def create(tenant: Annotated[str, typer.Option(help="the tenant the key reads and writes")],
           name: Annotated[str, typer.Option(help="a label to recognise the key by")] = "",
           db: DbOpt = None) -> None:
    """Create a key and print it ONCE (only its hash is stored)."""
    from ..keys import ApiKey, check_tenant, hash_key, new_key
    from ..timeutil import utcnow

    check_tenant(tenant)
    key, prefix = new_key()
    with _store(db) as store:
        store.insert_api_key(ApiKey(prefix=prefix, tenant=tenant, hash=hash_key(key), name=name,
                                    created_at=utcnow()))
    typer.echo(key)
    typer.echo(f"key {prefix} for tenant {tenant!r}: shown once, store it now", err=True)


@app.command("list")
def list_(tenant: Annotated[Optional[str], typer.Option(help="only this tenant's keys")] = None,
          db: DbOpt = None) -> None:
    """The keys (prefix, tenant, name, created, revoked); never the secrets."""
    from rich.table import Table

    from ..keys import check_tenant
    from .render import data_console, plain

    if tenant is not None:
        check_tenant(tenant)
    with _store(db, existing=True) as store:
        keys = store.api_keys(tenant)
    table = Table("prefix", "tenant", "name", "created", "revoked")
    for k in keys:  # a key's name is any label its creator typed: "[/bold]" is no markup
        table.add_row(plain(k.prefix), plain(k.tenant), plain(k.name), k.created_at.isoformat(timespec="seconds"),
                      k.revoked_at.isoformat(timespec="seconds") if k.revoked_at else "")
    data_console().print(table)


@app.command("revoke")
def revoke(prefix: Annotated[str, typer.Argument(help="the key's prefix (from `keys list`)")],
           db: DbOpt = None) -> None:
    """Revoke a key: the server refuses it from the next request on."""
    from ..errors import NotFoundError
    from ..timeutil import utcnow

    with _store(db, existing=True) as store:
        if not store.revoke_api_key(prefix, utcnow()):
            raise NotFoundError(f"no active key with prefix {prefix!r}")
    typer.echo(f"revoked {prefix}")
