"""Path scoring for the REAL beam search, as pure functions.

A path is a sequence of facts walked from a root entity.  Its score combines
three parts (step 3 of REAL's read path):

* ``S_QR`` query relevance — hybrid: cosine similarity of the query embedding
  to the facts' embeddings (when an embedder is available) blended with a
  lexical coverage score (how many of the query's content terms the path's
  text and relation vocabulary cover);
* ``S_LC`` logical consistency — temporal coherence (the facts can hold at one
  time, or inside the asked window), no contradicting single-valued facts, and
  the facts' confidence;
* ``S_AS`` answer sufficiency — cheap answer-type checks ("where" wants a
  place, "when" a time, "who" a person …, using the relation registry's
  ``object_type``), coverage of the relations the question names, and for
  yes/no questions whether the path reaches the asked-about thing.  An LLM
  evaluator can refine it (see :mod:`.beam`).

Nothing here touches a store or a model.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache

from ..cjk import cjk_bigrams
from ..memo import text_memo
from ..model import Fact
from ..temporal import overlaps

_WORD = re.compile(r"[^\W_]+")  # letters and digits of any script

STOPWORDS = frozenset("""
a an the and or but if of in on at to for from by with about as into onto over under than then
is are was were be been being am do does did done doing have has had having will would shall should
can could may might must i me my mine myself you your yours we our ours us he him his she her hers
they them their theirs it its this that these those there here what which who whom whose where when
why how any some all each every no not nor so too very just also ever still yet again s t
tell know say said please currently current now today right
""".split())

# question words that name the type of the answer
WH_WORDS = ("where", "when", "who", "whom", "whose", "what", "which", "why", "how")


@text_memo(maxsize=1 << 16)
def stem(word: str) -> str:
    """A tiny suffix stripper: ``lives``/``living``/``lived`` → ``liv``, ``married`` → ``marry``.

    Deterministic and dependency-free; it only has to make query words and
    relation vocabulary meet, not be linguistically right.
    """
    w = word.lower()
    for _ in range(2):
        if len(w) > 4 and w.endswith(("ies", "ied")):
            w = w[:-3] + "y"
        elif len(w) > 5 and w.endswith("ing"):
            w = w[:-3]
        elif len(w) > 4 and w.endswith("ed"):
            w = w[:-2]
        elif len(w) > 3 and w.endswith("es") and not w.endswith("ses"):
            w = w[:-1]
        elif len(w) > 3 and w.endswith("s") and not w.endswith("ss"):
            w = w[:-1]
        else:
            break
    if len(w) > 3 and w.endswith("e"):
        w = w[:-1]
    return w


def words(text: str) -> list[str]:
    """Lower-cased word tokens of any script, a run of Chinese, Japanese or Korean characters as its pairs of
    characters (:func:`~chronomem.cjk.cjk_bigrams`); possessive ``'s`` dropped.

    >>> words("Maya's café in Zürich"), words("Где живёт Мария?"), words("マヤの犬")
    (['maya', 'café', 'in', 'zürich'], ['где', 'живёт', 'мария'], ['マヤ', 'ヤの', 'の犬'])
    """
    text = re.sub(r"['’]s\b", "", text.lower())
    return _WORD.findall(cjk_bigrams(text))


def terms(text: str) -> set[str]:
    """Stemmed content terms of a text (stopwords removed); a new set the caller may change."""
    return set(_terms(text))


def term_set(text: str) -> frozenset[str]:
    """:func:`terms` as the memo's own frozenset: no copy, for callers that only read it."""
    return _terms(text)


def term_probes(terms: Iterable[str]) -> tuple[str, ...]:
    """What the lower-cased text of any word stemmed to one of ``terms`` holds: the stem, or for a stem
    ending in "y" (``stem`` turns "-ies" into "-y") the stem without it.  A stem is otherwise a prefix of its
    word, so a text holding none of the probes has none of the terms (:func:`may_share_terms`)."""
    return tuple(dict.fromkeys(t[:-1] if t.endswith("y") else t for t in terms))


def may_share_terms(text: str, probes: Sequence[str]) -> bool:
    """False when ``term_set(text)`` surely shares no term with those ``probes`` were made from; a
    substring test, far cheaper than stemming a text seen once (a hub's 20,000 names)."""
    low = text.lower()
    return any(p in low for p in probes)


