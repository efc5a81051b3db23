"""``chronomem serve``: the REST service."""

from __future__ import annotations

from typing import Annotated, Optional

import typer


def serve_cmd(host: Annotated[str, typer.Option(help="interface to bind")] = "127.0.0.1",
              port: Annotated[int, typer.Option(help="TCP port")] = 8765,
              db: Annotated[Optional[str], typer.Option("--db", help="database path or URL")] = None) -> None:
    """Serve the memory over HTTP (docs at /docs and /redoc, the web explorer at /ui; all served locally).

    Requests authenticate with keys from `chronomem keys create --tenant T` (or CHRONOMEM_API_KEY,
    for the default tenant).  Without any key the server only binds to a loopback address.
    Ingestion is queued: set CHRONOMEM_QUEUE_URL and run `chronomem worker`, or leave it unset to
    extract on a thread of this process.
    """
    import os

    import uvicorn

    from ..memory import Memory
    from ..server import create_app
    from ..server.auth import check_exposure

    from ..summarize.idle import start_idle_sweeper

    mem = Memory(db)
    app = create_app(mem, owns_memory=True)
    try:
        check_exposure(host, app.state.tenancy)
    except BaseException:
        app.state.tenancy.close()
        raise
    # CHRONOMEM_SESSION_IDLE: end quiet sessions of every tenant in the background
    sweeper = start_idle_sweeper(mem, sweep=app.state.tenancy.end_idle_sessions)
    try:
        uvicorn.run(app, host=host, port=port, log_level=os.environ.get("CHRONOMEM_LOG_LEVEL", "info"))
    finally:
        if sweeper is not None:
            sweeper.stop()


def register(app: typer.Typer) -> None:
    app.command("serve")(serve_cmd)
