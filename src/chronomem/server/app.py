"""A FastAPI application exposing one :class:`~chronomem.Memory` over HTTP.

Every route is under ``/v1/users/{user_id}``: the user id scopes everything,
exactly as in the Python API.  Set ``CHRONOMEM_API_KEY`` (or pass
``api_key``) to require ``Authorization: Bearer <key>`` on every request.
Errors map to status codes: validation → 422, not found → 404, model or
store trouble → 503, each with ``{"error": type, "detail": message}``.

Workers are stateless: run several behind a load balancer over one
PostgreSQL database (``CHRONOMEM_DB=postgresql://…``).
"""

from __future__ import annotations

import hmac
from dataclasses import asdict
import os
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Any

from fastapi import Depends, FastAPI, Header, HTTPException, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .. import __version__
from ..errors import (ChronomemError, ConfigError, ModelError, NotFoundError, StoreError,
                      ValidationError)
from ..limits import MAX_BODY_BYTES
from ..memory import Memory
from ..model import Fact


class MessageIn(BaseModel):
    speaker: str | None = Field(None, description="who said it (or use role)")
    role: str | None = None
    text: str | None = Field(None, description="what was said (or use content)")
    content: str | None = None
    id: str | None = Field(None, description="your id; re-sending it is a no-op")
    timestamp: datetime | None = Field(None, description="when it was said (default: now)")


class AddIn(BaseModel):
    messages: list[MessageIn]
    session_id: str | None = None
    timestamp: datetime | None = None


class FactsIn(BaseModel):
    facts: list[dict[str, Any]] = Field(..., description="fact dicts as for Memory.add_facts")
    session_id: str | None = None


class QueryIn(BaseModel):
    query: str
    as_of: datetime | None = None
    top_k: int = 10


class AskIn(BaseModel):
    question: str
    as_of: datetime | None = None
    method: str = "real"


def fact_out(f: Fact) -> dict[str, Any]:
    return f.to_dict()


