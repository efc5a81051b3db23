"""The REST service: :func:`create_app` builds the FastAPI application.

Routes are in :mod:`.routes` (all under ``/v1``), request/response models in
:mod:`.schemas`, keys and tenants in :mod:`.auth`, the locally served API docs in
:mod:`.docs`.  Every error has one shape, :class:`~.schemas.ErrorOut`
(``{"error", "detail", "field"}``): a body that is not JSON → 400, validation → 422, unknown key → 401,
not found → 404, model or store trouble → 503.

Writes are queued: ``POST /v1/users/{u}/messages`` stores the turns and answers 202 with a
job; workers (``chronomem worker``, or a thread of this process without a broker) extract.
API processes are stateless: run several behind a load balancer over one PostgreSQL.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from urllib.parse import unquote, unquote_to_bytes

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .. import __version__
from ..errors import (ChronomemError, ConfigError, ModelError, NotFoundError, StoreError, ValidationError,
                      log_reason)
from ..jobs.queue import BrokerQueue
from ..limits import MAX_BODY_BYTES, MAX_IMPORT_BYTES
from ..memory import Memory
from .auth import Tenancy, Unauthorized
from .docs import add_docs
from .explorer import router as explorer_router
from .hosts import LoopbackHostsOnly
from .routes import router
from .schemas import HealthOut
from .ui import add_ui

log = logging.getLogger(__name__)

_STATUS_NAMES = {400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound",
                 405: "MethodNotAllowed", 413: "PayloadTooLarge", 415: "UnsupportedMediaType",
                 507: "InsufficientStorage"}


def _error(status: int, error: str, detail: str, field: str | None = None,
           headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse(status_code=status, content={"error": error, "detail": detail, "field": field},
                        headers=headers)


def _store_unavailable(exc: StoreError) -> JSONResponse:
    """503 naming the kind only: the driver's words name the database, its user, SQL, so they go to the log."""
    log.error("store error: %s", exc)
    return _error(503, "StoreError", "the store is unavailable or failed; the server log has the cause")


