"""An MCP server: chronomem's memory as tools for agents (Claude Desktop, IDEs, agent frameworks).

``chronomem mcp --user U [--tenant T]`` serves over stdio; ``--transport http`` over
streamable HTTP at ``/mcp``.  The user id (and the tenant, bound by the ``Memory``
given) is fixed per server process so an agent cannot read another user's memory
by naming them.

Tools: ``remember``, ``recall``, ``answer``, ``timeline``, ``sessions``,
``end_session``, ``summary``, ``forget``.  Facts come back as dicts (``id``,
``subject``, ``relation``, ``object``, ``valid_from``, ``valid_to``, ``confidence``,
``origin``, ``text``, ``session_id``; see :func:`_fact`) whichever tool returns them, so an agent can
forget a fact by its id.  The tools call :class:`~chronomem.AsyncMemory` (the ``Memory`` API, one
worker thread, calls in order), so a slow model call never blocks the transport.
A :class:`~chronomem.errors.ChronomemError` reaches the agent as a tool error
result carrying its message ("invalid as_of=…", "user 'u' has no fact 'f1'"),
which the agent can read and act on; anything else is a server fault and stays
in the server log.

The HTTP transport is never open without authentication off loopback:
:func:`check_http_exposure` refuses a non-loopback host unless a bearer
token is configured (``CHRONOMEM_MCP_TOKEN``); with a token, every request
must carry ``Authorization: Bearer <token>``.  (Per-tenant API keys come
with the REST service's key store.)
"""

from __future__ import annotations

import contextlib
import functools
import hmac
import json
import logging
import os
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import asdict
from typing import Annotated, Any, Literal, ParamSpec, TypeVar, cast

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase
from pydantic import BaseModel, ConfigDict, Field, Strict, create_model

from ..async_memory import AsyncMemory
from ..errors import ChronomemError, ConfigError, names_infrastructure, public_reason
from ..memory import Memory
from ..model import Fact, FactPosition, SessionPosition
from ..summarize.lifecycle import session_row
from ..timeutil import iso
from . import pagination
from .hosts import LoopbackHostsOnly, is_loopback
from .pagination import read_page

__all__ = ["ENV_MCP_TOKEN", "build_mcp", "check_http_exposure", "http_app", "is_loopback", "serve_http"]

log = logging.getLogger(__name__)

ENV_MCP_TOKEN = "CHRONOMEM_MCP_TOKEN"

P = ParamSpec("P")
R = TypeVar("R")
PAGE = 50  # a reply's items unless the agent asks for more: one subject's life can hold thousands of facts
PageSize = Annotated[int, Field(ge=1, le=pagination.MAX_LIMIT, description="items a reply holds at most")]


def _agent_tool(fn: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R]]:
    """A tool's reply as one block of compact JSON (with the same value as structured content), and a
    ChronomemError as a ToolError, whose text the MCP server passes on to the agent.

    Left to the SDK, a reply is indented JSON, one block per item of a list: 18 % more of the agent's
    tokens for the same facts (BENCHMARKS.md "What an agent reads of a fact").  The tool's return type
    still gives its output schema."""

    @functools.wraps(fn)
    async def tool(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            value = await fn(*args, **kwargs)
        except ChronomemError as e:  # what was wrong with the call; a model or store failure by its kind only
            raise ToolError(public_reason(e) if names_infrastructure(e) else str(e)) from e
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)
        structured = value if isinstance(value, dict) else {"result": value}
        return cast(R, CallToolResult(content=[TextContent(type="text", text=text)], structured_content=structured))

    return tool


