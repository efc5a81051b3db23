"""REAL retrieval: anchoring, intent decoupling, evaluator-guided hybrid beam search,
counterfactual inference, global pruning, serialisation and answers with evidence.

Most callers use :meth:`chronomem.Memory.search` and :meth:`chronomem.Memory.answer`;
this package exposes the pieces for tuning and ablations.
"""

from __future__ import annotations

from .answer import NOT_MENTIONED, Answer
from .beam import Path
from .options import SearchConfig, SearchOptions
from .scoring import Weights
from .search import ANSWER_CONFIG, SearchResult, Trace

# the functions stay in their module (``chronomem.retrieve.search.search`` / ``.answer``) so that
# the submodule names are not shadowed
__all__ = ["ANSWER_CONFIG", "NOT_MENTIONED", "Answer", "Path", "SearchConfig", "SearchOptions", "SearchResult",
           "Trace", "Weights"]