class StoreErrorsAs503:
    """ASGI middleware, outermost: a StoreError raised by a middleware (outside the app's exception handlers,
    e.g. :class:`~.hosts.LoopbackHostsOnly` asking whether keys exist) is the same 503 a route's gives, not a
    500 "unexpected error"."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def send_tracked(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, send_tracked)
        except StoreError as exc:
            if started:  # too late for another status line
                raise
            await _store_unavailable(exc)(scope, receive, send)


_SOURCES = ("body", "query", "path", "header", "cookie")


_TYPE_TAGS = frozenset({"str", "int", "float", "bool", "none", "dict", "list", "any"})


def _loc_field(loc: Sequence[object]) -> str:
    """A validation error's location as a field name (``messages[0].text``).  Only the first element
    is the request part it came from: a body field may itself be named ``query`` or ``path``."""
    parts = [str(p) for p in (loc[1:] if loc and loc[0] in _SOURCES else loc)]
    # a union's member tags ("constrained-str", "list[ContentPart]", "str") name no field of the request
    parts = [p for p in parts if p.isdigit() or (p.isidentifier() and p not in _TYPE_TAGS)]
    out = ""
    for p in parts:
        out += f"[{p}]" if p.isdigit() else (f".{p}" if out else p)
    return out or "body"


class BodyLimit:
    """ASGI middleware: a request body over ``max_bytes`` is refused with 413 before any route reads it.

    A declared ``Content-Length`` is checked up front; a chunked body is read up to the
    limit, then either refused or replayed to the app unchanged.  An import (``/v1/users/…/import``)
    has its own limit, ``import_bytes``, and is not held here: its route reads the
    body as it arrives (to a temporary file), and a chunked body passing the limit ends the
    read with 413.
    """

    def __init__(self, app: ASGIApp, max_bytes: int = MAX_BODY_BYTES,
                 import_bytes: int = MAX_IMPORT_BYTES) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.import_bytes = import_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = str(scope.get("path", ""))
        importing = path.startswith("/v1/users/") and path.endswith("/import")
        limit = self.import_bytes if importing else self.max_bytes
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None:
            if not declared.isdigit() or int(declared) > limit:
                await _error(413, "PayloadTooLarge", self._detail(importing))(scope, receive, send)
                return
            await self.app(scope, receive, send)
            return
        if importing:
            await self.app(scope, self._counted(receive, limit, self._detail(importing)), send)
            return
        messages, size = [], 0
        while True:
            message = await receive()
            messages.append(message)
            size += len(message.get("body", b""))
            if size > limit:
                await _error(413, "PayloadTooLarge", self._detail(importing))(scope, receive, send)
                return
            if message["type"] != "http.request" or not message.get("more_body"):
                break
        replay = iter(messages)

        async def buffered() -> Message:
            return next(replay, None) or await receive()

        await self.app(scope, buffered, send)

    @staticmethod
    def _counted(receive: Receive, limit: int, detail: str) -> Receive:
        """``receive`` raising 413 (an HTTP error the app's handler answers) once the body passes ``limit``."""
        size = 0

        async def counted() -> Message:
            nonlocal size
            message = await receive()
            size += len(message.get("body", b""))
            if size > limit:
                raise StarletteHTTPException(413, detail)
            return message

        return counted

    def _detail(self, importing: bool) -> str:
        if not importing:
            return f"request body over {self.max_bytes} bytes (chronomem.limits.MAX_BODY_BYTES)"
        return (f"an import's body over {self.import_bytes} bytes (chronomem.limits.MAX_IMPORT_BYTES); import an "
                "export this large where the store is: `chronomem import FILE --user U` or Memory.import_from")


_ENCODED_SLASH = re.compile("%2f", re.IGNORECASE)
_URL_USERINFO = re.compile(r"://[^/@\s]*@")


def routing_path(scope: Scope) -> str:
    """The path routes are matched on: ``scope["path"]`` with each ``%2F`` of the raw path kept
    encoded (a slash inside its segment, as in ``/v1/users/team%2Fmaya/facts``) and every ``%`` that
    decoding gave written ``%25``.  Each path parameter is then unquoted once (:data:`.routes.FromPath`),
    so it reads exactly as its percent-decoded segment.

    ``raw_path`` is used where ``path`` ends with its percent-decoding (a ``root_path`` may lead it);
    otherwise (no ``raw_path``, or ``path`` rewritten upstream) ``path`` is kept, its ``%`` escaped.
    A stretch whose bytes are not UTF-8 (``%FF``) stays as sent: decoded, it would read as U+FFFD, a
    different id; the path parameter's own decoding refuses it with a 422 naming the parameter.
    """
    path: str = scope["path"]
    raw = scope.get("raw_path")
    try:
        text = raw.decode("ascii") if isinstance(raw, bytes) else ""
    except UnicodeDecodeError:
        text = ""
    decoded = unquote(text)
    if not text or not path.endswith(decoded):
        return path.replace("%", "%25")
    segments = "%2F".join(_decoded(part) for part in _ENCODED_SLASH.split(text))
    return path[:len(path) - len(decoded)] + segments


def _decoded(part: str) -> str:
    """A stretch of the raw path percent-decoded with each ``%`` it then holds written ``%25``, or as sent
    where its bytes are not UTF-8 (both read the same through :data:`.routes.FromPath`)."""
    try:
        return unquote(part, errors="strict").replace("%", "%25")
    except UnicodeDecodeError:
        return part


class EncodedSlashes:
    """ASGI middleware: routing sees :func:`routing_path`, so an id holding ``/`` is addressed with
    ``%2F`` (Starlette alone decodes it into a separator first: a 404 or another route)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and (bad := not_utf8_parameter(scope.get("query_string") or b"")) is not None:
            # Starlette decodes the query with errors="replace": "?session_id=%FF" would name U+FFFD, an id
            # neither %FF nor %FE is (as a path id, :func:`routing_path`)
            await _error(422, "ValidationError", f"query parameter {bad}: is not UTF-8 once percent-decoded",
                         bad)(scope, receive, send)
            return
        if scope["type"] in ("http", "websocket"):
            scope = {**scope, "path": routing_path(scope)}
        await self.app(scope, receive, send)


def not_utf8_parameter(query: bytes) -> str | None:
    """The name of the first query parameter whose name or value is not UTF-8 once percent-decoded, or None.

    >>> not_utf8_parameter(b"limit=5&session_id=caf%C3%A9"), not_utf8_parameter(b"a=1&session_id=%FF")
    (None, 'session_id')
    """
    for part in query.split(b"&"):
        name, _, value = part.partition(b"=")
        try:
            unquote_to_bytes(name.replace(b"+", b" ")).decode("utf-8")
            unquote_to_bytes(value.replace(b"+", b" ")).decode("utf-8")
        except UnicodeDecodeError:
            return unquote_to_bytes(name).decode("utf-8", "replace")
    return None


def create_app(memory: Memory | Callable[[], Memory] | None = None, *, api_key: str | None = None,
               owns_memory: bool | None = None, max_body_bytes: int = MAX_BODY_BYTES,
               max_import_bytes: int = MAX_IMPORT_BYTES, loopback_hosts_while_open: bool = False) -> FastAPI:
    """Build the app around ``memory`` (a Memory, a factory, or the configured default).

    ``memory``'s store holds the API keys; each key's tenant gets a Memory sharing that store.
    ``api_key`` (default ``$CHRONOMEM_API_KEY``) is one more key, for the default tenant.
    At shutdown the app closes the Memory it made (``None`` or a factory), and one passed in
    only with ``owns_memory=True``.  Request bodies over ``max_body_bytes`` are refused with 413
    (:class:`BodyLimit`), an import's (an export, read to a temporary file as it arrives) over
    ``max_import_bytes``.  ``loopback_hosts_while_open`` (``chronomem serve`` sets it) refuses, while
    no key exists, requests addressed to any name but localhost (:class:`LoopbackHostWhileOpen`).
    """
    owns = not isinstance(memory, Memory) if owns_memory is None else owns_memory
    mem = memory if isinstance(memory, Memory) else (memory() if callable(memory) else Memory())
    tenancy = Tenancy(mem, api_key if api_key is not None else os.environ.get("CHRONOMEM_API_KEY") or None,
                      owns_base=owns)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        yield
        tenancy.close()

    app = FastAPI(title="chronomem", version=__version__, lifespan=lifespan, docs_url=None, redoc_url=None,
                  description="Long-term memory for LLM applications: a temporal fact graph and recursive "
                              "summaries. Authenticate with `Authorization: Bearer <key>`; each key belongs "
                              "to one tenant, and user ids live inside it. An id holding `/` goes into a path "
                              "percent-encoded, as `%2F` (`/v1/users/team%2Fmaya/facts`).")
    app.state.memory = mem
    app.state.tenancy = tenancy
    app.add_middleware(EncodedSlashes)
    app.add_middleware(BodyLimit, max_bytes=max_body_bytes, import_bytes=max_import_bytes)
    if loopback_hosts_while_open:
        app.add_middleware(LoopbackHostsOnly, active=lambda: not tenancy.keys_enabled)
    app.add_middleware(StoreErrorsAs503)  # added last, so outermost: wraps every middleware above

    @app.exception_handler(ValidationError)
    async def _validation(_: Request, exc: ValidationError) -> JSONResponse:
        return _error(422, "ValidationError", str(exc), exc.field)

    @app.exception_handler(NotFoundError)
    async def _not_found(_: Request, exc: NotFoundError) -> JSONResponse:
        return _error(404, "NotFoundError", str(exc))

    @app.exception_handler(Unauthorized)
    async def _unauthorized(_: Request, exc: Unauthorized) -> JSONResponse:
        return _error(401, "Unauthorized", str(exc), headers={"WWW-Authenticate": "Bearer"})

    @app.exception_handler(ChronomemError)
    async def _other(_: Request, exc: ChronomemError) -> JSONResponse:
        if isinstance(exc, StoreError):
            return _store_unavailable(exc)
        if isinstance(exc, ModelError):
            # the provider's words name the endpoint (credentials in its URL included) and quote the upstream
            # reply, which may echo the user's turns: the client gets the kind only.  The log follows
            # log_reason's rule (logs outlive forget): the kind at ERROR, the words at DEBUG
            log.error("model error: %s", log_reason(exc))
            log.debug("model error: %s", exc)
            return _error(503, type(exc).__name__, f"the model is unavailable or failed ({type(exc).__name__}); "
                                                   "the server log has the cause")
        if isinstance(exc, ConfigError):  # says what to configure; a model spec it quotes may hold a password
            return _error(503, "ConfigError", _URL_USERINFO.sub("://***@", str(exc)))
        return _error(400, type(exc).__name__, str(exc))

    @app.exception_handler(RequestValidationError)
    async def _request_validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        errs = exc.errors()
        bad_json = next((e for e in errs if e.get("type") == "json_invalid"), None)
        if bad_json is not None:  # not a value that breaks a rule: a body that is no JSON at all
            loc = bad_json.get("loc", ())
            where = f" at character {loc[1]}" if len(loc) > 1 else ""
            reason = (bad_json.get("ctx") or {}).get("error") or bad_json.get("msg", "")
            return _error(400, "BadRequest", f"the body is not valid JSON{where}: {reason}", "body")
        first = errs[0] if errs else {"loc": (), "msg": "invalid request"}
        detail = "; ".join(f"{_loc_field(e.get('loc', ()))}: {e.get('msg', '').removeprefix('Value error, ')}"
                           for e in errs[:5])
        return _error(422, "ValidationError", detail, _loc_field(first.get("loc", ())))

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        return _error(exc.status_code, _STATUS_NAMES.get(exc.status_code, "HTTPError"), str(exc.detail),
                      headers=getattr(exc, "headers", None))

    @app.exception_handler(Exception)
    async def _unexpected(_: Request, exc: Exception) -> JSONResponse:
        log.exception("unexpected error")
        return _error(500, "InternalError", "unexpected server error; see the server log")

    @app.get("/health", response_model=HealthOut, tags=["service"])
    def health() -> dict[str, str]:
        """Liveness; names the kind of store and queue, never their addresses or credentials."""
        url = mem.store.url
        queue = mem._jobs.queue
        kind = "local"
        if isinstance(queue, BrokerQueue):
            kind = "redis" if queue.url.startswith("redis") else "rabbitmq"
        return {"status": "ok", "version": __version__,
                "store": "postgresql" if url.startswith("postgres") else "sqlite", "queue": kind,
                "auth": "keys" if tenancy.keys_enabled else "open"}

    app.include_router(router)
    app.include_router(explorer_router)
    add_docs(app)
    add_ui(app)
    return app