@contextlib.contextmanager
def _app_logging_kept() -> Iterator[None]:
    """The MCP SDK's server configures the root logger when made (``basicConfig``: INFO, a rich handler),
    so every INFO line of the embedding app's libraries (each HTTP request of httpx) would be printed.
    Logging is the app's: the root logger is left as it was."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    try:
        yield
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)


def build_mcp(mem: Memory | AsyncMemory, user_id: str) -> MCPServer:
    """An MCP server whose tools read and write ``user_id``'s memory in ``mem``."""
    amem = mem if isinstance(mem, AsyncMemory) else AsyncMemory.wrap(mem)
    with _app_logging_kept():
        server = MCPServer("chronomem", instructions=(
            "Long-term memory of the user. Call `remember` with what the user tells you about "
            "themselves, `recall` or `answer` before replying to questions about their past, "
            "`timeline` to see how something changed, `sessions` to list the conversations, `end_session` "
            "when a conversation is over (this writes the session summary), `summary` for what is known "
            "overall, and `forget` to delete a fact, a session or everything about the user for good."))

    @server.tool(description="Store a conversation turn verbatim and extract facts from it. Give the same "
                             "session_id for the turns of one conversation.")
    @_agent_tool
    async def remember(text: str, speaker: str = "user", session_id: str | None = None,
                       timestamp: str | None = None) -> dict[str, Any]:
        res = await amem.add([{"speaker": speaker, "text": text}], user_id=user_id, session_id=session_id,
                             timestamp=timestamp)
        return {"session_id": res.session_id, "stored": res.messages_stored,
                "added": [_fact(f) for f in res.added], "closed": [_fact(f) for f in res.closed],
                "warnings": res.warnings}

    @server.tool(description="Facts relevant to a query, with validity intervals and sources. as_of "
                             "(ISO date) asks about the past.")
    @_agent_tool
    async def recall(query: str, as_of: str | None = None, top_k: int = 10) -> dict[str, Any]:
        res = await amem.search(query, user_id=user_id, as_of=as_of, top_k=top_k)
        return {"context": res.context, "facts": [_fact(f) for f in res.facts]}

    @server.tool(description="Answer a question from memory; says 'Not mentioned' when memory has nothing. "
                             "method: 'real+rsum' (default: facts, stored turns and the summary), 'real' (facts "
                             "and stored turns) or 'rsum' (the summary only).")
    @_agent_tool
    async def answer(question: str, as_of: str | None = None,
                     method: Literal["real", "rsum", "real+rsum"] = "real+rsum") -> dict[str, Any]:
        ans = await amem.answer(question, user_id=user_id, as_of=as_of, method=method)
        return {"answer": ans.text, "evidence": [_fact(f) for f in ans.evidence]}

    @server.tool(description="Every version of a subject's facts (optionally one relation), oldest first, "
                             "including the ones that stopped holding. At most `limit` facts a reply (`items`): "
                             "give its `next_cursor` as `cursor` for the next ones (null: no more).")
    @_agent_tool
    async def timeline(subject: str, relation: str | None = None, limit: PageSize = PAGE,
                       cursor: str | None = None) -> dict[str, Any]:
        found = await amem.history(user_id=user_id, subject=subject, relation=relation, limit=limit + 1,
                                   after=pagination.FACTS.after(cursor))
        return read_page(found, limit, _fact, lambda f: pagination.FACTS.cursor(FactPosition.of(f)))

    @server.tool(description="The user's conversation sessions, oldest first: id, started_at, ended_at "
                             "(null while open) and agent_id. At most `limit` a reply (`items`): give its "
                             "`next_cursor` as `cursor` for the next ones (null: no more).")
    @_agent_tool
    async def sessions(limit: PageSize = PAGE, cursor: str | None = None) -> dict[str, Any]:
        found = await amem.sessions(user_id=user_id, limit=limit + 1, after=pagination.SESSIONS.after(cursor))
        return read_page(found, limit, session_row, lambda s: pagination.SESSIONS.cursor(SessionPosition.of(s)))

    @server.tool(description="End a conversation session: extract what is left and update the summary. "
                             "Returns session_id, turns_flushed (buffered turns written), turns_stored (of "
                             "those, the new ones) and summary.")
    @_agent_tool
    async def end_session(session_id: str, ended_at: str | None = None) -> dict[str, Any]:
        res = await amem.end_session(user_id=user_id, session_id=session_id, ended_at=ended_at)
        return res.report(session_id)

    @server.tool(description="The user's running summary after the last ended session (as of an ISO date).")
    @_agent_tool
    async def summary(as_of: str | None = None) -> dict[str, Any]:
        return {"summary": await amem.summary(user_id=user_id, as_of=as_of)}

    @server.tool(description="Make two names one person, place or thing when memory kept them apart (the "
                             "user says 'Mom is Linda'): `name`'s facts and names move to `into`, histories are "
                             "placed in time order together, a fact both said becomes one. Names, aliases or "
                             "entity ids. Refused while a fact relates the two (forget or correct it first).")
    @_agent_tool
    async def merge_entities(name: str, into: str) -> dict[str, Any]:
        return (await amem.merge_entities(name, into, user_id=user_id)).to_dict()

    @server.tool(description="Delete for good exactly one of: a fact (fact_id), a session with its turns and "
                             "facts (session_id), or everything stored about the user (everything=true). Facts "
                             "a forgotten fact had closed hold again.")
    @_agent_tool
    async def forget(fact_id: str | None = None, session_id: str | None = None,
                     everything: Annotated[bool, Field(description="deletes everything stored about the user, "
                                                                   "for good")] = False) -> dict[str, Any]:
        res = await amem.forget(user_id=user_id, fact_id=fact_id, session_id=session_id, everything=everything)
        return asdict(res)

    return strict_arguments(server)


