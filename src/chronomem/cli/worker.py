"""``chronomem worker``: run queued ingestion jobs from the broker."""

from __future__ import annotations

import logging
import signal
import threading
from typing import Annotated, Optional

import typer

from ..errors import ConfigError
from .core import DbOpt, db_location


def worker_cmd(db: DbOpt = None,
               queue: Annotated[Optional[str], typer.Option(
                   "--queue", help="broker URL: amqp://… or redis://… (default $CHRONOMEM_QUEUE_URL)")] = None,
               threads: Annotated[int, typer.Option(help="jobs run at once by this process")] = 1,
               lease: Annotated[Optional[float], typer.Option(
                   help="seconds a silent worker keeps a job before it is redelivered "
                        "(default $CHRONOMEM_JOB_LEASE or 30)")] = None) -> None:
    """Run extraction and session-end jobs.  Start several (here or on other machines) to scale out."""
    from ..jobs.queue import queue_url
    from ..jobs.worker import run_worker

    url = queue_url(queue)
    if url is None:
        raise ConfigError("no broker: pass --queue amqp://… or redis://… or set CHRONOMEM_QUEUE_URL "
                          "(without a broker, jobs run inside the process that submits them)")
    if threads < 1:
        raise ConfigError(f"--threads must be at least 1, got {threads}")
    logging.getLogger("chronomem").setLevel(logging.INFO)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    run_worker(db_location(db), url, threads=threads, lease_s=lease, stop=stop)


def register(app: typer.Typer) -> None:
    app.command("worker")(worker_cmd)
