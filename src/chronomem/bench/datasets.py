"""Typed loaders for the LoCoMo and MSC evaluation files.

The records and parsers live in :mod:`chronomem.conversations` (the library's
``add`` command reads the same files); this module adds the harness's default
data locations, the category check and the file loaders.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from ..conversations import (CATEGORY_NAMES, MSC_BASE_TIME, QA, UTC, Conversation, MscEpisode, Session, Turn,
                             normalize_dia_id, parse_evidence, parse_locomo_datetime, parse_locomo_record,
                             parse_msc_episode, parse_time_gap)
from ..errors import ValidationError

__all__ = ["CATEGORY_NAMES", "DEFAULT_DATA_ROOT", "DEFAULT_LOCOMO_PATH", "DEFAULT_MSC_PATH", "MSC_BASE_TIME", "QA",
           "UTC", "Conversation", "MscEpisode", "Session", "Turn", "check_categories", "load_locomo", "load_msc",
           "normalize_dia_id", "parse_evidence", "parse_locomo_datetime", "parse_time_gap"]

def check_categories(categories: Iterable[int]) -> set[int]:
    """``categories`` as a set, or a :class:`ValidationError` when empty or not LoCoMo categories."""
    cats = set(categories)
    if not cats or not cats <= set(CATEGORY_NAMES):
        raise ValidationError("categories", sorted(cats), "LoCoMo categories are " + ", ".join(
            f"{n} {name}" for n, name in CATEGORY_NAMES.items()))
    return cats

#: Default data locations, relative to the repository root.
DEFAULT_DATA_ROOT = Path("../shared/data")
DEFAULT_LOCOMO_PATH = DEFAULT_DATA_ROOT / "locomo" / "locomo_dev.json"
DEFAULT_MSC_PATH = DEFAULT_DATA_ROOT / "msc" / "msc_episodes_dev.json"


def load_locomo(path: str | Path = DEFAULT_LOCOMO_PATH, sample_ids: list[str] | None = None) -> list[Conversation]:
    """Load LoCoMo conversations, optionally only the given ``sample_id``s (in that order)."""
    with open(path, encoding="utf-8") as fh:
        data = json.load(fh)
    convs = [parse_locomo_record(r) for r in data]
    if sample_ids:
        by_id = {c.sample_id: c for c in convs}
        missing = [s for s in sample_ids if s not in by_id]
        if missing:
            raise ValidationError("conversations", missing, f"not in {path}; have {sorted(by_id)}")
        convs = [by_id[s] for s in sample_ids]
    return convs


def load_msc(path: str | Path = DEFAULT_MSC_PATH, limit: int | None = None) -> list[MscEpisode]:
    """Load MSC episodes in file order (the first ``limit`` when given)."""
    with open(path, encoding="utf-8") as fh:
        data = json.load(fh)
    if limit is not None:
        if limit < 1:
            raise ValidationError("limit", limit, "the number of episodes must be at least 1")
        data = data[:limit]
    return [parse_msc_episode(r) for r in data]
