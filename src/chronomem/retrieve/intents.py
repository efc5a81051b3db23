"""Query analysis: intent decoupling, answer type, relation words and time window.

A query can explore several intents at once (FACT, CAUSAL, TEMPORAL,
CONTRAST, EVOLUTION); each becomes its own sub-search.  A cheap rule
classifier runs first (cue words, question word, time phrases); only when it
is unsure — no cue, no relation word, no telling question word — and the
caller allows it, an LLM classifies (prompt ``prompts/intents_v1.md``).

The analysis also records what the answer must look like (used by ``S_AS``):
the question word's answer type, the relation groups the question names
("brother" → sibling_of, "work" → works_at/job_title …, from the relation
registry's names and synonyms), whether it is a yes/no question, whether
closed versions must be kept ("changed", "used to", "before" …), and an
explicit time window ("in 2020", "last summer", "before 2019") resolved with
:mod:`chronomem.timeexpr`.

Japanese and Chinese questions carry none of those English cues, and are written without spaces: "マヤは
どこに住んでいますか" had no answer type and no relation word, so the read path did not know it asked for
Maya's current residence.  A question holding such characters is also read with their own cue words — the
question word (:data:`~chronomem.retrieve.scoring.CJK_WH_WORDS`, as the English word it stands for), the
relation words (:data:`~chronomem.retrieve.scoring.CJK_RELATION_WORDS`), the intent and history cues, a
question ending in "か"/"吗" as yes/no, "私"/"我" as the speaker, and a time phrase ("2020年に", "去年",
"3年前") put in the English words :func:`~chronomem.timeexpr.resolve` reads.  Every other question is read
exactly as before: the extra reading starts only when :func:`~chronomem.cjk.has_cjk` says so.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..cjk import has_cjk
from ..cjk_time import find_cjk_time_window
from ..model import Intent
from ..prompts import load_template
from ..registry import RelationRegistry
from ..timeexpr import MONTH_ALTERNATION, resolve
from .scoring import (
    STOPWORDS,
    WH_WORDS,
    AnswerSpec,
    expected_types,
    relation_terms,
    stem,
    terms,
    words,
)
from .cjk_questions import (
    CJK_CUES,
    CJK_HISTORY,
    CJK_SPEAKER,
    CJK_YES_NO,
    cjk_question_word,
    cjk_relation_words,
    cjk_yes_no_targets,
)

log = logging.getLogger(__name__)

INTENT_PROMPT_VERSION = "intents_v1"

_CUES: dict[Intent, re.Pattern[str]] = {
    Intent.EVOLUTION: re.compile(
        r"\b(chang\w*|evolv\w*|over (the )?(time|years|months)|used to|previous(ly)?|formerly|former|"
        r"before|earlier|history|no longer|any ?more|switch\w*|progress\w*|first|originally|grow\w*)\b"),
    Intent.TEMPORAL: re.compile(
        r"\b(when|what (time|year|month|day|date)|which (year|month|day|date)|how long|since|until|"
        r"ago|dates?|first time|last time|how often|timeline)\b"),
    Intent.CAUSAL: re.compile(
        r"\b(why|because|reasons?|caused?|causes|led to|lead to|leads to|result(ed)? in|what made|"
        r"how come|motivat\w*|so that|due to|inspired?)\b"),
    Intent.CONTRAST: re.compile(
        r"\b(differ\w*|compar\w*|versus|vs\.?|rather than|instead|prefer\w*|unlike|better|worse|"
        r"more than|less than|similar\w*|whereas|in common|both)\b"),
}

# "keep closed versions" cues (REAL: EVOLUTION and before/previously questions)
_HISTORY = re.compile(r"\b(chang\w*|evolv\w*|over (the )?(time|years)|used to|previous(ly)?|formerly|"
                      r"former|before|earlier|history|no longer|any ?more|originally|first|past)\b")

_MONTHS = MONTH_ALTERNATION
# a month or season of a year, or a year ("May 2010", "the summer of 2012", "2013")
_DATED = (r"(?:early |late |mid-?)?(?:(?:the )?(?:spring|summer|autumn|fall|winter) (?:of )?|"
          rf"(?:\d{{1,2}} )?(?:{_MONTHS})\.?,? (?:\d{{1,2}},? )?)?(?:19|20)\d\d")
# a span between two of them: "between 2010 and 2013", "from March 2011 to May 2013", "2010-2013"
_SPAN = re.compile(rf"\b(?:between\s+{_DATED}\s+and\s+{_DATED}|from\s+{_DATED}\s+(?:to|until|till|through)\s+"
                   rf"{_DATED}|{_DATED}\s*(?:-|\u2013|to)\s*{_DATED})\b", re.I)
_TIME_PHRASE = re.compile(
    r"\b(?:(in|during|on|since|before|after|until|by|from)\s+)?"
    r"(\d{4}-\d\d(?:-\d\d)?|"  # before the year: "2010-05-03" is a day, not the year 2010 and a rest
    rf"{_DATED}|"
    r"(?:last|this|next) (?:year|month|week|weekend|summer|winter|spring|autumn|fall)|"
    r"(?:yesterday|today)|"
    r"(?:a|one|two|three|four|five|six|\d+) (?:years?|months?|weeks?|days?) ago)\b", re.I)

_SPEAKER = re.compile(r"\b(i|me|my|mine|myself|i'm|i've|i'd)\b", re.I)
_YES_NO = ("do", "does", "did", "is", "are", "was", "were", "has", "have", "had", "can", "could",
           "will", "would", "should", "am")
# ties go to the more specific intent: its sub-search keeps what FACT's would drop
INTENT_ORDER = (Intent.EVOLUTION, Intent.TEMPORAL, Intent.CAUSAL, Intent.CONTRAST, Intent.FACT)

@dataclass(slots=True)
class QueryAnalysis:
    """Everything the search needs to know about a question before touching the graph."""

    text: str
    terms: set[str]
    wh: str | None
    yes_no: bool
    intents: list[Intent]
    cues: dict[str, list[str]] = field(default_factory=dict)  # intent → matched cue words
    confident: bool = True
    source: str = "rules"  # or "llm"
    history: bool = False  # keep closed versions
    window: tuple[datetime | None, datetime | None] | None = None
    window_text: str | None = None
    relation_groups: list[tuple[str, frozenset[str]]] = field(default_factory=list)  # (word, relations)
    types: frozenset[str] = frozenset()
    speaker_refs: bool = False
    # a yes/no question's targets when its terms are not its words (Japanese, Chinese: pairs of characters)
    targets: frozenset[str] | None = None

    def answer_spec(self) -> AnswerSpec:
        """The :class:`AnswerSpec` the cheap ``S_AS`` checks use."""
        rel_words = {stem(w) for w, _ in self.relation_groups}
        # yes/no targets: what the question asks about besides relation words; the
        # search drops each path's own root from them ("does Maya have a dog")
        targets = (self.terms - rel_words if self.targets is None else self.targets) if self.yes_no else set()
        return AnswerSpec(types=self.types, relation_groups=tuple(g for _, g in self.relation_groups),
                          targets=frozenset(targets), yes_no=self.yes_no,
                          wants_time=self.wh == "when")

    def as_dict(self) -> dict[str, Any]:
        return {
            "intents": [i.value for i in self.intents], "source": self.source, "confident": self.confident,
            "cues": self.cues, "wh": self.wh, "yes_no": self.yes_no, "history": self.history,
            "window": None if self.window is None else [None if t is None else t.isoformat()
                                                        for t in self.window],
            "window_text": self.window_text, "types": sorted(self.types),
            "relation_groups": {w: sorted(g) for w, g in self.relation_groups},
            "terms": sorted(self.terms),
        }


def relation_lexicon(registry: RelationRegistry) -> dict[str, frozenset[str]]:
    """Stemmed word → canonical relations whose name or synonyms contain it."""
    out: dict[str, set[str]] = {}
    for name, spec in registry.specs.items():
        for t in relation_terms(name, spec.synonyms):
            out.setdefault(t, set()).add(name)
    return {k: frozenset(v) for k, v in out.items()}


def find_time_window(text: str, ref: datetime) -> tuple[tuple[datetime | None, datetime | None], str] | None:
    """The first explicit time phrase of a question, resolved against ``ref``; a span ("between 2010 and 2013")
    is one phrase, read whole (its first year alone was the window, and "and 2013" stayed in the question).

    >>> from datetime import datetime, timezone
    >>> (start, end), phrase = find_time_window("Where did Lena work between 2010 and 2013?",
    ...                                         datetime(2026, 1, 1, tzinfo=timezone.utc))
    >>> start.year, end.year, phrase
    (2010, 2014, 'between 2010 and 2013')
    """
    for m in _SPAN.finditer(text):
        r = resolve(m.group(0), ref)
        if r is not None and r.start is not None and r.end is not None:
            return (r.start, r.end), m.group(0)
    for m in _TIME_PHRASE.finditer(text):
        phrase = m.group(0).strip()
        for candidate in (phrase, m.group(2)):
            r = resolve(candidate, ref)
            if r is not None and (r.start is not None or r.end is not None):
                return (r.start, r.end), phrase
    return None


def analyze(query: str, registry: RelationRegistry, *, now: datetime,
            lexicon: dict[str, frozenset[str]] | None = None) -> QueryAnalysis:
    """Rule-based analysis of a question (no model); one in Japanese or Chinese is also read with those
    languages' cue words (see the module's docstring), any other exactly as the English rules read it."""
    low = query.lower().strip()
    toks = words(low)
    wh = next((w for w in toks[:4] if w in WH_WORDS), None)
    if wh == "whose":
        wh = "who"
    yes_no = bool(toks) and toks[0] in _YES_NO and wh is None
    cjk = has_cjk(low)
    targets: frozenset[str] | None = None
    if cjk and wh is None and not yes_no:
        wh = cjk_question_word(low)
        if wh is None and CJK_YES_NO.search(low) is not None:
            yes_no, targets = True, cjk_yes_no_targets(low)
    qterms = terms(query)
    lex = lexicon if lexicon is not None else relation_lexicon(registry)
    groups: list[tuple[str, frozenset[str]]] = []
    seen: set[frozenset[str]] = set()
    for w in toks:
        if w in STOPWORDS:
            continue
        g = lex.get(stem(w))
        if g and g not in seen:
            seen.add(g)
            groups.append((w, g))
    if cjk:
        for w, rels in cjk_relation_words(low):
            g = frozenset(r for r in rels if r in registry.specs)
            if g and g not in seen:
                seen.add(g)
                groups.append((w, g))

    cues: dict[str, list[str]] = {}
    scores: dict[Intent, float] = {}
    for intent, pat in _CUES.items():
        found = [m.group(0) for m in pat.finditer(low)]
        if found:
            cues[intent.value] = found
            scores[intent] = float(len(found))
    if cjk:
        for intent, pat in CJK_CUES.items():
            found = [m.group(0) for m in pat.finditer(low)]
            if found:
                cues.setdefault(intent.value, []).extend(found)
                scores[intent] = scores.get(intent, 0.0) + len(found)
    window = find_time_window(query, now)
    if window is None and cjk:
        window = find_cjk_time_window(query, now)
    if window is not None:
        scores[Intent.TEMPORAL] = scores.get(Intent.TEMPORAL, 0.0) + 1.0
        cues.setdefault(Intent.TEMPORAL.value, []).append(window[1])
    if wh in ("where", "who", "whom", "what", "which") or yes_no or not scores:
        scores[Intent.FACT] = scores.get(Intent.FACT, 0.0) + 1.0
    intents = sorted(scores, key=lambda i: (-scores[i], INTENT_ORDER.index(i)))
    confident = bool(cues) or bool(groups) or wh in ("where", "who", "whom", "when") or yes_no
    history = (bool(_HISTORY.search(low)) or (cjk and CJK_HISTORY.search(low) is not None)
               or (wh == "when" and window is None))
    relations = frozenset(r for _, g in groups for r in g) if cjk else frozenset()
    return QueryAnalysis(
        text=query, terms=qterms, wh=wh, yes_no=yes_no, intents=intents, cues=cues,
        confident=confident, history=history,
        window=None if window is None else window[0], window_text=None if window is None else window[1],
        relation_groups=groups, types=expected_types(wh, qterms, relations),
        speaker_refs=bool(_SPEAKER.search(query)) or (cjk and CJK_SPEAKER.search(query) is not None),
        targets=targets,
    )


_DATE_ASKED = re.compile(r"\b(?:what|which) (?:year|month|date|day)\b|\bhow long ago\b", re.I)


def asks_for_a_date(analysis: QueryAnalysis) -> bool:
    """Does the question ask for a date — "when …", "in what year …", "which month …", "how long ago …"?
    Pure.

    >>> from datetime import datetime, timezone
    >>> from chronomem.registry import RelationRegistry
    >>> now, reg = datetime(2026, 1, 1, tzinfo=timezone.utc), RelationRegistry()
    >>> [asks_for_a_date(analyze(q, reg, now=now)) for q in
    ...  ("When did Mekdes marry Samuel?", "In what year did Ligaya marry Rafael?", "Where did Mekdes live in 2007?")]
    [True, True, False]
    """
    return analysis.wh == "when" or bool(_DATE_ASKED.search(analysis.text))


def asks_time_or_state(analysis: QueryAnalysis, registry: RelationRegistry) -> bool:
    """Does the question turn on time or on a state that changes — "when", a time window, a change
    ("used to", "moved"), or a single-valued relation ("where does Maya live", "is Maya married")?
    Those are the questions a dated, versioned graph answers better than what was said; the fused
    read path keeps the graph evidence's share for them (``SearchConfig.fused_turns_first``).  Pure."""
    if analysis.wh == "when" or analysis.window is not None or analysis.history:
        return True
    if any(i in (Intent.TEMPORAL, Intent.EVOLUTION) for i in analysis.intents):
        return True
    return any(registry.is_known(r) and registry.spec(r).single_valued
               for _, group in analysis.relation_groups for r in group)


# -- the LLM fallback ----------------------------------------------------------------------------
INTENT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"intents": {"type": "array", "minItems": 1, "maxItems": 3,
                               "items": {"type": "string", "enum": [i.value for i in Intent]}}},
    "required": ["intents"],
}


def intents_messages(query: str) -> list[dict[str, str]]:
    t = load_template("chronomem.retrieve", INTENT_PROMPT_VERSION)
    system, user = t.system, t.user
    return [{"role": "system", "content": system}, {"role": "user", "content": user.format(question=query)}]


def parse_intents(data: Any) -> list[Intent]:
    """Validated intents from the model's JSON (unknown labels dropped, order kept)."""
    raw = data.get("intents") if isinstance(data, dict) else None
    out: list[Intent] = []
    for x in raw or []:
        try:
            i = Intent(str(x).upper())
        except ValueError:
            continue
        if i not in out:
            out.append(i)
    return out