@text_memo(maxsize=1 << 14)
def _terms(text: str) -> frozenset[str]:
    # pure and called for the same names, renderings and answers on every step of every search:
    # a bounded memo makes the lexical scoring several times cheaper (benchmarks/bench_search.py)
    return frozenset(stem(w) for w in words(text) if w not in STOPWORDS and len(w) > 1)


# -- S_QR ---------------------------------------------------------------------------------
def lexical_relevance(query_terms: set[str], path_terms: set[str]) -> float:
    """Fraction of the query's content terms the path covers, in [0, 1]."""
    if not query_terms:
        return 0.0
    return len(query_terms & path_terms) / len(query_terms)


def hybrid_relevance(lexical: float, semantic: float | None, alpha: float) -> float:
    """``alpha * semantic + (1 - alpha) * lexical``; lexical only when there is no embedding score."""
    if semantic is None:
        return lexical
    return alpha * max(0.0, min(1.0, semantic)) + (1.0 - alpha) * lexical


# -- S_LC ---------------------------------------------------------------------------------
def common_validity(facts: Sequence[Fact]) -> tuple[datetime | None, datetime | None] | None:
    """The interval in which every fact holds (``None`` when they never hold together)."""
    start: datetime | None = None
    end: datetime | None = None
    for f in facts:
        if f.valid_from is not None and (start is None or f.valid_from > start):
            start = f.valid_from
        if f.valid_to is not None and (end is None or f.valid_to < end):
            end = f.valid_to
    if start is not None and end is not None and start >= end:
        return None
    return start, end


def temporal_coherence(facts: Sequence[Fact], *, history: bool = False,
                       window: tuple[datetime | None, datetime | None] | None = None) -> float:
    """1.0 when the path's facts can hold at one time (inside ``window`` when given).

    In ``history`` mode (EVOLUTION/TEMPORAL questions) a path may chain facts
    from different times; it then only has to be ordered plausibly: 0.8 when
    the facts never overlap, 1.0 when they do.  Outside history mode, facts
    that never hold together score 0.2.
    """
    if not facts:
        return 1.0
    if window is not None and not all(overlaps(f.valid_from, f.valid_to, *window) for f in facts):
        return 0.2
    if common_validity(facts) is not None:
        return 1.0
    return 0.8 if history else 0.2


def contradictions(facts: Sequence[Fact], single_valued: Callable[[str], bool]) -> int:
    """Pairs of facts that give one subject two values of a single-valued relation at the same time."""
    n = 0
    for i, a in enumerate(facts):
        for b in facts[i + 1:]:
            if (a.relation == b.relation and single_valued(a.relation)
                    and (a.subject_id or a.subject) == (b.subject_id or b.subject)
                    and (a.object_id or a.object) != (b.object_id or b.object)
                    and overlaps(a.valid_from, a.valid_to, b.valid_from, b.valid_to)):
                n += 1
    return n


def confidence_score(facts: Sequence[Fact]) -> float:
    """Geometric mean of the facts' confidences (1.0 for an empty path)."""
    if not facts:
        return 1.0
    return geometric_mean(tuple(f.confidence for f in facts))


@lru_cache(maxsize=1 << 12)
def geometric_mean(values: tuple[float, ...]) -> float:
    """``exp(mean(log(v)))`` of positive numbers (each at least 1e-6), memoised: a search scores a few
    hundred paths over a handful of distinct confidences and intent weights (numbers, no user text)."""
    return math.exp(sum(math.log(max(v, 1e-6)) for v in values) / len(values))


def logical_consistency(facts: Sequence[Fact], single_valued: Callable[[str], bool], *,
                        history: bool = False,
                        window: tuple[datetime | None, datetime | None] | None = None,
                        use_confidence: bool = True) -> float:
    """``S_LC`` in [0, 1]: coherence × (½ per contradiction) × confidence (unless ``use_confidence`` is off)."""
    contra = 0 if history else contradictions(facts, single_valued)
    return (temporal_coherence(facts, history=history, window=window)
            * (0.5 ** contra) * (confidence_score(facts) if use_confidence else 1.0))


# -- S_AS ---------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class AnswerSpec:
    """What a question asks for, as far as cheap checks can tell.

    ``types``: acceptable answer types (empty: unconstrained); ``relation_groups``:
    for each relation word of the question, the canonical relations it may
    mean — a sufficient path covers every group; ``targets``: for yes/no
    questions, the terms of the thing asked about ("dog").
    """

    types: frozenset[str] = frozenset()
    relation_groups: tuple[frozenset[str], ...] = ()
    targets: frozenset[str] = frozenset()
    yes_no: bool = False
    wants_time: bool = False


