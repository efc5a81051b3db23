"""``chronomem mcp``: serve one user's memory (of one tenant) to an agent over MCP (stdio or streamable HTTP)."""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Optional

import typer

from .core import TenantOpt, open_memory


class Transport(str, Enum):
    stdio = "stdio"
    http = "http"


def mcp_cmd(user: Annotated[str, typer.Option("--user", "-u", help="the user whose memory this server serves")],
            db: Annotated[Optional[str], typer.Option("--db", help="database path or URL")] = None,
            transport: Annotated[Transport, typer.Option("--transport", help="stdio, or streamable HTTP at /mcp")]
            = Transport.stdio,
            host: Annotated[str, typer.Option(help="interface to bind (http)")] = "127.0.0.1",
            port: Annotated[int, typer.Option(min=1, max=65535, help="TCP port (http)")] = 8766,
            tenant: TenantOpt = None) -> None:
    """Run an MCP server with remember / recall / answer / timeline / sessions / end_session / summary /
    merge_entities / forget tools for one user of one tenant.

    Over HTTP, CHRONOMEM_MCP_TOKEN sets the bearer token clients must send; without it the server
    only binds to a loopback address.  With CHRONOMEM_SESSION_IDLE set, quiet sessions of the tenant
    are ended in the background.
    """
    import os

    from ..async_memory import AsyncMemory
    from ..server.mcp import ENV_MCP_TOKEN, build_mcp, check_http_exposure, serve_http
    from ..summarize.idle import start_idle_sweeper
    from ..validation import check_user

    check_user(user)
    token = os.environ.get(ENV_MCP_TOKEN)
    if transport is Transport.http:
        check_http_exposure(host, token)  # before opening anything
    with open_memory(db, tenant) as mem:
        amem = AsyncMemory.wrap(mem)  # the tools and the sweeper share its worker thread
        server = build_mcp(amem, user)
        sweeper = start_idle_sweeper(mem, sweep=lambda: amem.submit(mem.end_idle_sessions).result())
        try:
            if transport is Transport.http:
                serve_http(server, host=host, port=port, token=token)
            else:
                server.run("stdio")
        finally:
            if sweeper is not None:
                sweeper.stop()


def register(app: typer.Typer) -> None:
    app.command("mcp")(mcp_cmd)
