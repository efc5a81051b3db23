"""Confidence stratification: the model's certainty label plus a cue lexicon.

Pure functions.  The model gives a categorical certainty (small models are far
more reliable at picking a label than at writing a calibrated number); code
turns it into ``c`` in [0, 1] and corrects it with lexical cues found in the
*clause* of the source turn that mentions the fact, so "I live in Berlin but I
might move to Paris" keeps Berlin stable and Paris tentative.

Scale (with the default ``θ_stable`` = 0.6): certain 0.9, likely 0.7 — stable;
hearsay 0.45, uncertain 0.4 — kept but below the threshold.  An emphatic cue
("always", "definitely") raises a stable fact to 0.95; a hedge ("might",
"maybe", "thinking about", "not sure", "planning", "gonna") or a hearsay cue
("I heard", "apparently") caps it below the threshold whatever the label said,
and so does a relation that names an intention (``plans_to``, ``wants_to``,
``hopes_to`` …): a plan is not yet a state.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from .schema import Certainty

LABEL_CONFIDENCE: dict[Certainty, float] = {
    Certainty.CERTAIN: 0.9,
    Certainty.LIKELY: 0.7,
    Certainty.HEARSAY: 0.45,
    Certainty.UNCERTAIN: 0.4,
}
HIGH = 0.95
HEDGED = 0.4
HEARSAY = 0.45

HIGH_CUES: tuple[str, ...] = (
    "always", "definitely", "certainly", "absolutely", "for sure", "of course", "without a doubt",
    "100%", "never forget", "every day", "every week", "forever", "for certain", "sure that",
)  # fmt: skip
HEDGE_CUES: tuple[str, ...] = (
    "might", "maybe", "perhaps", "possibly", "may be", "thinking about", "thinking of",
    "considering", "not sure", "unsure", "not certain", "i guess", "i wonder", "could be",
    "hoping to", "hope to", "someday", "one day", "wondering", "toying with", "tempted to",
    "dreaming of", "if i", "would like to", "i'd like to", "want to", "wanna",
    "planning", "plan to", "plans to", "gonna", "going to", "keen on", "would love to", "i'd love to",
    "thinkin",
)  # fmt: skip
# Relations that are intentions, not states: whatever the label, they stay below θ_stable.
_INTENTION_RELATION = re.compile(
    r"^(?:plans?|planning|wants?|wanting|hopes?|hoping|considering|thinking|thinks_about|might|may|"
    r"would_like|wishes?|intends?|dreams?|aims?)(?:_|$)"
)
HEARSAY_CUES: tuple[str, ...] = (
    "i heard", "heard that", "apparently", "supposedly", "rumor", "rumour", "they say",
    "people say", "someone told me", "told me that", "allegedly", "according to",
)  # fmt: skip

_CLAUSE_SPLIT = re.compile(r"[.!?;]+|,\s*(?:but|though|although|however)\b|\bbut\b|\bwhile\b")
_WORD = re.compile(r"[a-z0-9']+")


def _has(text: str, cues: Iterable[str]) -> bool:
    return any(re.search(r"(?<![a-z])" + re.escape(c) + r"(?![a-z])", text) for c in cues)


def clauses(text: str) -> list[str]:
    """Split a turn into clauses at sentence ends and contrastive conjunctions."""
    return [c.strip() for c in _CLAUSE_SPLIT.split(text.lower()) if c and c.strip()]


def relevant_clause(text: str, obj: str, relation: str = "") -> str | None:
    """The clause of ``text`` that best mentions the fact's object (or relation words)."""
    target = set(_WORD.findall(obj.lower())) or set()
    rel_words = {w for w in relation.lower().split("_") if len(w) > 3}
    best, best_score = None, 0.0
    for c in clauses(text):
        words = set(_WORD.findall(c))
        score = (len(target & words) / len(target) if target else 0.0) + 0.25 * len(rel_words & words)
        if score > best_score:
            best, best_score = c, score
    return best


def cue_level(clause: str) -> str | None:
    """``"hearsay"``, ``"hedge"``, ``"high"`` or ``None`` for a clause (checked in that order)."""
    c = clause.lower()
    if _has(c, HEARSAY_CUES):
        return "hearsay"
    if _has(c, HEDGE_CUES):
        return "hedge"
    if _has(c, HIGH_CUES):
        return "high"
    return None


def score(certainty: Certainty | str, source_text: str = "", obj: str = "", relation: str = "") -> float:
    """The confidence of an extracted fact.

    ``source_text`` is the text of the turn(s) it came from; cues are read from
    the clause mentioning ``obj`` (the whole text when no clause mentions it).
    """
    label = Certainty(certainty) if not isinstance(certainty, Certainty) else certainty
    c = LABEL_CONFIDENCE[label]
    if relation and _INTENTION_RELATION.match(relation):
        return min(c, HEDGED)
    if not source_text:
        return c
    clause = relevant_clause(source_text, obj, relation) if obj else None
    level = cue_level(clause if clause is not None else source_text)
    if level == "hearsay":
        return min(c, HEARSAY)
    if level == "hedge":
        return min(c, HEDGED)
    if level == "high" and c >= 0.6:
        return max(c, HIGH)
    return c