class BodyLimit:
    """ASGI middleware: a request body over ``max_bytes`` is refused with 413 before any route reads it.

    A declared ``Content-Length`` is checked up front; a chunked body is read up to the
    limit, then either refused or replayed to the app unchanged.
    """

    def __init__(self, app: ASGIApp, max_bytes: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None:
            if not declared.isdigit() or int(declared) > self.max_bytes:
                await self._refuse(scope, receive, send)
                return
            await self.app(scope, receive, send)
            return
        messages, size = [], 0
        while True:
            message = await receive()
            messages.append(message)
            size += len(message.get("body", b""))
            if size > self.max_bytes:
                await self._refuse(scope, receive, send)
                return
            if message["type"] != "http.request" or not message.get("more_body"):
                break
        replay = iter(messages)

        async def buffered() -> Message:
            return next(replay, None) or await receive()

        await self.app(scope, buffered, send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = JSONResponse(status_code=413, content={
            "error": "PayloadTooLarge",
            "detail": f"request body over {self.max_bytes} bytes (chronomem.limits.MAX_BODY_BYTES)"})
        await response(scope, receive, send)


def _error(status: int, exc: Exception) -> JSONResponse:
    return JSONResponse(status_code=status, content={"error": type(exc).__name__, "detail": str(exc)})


def create_app(memory: Memory | Callable[[], Memory] | None = None, *, api_key: str | None = None,
               max_body_bytes: int = MAX_BODY_BYTES) -> FastAPI:
    """Build the app around ``memory`` (a Memory, a factory, or the configured default).

    Request bodies over ``max_body_bytes`` are refused with 413 (:class:`BodyLimit`).
    """
    mem = memory() if callable(memory) else (memory or Memory())
    key = api_key if api_key is not None else os.environ.get("CHRONOMEM_API_KEY") or None
    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        yield
        mem.close()

    app = FastAPI(title="chronomem", version=__version__, lifespan=lifespan,
                  description="Long-term memory for LLM applications: a temporal fact graph and recursive summaries.")
    app.state.memory = mem
    app.add_middleware(BodyLimit, max_bytes=max_body_bytes)

    def auth(authorization: str | None = Header(None)) -> None:
        if key is None:
            return
        given = (authorization or "").removeprefix("Bearer ").strip()
        if not hmac.compare_digest(given.encode(), key.encode()):
            raise HTTPException(status_code=401, detail="missing or wrong API key")

    @app.exception_handler(ValidationError)
    async def _validation(_: Request, exc: ValidationError) -> JSONResponse:
        return JSONResponse(status_code=422, content={"error": "ValidationError", "detail": str(exc),
                                                      "field": exc.field})

    @app.exception_handler(NotFoundError)
    async def _not_found(_: Request, exc: NotFoundError) -> JSONResponse:
        return _error(404, exc)

    @app.exception_handler(ChronomemError)
    async def _other(_: Request, exc: ChronomemError) -> JSONResponse:
        status = 503 if isinstance(exc, ModelError | StoreError | ConfigError) else 400
        return _error(status, exc)

    deps = [Depends(auth)]

    @app.get("/health")
    def health() -> dict[str, Any]:
        return {"status": "ok", "version": __version__, "store": mem.store.url.split("@")[-1]}

    @app.post("/v1/users/{user_id}/messages", dependencies=deps)
    def add(user_id: str, body: AddIn) -> dict[str, Any]:
        """Store turns and extract facts (one model call per chunk of turns)."""
        msgs = [m.model_dump(exclude_none=True) for m in body.messages]
        res = mem.add(msgs, user_id=user_id, session_id=body.session_id, timestamp=body.timestamp)
        return {"session_id": res.session_id, "messages_stored": res.messages_stored,
                "messages_skipped": res.messages_skipped, "added": [fact_out(f) for f in res.added],
                "closed": [fact_out(f) for f in res.closed],
                "reinforced": [fact_out(f) for f in res.reinforced],
                "failed_chunks": len(res.failed_chunks), "warnings": res.warnings, "usage": res.usage}

    @app.post("/v1/users/{user_id}/facts", dependencies=deps)
    def add_facts(user_id: str, body: FactsIn) -> dict[str, Any]:
        rep = mem.add_facts(body.facts, user_id=user_id, session_id=body.session_id)
        return {"added": [fact_out(f) for f in rep.added], "closed": [fact_out(f) for f in rep.closed],
                "reinforced": [fact_out(f) for f in rep.reinforced]}

    @app.get("/v1/users/{user_id}/facts", dependencies=deps)
    def facts(user_id: str, subject: str | None = None, relation: str | None = None,
              object: str | None = None, as_of: datetime | None = None,
              include_unstable: bool = False) -> list[dict[str, Any]]:
        return [fact_out(f) for f in mem.facts(user_id=user_id, subject=subject, relation=relation,
                                               object=object, as_of=as_of, include_unstable=include_unstable)]

    @app.get("/v1/users/{user_id}/history", dependencies=deps)
    def history(user_id: str, subject: str | None = None, relation: str | None = None,
                object: str | None = None) -> list[dict[str, Any]]:
        return [fact_out(f) for f in mem.history(user_id=user_id, subject=subject, relation=relation,
                                                 object=object)]

    @app.get("/v1/users/{user_id}/entities", dependencies=deps)
    def entities(user_id: str) -> list[dict[str, Any]]:
        return [{"id": e.id, "name": e.name, "type": e.type, "aliases": e.aliases}
                for e in mem.entities(user_id=user_id)]

    @app.post("/v1/users/{user_id}/search", dependencies=deps)
    def search(user_id: str, body: QueryIn) -> dict[str, Any]:
        res = mem.search(body.query, user_id=user_id, as_of=body.as_of, top_k=body.top_k)
        return {"facts": [fact_out(f) for f in res.facts], "context": res.context,
                "context_tokens": res.context_tokens, "trace": res.trace.as_dict()}

    @app.post("/v1/users/{user_id}/answer", dependencies=deps)
    def answer(user_id: str, body: AskIn) -> dict[str, Any]:
        ans = mem.answer(body.question, user_id=user_id, as_of=body.as_of, method=body.method)
        return {"text": ans.text, "evidence": [fact_out(f) for f in ans.evidence],
                "context_tokens": ans.context_tokens, "usage": ans.usage, "method": ans.method}

    @app.delete("/v1/users/{user_id}/facts/{fact_id}", dependencies=deps)
    def forget_fact(user_id: str, fact_id: str) -> dict[str, Any]:
        return asdict(mem.forget(user_id=user_id, fact_id=fact_id))

    @app.delete("/v1/users/{user_id}/sessions/{session_id}", dependencies=deps)
    def forget_session(user_id: str, session_id: str) -> dict[str, Any]:
        return asdict(mem.forget(user_id=user_id, session_id=session_id))

    @app.delete("/v1/users/{user_id}", dependencies=deps)
    def forget_user(user_id: str) -> dict[str, Any]:
        return asdict(mem.forget(user_id=user_id, everything=True))

    @app.get("/v1/users/{user_id}/export", dependencies=deps)
    def export(user_id: str) -> dict[str, Any]:
        return mem.export(user_id=user_id)

    @app.post("/v1/users/{user_id}/import", dependencies=deps)
    def import_(user_id: str, data: dict[str, Any]) -> dict[str, int]:
        return mem.import_(data, user_id=user_id)

    return app

