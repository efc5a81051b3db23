"""Which host names a keyless service answers: loopback only.

A service without keys (REST without API keys, MCP over HTTP without a token) binds to loopback
only (:func:`chronomem.server.auth.check_exposure`, :func:`chronomem.server.mcp.check_http_exposure`).
That alone does not stop a web page whose domain is rebound to 127.0.0.1 (DNS rebinding): the
browser then calls the service as that page's own origin.  :class:`LoopbackHostsOnly` refuses any
request whose ``Host`` header names something other than localhost or a loopback address.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Callable
from typing import Any

__all__ = ["LoopbackHostsOnly", "host_name", "is_loopback"]


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (127.0.0.0/8, ::1), in any letter case; not for
    ``""``, which a server binds as every interface."""
    host = host.strip().lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name other than localhost may resolve anywhere


def host_name(host: str) -> str:
    """The name in a ``Host`` header: ``localhost:8765`` → ``localhost``, ``[::1]:80`` → ``[::1]``."""
    if host.startswith("["):
        return host[:host.find("]") + 1] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


class LoopbackHostsOnly:
    """ASGI middleware: while ``active()`` (default: always), a request whose ``Host`` is not a loopback
    name gets 421 Misdirected Request."""

    def __init__(self, app: Any, active: Callable[[], bool] = lambda: True) -> None:
        self.app = app
        self.active = active

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and self.active():
            host = dict(scope.get("headers") or ()).get(b"host", b"").decode("latin-1")
            if not is_loopback(host_name(host)):
                body = json.dumps({"error": "MisdirectedRequest", "field": None,
                                   "detail": "this service has no key and answers only requests addressed to "
                                             "localhost; give it a key to serve other names"}).encode()
                await send({"type": "http.response.start", "status": 421,
                            "headers": [(b"content-type", b"application/json")]})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)
