"""Headless Chromium for the explorer's end-to-end tests, and a live server to point it at.

The browser is Debian's ``chromium`` (``apt-get install -y chromium``; ``.ci/run`` installs it),
driven by the ``playwright`` Python package's bundled driver; nothing is downloaded.  A missing
browser or package fails the tests with a message saying what to install: it never skips them.
"""

from __future__ import annotations

import os
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

CHROMIUM_ARGS = ["--no-sandbox", "--headless", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", "--disable-dev-shm-usage"]
VIEWPORT = {"width": 1280, "height": 800}


def chromium_path() -> str:
    """``$CHRONOMEM_CHROMIUM``, else Debian's /usr/bin/chromium; fails the test when neither exists."""
    given = os.environ.get("CHRONOMEM_CHROMIUM")
    for cand in [given] if given else ["/usr/bin/chromium", shutil.which("chromium") or ""]:
        if cand and Path(cand).is_file() and os.access(cand, os.X_OK):
            return cand
    if given:
        pytest.fail(f"CHRONOMEM_CHROMIUM={given!r} is not an executable Chromium", pytrace=False)
    pytest.fail("the explorer's browser tests need Chromium: install Debian's package "
                "(`apt-get update && apt-get install -y chromium`, which .ci/run does) or set "
                "CHRONOMEM_CHROMIUM to a Chromium binary", pytrace=False)


def sync_playwright() -> Any:
    try:
        from playwright.sync_api import sync_playwright as start
    except ImportError:
        pytest.fail("the explorer's browser tests need the `playwright` package: "
                    "pip install -e '.[test]' (its wheel ships the driver; no browser download)", pytrace=False)
    return start


@contextmanager
def chromium() -> Iterator[Any]:
    exe = chromium_path()
    with sync_playwright()() as pw:
        browser = pw.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS, headless=True)
        try:
            yield browser
        finally:
            browser.close()


@contextmanager
def live_server(app: Any) -> Iterator[str]:
    """Serve ``app`` with uvicorn on a free loopback port in a thread; yields the base URL."""
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the test server did not start")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(30)
        sock.close()
