"""The structured output the extraction model must produce, and its lenient parser.

Two forms of one contract:

* :data:`EXTRACTION_SCHEMA` — the JSON schema handed to the model (llama.cpp
  turns it into a grammar; the field order here is the order the model
  writes them).  It carries no turn ids: measured on the local 1.5B model the
  cited turn numbers were wrong more often than right, and they cost ~7
  output tokens per fact, so the source turn is found in code by grounding
  the fact's words in the chunk (:func:`chronomem.extract.extractor.ground`),
  which also drops facts the turns do not mention (hallucinated
  ``located_in`` countries, "X is_a company");
* :class:`ExtractionOutput` — pydantic models that validate a reply and
  normalise small deviations (case of enum labels, a bare int for ``turns``)
  instead of throwing the whole chunk away.
"""

from __future__ import annotations

from enum import Enum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

MAX_FACTS_PER_CHUNK = 12
"""Cap on facts per chunk: bounds output tokens (≈45 tokens per fact) and stops a looping model."""


class Certainty(str, Enum):
    """How sure the *speaker* is, as the model reads it (mapped to a number in code)."""

    CERTAIN = "certain"  # plain or emphatic statement
    LIKELY = "likely"  # "probably", "I think"
    UNCERTAIN = "uncertain"  # "might", "maybe", "thinking about", plans not yet made
    HEARSAY = "hearsay"  # someone else said so; rumours


INTENTS = ("FACT", "CAUSAL", "TEMPORAL", "CONTRAST", "EVOLUTION")

_FACT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "subject": {"type": "string", "maxLength": 60},
        "relation": {"type": "string", "maxLength": 40},
        "object": {"type": "string", "maxLength": 80},
        "time": {"type": "string", "maxLength": 40},
        "ended": {"type": "boolean"},
        "certainty": {"type": "string", "enum": [c.value for c in Certainty]},
        "intent": {"type": "string", "enum": list(INTENTS)},
    },
    "required": ["subject", "relation", "object", "time", "ended", "certainty", "intent"],
    "additionalProperties": False,
}

EXTRACTION_SCHEMA: dict[str, Any] = {
    "title": "extraction",
    "type": "object",
    "properties": {
        "facts": {"type": "array", "items": _FACT_SCHEMA, "maxItems": MAX_FACTS_PER_CHUNK},
    },
    "required": ["facts"],
    "additionalProperties": False,
}


class ExtractedFact(BaseModel):
    """One candidate sextuple as the model wrote it (before time/confidence/entity resolution)."""

    model_config = ConfigDict(extra="ignore")

    turns: list[int] = Field(default_factory=list)  # optional hint; not requested from the model
    subject: str
    relation: str
    object: str
    time: str = ""
    ended: bool = False
    certainty: Certainty = Certainty.CERTAIN
    intent: str = "FACT"

    @field_validator("turns", mode="before")
    @classmethod
    def _turns(cls, v: Any) -> Any:
        if v is None:
            return []
        if isinstance(v, int | str):
            v = [v]
        out = []
        for x in v:
            try:
                out.append(int(str(x).strip().lstrip("[T").rstrip("]")))
            except ValueError:
                continue
        return out

    @field_validator("subject", "relation", "object", "time", mode="before")
    @classmethod
    def _text(cls, v: Any) -> Any:
        return "" if v is None else str(v).strip()

    @field_validator("certainty", mode="before")
    @classmethod
    def _certainty(cls, v: Any) -> Any:
        s = str(v or "certain").strip().lower()
        return s if s in {c.value for c in Certainty} else "certain"

    @field_validator("intent", mode="before")
    @classmethod
    def _intent(cls, v: Any) -> Any:
        s = str(v or "FACT").strip().upper()
        return s if s in INTENTS else "FACT"


class ExtractionOutput(BaseModel):
    model_config = ConfigDict(extra="ignore")

    facts: list[ExtractedFact]  # required: a reply without it ({"lines": …} to the wrong prompt) is no reply


def parse_output(data: Any) -> ExtractionOutput:
    """Validate a model reply (already-parsed JSON or a pydantic instance).

    A bare list is accepted as the ``facts`` array; facts missing a subject,
    relation or object are dropped (they carry nothing); the array is capped
    at :data:`MAX_FACTS_PER_CHUNK`.  Raises ``pydantic.ValidationError`` when
    the reply is not an object/list of facts at all (an object without ``facts`` included: a
    model that answered another prompt's shape must fail the chunk, not store nothing).
    """
    if isinstance(data, ExtractionOutput):
        out = data
    else:
        if hasattr(data, "model_dump"):
            data = data.model_dump(mode="json")
        if isinstance(data, list):
            data = {"facts": data}
        out = ExtractionOutput.model_validate(data)
    kept = [f for f in out.facts if f.subject and f.relation and f.object]
    return ExtractionOutput(facts=kept[:MAX_FACTS_PER_CHUNK])
