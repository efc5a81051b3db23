"""The web explorer at ``/ui``: static HTML, CSS and JavaScript shipped in the package.

No build step and no third-party front-end code: the pages are plain ES modules that call
REST v1 with the tenant key the user enters.  A Content-Security-Policy of ``'self'`` keeps
them from loading anything from elsewhere (they work offline).
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import RedirectResponse
from fastapi.staticfiles import StaticFiles
from starlette.responses import Response
from starlette.types import Scope

UI_DIR = Path(__file__).parent / "ui"
UI_PATH = "/ui"
CSP = ("default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
       "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")


class ExplorerFiles(StaticFiles):
    """Static files with a same-origin-only policy and no caching of stale scripts across upgrades."""

    async def get_response(self, path: str, scope: Scope) -> Response:
        resp = await super().get_response(path, scope)
        resp.headers["Content-Security-Policy"] = CSP
        resp.headers["X-Content-Type-Options"] = "nosniff"
        resp.headers["Referrer-Policy"] = "no-referrer"
        resp.headers["Cache-Control"] = "no-cache"
        return resp


def add_ui(app: FastAPI) -> None:
    """Serve the explorer at ``/ui/`` (``/ui`` redirects there)."""

    @app.get(UI_PATH, include_in_schema=False)
    def ui_root() -> RedirectResponse:
        return RedirectResponse(f"{UI_PATH}/", status_code=307)

    app.mount(f"{UI_PATH}/", ExplorerFiles(directory=UI_DIR, html=True), name="ui")
