"""The REAL write path: chunked, schema-constrained extraction of temporal facts.

Public entry points: :class:`WritePipeline` (what ``Memory.add`` delegates to),
:class:`AddResult`, and :class:`FuzzyEntityResolver`.
"""

from .entities import FuzzyEntityResolver
from .pipeline import AddResult, FailedChunk, WritePipeline, normalize_messages

__all__ = ["AddResult", "FailedChunk", "FuzzyEntityResolver", "WritePipeline", "normalize_messages"]
