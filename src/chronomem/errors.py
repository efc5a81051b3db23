"""One error hierarchy for the whole library.

Everything chronomem raises on purpose derives from :class:`ChronomemError`,
so callers can catch one type.  Errors about caller input name the field and
the offending value.
"""

from __future__ import annotations

from typing import Any


class ChronomemError(Exception):
    """Base class of every error chronomem raises on purpose."""

    #: True for a class whose messages never hold user text (turns, facts, names) or model
    #: output, so :func:`log_reason` may log them; most messages quote what was wrong.
    log_safe: bool = False


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

    ``raw`` holds the last raw output so callers can inspect or store it.  The message
    (``str(error)``) leaves it out and says only what was wrong with it (no JSON value in N
    characters, the schema paths that failed, where it was cut off): the output echoes the
    user's turns, and the message reaches logs, job records and API error bodies.
    """

    log_safe = True  # the message holds no user text or model output (see :func:`log_reason`)

    def __init__(self, message: str, raw: str) -> None:
        self.raw = raw
        super().__init__(message)

    def __reduce__(self) -> tuple[Any, ...]:  # picklable although __init__ takes two arguments
        return type(self), (str(self), self.raw), self.__dict__


class TruncatedOutputError(StructuredOutputError):
    """The model's structured reply was cut off (token limit, or stopped mid-value) before it
    was complete, on every attempt: what followed the cut is unknown, so nothing is accepted."""


def log_reason(error: BaseException, limit: int = 300) -> str:
    """What failed, for a log record at WARNING or above: the error's class, with its message only
    where that holds no user text or model output (a class with ``log_safe``; a
    :class:`ValidationError` gives its field).  Logs outlive ``forget``, so the words of the
    user's turns, facts and names, and the model's output (which echoes them), stay out of them;
    log ``str(error)`` at DEBUG where the detail is wanted."""
    name = type(error).__name__
    if getattr(type(error), "log_safe", False):
        return f"{name}: {error}"[:limit]
    if isinstance(error, ValidationError):
        return f"{name} on {error.field}"[:limit]
    return name


def public_reason(error: BaseException, limit: int = 2000) -> str:
    """What failed, as a service tells its tenants (a job's ``error``, its failed chunks): the error's class
    and message, but for a model call that failed in transport (unreachable, timed out, an HTTP error) the
    class only: its message names the model's endpoint and quotes the provider's reply, the operator's
    business (the log has it), not a tenant's; so for a store error, whose driver's words name the
    database.  A reply that could not be read (:class:`StructuredOutputError`) keeps its message, which
    says what was wrong with the reply and quotes none of it."""
    name = type(error).__name__
    if names_infrastructure(error):
        what = "model" if isinstance(error, ModelError) else "store"
        return f"{name}: the {what} is unavailable or failed; the service's log has the cause"
    return f"{name}: {error}"[:limit]


def names_infrastructure(error: BaseException) -> bool:
    """Does ``error``'s message describe the service's own machinery rather than the caller's request: a
    model call that failed in transport (its endpoint, the provider's reply) or a store error (the driver's
    words name the database, its user, the SQL)?"""
    return isinstance(error, ModelError) and not isinstance(error, StructuredOutputError) or isinstance(
        error, StoreError)
