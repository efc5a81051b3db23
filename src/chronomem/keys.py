"""API keys: each bound to one tenant, shown once, stored as a SHA-256 hash.

A key reads ``cmk_<prefix>_<secret>``: ``prefix`` (12 hex characters) is its public id
(``chronomem keys list`` shows it, ``keys revoke PREFIX`` revokes it), ``secret`` is 32
random bytes.  The store keeps the prefix, the tenant and ``sha256(key)``; a presented
key is looked up by its prefix and compared in constant time.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from datetime import datetime

from .errors import ValidationError

KEY_PREFIX = "cmk_"
DEFAULT_TENANT = "default"
_TENANT_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_KEY_RE = re.compile(r"^cmk_([0-9a-f]{12})_([A-Za-z0-9_-]{43})$")


@dataclass(slots=True)
class ApiKey:
    """A stored key: everything but the secret."""

    prefix: str
    tenant: str
    hash: str
    name: str
    created_at: datetime
    revoked_at: datetime | None = None

    @property
    def active(self) -> bool:
        return self.revoked_at is None


def check_tenant(tenant: object) -> str:
    """Tenant names: 1-64 letters, digits, ``_ . -``, starting with a letter or digit."""
    if not isinstance(tenant, str) or not _TENANT_RE.match(tenant):
        raise ValidationError("tenant", tenant, "must be 1-64 letters, digits, '_', '.' or '-' "
                              "(starting with a letter or digit)")
    return tenant


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def new_key() -> tuple[str, str]:
    """A fresh ``(key, prefix)``; the key is shown once and never stored."""
    prefix = secrets.token_hex(6)
    return f"{KEY_PREFIX}{prefix}_{secrets.token_urlsafe(32)}", prefix


def key_prefix(key: str) -> str | None:
    """The prefix of a well-formed key, else None."""
    m = _KEY_RE.match(key)
    return m.group(1) if m else None


def key_matches(key: str, stored: ApiKey) -> bool:
    return stored.active and hmac.compare_digest(hash_key(key), stored.hash)
