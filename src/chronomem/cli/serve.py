"""``chronomem serve``: the REST service."""

from __future__ import annotations

import os
import socket
import threading
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from ..errors import ConfigError, ValidationError
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


def check_bindable(host: str, port: int) -> None:
    """Bind ``host``:``port`` as the server will (every address the host has, as asyncio's
    ``create_server`` does) and let go: a busy port or an unknown host is then the CLI's one-line error
    and exit status 2, not uvicorn's log line and exit status 3.  (Another process could still take the
    port in the moment between; uvicorn reports that itself.)"""
    try:
        addresses = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except OSError as e:
        raise ValidationError("--host", host, f"cannot be resolved: {e.strerror or e}") from None
    for family, kind, proto, _, address in addresses:
        try:
            sock = socket.socket(family, kind, proto)
        except OSError:  # a family this machine lacks: asyncio skips it too
            continue
        with sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:  # as asyncio: the IPv6 socket does not also take the IPv4 port
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            try:
                sock.bind(address)
            except OSError as e:
                raise ValidationError("--port", port, f"cannot be bound on {host}: {e.strerror or e}") from None


#: uvicorn's log level names (``uvicorn.config.LOG_LEVELS``), which ``CHRONOMEM_LOG_LEVEL`` takes in any case.
LOG_LEVELS = ("critical", "error", "warning", "info", "debug", "trace")


def log_level() -> str:
    """``$CHRONOMEM_LOG_LEVEL`` (default ``info``) as uvicorn names it.  Checked before the store opens:
    uvicorn looks the name up itself and an unknown one (``warn``, ``10``) was a bare ``KeyError``."""
    value = os.environ.get("CHRONOMEM_LOG_LEVEL") or "info"  # set but empty: the default, as unset
    if value.strip().lower() not in LOG_LEVELS:
        raise ConfigError(f"CHRONOMEM_LOG_LEVEL={value!r} is not a log level: use one of {', '.join(LOG_LEVELS)} "
                          f"(any case)")
    return value.strip().lower()


def serve_cmd(host: Annotated[str, typer.Option(help="interface to bind")] = "127.0.0.1",
              port: Annotated[int, typer.Option(help="TCP port", min=1, max=65535)] = 8765,
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
    import uvicorn

    from ..server import create_app
    from ..server.auth import check_exposure

    from ..summarize.idle import start_idle_sweeper

    level = log_level()
    mem = open_memory(db)
    app = create_app(mem, owns_memory=True, loopback_hosts_while_open=True)
    try:
        check_exposure(host, app.state.tenancy)
        check_bindable(host, port)
    except BaseException:
        app.state.tenancy.close()
        raise
    # CHRONOMEM_SESSION_IDLE: end quiet sessions of every tenant in the background
    sweeper = start_idle_sweeper(mem, sweep=app.state.tenancy.end_idle_sessions)
    if warm:
        warm_in_background(mem)
    try:
        uvicorn.run(app, host=host, port=port, log_level=level)
    finally:
        if sweeper is not None:
            sweeper.stop()


def register(app: typer.Typer) -> None:
    app.command("serve")(serve_cmd)
