"""chronomem: long-term memory for LLM applications.

A temporal, confidence-aware property graph of facts (REAL) with
non-destructive updates, plus recursive session summaries (Rsum).
"""

from .config import Config
from .errors import (ChronomemError, ConfigError, CorruptDatabaseError, ModelError,
                     ModelUnavailableError, NotFoundError, StoreError, StructuredOutputError,
                     ValidationError)
from .extract.pipeline import AddResult, FailedChunk
from .forgetting import ForgetResult
from .memory import Memory
from .async_memory import AsyncMemory
from .model import (Checkpoint, Entity, EntityMerge, EntityPosition, Fact, FactInput, FactPosition, Intent,
                    LaterDate, Message, MessagePosition, Origin, Session, SessionPosition, UpdateReport)
from .providers.base import LLM, ChatResult, Embedder
from .providers.modelset import ModelSet
from .registry import RelationRegistry, RelationSpec
from .retrieve.answer import Answer
from .retrieve.beam import Path
from .retrieve.options import SearchConfig, SearchOptions
from .retrieve.search import SearchResult, Trace
from .summarize.idle import IdleSweep
from .summarize.lifecycle import SessionEnd

__version__ = "0.1.0"

__all__ = [
    # the facade and its results
    "Memory", "AsyncMemory", "AddResult", "FailedChunk", "SearchResult", "Trace", "Path", "Answer", "SessionEnd",
    "ForgetResult", "UpdateReport", "IdleSweep",
    # options and models
    "Config", "SearchOptions", "SearchConfig", "LLM", "Embedder", "ChatResult", "ModelSet",
    # the data model
    "Fact", "FactInput", "FactPosition", "LaterDate", "Entity", "EntityMerge", "EntityPosition", "Message", "MessagePosition",
    "Session", "SessionPosition", "Checkpoint",
    "Intent", "Origin", "RelationRegistry", "RelationSpec",
    # errors
    "ChronomemError", "ValidationError", "ConfigError", "StoreError", "CorruptDatabaseError",
    "NotFoundError", "ModelError", "ModelUnavailableError", "StructuredOutputError", "__version__",
]
