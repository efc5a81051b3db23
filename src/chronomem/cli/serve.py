"""``chronomem serve``: the REST service."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from .core import open_memory

if TYPE_CHECKING:
    from ..memory import Memory


def warm_in_background(mem: Memory) -> threading.Thread:
    """Start :func:`~chronomem.jobs.worker.warm_or_log` on a daemon thread (the server answers
    meanwhile; a request that needs the model waits for the same engine load)."""
    from ..jobs.worker import warm_or_log

    t = threading.Thread(target=warm_or_log, args=(mem,), name="chronomem-warm", daemon=True)
    t.start()
    return t


def serve_cmd(host: Annotated[str, typer.Option(help="interface to bind")] = "127.0.0.1",
              port: Annotated[int, typer.Option(help="TCP port")] = 8765,
              db: Annotated[Optional[str], typer.Option("--db", help="database path or URL")] = None,
              warm: Annotated[bool, typer.Option(
                  "--warm", help="load the model and prefill the extraction prompt in the background as the "
                                 "server starts, so the first ingestion does not wait for it (with the "
                                 "embedded model and ingestion in this process)")] = False) -> None:
    """Serve the memory over HTTP (docs at /docs and /redoc, the web explorer at /ui; all served locally).

    Requests authenticate with keys from `chronomem keys create --tenant T` (or CHRONOMEM_API_KEY,
    for the default tenant).  Without any key the server only binds to a loopback address.
    Ingestion is queued: set CHRONOMEM_QUEUE_URL and run `chronomem worker`, or leave it unset to
    extract on a thread of this process.
    """
    import os

    import uvicorn

    from ..server import create_app
    from ..server.auth import check_exposure

    from ..summarize.idle import start_idle_sweeper

    mem = open_memory(db)
    app = create_app(mem, owns_memory=True, loopback_hosts_while_open=True)
    try:
        check_exposure(host, app.state.tenancy)
    except BaseException:
        app.state.tenancy.close()
        raise
    # CHRONOMEM_SESSION_IDLE: end quiet sessions of every tenant in the background
    sweeper = start_idle_sweeper(mem, sweep=app.state.tenancy.end_idle_sessions)
    if warm:
        warm_in_background(mem)
    try:
        uvicorn.run(app, host=host, port=port, log_level=os.environ.get("CHRONOMEM_LOG_LEVEL", "info"))
    finally:
        if sweeper is not None:
            sweeper.stop()


def register(app: typer.Typer) -> None:
    app.command("serve")(serve_cmd)
