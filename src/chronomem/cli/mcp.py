"""``chronomem mcp``: serve one user's memory to an agent over MCP (stdio)."""

from __future__ import annotations

from typing import Annotated, Optional

import typer


def mcp_cmd(user: Annotated[str, typer.Option("--user", "-u", help="the user whose memory this server serves")],
            db: Annotated[Optional[str], typer.Option("--db", help="database path or URL")] = None) -> None:
    """Run an MCP server (stdio) with remember / recall / answer / timeline / forget_fact tools."""
    from ..memory import Memory
    from ..server.mcp import build_mcp

    with Memory(db) as mem:
        build_mcp(mem, user).run("stdio")


def register(app: typer.Typer) -> None:
    app.command("mcp")(mcp_cmd)
