"""Storage backends.  :func:`open_store` picks one from a path or URL."""

from __future__ import annotations

from pathlib import Path

from ..errors import ConfigError
from .base import Store


def open_store(location: str | Path) -> Store:
    """Open a store: a file path or ``sqlite:///path`` for SQLite, ``postgresql://…`` for PostgreSQL."""
    loc = str(location)
    if loc.startswith(("postgresql://", "postgres://")):
        try:
            from .postgres import PostgresStore
        except ImportError as e:  # pragma: no cover - depends on installed extras
            raise ConfigError(f"PostgreSQL support needs: pip install 'chronomem[postgres]' ({e})") from e
        return PostgresStore(loc)
    if loc.startswith("sqlite:///"):
        loc = loc[len("sqlite:///"):]
    elif "://" in loc:
        raise ConfigError(f"unsupported store URL {loc!r}: use a file path, sqlite:///PATH or postgresql://...")
    from .sqlite import SQLiteStore

    return SQLiteStore(loc)


__all__ = ["Store", "open_store"]