def strict_arguments(server: MCPServer) -> MCPServer:
    """``server`` (its tools registered) with every tool refusing arguments an agent cannot have meant;
    :func:`build_mcp` applies it.

    The MCP SDK validates a call's arguments with a pydantic model in lax mode: ``forget
    {"everything": "yes"}`` read "yes" as true and deleted all of the user's data, and an argument
    the tool does not take (``remember {"bogus": 1}``) was dropped without a word.  Here a flag takes
    only a JSON boolean, and an unknown argument is a tool error naming it (the published input
    schema says so too: ``additionalProperties: false``).  Other types stay lax: a "10" given for
    an integer means 10, and some clients send numbers as strings.

    The SDK has no public hook for a tool's argument model, so the registered models are replaced
    (read live at each call: ``FuncMetadata``); ``tests/test_mcp_strict.py`` pins that behaviour."""
    class _NoExtra(BaseModel):
        model_config = ConfigDict(extra="forbid")

    for tool in server._tool_manager.list_tools():
        lax = tool.fn_metadata.arg_model
        flags: dict[str, Any] = {name: (Annotated[f.annotation, Strict()], f) for name, f in lax.model_fields.items()
                                 if f.annotation in (bool, bool | None)}
        strict = cast("type[ArgModelBase]", create_model(lax.__name__, __base__=(lax, _NoExtra), **flags))
        tool.fn_metadata.arg_model = strict
        tool.parameters = strict.model_json_schema(by_alias=True)
    return server


def _fact(f: Fact) -> dict[str, Any]:
    """A fact as an agent reads it: what it says and when it held, its id to forget, no bookkeeping.

    ``text`` is its one-line sentence (the words it was said in, else "subject relation object");
    ``valid_to`` null while it holds.  A fact read by a rule (``origin`` derived: "Maya sibling_of Rui"
    read from "Rui sibling_of Maya") names the stored facts it was read from in ``support_ids``: those
    are the ids to forget.  The turns it came from, the statements that confirmed it, its entity ids and
    the rest of :meth:`Fact.to_dict` stay out: a recall costs an agent half the tokens it did, a timeline a
    third (BENCHMARKS.md "What an agent reads of a fact")."""
    out: dict[str, Any] = {"id": f.id, "subject": f.subject, "relation": f.relation, "object": f.object,
                           "valid_from": iso(f.valid_from), "valid_to": iso(f.valid_to),
                           "confidence": round(f.confidence, 3), "origin": f.origin.value, "text": f.render(),
                           "session_id": f.session_id}
    if f.support_ids:
        out["support_ids"] = list(f.support_ids)
    return out


# --------------------------------------------------------------------------- HTTP exposure


def check_http_exposure(host: str, token: str | None) -> None:
    """Refuse to serve without authentication on an address other machines can reach."""
    if token is not None and not token.strip():
        raise ConfigError(f"{ENV_MCP_TOKEN} is set but empty")
    if token is None and not is_loopback(host):
        raise ConfigError(f"refusing to serve MCP over HTTP on {host!r} without authentication: "
                          f"set {ENV_MCP_TOKEN} to a secret bearer token, or bind to 127.0.0.1")


class _BearerAuth:
    """ASGI middleware: every HTTP request needs ``Authorization: Bearer <token>``."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self._expected = token.encode()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers") or ()).get(b"authorization", b"")
            scheme, _, secret = given.partition(b" ")  # the scheme is case-insensitive (RFC 9110)
            if scheme.lower() != b"bearer" or not hmac.compare_digest(secret.strip(), self._expected):
                body = json.dumps({"error": "unauthorized", "message": "missing or wrong bearer token"}).encode()
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"application/json"),
                                        (b"www-authenticate", b"Bearer")]})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


def http_app(server: MCPServer, *, host: str = "127.0.0.1", token: str | None = None) -> Any:
    """The ASGI app of the streamable HTTP transport (``/mcp``), behind bearer auth when ``token``."""
    check_http_exposure(host, token)
    app = server.streamable_http_app(host=host)
    return _BearerAuth(app, token) if token else LoopbackHostsOnly(app)  # keyless: no DNS rebinding


def serve_http(server: MCPServer, *, host: str = "127.0.0.1", port: int = 8766,
               token: str | None = None, log_level: str = "warning") -> None:
    """Serve ``server`` over streamable HTTP until interrupted (token default: ``$CHRONOMEM_MCP_TOKEN``)."""
    import uvicorn

    token = os.environ.get(ENV_MCP_TOKEN) if token is None else token
    uvicorn.run(http_app(server, host=host, token=token), host=host, port=port, log_level=log_level)