PLACE_TYPES = frozenset({"place", "city", "country", "location", "region", "address"})
ORG_TYPES = frozenset({"organisation", "organization", "company", "school", "university", "employer"})
PERSON_TYPES = frozenset({"person", "people", "human"})
TIME_TYPES = frozenset({"time", "date", "year"})


#: the relations that make "where" ask for an organisation too, for questions whose words are not English terms
ORG_RELATIONS = frozenset({"works_at", "studies_at"})


def expected_types(wh: str | None, query_terms: set[str],
                   relations: AbstractSet[str] = frozenset()) -> frozenset[str]:
    """Answer types a question word accepts: "where" → place (or organisation for work/study: an English term,
    or for a Japanese or Chinese question, which has none, one of its ``relations`` in :data:`ORG_RELATIONS`) …"""
    if wh == "where":
        out = set(PLACE_TYPES)
        if query_terms & {"work", "study", "employ", "job"} or relations & ORG_RELATIONS:
            out |= ORG_TYPES
        return frozenset(out)
    if wh in ("who", "whom", "whose"):
        return PERSON_TYPES
    if wh == "when":
        return TIME_TYPES
    return frozenset()


def type_match(answer_type: str | None, accepted: frozenset[str]) -> float:
    """1.0 when the answer node's type is accepted, 0.5 when unknown, 0.1 on a clear mismatch."""
    if not accepted:
        return 1.0
    if answer_type is None:
        return 0.5
    return 1.0 if answer_type.lower() in accepted else 0.1


def relation_coverage(path_relations: Iterable[str], groups: Sequence[frozenset[str]]) -> float:
    """Fraction of the question's relation groups some fact of the path covers (1.0 without groups)."""
    if not groups:
        return 1.0
    rels = set(path_relations)
    return sum(1 for g in groups if g & rels) / len(groups)


def answer_sufficiency(spec: AnswerSpec, *, answer_type: str | None, answer_terms: AbstractSet[str],
                       path_relations: Sequence[str], last_has_time: bool) -> float:
    """``S_AS`` in [0, 1] from cheap checks on the path's last step.

    * yes/no: does the path end at the thing asked about (``targets``)?
      Relation coverage still counts ("does Maya have a dog" needs no relation
      word, "is Maya married" needs ``married_to``).
    * "when": the last fact must carry a time (its validity start).
    * otherwise: answer-type match × relation coverage.
    """
    coverage = relation_coverage(path_relations, spec.relation_groups)
    if spec.yes_no:
        hit = 1.0 if spec.targets and spec.targets <= answer_terms else (
            0.6 if spec.targets & answer_terms else 0.2)
        if not spec.targets:
            hit = 1.0
        return hit * (0.4 + 0.6 * coverage)
    if spec.wants_time:
        return (1.0 if last_has_time else 0.3) * coverage
    return type_match(answer_type, spec.types) * coverage


# -- combination ------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Weights:
    """How the three parts combine: ``score = qr*S_QR + lc*S_LC + as_*S_AS`` (weights sum to 1)."""

    qr: float = 0.4
    lc: float = 0.2
    as_: float = 0.4


def path_score(s_qr: float, s_lc: float, s_as: float, weights: Weights = Weights(),
               intent_weight: float = 1.0) -> float:
    """Weighted sum of the three parts, scaled by intent compatibility."""
    total = weights.qr + weights.lc + weights.as_
    raw = (weights.qr * s_qr + weights.lc * s_lc + weights.as_ * s_as) / (total or 1.0)
    return round(raw * intent_weight, 6)


def relation_terms(name: str, synonyms: Iterable[str], description: str = "") -> set[str]:
    """Vocabulary of a relation: its name, synonyms and description as stemmed terms."""
    out = terms(name.replace("_", " "))
    for s in synonyms:
        out |= terms(s.replace("_", " "))
    out |= terms(description)
    return out


def fact_terms(f: Fact, relation_vocab: Mapping[str, set[str]]) -> set[str]:
    """Terms a fact covers: its endpoints, its rendering and its relation's vocabulary."""
    out = terms(f"{f.subject} {f.object} {f.render()}")
    return out | relation_vocab.get(f.relation, terms(f.relation.replace("_", " ")))
