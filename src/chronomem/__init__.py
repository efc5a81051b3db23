"""chronomem: long-term memory for LLM applications.

A temporal, confidence-aware property graph of facts (REAL) with
non-destructive updates, plus recursive session summaries (Rsum).
"""

from .config import Config
from .errors import (ChronomemError, ConfigError, CorruptDatabaseError, ModelError,
                     ModelUnavailableError, NotFoundError, StoreError, StructuredOutputError,
                     ValidationError)
from .memory import ForgetResult, Memory
from .model import Checkpoint, Entity, Fact, Intent, Message, Origin, Session, UpdateReport
from .registry import RelationRegistry, RelationSpec

__version__ = "0.1.0"

__all__ = [
    "Memory", "ForgetResult", "Config", "Fact", "Entity", "Message", "Session", "Checkpoint",
    "Intent", "Origin", "UpdateReport", "RelationRegistry", "RelationSpec", "ChronomemError",
    "ValidationError", "ConfigError", "StoreError", "CorruptDatabaseError", "NotFoundError",
    "ModelError", "ModelUnavailableError", "StructuredOutputError", "__version__",
]
