"""``chronomem serve``: the REST service."""

from __future__ import annotations

from typing import Annotated, Optional

import typer


def serve_cmd(host: Annotated[str, typer.Option(help="interface to bind")] = "127.0.0.1",
              port: Annotated[int, typer.Option(help="TCP port")] = 8765,
              db: Annotated[Optional[str], typer.Option("--db", help="database path or URL")] = None) -> None:
    """Serve the memory over HTTP (OpenAPI docs at /docs).  CHRONOMEM_API_KEY enables bearer auth."""
    import uvicorn

    from ..memory import Memory
    from ..server import create_app

    from ..summarize.idle import start_idle_sweeper

    mem = Memory(db)
    sweeper = start_idle_sweeper(mem)  # CHRONOMEM_SESSION_IDLE: end quiet sessions in the background
    try:
        uvicorn.run(create_app(mem), host=host, port=port, log_level="info")
    finally:
        if sweeper is not None:
            sweeper.stop()


def register(app: typer.Typer) -> None:
    app.command("serve")(serve_cmd)
