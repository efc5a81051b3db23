"""One error hierarchy for the whole library.

Everything chronomem raises on purpose derives from :class:`ChronomemError`,
so callers can catch one type.  Errors about caller input name the field and
the offending value.
"""

from __future__ import annotations

from typing import Any


class ChronomemError(Exception):
    """Base class of every error chronomem raises on purpose."""


class ValidationError(ChronomemError, ValueError):
    """Caller input is invalid.  ``field`` and ``value`` say what and where."""

    def __init__(self, field: str, value: Any, reason: str) -> None:
        self.field = field
        self.value = value
        self.reason = reason
        super().__init__(f"invalid {field}={value!r}: {reason}")


class ConfigError(ChronomemError):
    """Configuration is missing or inconsistent."""


class StoreError(ChronomemError):
    """The storage backend failed or is unusable."""


class CorruptDatabaseError(StoreError):
    """The database file is not a chronomem database or is damaged."""


class NotFoundError(ChronomemError, LookupError):
    """A requested object (fact, session, user) does not exist."""


class ModelError(ChronomemError):
    """A language or embedding model call failed."""


class ModelUnavailableError(ModelError):
    """The configured model cannot be loaded or reached (missing weights, 401, 404 …)."""


class StructuredOutputError(ModelError):
    """The model's output could not be parsed/validated even after repair and retries.

    ``raw`` holds the last raw output so callers can inspect or store it.
    """

    def __init__(self, message: str, raw: str) -> None:
        self.raw = raw
        super().__init__(f"{message}; raw output: {raw[:500]!r}")


class TruncatedOutputError(StructuredOutputError):
    """The model's structured reply was cut off (token limit, or stopped mid-value) before it
    was complete, on every attempt: what followed the cut is unknown, so nothing is accepted."""
