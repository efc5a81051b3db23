"""Settings and their precedence: the one place the config file is found and read.

Precedence, highest first: arguments to :class:`~chronomem.Memory` (or the
CLI's flags) > environment variables > the config file > defaults.  The
config file is TOML at ``$CHRONOMEM_CONFIG`` or
``~/.config/chronomem/config.toml`` (:func:`config_path`, read by
:func:`read_config_file`); its ``[memory]`` table holds the :class:`Config`
keys below and ``[[relations]]`` entries define relations.  The model tables
``[llm]`` and ``[embedder]`` of the same file are resolved, with the same
precedence, by :mod:`chronomem.providers.settings`.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from .errors import ConfigError, ValidationError

#: The write path's extraction methods (:data:`chronomem.extract.pipeline.METHODS`).
EXTRACTION_METHODS = ("v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9", "v10", "v11", "v12", "v13")

#: How Rsum's memory updates are generated (:data:`chronomem.summarize.rsum.MEMORY_DECODINGS`).
RSUM_DECODINGS = (1, 2, 3)
RSUM_DECODING = 2  # the default (:data:`chronomem.summarize.rsum.MEMORY_DECODING`)

ENV_PREFIX = "CHRONOMEM_"


def data_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "chronomem"


def expand_db_location(location: str) -> str:
    """A database location with a leading ``~`` of its file path expanded (``~/memory.db``, also
    ``sqlite:///~/memory.db``), as a shell would have done: a quoted ``--db '~/x.db'`` or ``db =
    "~/x.db"`` in the config file reaches us unexpanded.  Server URLs are left as they are."""
    if location.startswith("sqlite:///"):
        return "sqlite:///" + os.path.expanduser(location[len("sqlite:///"):])
    if "://" in location:
        return location
    return os.path.expanduser(location)


def config_path() -> Path:
    """``$CHRONOMEM_CONFIG``, else ``~/.config/chronomem/config.toml``."""
    return Path(os.environ.get("CHRONOMEM_CONFIG") or Path.home() / ".config" / "chronomem" / "config.toml")


def read_config_file(path: Path | None = None) -> tuple[Path, dict[str, Any]]:
    """``(path, parsed TOML)`` of the config file (``path`` or :func:`config_path`); ``{}`` when the
    default file (``~/.config/chronomem/config.toml``) is absent.

    Raises :class:`~chronomem.errors.ConfigError` naming the file when it cannot be read or parsed, or
    when a file named explicitly (``path``, ``$CHRONOMEM_CONFIG``) does not exist.
    """
    named = "config path" if path is not None else "CHRONOMEM_CONFIG" if os.environ.get("CHRONOMEM_CONFIG") else None
    path = path or config_path()
    if not path.exists():
        if named:  # a typo'd path silently fell back to the default database and models: refuse it instead
            hint = "; or unset it for ~/.config/chronomem/config.toml" if named == "CHRONOMEM_CONFIG" else ""
            raise ConfigError(f"{named} names no config file: {path} does not exist (check the path{hint})")
        return path, {}
    try:
        return path, tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise ConfigError(f"cannot read config file {path}: {e}") from e


@dataclass
class Config:
    """Tunable behaviour of a :class:`~chronomem.Memory`."""

    db: str = ""  # path or URL; empty = $CHRONOMEM_DB or the per-user data dir
    theta_stable: float = 0.6  # facts below this confidence are kept but left out of default queries
    llm: str | None = None  # model spec, see chronomem.providers (None = provider default)
    embedder: str | None = None
    relations: list[dict[str, Any]] = field(default_factory=list)
    # end a session automatically after this many seconds without a new turn (None/0: never)
    session_idle: float | None = None
    chunk_size: int | None = None  # turns per extraction call of Memory.add (None: the write path's default, 8)
    # extraction method of the write path: "v1" sextuples, "v2" observation-first, "v3" one slot per line,
    # "v4" v3 with post-processing rules 7, "v5" with rules 8, "v6" with rules 9, "v7" with rules 10,
    # "v8" with rules 11, "v9" with rules 12, "v10" = v4 with the state rules (rules 13), "v11" = v9 with them
    # (rules 14), "v12" = v11 reading more ways of saying where one works (rules 15), "v13" = v10 reading
    # lowercase turns through a cased copy (chronomem.extract.pipeline.METHOD_RECIPES, .states, .casing)
    extraction: str = "v10"
    # how the recursive summary is updated at end_session: 2 rewrites it each session (the default),
    # 3 appends what a session adds and rewrites only when it is full (chronomem.summarize.rsum)
    rsum_decoding: int = RSUM_DECODING

    def __post_init__(self) -> None:
        # a string ("high" in the config file, "0.7" from Python) is refused by name: compared with a
        # float it raised a bare TypeError (Config.load turns $CHRONOMEM_THETA_STABLE into a number)
        if (isinstance(self.theta_stable, bool) or not isinstance(self.theta_stable, (int, float))
                or not 0.0 < self.theta_stable <= 1.0):
            raise ValidationError("theta_stable", self.theta_stable, "must be a number in (0, 1]")
        if self.session_idle is not None:
            try:
                self.session_idle = float(self.session_idle)
            except (TypeError, ValueError):
                raise ValidationError("session_idle", self.session_idle, "must be a number of seconds") from None
            if not self.session_idle >= 0 or self.session_idle == float("inf"):
                raise ValidationError("session_idle", self.session_idle, "must be >= 0 seconds (0: off)")
            self.session_idle = self.session_idle or None
        if self.chunk_size is not None:
            try:
                size = int(str(self.chunk_size))
            except ValueError:
                size = 0
            if isinstance(self.chunk_size, bool) or size < 1:
                raise ValidationError("chunk_size", self.chunk_size, "must be a whole number of turns >= 1")
            self.chunk_size = size
        if isinstance(self.rsum_decoding, str) and self.rsum_decoding.strip().isdigit():
            self.rsum_decoding = int(self.rsum_decoding)  # from the environment
        if isinstance(self.rsum_decoding, bool) or self.rsum_decoding not in RSUM_DECODINGS:
            raise ValidationError("rsum_decoding", self.rsum_decoding,
                                  f"must be one of {', '.join(map(str, RSUM_DECODINGS))}")
        if self.extraction not in EXTRACTION_METHODS:
            raise ValidationError("extraction", self.extraction, f"must be one of {', '.join(EXTRACTION_METHODS)}")

    @property
    def db_location(self) -> str:
        return expand_db_location(self.db or os.environ.get("CHRONOMEM_DB") or str(data_dir() / "memory.db"))

    @classmethod
    def load(cls, **overrides: Any) -> Config:
        """Build the effective configuration: overrides > env > config file > defaults.

        A bad value read from the environment or the config file is a :class:`ValidationError` that
        says where it came from (``… (from CHRONOMEM_THETA_STABLE)``), so it can be found and fixed."""
        values: dict[str, Any] = {}
        path, doc = read_config_file()
        values.update(doc.get("memory", {}))
        source = {name: f"in [memory] of {path}" for name in values}
        if "relations" in doc:
            values["relations"] = list(doc["relations"])
        names = {f.name for f in fields(cls)}
        unknown = set(values) - names
        if unknown:
            raise ConfigError(f"unknown keys {sorted(unknown)} in [memory] of {path}")
        for f in fields(cls):
            var = ENV_PREFIX + f.name.upper()
            env = os.environ.get(var)
            if env is not None and f.name != "relations":
                values[f.name], source[f.name] = env, f"from {var}"
                if f.name == "theta_stable":  # the one float setting; a word stays a string for the check
                    try:
                        values[f.name] = float(env)
                    except ValueError:
                        pass
        given = {k: v for k, v in overrides.items() if v is not None}
        values.update(given)
        try:
            return cls(**values)
        except ValidationError as e:
            where = None if e.field in given else source.get(e.field)
            if where is None:
                raise
            raise ValidationError(e.field, e.value, f"{e.reason} ({where})") from None
