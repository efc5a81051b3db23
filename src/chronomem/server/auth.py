"""Who is calling: an API key names a tenant, and the request gets a Memory bound to it.

Keys live hashed in the store (``chronomem keys create --tenant T``); ``CHRONOMEM_API_KEY``
(or ``create_app(api_key=…)``) adds one more key for the default tenant.  With no key at
all the service is open and serves the default tenant only; :func:`check_exposure` refuses
to start such a service on an address other than loopback.  A store that has ever held a key
stays closed: revoking the last key leaves no way in, not an open door.
"""

from __future__ import annotations

import hmac
import logging
import threading
from collections import OrderedDict

from ..errors import ChronomemError, ConfigError
from ..jobs.worker import MAX_TENANT_VIEWS  # a view per tenant ever served, kept for good, grew without bound
from ..keys import DEFAULT_TENANT, key_matches, key_prefix
from ..memory import Memory
from .hosts import is_loopback


log = logging.getLogger(__name__)


class Unauthorized(ChronomemError):
    """No key, a malformed or unknown key, or a revoked one."""


class Tenancy:
    """Resolves keys to tenants and hands out one Memory per tenant (sharing the store): the base memory's
    tenant views, at most ``max_views`` of them kept between calls (see :meth:`_drop_idle_views`)."""

    def __init__(self, base: Memory, api_key: str | None = None, *, owns_base: bool = True,
                 max_views: int = MAX_TENANT_VIEWS) -> None:
        self.base = base
        self.owns_base = owns_base
        self.raw = getattr(base.store, "inner", base.store)
        self.env_key = api_key or None
        self.max_views = max_views
        self._memories: OrderedDict[str, Memory] = OrderedDict({base.tenant: base})  # least recently used first
        self._lock = threading.Lock()
        self._keyed = False

    @property
    def keys_enabled(self) -> bool:
        """True once the service has a key: the env key, or any key ever stored, revoked ones included.
        Revoking the last key must lock the service, not open it to anyone; and once seen, keys mode
        stays on for this process."""
        if not self._keyed:
            self._keyed = self.env_key is not None or bool(self.raw.api_keys())
        return self._keyed

    def tenant_for(self, authorization: str | None) -> str:
        """The tenant of the presented ``Authorization: Bearer <key>``."""
        given = (authorization or "").strip()
        if given[:7].lower() == "bearer ":
            given = given[7:].strip()
        if not given:
            if not self.keys_enabled:
                return self.base.tenant
            raise Unauthorized("missing API key: send Authorization: Bearer <key>")
        if self.env_key is not None and hmac.compare_digest(given.encode(), self.env_key.encode()):
            return DEFAULT_TENANT
        prefix = key_prefix(given)
        stored = None if prefix is None else self.raw.api_key(prefix)
        if stored is None or not key_matches(given, stored):
            raise Unauthorized("unknown or revoked API key")
        return stored.tenant

    def memory(self, tenant: str) -> Memory:
        with self._lock:
            mem = self._memories.get(tenant)
            if mem is None:
                mem = self._memories[tenant] = self.base.for_tenant(tenant)
            self._memories.move_to_end(tenant)
            self._drop_idle_views()
            return mem

    def _drop_idle_views(self) -> None:
        """Forget the least recently used views beyond ``max_views`` (under the lock).

        A dropped view is not closed: it owns nothing (its store, models and job queue are the base
        memory's; the in-process queue holds it weakly), and a request or job still using it keeps it
        alive until done, then it is collected.  A view remembering an idle session it left open after a
        failed extraction is kept, so the next sweep still ends that session (:meth:`Memory.end_idle_sessions`).
        """
        excess = len(self._memories) - self.max_views
        for tenant in list(self._memories)[:-1]:  # never the view just asked for
            if excess <= 0:
                break
            view = self._memories[tenant]
            if view is self.base or view._idle_retried:  # noqa: SLF001 - its sweep state is the work in flight
                continue
            del self._memories[tenant]
            excess -= 1
            log.debug("tenant %r: its idle view dropped (%d views kept)", tenant, len(self._memories))

    def tenants(self) -> list[str]:
        """The default tenant, every tenant with an active key and every tenant holding a user or turns
        waiting in the session buffer (:meth:`Memory.tenants`; a revoked key's sessions still end and get
        their summary)."""
        return sorted({self.base.tenant} | {k.tenant for k in self.raw.api_keys() if k.active}
                      | set(self.base.tenants()))

    def end_idle_sessions(self) -> None:
        """One idle-session sweep over every tenant (the server's ``CHRONOMEM_SESSION_IDLE`` sweeper)."""
        for tenant in self.tenants():
            self.memory(tenant).end_idle_sessions()

    def close(self) -> None:
        with self._lock:
            views = [m for m in self._memories.values() if m is not self.base]
            self._memories = OrderedDict({self.base.tenant: self.base})
        for mem in views:
            mem.close()  # a tenant view shares the base store: closing it leaves the store open
        if self.owns_base:
            self.base.close()


def check_exposure(host: str, tenancy: Tenancy) -> None:
    """Refuse to serve an open (keyless) memory on a non-loopback address."""
    if not is_loopback(host) and not tenancy.keys_enabled:
        raise ConfigError(f"refusing to serve on {host} without API keys: anyone reaching the port could "
                          "read and delete every user. Create one with `chronomem keys create --tenant T` "
                          "(or set CHRONOMEM_API_KEY), or bind to 127.0.0.1")
