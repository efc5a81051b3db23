"""Who is calling: an API key names a tenant, and the request gets a Memory bound to it.

Keys live hashed in the store (``chronomem keys create --tenant T``); ``CHRONOMEM_API_KEY``
(or ``create_app(api_key=…)``) adds one more key for the default tenant.  With no key at
all the service is open and serves the default tenant only; :func:`check_exposure` refuses
to start such a service on an address other than loopback.  A store that has ever held a key
stays closed: revoking the last key leaves no way in, not an open door.
"""

from __future__ import annotations

import hmac
import threading

from ..errors import ChronomemError, ConfigError
from ..keys import DEFAULT_TENANT, key_matches, key_prefix
from ..memory import Memory
from .hosts import is_loopback


class Unauthorized(ChronomemError):
    """No key, a malformed or unknown key, or a revoked one."""


class Tenancy:
    """Resolves keys to tenants and hands out one Memory per tenant (sharing the store)."""

    def __init__(self, base: Memory, api_key: str | None = None, *, owns_base: bool = True) -> None:
        self.base = base
        self.owns_base = owns_base
        self.raw = getattr(base.store, "inner", base.store)
        self.env_key = api_key or None
        self._memories: dict[str, Memory] = {base.tenant: base}
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
            return mem

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
            self._memories = {self.base.tenant: self.base}
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
