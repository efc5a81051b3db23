"""Extraction v2: observation-first — one chunk of turns → dated statements → typed facts.

One structured LLM call per chunk (like v1), but the model first writes what
small models write well: a short self-contained *statement* per thing worth
remembering, with the number of the turn that says it ("Jon lost his job as a
banker yesterday.").  In the same object it then types the statement into a
fact (subject, a relation from a closed vocabulary that the JSON-schema
grammar enforces, object, the time words as said, ended).  Code does the rest,
deterministically and testably:

* :func:`validate_turn` checks the cited turn id against the words of the
  statement and re-grounds it (or drops a statement no turn supports);
* :func:`~chronomem.timewords.find_time_phrase` recovers a time phrase the model left in the
  statement but not in ``time``; :func:`~chronomem.timewords.date_label` / :func:`with_date` write
  the absolute date resolved by :mod:`chronomem.timeexpr` into the fact's text
  ("… yesterday (19 January 2023)");
* :func:`type_job` keeps roles and employers apart (``job_title`` vs
  ``works_at``: "works_at product manager" is a job title, and "lost his job as
  a banker" ends ``job_title banker``);
* the statement is kept as the fact's ``text`` — the evidence a reader sees.

The prompt is the versioned file ``prompts/observe_v1.md``; selecting this
method is ``WritePipeline(method="v2")`` / ``Config.extraction = "v2"``.
Pure functions except :meth:`ObservationExtractor.run`.
"""

from __future__ import annotations

import logging
import re
import traceback
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, field_validator

from .. import timeexpr
from ..cjk import cjk_characters, has_cjk
from ..cjk_time import find_cjk_time_phrases
from ..errors import log_reason
from ..timewords import TIME_PHRASE, counts_from_a_named_year, date_label, find_time_phrase
from ..model import FactInput, Intent, Message, Origin
from ..providers.base import LLM, Penalties
from ..registry import statement_identity
from . import confidence
from . import speakers as speakers_12
from . import states
from . import replies
from .chunking import Chunk
from . import extractor as v1
from .extractor import (
    _JUNK_OBJECTS,
    ChunkResult,
    Extractor,
    _hits,
    _one_speaker_per_turn_fact,
    _words,
    plausible_pet,
    resolve_person,
)

log = logging.getLogger(__name__)

PROMPT_VERSION = "observe_v1"
#: Bump when :func:`postprocess_observations` keeps, drops or rewrites different facts from the
#: same model output (benchmarks key their ingested v2/v3 memories on it).
#: 2: dialogue acts dropped; ungrounded, possessive and unnamed-place objects read as did.
#: 3: "ended" kept only where the statement says something stopped (:func:`says_ended`) and never on
#: events; "X says the words '…'" and statements under 4 words dropped; likes/feels/plans_to … a
#: speaker read as did; a shared photo belongs to the speaker of the line that carries it.
#: 4: a statement with no subject (v3's slim slots) is about the first speaker it names; a statement
#: no turn supports is grounded in a context line that supports it strongly (CONTEXT_SUPPORT).
#: 5: a line next to the first source turn is cited when it supports the statement at half the best
#: score (ADJACENT_SUPPORT).
#: 6: a context line that supports a statement better than every turn of the chunk (CONTEXT_OVER_CHUNK)
#: is its first source even when the slot's line supports it a little.
#: 7: content-free support and thanks dropped (:func:`small_talk`); "rehome" ends a state; a
#: residence needs a word of living or moving in the statement (:func:`says_residence`); a speaker is
#: no employer or school; a second registry fact in one statement ("lives in Berlin and works at
#: Acme") is kept (:func:`clause_facts`).
#: 8: an employer, a school or a job title needs a statement that speaks of working, studying or a
#: role (:func:`says_typed`: "Gina congratulated Jon on opening the dance studio" is no ``works_at``); a
#: role is the head noun before "of" ("group of dancers" is none); a shared photo is ``shared_photo``
#: of what it shows, not something its sharer owns (:func:`shared_photo`); a catch-all fact's object is
#: its statement; a time the statement retells less precisely than its line is the line's
#: (:func:`line_time_phrase`: "on Friday" for "Next Friday"); a photo statement that names the other
#: speaker as its sharer is rewritten to the speaker of the photo's line, as a wrong subject is.
#: 9: rules 8, but a catch-all fact keeps the model's short object ("the dance studio": a node a
#: question can name) and two of them are one only when their statements are (the store keys the
#: catch-all relation by its statement too: chronomem.graph.FACT_IDENTITY 2).
#: 10: rules 7 and only that last part of rules 9: a chunk's catch-all facts are one only when
#: their statements are (none of rules 8's typing).
#: 11: rules 10 with the parts of rules 8 that check a typed fact against its statement (says_typed,
#: role_head, line_time_phrase, the photo statement's speaker), and: a reaction to the other speaker's
#: news or words is dropped (:func:`reaction`); a photo typed as something its sharer owns, visited or
#: made is a catch-all fact about the photo (not rules 8's ``shared_photo`` with a new object); an
#: ``is_a``, ``likes``, ``hobby`` or ``favorite`` fact needs a statement that says so (:func:`says_typed`); the
#: checks read the relation the registry stores ("joined" is ``works_at``: "Melanie signed up for a pottery
#: class" is no employer).
#: 12: rules 11, and who a statement is about is read from the chunk's lines (:mod:`.speakers`): a photo
#: statement belongs to the line whose caption it describes, a near-copy of a line to that line's speaker,
#: "A and B …" from one speaker's lines to that speaker, and a nickname ("Mel") to the speaker it begins.
#: 13: rules 7 with the state rules (:mod:`.states`): a range told late ends the fact ("from 2014 to
#: 2016"), an ending word must reach its object in its own clause ("quit La Paz and now works at …"),
#: "moved to X" and "left/quit X" in a second clause are facts of their own, an employer typed as a school
#: is an employer, "broke up" ends a partnership, a state reported of someone else is theirs, and what the
#: line says in the first person ("I'm in Nairobi", "Petra and I got married") or of family ("my
#: daughter Lucia", "your brother Felix") is a fact.  14: rules 12 with the same state rules.
#: 15: rules 14, and rules 8's check of an employer against its statement reads the ways people say
#: where they work (:func:`job_talk`: "teaches chemistry at Ridgeway High", "a UX designer at Naver",
#: "flies for Alitalia", "retired from …", "left Sony … is freelancing") and the employer
#: :func:`.states.employer_named` finds ("starts as a nurse at St James's Hospital"): under rules 14
#: those jobs became catch-all facts, and the state rules' endings and changes were lost with them.
POSTPROCESS_VERSION = 15
#: The rule sets :func:`postprocess_observations` can apply (``rules=``).  An extraction method is a
#: frozen recipe of prompt and rules (:data:`chronomem.extract.pipeline.METHOD_RECIPES`): v2 and v3
#: keep 6, the rules they were measured (and #21's held-out run writes its memories) with; v4 keeps 7,
#: v5 8, v6 9, v7 10, v8 11, v9 12.
RULE_VERSIONS = (6, 7, 8, 9, 10, 11, 12, 13, 14, 15)
#: the rule sets that check a typed fact against its statement (says_typed, role_head, line_time_phrase,
#: the photo statement's speaker); rules 10 leave it out
TYPING_8 = frozenset({8, 9, 11, 12, 14, 15})
#: the rule sets with rules 9's catch-all facts told apart by their statements
CATCH_ALL_9 = frozenset({9, 10, 11, 12, 14, 15})
#: the rule sets with rules 11's reaction filter and typed-relation reading
RULES_11 = frozenset({11, 12, 14, 15})
#: the rule sets that read who a statement is about from the chunk's lines (rules 12)
SPEAKERS_12 = frozenset({12, 14, 15})
#: the rule sets with the state rules of :mod:`.states` (rules 13 = 7 + them, 14 = 12 + them, 15 = 14 + job_talk)
STATE_RULES = frozenset({13, 14, 15})
#: the rule sets whose check of an employer reads :func:`job_talk` and :func:`.states.employer_named` too
JOBS_15 = frozenset({15})
#: the rule sets that make a shared photo ``shared_photo`` of what it shows (rules 11: ``did``, object kept)
SHARED_PHOTO = frozenset({8, 9})


def check_rules(rules: int) -> int:
    """``rules`` when it names a rule set :func:`postprocess_observations` has; raises ``ValueError``."""
    if rules not in RULE_VERSIONS:
        raise ValueError(f"rules must be one of {RULE_VERSIONS}, got {rules!r}")
    return rules


MAX_STATEMENTS = 12
MAX_TOKENS = 1100  # ≈ 12 statements × 75 tokens + slack; the grammar caps the array

#: The relation vocabulary the grammar allows.  Registry relations keep their meaning (and
#: their single-valued update rules); the event verbs carry what LoCoMo-like chat is mostly
#: about; ``did`` is the catch-all (the statement text keeps the detail).
RELATIONS: tuple[str, ...] = (
    "lives_in", "moved_to", "works_at", "job_title", "studies_at", "married_to", "partner_of",
    "sibling_of", "friend_of", "parent_of", "child_of", "has_pet", "owns", "bought", "likes",
    "dislikes", "favorite", "hobby", "is_a", "member_of", "visited", "traveled_to", "attended",
    "started", "finished", "joined", "won", "lost", "made", "learned", "met", "received", "gave",
    "plans_to", "wants_to", "feels", "did",
)  # fmt: skip

# No turn ids: on conv-30 the 1.5B model used "turn" as a line counter (1, 2, 3 … whatever the
# content) and then repeated one statement per number until the cap; the source turn is found
# in code instead (:func:`validate_turn`).  The statement comes first: it is what the typing reads.
STATEMENT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "statement": {"type": "string", "maxLength": 160},
        "subject": {"type": "string", "maxLength": 60},
        "relation": {"type": "string", "enum": list(RELATIONS)},
        "object": {"type": "string", "maxLength": 80},
        "ended": {"type": "boolean"},
    },
    "required": ["statement", "subject", "relation", "object", "ended"],
    "additionalProperties": False,
}

OBSERVATION_SCHEMA: dict[str, Any] = {
    "title": "observations",
    "type": "object",
    "properties": {"statements": {"type": "array", "items": STATEMENT_SCHEMA, "maxItems": MAX_STATEMENTS}},
    "required": ["statements"],
    "additionalProperties": False,
}


def max_statements(turns: int) -> int:
    """The statement cap for a chunk of ``turns`` turns: 3/4 per turn (LoCoMo's gold has ~0.5),
    at least 3, at most :data:`MAX_STATEMENTS`.  Writing is the expensive part, and a 1.5B
    model that runs out of things to say repeats its last statement until the cap."""
    return max(3, min(MAX_STATEMENTS, (3 * turns + 3) // 4))


def schema_for(turns: int) -> dict[str, Any]:
    """:data:`OBSERVATION_SCHEMA` with the array capped by :func:`max_statements`."""
    items = {**OBSERVATION_SCHEMA["properties"]["statements"], "maxItems": max_statements(turns)}
    return {**OBSERVATION_SCHEMA, "properties": {"statements": items}}


class Observation(BaseModel):
    """One statement as the model wrote it, with its typing (before any resolution)."""

    model_config = ConfigDict(extra="ignore")

    turn: int | None = None
    statement: str
    subject: str = ""
    relation: str = "did"
    object: str = ""
    time: str = ""
    ended: bool = False

    @field_validator("turn", mode="before")
    @classmethod
    def _turn(cls, v: Any) -> Any:
        if isinstance(v, list):
            v = v[0] if v else None
        if v is None or isinstance(v, bool):
            return None
        m = re.search(r"\d+", str(v))
        return int(m.group()) if m else None

    @field_validator("statement", "subject", "relation", "object", "time", mode="before")
    @classmethod
    def _text(cls, v: Any) -> Any:
        return "" if v is None else re.sub(r"\s+", " ", str(v)).strip()


class ObservationOutput(BaseModel):
    model_config = ConfigDict(extra="ignore")

    statements: list[Observation]  # required: an object without it is another prompt's reply


def parse_observations(data: Any) -> list[Observation]:
    """Validate a reply: a ``{"statements": [...]}`` object or a bare list.

    Statements without text are dropped, exact repeats too (a looping model),
    and the list is capped at :data:`MAX_STATEMENTS`.  Raises
    ``pydantic.ValidationError`` when the reply is not that shape at all (an object without
    ``statements`` included).
    """
    if hasattr(data, "model_dump"):
        data = data.model_dump(mode="json")
    if isinstance(data, list):
        data = {"statements": data}
    out = ObservationOutput.model_validate(data)
    seen: set[str] = set()
    kept: list[Observation] = []
    for o in out.statements:
        key = o.statement.lower()
        if not o.statement or key in seen:
            continue
        seen.add(key)
        kept.append(o)
    return kept[:MAX_STATEMENTS]


# ----------------------------------------------------------------- turn ids

#: v3: the support (:func:`_grounding`) a statement needs from the line whose slot it was written
#: in to keep that line as its source: one content word of a five-word statement.
TRUSTED_TURN_SUPPORT = 0.1
#: How well a context line (no slot) must support a statement that no turn of the chunk supports
#: for the fact to cite it: twice a turn's minimum, as the model was not asked about that line.
CONTEXT_SUPPORT = 0.5
#: ... or, when the chunk's turns support it too, this many times as well as the best of them.
CONTEXT_OVER_CHUNK = 1.2
#: A line next to a statement's first source is also cited when it supports the statement at this
#: share of the best score (other lines need ``also``, 0.8): the question a statement answers, or
#: the reply that echoes it, is evidence too.  0.5 on conv-30's v3 replies: gold evidence turns
#: cited 55 → 57 of 74, 33 more citations (BENCHMARKS.md "Extraction v3", post-processing 5).
ADJACENT_SUPPORT = 0.5


def _grounding(words: set[str], obj_words: set[str], m: Message) -> float:
    """How well a turn supports a statement: share of its content words found in the turn,
    plus a bonus when the object's words are there."""
    tw = _words(m.text)
    s = _hits(words, tw) / len(words) if words else 0.0
    o = _hits(obj_words, tw) / len(obj_words) if obj_words else 0.0
    return s + 0.5 * o


def _evidence_words(text: str, speakers: Sequence[str]) -> set[str]:
    """Content words of ``text`` that can show where it came from: speaker names and time words
    ("yesterday", "last week") are no evidence of *what* was said."""
    names = {w for s in speakers for w in _words(s)}
    return _words(TIME_PHRASE.sub(" ", text)) - names - _TIME_WORDS


def support_scores(obs: Observation, numbered: dict[int, Message], speakers: Sequence[str] = ()) -> dict[int, float]:
    """How well each turn supports a statement (:func:`_grounding`), by turn number."""
    words = _evidence_words(obs.statement, speakers)
    obj_words = _evidence_words(obs.object, speakers)
    return {n: _grounding(words, obj_words, m) for n, m in numbered.items()}


def context_source(obs: Observation, numbered: dict[int, Message], context: dict[int, Message],
                   speakers: Sequence[str] = ()) -> Message | None:
    """The context line a statement was really written about, or ``None``.

    Context lines (the turns before a chunk, shown without a slot) are cited when one supports
    the statement at :data:`CONTEXT_SUPPORT` and at least :data:`CONTEXT_OVER_CHUNK` × as well
    as any turn of the chunk: the model often writes the last context line's news into the
    first slot ("Jon rehearsed with a small group of dancers" in the slot of Gina's "Wow, are
    they yours?").  That line then comes first among the statement's sources.
    """
    inside = max(support_scores(obs, numbered, speakers).values(), default=0.0)
    scores = support_scores(obs, context, speakers)
    words = _evidence_words(obs.statement, speakers)
    best = max(scores, key=lambda n: (scores[n], n), default=None)
    if best is None or scores[best] < CONTEXT_SUPPORT or scores[best] < CONTEXT_OVER_CHUNK * inside:
        return None
    return context[best] if _hits(words, _words(context[best].text)) >= 2 else None


def validate_turn(obs: Observation, numbered: dict[int, Message], speakers: Sequence[str] = (),
                  *, min_score: float = 0.25) -> Message | None:
    """The turn a statement comes from, or ``None`` when no turn of the chunk supports it.

    A cited number (optional) is kept when it names a turn under "Turns" that supports
    the statement about as well as the best one (≥ half its score); otherwise the best
    supporting turn wins (small models are often one line off, or cite the question
    instead of the answer).  Speaker names and time words do not count as support.
    """
    found = source_turns(obs, numbered, speakers, min_score=min_score)
    return found[0] if found else None


def source_turns(obs: Observation, numbered: dict[int, Message], speakers: Sequence[str] = (),
                 *, min_score: float = 0.25, also: float = 0.8, max_turns: int = 3,
                 trust_turn: float | None = None) -> list[Message]:
    """The turns a statement comes from, best first; ``[]`` when no turn supports it.

    Besides the best turn, another turn is cited when it supports the statement nearly as
    well (≥ ``also`` × the best score and two content words; a line next to the first one needs
    only :data:`ADJACENT_SUPPORT` × the best score): a statement that joins a question and its
    answer, or two lines of one story, cites both.  ``trust_turn`` (v3,
    where the grammar fixed the line a statement was written for): the cited turn comes
    first whenever it supports the statement at least this much.
    """
    words = _evidence_words(obs.statement, speakers)
    scores = support_scores(obs, numbered, speakers)
    if not scores:
        return []
    trusted = trust_turn is not None and obs.turn in scores and scores[obs.turn] >= trust_turn
    if max(scores.values()) < min_score and not trusted:
        return []
    # a near tie goes to the subject's own line (a small bonus: the model also swaps speakers,
    # and then the statement's distinctive words must win — see speaker_fix)
    subject = obs.subject.strip().lower()
    raw = dict(scores)
    own = {n for n, m in numbered.items() if m.speaker.lower() == subject}
    for n in own:
        if scores[n] >= min_score:
            scores[n] += 0.25
    best_n = max(scores, key=lambda n: (scores[n], n in own, -n))
    best = raw[best_n]
    cited = obs.turn
    first: int = best_n
    if cited is not None and cited in raw and (trusted or (raw[cited] >= 0.5 * best and raw[cited] >= min_score)):
        first = cited
    out = [numbered[first]]
    top = max(raw.values())
    for n in sorted(raw, key=lambda n: (-raw[n], n)):
        if len(out) >= max_turns:
            break
        bar = ADJACENT_SUPPORT if abs(n - first) == 1 else also
        if n != first and raw[n] >= bar * top and _hits(words, _words(numbered[n].text)) >= 2:
            out.append(numbered[n])
    return out


# ----------------------------------------------------------------- time

_TIME_WORDS = frozenset("""
    yesterday today tonight tomorrow last next this past week weeks weekend month months year years ago
    day days morning evening night summer winter spring fall autumn
""".split())


_LOOSE_TIME_WORDS = {"on", "in", "at", "the", "this"}


def line_time_phrase(phrase: str, lines: Sequence[Message]) -> str:
    """rules 8: the source line's own time words where the statement retells them less precisely —
    the model writes "plan to boogie on Friday" for "Next Friday works", and a bare weekday resolves
    to the last one (the day it was said, on a Friday).  ``phrase`` when no line says more."""
    said = {w for w in re.findall(r"[a-z]+", phrase.lower())} - _LOOSE_TIME_WORDS
    if not said:
        return phrase
    for m in lines:
        for found in TIME_PHRASE.finditer(m.text):
            words = set(re.findall(r"[a-z]+", found.group(0).lower()))
            if said < words - _LOOSE_TIME_WORDS and timeexpr.resolve(found.group(0), m.timestamp) is not None:
                return found.group(0)
    return phrase


#: where a Japanese or Chinese sentence ends (kept with it), and where a clause of one does
_CJK_SENTENCE_END = re.compile(r"(?<=[。．！？!?\n])")
_CJK_CLAUSE_END = re.compile(r"(?<=[、，,;；：])")


def cjk_line_time(line: str, names: Sequence[str]) -> str:
    """The time a Japanese or Chinese line says of what a statement of it names (``names``: its object), in the
    English words :func:`~chronomem.timewords.find_time_phrase` gives, for a statement that dropped them (the local
    1.5B model writes "マヤ lives_in リスボン" for "マヤは先月リスボンに引っ越しました").  Read as
    :func:`_with_line_states` reads an English line: the clause that names the object, else its sentence; else the
    whole line.  The first of those that holds a time phrase decides: its one phrase, or ``""`` when it holds
    several different ones (which is the statement's, nothing tells).  Pure.

    >>> cjk_line_time("2019年からポルトに住んでいて、先月リスボンに引っ越しました。", ["リスボン"])
    'last month'
    >>> cjk_line_time("2019年からポルトに住んでいて、先月リスボンに引っ越しました。", ["ファーフェッチ"])
    ''
    """
    names = [n.lower() for n in names if n.strip()]
    sentences = [s for s in _CJK_SENTENCE_END.split(line) if s.strip()]
    named = [s for s in sentences if any(n in s.lower() for n in names)]
    clauses = [c for s in named for c in _CJK_CLAUSE_END.split(s) if any(n in c.lower() for n in names)]
    for part in (clauses, named, [line]):
        said = set(p for text in part for p in find_cjk_time_phrases(text))
        if said:
            return said.pop() if len(said) == 1 else ""
    return ""


def with_date(statement: str, time_text: str, ref: datetime) -> tuple[str, timeexpr.Resolved | None]:
    """``statement`` with the absolute date of ``time_text`` (resolved against ``ref``)
    appended in parentheses, and the resolution; unchanged when nothing resolves."""
    r = timeexpr.resolve(time_text, ref) if time_text else None
    if r is None:
        return statement, None
    label = date_label(r)
    if not label or label.lower() in statement.lower():
        return statement, r
    body = statement.rstrip()
    end = body[-1] if body and body[-1] in ".!?" else ""
    body = body[:-1] if end else body
    return f"{body} ({label}){end or '.'}", r


# ----------------------------------------------------------------- typing rules

ROLE_WORDS = frozenset("""
    accountant actor actress administrator agent analyst architect artist assistant associate athlete
    attorney baker banker barista bartender broker builder carpenter cashier ceo cfo chef cleaner clerk
    coach consultant cook coordinator counselor counsellor cto dancer dentist designer developer director
    doctor driver editor electrician employee engineer entrepreneur farmer firefighter founder freelancer
    hairdresser instructor intern janitor journalist judge lawyer lecturer librarian manager marketer
    mechanic model musician nanny nurse officer owner painter paralegal pharmacist photographer physician
    pilot planner plumber policeman president principal producer professor programmer psychologist
    receptionist reporter representative researcher salesman salesperson scientist secretary singer
    soldier specialist strategist student supervisor surgeon teacher technician therapist trainer
    translator tutor veterinarian vet volunteer waiter waitress worker writer youtuber
""".split())
_JOB_AS = re.compile(r"^(?:(?:his|her|their|my|a|an|the|new|old|full-time|part-time)\s+)*job\s+as\s+(?:an?\s+|the\s+)?(.+)$",
                     re.IGNORECASE)
_JOB_AT = re.compile(r"^(?:(?:his|her|their|my|a|an|the|new|old|full-time|part-time)\s+)*job\s+(?:at|with|in)\s+(.+)$",
                     re.IGNORECASE)
_BARE_JOB = re.compile(r"^(?:(?:his|her|their|my|a|an|the|new|old)\s+)*(?:job|position|work)$", re.IGNORECASE)
_JOB_IN_STATEMENT = re.compile(r"\bjob\s+(?:as\s+(?:an?\s+|the\s+)?|at\s+|with\s+)[^.,;!?()]+?(?=\s+(?:yesterday|today|last|this|"
                               r"next|in|on|since|because|and|but|so)\b|[.,;!?()]|$)", re.IGNORECASE)
_ARTICLE = re.compile(r"^(?:an?|the)\s+", re.IGNORECASE)
_GENERIC_PETS = {"pet", "pets", "a pet", "animal", "animals", "an animal"}
_ENDING_VERBS = {"lost", "quit", "left", "resigned", "sold", "ended", "finished"}
_JOB_VERBS = {"works_at", "job_title", "lost", "started", "did", "joined", "got", "quit", "left", "finished"}


def is_role(obj: str) -> bool:
    """``"product manager"``, ``"a banker"``, ``"dance teacher"``: the last word names a role."""
    words = re.findall(r"[a-z]+", _ARTICLE.sub("", obj.strip()).lower())
    return bool(words) and (words[-1] in ROLE_WORDS or (words[-1].endswith("s") and words[-1][:-1] in ROLE_WORDS))


def type_job(relation: str, obj: str, ended: bool) -> tuple[str, str, bool]:
    """Keep job titles and employers apart.

    "job as a banker" → ``job_title banker``; "job at Door Dash" → ``works_at Door Dash``
    (with ``lost``/``quit``/``left`` the fact is *ended*); ``works_at`` with a role
    ("product manager") → ``job_title``; ``job_title`` with no role word and a
    capitalised name ("Globex") → ``works_at``.  Other relations pass unchanged.
    """
    if relation in _JOB_VERBS:
        m_as, m_at = _JOB_AS.match(obj), _JOB_AT.match(obj)
        if m_as or m_at:
            new_ended = ended or relation in _ENDING_VERBS
            if m_as:
                return "job_title", m_as.group(1).strip(), new_ended
            assert m_at is not None
            return "works_at", m_at.group(1).strip(), new_ended
    if relation in _ENDING_VERBS and is_role(obj):  # "lost" + "banker": the job as a banker ended
        return "job_title", _ARTICLE.sub("", obj.strip()), True
    if relation == "works_at" and is_role(obj):
        return "job_title", _ARTICLE.sub("", obj.strip()), ended
    if relation == "job_title":
        words = re.findall(r"[A-Za-z]+", obj)
        if words and not is_role(obj) and all(w[0].isupper() for w in words):
            return "works_at", obj, ended
        if not is_role(obj):  # "job_title passion": not a job; the statement keeps the meaning
            return "did", obj, ended
        return "job_title", _ARTICLE.sub("", obj.strip()), ended
    return relation, obj, ended


_SECOND_PERSON = re.compile(r"\b(?:you|your|yours|you're|you've|u)\b", re.IGNORECASE)
_FIRST_PERSON = re.compile(r"(?:\b(?:i|me|my|mine|myself|i'm|i've|i'd|i'll|im|ive)\b|^\s*(?:lost|got|went|had|just|been)\b)",
                           re.IGNORECASE)
_PLACE_RELATIONS = {"lives_in", "moved_to", "born_in", "located_in"}
_OWNED_RELATIONS = {"lives_in", "moved_to", "works_at", "owns", "has_pet", "studies_at", "started", "bought"}
_PERSON_RELATIONS = {"married_to", "partner_of", "sibling_of", "friend_of", "parent_of", "child_of", "met"}
_KIN = re.compile(r"\b(?:mom|mother|mum|dad|father|parents?|sister|brother|siblings?|son|daughter|kids?|children|"
                  r"child|husband|wife|partner|boyfriend|girlfriend|fianc[eé]e?|friends?|cousin|aunt|uncle|"
                  r"grandma|grandpa|grandmother|grandfather|grandparents?|niece|nephew|family|colleague|boss|"
                  r"neighbou?r|mentor|team ?mates?)\b", re.IGNORECASE)


_SHARES_IMAGE = re.compile(r"\b(?:shares?|shared|sharing|showed|shows?)\s+(?:an?\s+|the\s+)?(?:photo|image|picture|pic)\b",
                           re.IGNORECASE)


def image_sharer(subject: str, statement: str, turns: Sequence[Message], speakers: Sequence[str]) -> str | None:
    """Who shared the photo a statement describes: the speaker of the source line that carries
    "[shares an image: …]" (the 1.5B model gives it to the other speaker as often as not);
    ``None`` when the statement is not about sharing a photo or no single line carries one."""
    if subject not in speakers or not _SHARES_IMAGE.search(statement):
        return None
    sharers = {m.speaker for m in turns if "[shares an image:" in m.text}
    return sharers.pop() if len(sharers) == 1 else None


def statement_subject(statement: str, speakers: Sequence[str]) -> str | None:
    """The speaker a statement is about when the model named no subject (v3's slim slots): the
    first speaker it names ("Gina is proud of Jon" → Gina, "The photo Jon shared …" → Jon);
    ``None`` when it names none (the caller falls back to the line's speaker)."""
    first: tuple[int, str] | None = None
    for s in speakers:
        m = re.search(rf"\b{re.escape(s)}\b", statement)
        if m and (first is None or m.start() < first[0]):
            first = (m.start(), s)
    return first[1] if first else None


def speaker_fix(subject: str, statement: str, msg: Message, speakers: Sequence[str]) -> str:
    """The right subject for a statement about a speaker, grounded in ``msg``.

    The 1.5B model swaps the two speakers ("Gina lost her job as a banker" from Jon's "Hey
    Gina! Lost my job as a banker yesterday"): when the subject is the *other* speaker and the
    clause of the line that says it neither addresses them ("you", "your") nor names them,
    the line's speaker is meant.
    """
    if subject not in speakers or subject == msg.speaker:
        return subject
    if re.search(rf"\b{re.escape(msg.speaker)}\b", statement):  # "Gina and Jon are planning …"
        return subject
    clause = confidence.relevant_clause(msg.text, statement) or msg.text
    if _SECOND_PERSON.search(clause) or re.search(rf"\b{re.escape(subject)}\b", clause, re.IGNORECASE):
        return subject
    if not _FIRST_PERSON.search(clause):  # not the speaker's own news either ("Let's explore new moves")
        return subject
    return msg.speaker


_ORG = re.compile(r"\b(?:company|firm|store|shop|studio|bank|school|university|college|hospital|clinic|"
                  r"restaurant|cafe|café|bakery|bar|agency|startup|start-up|corporation|corp|inc|ltd|llc|office|"
                  r"factory|lab|library|museum|hotel|gym|salon|department|team|organi[sz]ation|charity|"
                  r"non-?profit|shelter|church|station|farm|firm)\b", re.IGNORECASE)
_SCHOOL = re.compile(r"\b(?:school|university|college|academy|institute|class|course|program|programme)\b",
                     re.IGNORECASE)


def employer_like(obj: str, statement: str = "") -> bool:
    """Can ``obj`` be an employer: a name ("Globex", "Door Dash") or an organisation word ("a
    bakery", "his dance studio")?  "Working on X" in the statement is a task, not a job."""
    if re.search(r"\bworking on\b", statement, re.IGNORECASE) and not re.search(r"\bworking (?:at|for)\b",
                                                                               statement, re.IGNORECASE):
        return False
    return bool(_ORG.search(obj)) or bool(re.search(r"\b[A-Z][A-Za-z]", _ARTICLE.sub("", obj.strip())))


def person_like(obj: str, speakers: Sequence[str] = ()) -> bool:
    """A name ("Julia", "Gina"), a kin or social word ("my sister", "her dance crew" is not)."""
    if obj in speakers or _KIN.search(obj):
        return True
    words = re.findall(r"[A-Za-z]+", _ARTICLE.sub("", obj.strip()))
    return 0 < len(words) <= 3 and all(w[0].isupper() for w in words)


#: "Jon asked Gina about …", "Gina thanked Jon …", "Jon is appreciating Gina's support": what was said in the
#: chat, not what it tells about anyone's life (v1 drops the same acts by relation, ``_DIALOGUE_RELATIONS``).
_DIALOGUE_VERBS = (r"(?:ask(?:s|ed|ing)|thank(?:s|ed|ing)|compliment(?:s|ed|ing)|"
                   r"appreciat(?:es|ed|ing)|greet(?:s|ed|ing)|repl(?:ies|ied|ying)|prais(?:es|ed|ing)|"
                   r"cheer(?:s|ed|ing) on)")


def dialogue_act(statement: str, subject: str) -> bool:
    """Is the statement only a speech act of its subject ("Jon asked Gina about the studio",
    "Jon is appreciating Gina's support")?  Reported content ("Jon said he lost his job"),
    congratulations, which name the news ("Gina congratulated Jon on opening his studio"), and
    encouragement or advice ("Gina encourages Jon to keep pushing"), which LoCoMo's own observations
    record, are kept."""
    if not subject:
        return False
    return re.match(rf"\s*{re.escape(subject)}\s+(?:(?:is|was|also)\s+)*{_DIALOGUE_VERBS}\b", statement,
                    re.IGNORECASE) is not None


def object_grounded(obj: str, statement: str, turns: Sequence[Message]) -> bool:
    """Are the object's content words in the statement or its source turns?  The 1.5B model
    writes objects from nowhere ("Jon visited Paris" for a photo of a bathroom)."""
    words = _words(obj)
    if not words:
        return True
    said = _words(statement)
    for m in turns:
        said |= _words(m.text)
    return _hits(words, said) > 0


def _others_possession(obj: str, subject: str, speakers: Sequence[str]) -> bool:
    """"Gina's store" as the object of a fact about Jon: it is Gina's, not Jon's residence or employer."""
    return any(s != subject and re.search(rf"\b{re.escape(s)}'s\b", obj, re.IGNORECASE) for s in speakers)


def named_place(obj: str, speakers: Sequence[str]) -> bool:
    """A residence or birthplace names a place: a capitalised word that is not a speaker's name."""
    rest = re.sub(r"\b\w+'s\b", " ", obj)
    for s in speakers:
        rest = re.sub(rf"\b{re.escape(s)}\b", " ", rest)
    return bool(re.search(r"\b[A-Z][a-z]", rest))


_ENDING_WORDS = (r"lost|lose|losing|quit|quitting|left|leaving|moved (?:away|out)|broke up|break up|split up|divorc\w*|"
                 r"sold|selling|no longer|not \w+ anymore|anymore|used to|stopped|ended|closed|closing|shut down|gave up|"
                 r"giving up|retired|former(?:ly)?|ex-\w+|passed away|died|rehomed|got rid of|gave away|resigned|"
                 r"laid off|fired|dropped out|canceled|cancelled")
_ENDING = re.compile(rf"\b(?:{_ENDING_WORDS})\b", re.IGNORECASE)
#: rules 7: "had to rehome Pixel" (the demo's pet) ends as surely as "rehomed".
_ENDING_7 = re.compile(rf"\b(?:{_ENDING_WORDS}|re-?hom(?:e|es|ing))\b", re.IGNORECASE)


def says_ended(statement: str, rules: int = POSTPROCESS_VERSION) -> bool:
    """Does the statement say that something stopped being true?  The 1.5B model sets ``ended``
    on half of v3's statements ("Gina likes contemporary dance too"), which would close facts
    that are still true; only these words can close one."""
    return bool((_ENDING_7 if rules >= 7 else _ENDING).search(statement))


#: rules 7: a residence is where someone lives; "Sam expressed his excitement about Paris" typed
#: ``lives_in Paris`` says nothing of the kind.
_RESIDENCE = re.compile(r"\b(?:liv(?:e|es|ed|ing)|mov(?:e|es|ed|ing)|relocat\w*|resid\w*|settled|based in|"
                        r"home|grew up|born|apartment|house|flat)\b", re.IGNORECASE)


def says_residence(statement: str) -> bool:
    """Does the statement speak of living or moving somewhere (rules 7: a ``lives_in`` or
    ``moved_to`` fact needs it)?"""
    return bool(_RESIDENCE.search(statement))


#: rules 8: what a statement must say for a registry fact that is single-valued (a new one closes the
#: old): the 1.5B model types "Gina congratulated Jon on opening the dance studio" as ``works_at`` and
#: "Jon rehearsed with a small group of dancers" as ``job_title``, which would close the real ones.
_SAYS_TYPED: dict[str, re.Pattern[str]] = {
    "works_at": re.compile(r"\b(?:jobs?|work(?:s|ed|ing)? (?:at|for|in)|employ\w*|hired|career|internship|intern at|"
                           r"position|colleagues?|boss|shifts?|quit|fired|laid off|resign\w*)\b", re.IGNORECASE),
    "job_title": re.compile(r"\b(?:jobs?|work(?:s|ed|ing)? as|career|profession|occupation|position|hired|promot\w*|"
                            r"(?:is|was|am|are|been|being|became|become|becoming|as) (?:an?|the)|(?:i'm|i am) an?)\b",
                            re.IGNORECASE),
    "studies_at": re.compile(r"\b(?:stud(?:y|ies|ied|ying)|students?|enroll?(?:ed|s|ing)?|schools?|college|universit(?:y|ies)|"
                             r"class(?:es)?|courses?|degree|major(?:s|ed|ing)?|graduat\w*|semester|campus|attend(?:s|ed|ing)?)\b",
                             re.IGNORECASE),
}


#: rules 11: relations the 1.5B model reaches for when nothing else fits ("Jon is_a dance studio" for "Jon
#: is searching for a dance studio location", "Jon likes The Lean Startup" for "Jon is reading it").
_SAYS_TYPED_11: dict[str, re.Pattern[str]] = {
    "is_a": re.compile(r"\b(?:is|was|am|are|been|being|became|become|becoming|as) (?:an?|the)\b", re.IGNORECASE),
    **dict.fromkeys(("likes", "hobby", "favorite"), re.compile(
        r"\b(?:lik(?:e|es|ed|ing)|lov(?:e|es|ed|ing)|enjoy\w*|fan|fav(?:ou?rite|s)?|passion\w*|into|hobb(?:y|ies)|"
        r"fond|adore\w*|pick|prefer\w*)\b", re.IGNORECASE)),
}


def says_typed(relation: str, statement: str, rules: int = 8) -> bool:
    """Does the statement speak of working at, working as or studying at something (rules 8: a
    ``works_at``, ``job_title`` or ``studies_at`` fact needs it)?  Rules 11 also: being a thing for
    ``is_a``, liking for ``likes``/``hobby``/``favorite``.  Rules 15: :func:`job_talk` speaks of
    working too.  Other relations: always."""
    pattern = _SAYS_TYPED.get(relation) or (_SAYS_TYPED_11.get(relation) if rules in RULES_11 else None)
    if pattern is not None and rules in JOBS_15 and relation == "works_at" and job_talk(statement):
        return True
    return pattern is None or bool(pattern.search(statement))


#: rules 15: the roles a statement holds somewhere ("a UX designer at Naver", "as an assistant"); a
#: student studies and a volunteer is no employee
_JOB_ROLES = (ROLE_WORDS - {"student", "volunteer"}) | {"curator", "captain"}
_WORK_VERBS_15 = re.compile(r"\b(?:teach(?:es|ing)?|taught|lectur(?:es|ed|ing)|fl(?:y|ies|ew|ying|own) for|"
                            r"retir(?:e|es|ed|ing)|freelanc\w*)\b", re.IGNORECASE)
_ROLE_AT = re.compile(r"\b(?:an?|the|as) (?:[\w'-]+ ){0,3}?([a-z]+) (?:at|for|with)\b")
_AS_ROLE = re.compile(r"\bas (?:an?|the) ((?:[a-z'-]+ ){0,2}[a-z]+)\b")
_NAMED_OFFICE = re.compile(r"\b[A-Z][\w&-]*'s (?:[A-Z][\w-]* )?office\b")


def job_talk(statement: str) -> bool:
    """Rules 15: does ``statement`` speak of a job in the words rules 8's list lacks — teaching,
    flying for, retiring, freelancing, a role held somewhere ("is a curator at the Design Museum",
    "the head chef at Le Petit Zinc", "spent 2012 to 2014 at the Rijksmuseum as an assistant") or a
    company's office ("moved to Arup's Leeds office")?"""
    if _WORK_VERBS_15.search(statement) or _NAMED_OFFICE.search(statement):
        return True
    return (any(m.group(1) in _JOB_ROLES for m in _ROLE_AT.finditer(statement))
            or any(w in _JOB_ROLES for m in _AS_ROLE.finditer(statement) for w in m.group(1).split()))


def role_head(obj: str) -> str:
    """The noun phrase that names what ``obj`` is: "group of dancers" → "group", "dance teacher" unchanged."""
    return re.split(r"\s+of\s+", obj.strip(), maxsplit=1, flags=re.IGNORECASE)[0]


#: rules 8: "Gina shares an image of three girls in ballet costumes sitting on a desk." — what the
#: photo shows, up to the first clause that comments on it.
_PHOTO_OF = re.compile(
    r"\b(?:shares?|shared|sharing|showed|shows?|showing|posted|posts?|sent|sends?)\s+(?:an?\s+|the\s+|some\s+)?"
    r"(?:photo|image|picture|pic|snapshot)s?\s+(?:of|from|showing|with)\s+"
    r"(?P<what>.+?)(?=\s*[,;.!?(]|\s+(?:which|that|to show|bringing|reminding|as a reminder)\b|$)",
    re.IGNORECASE)
#: The typed facts the 1.5B model makes of a shared photo ("Gina owns the group of girls", "Jon owns a
#: woman"); a sharer's own thing ("a photo of her new tattoo") keeps its relation.
_PHOTO_RELATIONS = frozenset({"owns", "bought", "has_pet", "made", "received", "gave", "did"})
#: rules 11: "Gina visited the networking event" for "Gina shares a photo of the last networking event"
_PHOTO_RELATIONS_11 = _PHOTO_RELATIONS | {"visited"}
_MAX_OBJECT = 80


def shared_photo(statement: str, subject: str) -> str | None:
    """What a statement about sharing a photo says the photo shows ("a group of dancers on a stage
    with their arms in the air"); ``None`` when the statement shares no photo or the photo shows
    the subject's own thing ("his new studio", "Jon's dog"), which the typed fact may rightly own."""
    m = _PHOTO_OF.search(statement)
    if not m:
        return None
    what = m.group("what").strip()
    if re.match(rf"(?:his|her|their|my|{re.escape(subject)}'s)\s+(?!friends?\b|family\b)", what, re.IGNORECASE):
        return None
    if len(what) > _MAX_OBJECT:
        what = what[:_MAX_OBJECT].rsplit(" ", 1)[0]
    return what or None


_NAME = r"(?:the )?([A-Z][\w'&-]*(?: (?:of |de )?[A-Z][\w'&-]*){0,3})"
#: rules 7: registry facts a statement states in a clause of its own, present tense, about a named
#: place or organisation ("Maya lives in Berlin and works at Acme as a data analyst": the model
#: typed the first clause; one slot holds one fact).
_CLAUSES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(rf"\b(?:lives|is living|live) in {_NAME}"), "lives_in"),
    (re.compile(rf"\b(?:works|is working|work) (?:at|for) {_NAME}"), "works_at"),
    (re.compile(rf"\b(?:studies|is studying|study) at {_NAME}"), "studies_at"),
)
#: A clause after any of these words is not a plain present fact ("might move to Paris and work at
#: Globex", "no longer works at Acme").
_NOT_PLAIN = re.compile(r"\b(?:no longer|not|n't|never|used to|formerly|might|may|could|would|will|wants? to|"
                        r"plans? to|hopes? to|thinking of|considering|if|wish\w*)\b")  # lower case: "May", "Will" are names


def clause_facts(statement: str, relation: str, obj: str) -> list[tuple[str, str]]:
    """``(relation, object)`` of the registry facts the statement states besides the one the model
    typed (``relation``/``obj``): a present-tense "lives in X", "works at X", "studies at X" with X a
    name, and no negation, hedge or plan before it in the statement.  Pure."""
    out: list[tuple[str, str]] = []
    for rx, rel in _CLAUSES:
        for m in rx.finditer(statement):
            name = m.group(1)
            if _NOT_PLAIN.search(statement[:m.start()]):
                continue
            if rel == relation and (name.lower() in obj.lower() or obj.lower() in name.lower()):
                continue
            if (rel, name) not in out:
                out.append((rel, name))
    return out


#: rules 7: small talk — support, thanks, cheering, pride, wishes — that names nothing from anyone's
#: life ("Jon is always there for Gina", "Gina encourages Jon to keep pushing towards his dreams").
#: Congratulations name the news and are kept; so is support that says what for ("Gina encourages
#: Jon to succeed in the competition": a content word left).
_SMALL_TALK = re.compile(
    r"^\s*(?-i:[A-Z][\w'-]*(?: [A-Z][\w'-]*)?)\s+(?:(?:is|was|also|always)\s+)*(?:"
    r"encourag\w*|cheer\w*|agree[sd]? with|thank\w*|support\w*|(?:here|there|around) for|proud of|wish\w*|"
    r"believes? in|root(?:s|ed|ing)? for|express\w* (?:his|her|their) (?:gratitude|excitement|appreciation|support)|"
    r"said (?:she|he|they) (?:was|were|is|are|would be|will be) (?:always )?(?:here|there|around|root\w*) for)\b",
    re.IGNORECASE)
#: Stems (prefix match) and whole words that say nothing about anyone's life in such a statement.
_SMALL_TALK_STEMS = tuple("""
    encourag cheer agre thank express gratitud appreciat excit support proud alway believ dream chas push
    succe destress motivat inspir root
""".split())
_SMALL_TALK_WORDS = frozenset("""
    here there around side said says keep keeps going goes work working hard through himself herself themselves
    best luck need needs you him she they them that what all will would can could towards toward very much lot
    lots goals goal matter about
""".split())


def small_talk(statement: str, speakers: Sequence[str]) -> bool:
    """Is the statement support, thanks or cheering by a named subject, with no content word left
    once speaker names, dates in parentheses and filler (:data:`_SMALL_TALK_STEMS`, :data:`_SMALL_TALK_WORDS`) are
    set aside?  Pure."""
    if not _SMALL_TALK.match(statement):
        return False
    names = {w for s in speakers for w in _words(s)}
    words = _words(re.sub(r"\([^)]*\)", " ", statement)) - names
    return all(w in _SMALL_TALK_WORDS or w.startswith(_SMALL_TALK_STEMS) for w in words)


#: rules 11: a reaction to what the other speaker said or did ("Jon agrees with Gina's excitement about the
#: grand opening", "Gina is inspired by Jon's success", "Jon is grateful for Gina's support"): the news is
#: the other speaker's own fact; the reaction adds a fact no question asks about.  Congratulations,
#: encouragement and advice say what for and are left to :func:`small_talk`.
_REACTION = re.compile(
    r"^\s*(?-i:[A-Z][\w'-]*)\s+(?:(?:is|was|also|always|really|so|feels|felt|seems|seemed)\s+)*(?:"
    r"agree[sd]? with|"
    r"(?:excited|glad|happy|proud|inspired|impressed|grateful|thankful|stoked|thrilled|amazed|touched|moved)"
    r" (?:about|by|of|for|with|to see|to hear)|"
    r"says? thanks|said thanks|can'?t wait|looks? forward to (?:seeing|watching|hearing)|supported by)\b",
    re.IGNORECASE)


def reaction(statement: str, subject: str, speakers: Sequence[str]) -> bool:
    """Is the statement its subject's reaction to another speaker's news or words — an agreement, a
    feeling about, thanks for, "can't wait" — naming that speaker after the reaction?  Feelings about one's
    own things ("Jon is excited about the launch", "Gina can't wait for her internship") are kept: LoCoMo
    asks how someone felt about an event.  Pure."""
    m = _REACTION.match(statement)
    if m is None:
        return False
    rest = statement[m.end():]
    return any(re.search(rf"\b{re.escape(s)}\b", rest) for s in speakers if s and s != subject)


#: Relations whose facts are events, not states: nothing about them can stop being true later.
EVENT_RELATIONS = frozenset({"did", "visited", "traveled_to", "attended", "started", "finished", "joined", "won",
                             "made", "learned", "met", "received", "gave", "bought"})
#: "Jon won.", "Jon is reading": fewer words than any statement that makes sense alone.
MIN_STATEMENT_WORDS = 4
_WORD_RE = re.compile(r"[A-Za-z0-9']+")


def unread_script(statement: str) -> bool:
    """Whether a statement is written mostly in Chinese, Japanese or Korean (more such characters than Latin
    words): the typing rules, which read English cues, can say nothing of it."""
    return cjk_characters(statement) > len(_WORD_RE.findall(statement))


def statement_words(statement: str) -> int:
    """How many words a statement holds, for :data:`MIN_STATEMENT_WORDS`: Chinese, Japanese and Korean write
    no spaces, so two of their characters count as a word ("マヤ飼っています" is four)."""
    return len(_WORD_RE.findall(statement)) + cjk_characters(statement) // 2

#: Relations the 1.5B model aims at the other speaker for praise or plans ("Gina likes Jon",
#: "Jon plans_to Gina"); about a speaker they say nothing the statement does not.
_NOT_ABOUT_PEOPLE = frozenset({"likes", "feels", "plans_to", "wants_to", "owns", "received", "hobby", "favorite"})
_QUOTE = re.compile(r"^\s*\w+(?: and \w+)? (?:says|said) (?:the words\b|(?:to \w+)?,? *['\"‘“])", re.IGNORECASE)


def _intent(relation: str, ended: bool, resolved: timeexpr.Resolved | None, statement: str) -> Intent:
    if ended:
        return Intent.EVOLUTION
    if relation in ("lives_in", "works_at", "job_title", "studies_at") and resolved is not None:
        return Intent.EVOLUTION
    if re.search(r"\b(?:because|since|so that|due to|thanks to)\b", statement, re.IGNORECASE) and resolved is None:
        return Intent.CAUSAL
    if resolved is not None:
        return Intent.TEMPORAL
    return Intent.FACT


def postprocess_observations(
    observations: Sequence[Observation],
    numbered: dict[int, Message],
    *,
    canonical: Callable[[str], str] = lambda r: r,
    context_speakers: Sequence[str] = (),
    trust_turn: bool = False,
    context: dict[int, Message] | None = None,
    rules: int = POSTPROCESS_VERSION,
) -> tuple[list[FactInput], list[str]]:
    """Observations → fact-input records; returns ``(candidates, notes)``.

    Each kept statement becomes one fact whose ``text`` is the statement (with the
    absolute date of its time words).  Dropped: statements no turn supports, junk
    objects (the statement itself stands in for an empty object), self-loops,
    non-pet ``has_pet``, repeats; a copy of a turn's fact for the other speaker.
    ``trust_turn`` (v3): each observation's ``turn`` was fixed by the grammar, and is
    its source whenever the statement shares a content word with it.  ``context``: the chunk's
    context lines (they have no slot); a statement no turn supports is grounded in one of them
    when it supports it strongly (:data:`CONTEXT_SUPPORT`): the model often writes the last
    context line's news into the first slot ("Jon rehearsed with a small group of dancers" in
    the slot of Gina's "Wow, are they yours?").  ``rules``: which rule set (:data:`RULE_VERSIONS`;
    the numbers are :data:`POSTPROCESS_VERSION`'s history).
    """
    check_rules(rules)
    typing_8 = rules in TYPING_8
    notes: list[str] = []
    if rules >= 7:
        observations = _guarded("clause facts", _with_clause_facts, observations, notes)
    if rules in STATE_RULES:
        observations = _guarded("state clauses", _with_state_clauses, observations, notes)
    speakers = list(dict.fromkeys([*context_speakers, *(m.speaker for m in numbered.values())]))
    out: list[FactInput] = []
    chunk = _Chunk(numbered, context, speakers, canonical, rules, typing_8, trust_turn, notes)
    for o in observations:
        try:
            fact = _statement_fact(o, chunk)
        except Exception as e:  # noqa: BLE001 - a bug in one rule costs one statement, not the chunk
            _rule_failed(f"the rules for the statement {o.statement!r}", e, notes)
            continue
        if fact is not None:
            out.append(fact)
    if rules in STATE_RULES:
        out = _guarded("copies", lambda facts: _named_by_its_owner(facts, numbered, speakers, notes), out, notes)
        out = _guarded("kin", lambda facts: _with_kin(facts, numbered, speakers, canonical, notes), out, notes)
        out = _guarded("line states", lambda facts: _with_line_states(facts, numbered, canonical, notes), out, notes)
    return _one_speaker_per_turn_fact(_ended_wins(out, notes), numbered, speakers, notes), notes


@dataclass(slots=True)
class _Chunk:
    """What every observation of a chunk is read against (:func:`postprocess_observations`'s arguments)."""

    numbered: dict[int, Message]
    context: dict[int, Message] | None
    speakers: list[str]
    canonical: Callable[[str], str]
    rules: int
    typing_8: bool
    trust_turn: bool
    notes: list[str]
    seen: set[tuple[str, str, str, bool, str]] = field(default_factory=set)


def _statement_fact(o: Observation, chunk: _Chunk) -> FactInput | None:
    """The fact one observation of a chunk gives under the chunk's rule set, or ``None`` when a rule drops it
    (each drop noted in ``chunk.notes``); ``chunk.seen`` keeps a fact said twice in a chunk to one."""
    numbered, context, speakers, canonical = chunk.numbered, chunk.context, chunk.speakers, chunk.canonical
    rules, typing_8, trust_turn, notes, seen = chunk.rules, chunk.typing_8, chunk.trust_turn, chunk.notes, chunk.seen
    found = source_turns(o, numbered, speakers, trust_turn=TRUSTED_TURN_SUPPORT if trust_turn else None)
    if context:
        line = context_source(o, numbered, context, speakers)
        if line is not None:
            notes.append(f"grounded in context line {line.id}: {o.statement}")
            found = [line, *found][:3]
    if not found:
        notes.append(f"dropped statement no turn supports: {o.statement}")
        return None
    msg = found[0]
    if o.turn is not None and numbered.get(o.turn) is not msg:
        notes.append(f"turn {o.turn} → {msg.id} for: {o.statement}")
    others = [s for s in speakers if s != msg.speaker]
    other = others[0] if len(others) == 1 else None
    subject = resolve_person(o.subject, msg.speaker, other) or statement_subject(o.statement, speakers) or msg.speaker
    if rules in SPEAKERS_12:  # "Mel" is Melanie, as subject and as the statement's first word
        subject = speakers_12.nickname_of(subject, speakers) or subject
        o = o.model_copy(update={"statement": speakers_12.full_names(o.statement, speakers)})
    sharer = image_sharer(subject, o.statement, found, speakers)
    fixed = sharer or speaker_fix(subject, o.statement, msg, speakers)
    named = statement_subject(o.statement, speakers)
    if typing_8 and fixed == subject == sharer and named not in (None, subject):
        # "Jon shared a photo of a red dress" for Gina's photo, the subject already Gina: the statement's
        # words follow the photo's line like the subject does (rewritten just below)
        subject = named
    if rules in SPEAKERS_12:
        # the photo it describes or the line it copies says who said it, wherever the model cited
        lines = [*found, *numbered.values()]
        photo = speakers_12.photo_line(o.statement, lines, speakers)
        copy = None if photo else speakers_12.copied_line(o.statement, lines, speakers)
        if copy is not None and (_SECOND_PERSON.search(confidence.relevant_clause(copy.text, o.statement) or copy.text)
                                 or re.search(rf"\b{re.escape(copy.speaker)}\b", o.statement)):
            # "color-coding is a great way to track your progress": about the listener; "Gina is
            # reminding Jon …" for Jon's line: about both
            copy = None
        line = photo or copy
        if line is not None and subject in speakers:
            if line is not msg:
                notes.append(f"source {msg.id} → {line.id} (its photo or its words): {o.statement}")
            found = [line, *(m for m in found if m is not line)][:3]
            msg, fixed = line, line.speaker
            others = [s for s in speakers if s != msg.speaker]
            other = others[0] if len(others) == 1 else None
            if copy is not None and subject != fixed and not speakers_12.opens_with_speaker(o.statement, speakers):
                # a verbatim copy keeps its words ("Thanks, Caroline! It was Matt Patterson"): only its subject moves
                notes.append(f"subject {subject!r} → {fixed!r} (the line it copies): {o.statement}")
                o = o.model_copy(update={"subject": fixed})
                subject = fixed
            elif named not in (None, subject):
                subject = named  # the statement's words follow the line, as the subject does
        one = speakers_12.joint_speaker(o.statement, found, speakers)
        if one is not None:
            notes.append(f"both speakers → {one!r} (only their lines say it): {o.statement}")
            o = o.model_copy(update={"statement": speakers_12.as_one_speaker(o.statement, one, speakers),
                                     "subject": one})
            subject = fixed = one
    if fixed != subject:
        notes.append(f"subject {subject!r} → {fixed!r} (the speaker of the line): {o.statement}")
        statement = re.sub(rf"\b{re.escape(subject)}\b", fixed, o.statement)
        # the pronouns were the wrong speaker's too; "their" is right for anyone
        statement = re.sub(r"\b(?:his|her)\b", "their", statement)
        o = o.model_copy(update={"statement": statement, "subject": fixed})
        subject = fixed
    if _QUOTE.match(o.statement):
        notes.append(f"dropped a bare quote: {o.statement}")
        return None
    if statement_words(o.statement) < MIN_STATEMENT_WORDS:
        notes.append(f"dropped a statement too short to mean anything alone: {o.statement}")
        return None
    if dialogue_act(o.statement, subject):
        notes.append(f"dropped a dialogue act: {o.statement}")
        return None
    if rules >= 7 and small_talk(o.statement, speakers):
        notes.append(f"dropped small talk: {o.statement}")
        return None
    if rules in RULES_11 and reaction(o.statement, subject, speakers):
        notes.append(f"dropped a reaction to the other speaker: {o.statement}")
        return None
    if rules in STATE_RULES:
        subject = states.plain_subject(subject, speakers)  # "Dr Hyejin" is Hyejin (session 29)
    obj = resolve_person(o.object, msg.speaker, other)
    generic = False
    if obj.lower().strip(" .") in _JUNK_OBJECTS or not object_grounded(obj, o.statement, found):
        obj, generic = o.statement, True  # the statement stands in; no relation can be read from it
    if subject.lower() == obj.lower():
        return None
    if _BARE_JOB.match(obj):  # "lost | job": the statement says which ("… his job as a banker …")
        m = _JOB_IN_STATEMENT.search(o.statement)
        if m:
            obj = m.group(0)
    if o.ended and not says_ended(o.statement, rules):
        notes.append(f"not ended (nothing says it stopped): {o.statement}")
        o = o.model_copy(update={"ended": False})
    if rules in STATE_RULES and o.ended and not states.ending_governs(o.statement, obj):
        notes.append(f"not ended (its ending is another clause's): {o.statement}")
        o = o.model_copy(update={"ended": False})
    elif (rules in STATE_RULES and not o.ended and o.relation in _ENDABLE_STATES
          and states.ending_governs(o.statement, obj, strong=True)):
        notes.append(f"ended (the statement ends it): {o.statement}")
        o = o.model_copy(update={"ended": True})
    rel, obj, ended = type_job(o.relation or "did", obj, o.ended)
    typed = rel  # the model's typing: the rules below read English cues ("lives in", a capitalised name)
    if rules in STATE_RULES and rel in _PAIR_RELATIONS and states.pair_subject(subject, obj):
        subject = states.pair_subject(subject, obj) or subject  # "Lucie and Radek married_to Radek" (session 29)
    if rules in STATE_RULES and rel == "studies_at" and states.employer_named(o.statement, obj):
        notes.append(f"studies_at → works_at (the statement names an employer): {o.statement}")
        rel = "works_at"
    if rules in STATE_RULES and rel == "married_to" and _BROKE_UP.search(o.statement) and not _DIVORCE.search(o.statement):
        rel = "partner_of"  # couples break up; spouses divorce ("split up … and the divorce came through": spouses)
    if (rules in STATE_RULES and rel in ("friend_of", "met", "likes") and _DATING.search(o.statement)
            and person_like(obj, speakers)):
        notes.append(f"{rel} → partner_of (the statement says they are a couple): {o.statement}")
        rel = "partner_of"  # session 28: "Zeynep and Kerem have been going out since March" typed friend_of
    if rules in STATE_RULES and rel == "married_to" and states.engaged_only(o.statement):
        notes.append(f"married_to → partner_of (engaged, not married): {o.statement}")
        rel = "partner_of"
    if rules in STATE_RULES and rel in _BEGUN and states.employer_named(o.statement, obj):
        notes.append(f"{rel} → works_at (the statement names an employer): {o.statement}")
        rel = "works_at"  # "starts as a nurse at St James's Hospital next month"
    if rules in STATE_RULES and rel in _ENDABLE_STATES:
        owner = states.reported_owner(o.statement, subject, obj)
        if owner is not None:
            notes.append(f"subject {subject!r} → {owner!r} (the state told is theirs): {o.statement}")
            subject = owner
    if rules in STATE_RULES and rel in _LINE_OWNED and subject == msg.speaker:
        owner = states.line_owner(msg.text, msg.speaker, obj)  # "Katerina got the job at … in Patras"
        if owner == "":
            notes.append(f"dropped (its line gives it to someone it does not name): {o.statement}")
            return None
        if owner is not None:
            notes.append(f"subject {subject!r} → {owner!r} (the subject of its clause in {msg.id}): {o.statement}")
            subject = owner
    if rel in EVENT_RELATIONS and ended:
        ended = False  # "started his dance studio" happened; it did not stop
    if rules in STATE_RULES and rel in (*_PLACE_RELATIONS, *_PERSON_RELATIONS) and states.organisation_named(obj):
        # session 33: "left Brightwater and moved to Clover Systems" typed lives_in; "he's with Gulfstar Telecom"
        # typed partner_of: a company is no home and no partner (a move to one is a job)
        moved = rel in _PLACE_RELATIONS and re.search(rf"\b(?:moved|switched|went) (?:over )?to {re.escape(obj)}",
                                                      o.statement)
        notes.append(f"{rel} → {'works_at' if moved else 'did'} ({obj} is a company): {o.statement}")
        rel = "works_at" if moved else "did"
    if rel in _PERSON_RELATIONS and not person_like(obj, speakers):
        rel = "did"  # "Gina partner_of dance crew": not a person
    if rel in _NOT_ABOUT_PEOPLE and obj in speakers:
        rel = "did"  # "Gina likes Jon" for "Gina is inspired by Jon's success": the statement says what
    if rel in _PLACE_RELATIONS and not named_place(obj, speakers):
        rel = "did"  # "Jon lives_in studio", "… lives_in Gina's store": residence and birthplace are named places
    if rules >= 7 and rel in ("lives_in", "moved_to") and not says_residence(o.statement):
        rel = "did"  # "Sam expressed his excitement about Paris" is no residence
    if rel in _OWNED_RELATIONS and _others_possession(obj, subject, speakers):
        rel = "did"  # "Jon works_at Gina's clothing store": someone else's
    if rules >= 7 and rel in ("works_at", "studies_at") and obj in speakers:
        rel = "did"  # "Gina works_at Jon" for "Gina is there for Jon no matter what"
    if rel == "works_at" and not employer_like(obj, o.statement):
        rel = "did"  # "Jon works_at biz plan" from "working on his biz plan": not an employer
    if rules in STATE_RULES and rel == "works_at" and states.a_project(obj):
        notes.append(f"works_at → did (a project is no employer): {o.statement}")
        rel = "did"  # "Karim is on a bridge project in Cairo" (session 30)
    if rules in STATE_RULES and rel in ("works_at", "studies_at") and states.described_person(o.statement, obj):
        notes.append(f"{rel} → did (the statement says who {obj} is): {o.statement}")
        rel = "did"  # "Aino mentioned Ville, who is a carpenter": a person, not an employer (session 29)
    if rel == "studies_at" and not _SCHOOL.search(obj) and not re.search(r"\b[A-Z][a-z]", obj):
        rel = "did"
    if (typing_8 and not says_typed(_typed_as(rel, canonical) if rules in RULES_11 else rel, o.statement, rules)
            and not (rules in JOBS_15 and rel == "works_at" and states.employer_named(o.statement, obj))):
        rel = "did"  # "Gina works_at the dance studio" for "Gina congratulated Jon on opening the dance studio"
    if typing_8 and rel == "job_title" and not is_role(role_head(obj)):
        rel = "did"  # "Jon job_title group of dancers": a group is no role
    if generic:
        rel = "did"
    if typing_8 and rel in (_PHOTO_RELATIONS if rules in SHARED_PHOTO else _PHOTO_RELATIONS_11):
        shown = shared_photo(o.statement, subject)
        if shown is not None and rules in SHARED_PHOTO:
            notes.append(f"{rel} → shared_photo (a photo shared, not owned): {o.statement}")
            rel, obj, ended = "shared_photo", shown, False  # an event: nothing stops
        elif shown is not None and rel != "did":
            notes.append(f"{rel} → did (a photo shared, not owned): {o.statement}")
            rel, ended = "did", False  # rules 11: the same event, its object kept
    unread = unread_script(o.statement)
    if unread and rel == "did" and typed != "did" and not generic and obj not in speakers:
        # a statement in Chinese, Japanese or Korean has none of those cues: every typed fact of it became
        # "did" ("マヤ lives_in ポルト" too, so "moved to Lisbon" closed nothing); the model's typing stands
        notes.append(f"did → {typed} (the model's: no English cue to check it by): {o.statement}")
        rel = typed
    try:
        relation = canonical(rel)
    except Exception:  # noqa: BLE001 - the registry rejects it (only punctuation)
        notes.append(f"dropped statement with unusable relation {o.relation!r}")
        return None
    if relation == "has_pet" and obj.lower().strip() in _GENERIC_PETS:
        notes.append(f"dropped has_pet without a pet: {o.statement}")
        return None
    if relation == "has_pet" and not unread and not plausible_pet(obj, speakers):
        notes.append(f"has_pet → owns (no animal or pet name): {o.statement}")
        relation = canonical("owns")
    # a catch-all fact is its statement: "Jon did the dance studio" from two statements that say
    # different things is two facts, not one said twice (the store would keep the first's words);
    # rules 8 make the statement its object, rules 9 and 10 keep the object and key it by the statement
    said = ""  # what else tells this fact from another with its (subject, relation, object)
    if relation == "did" and rules == 8:
        obj = o.statement
    elif relation == "did" and rules in CATCH_ALL_9:
        said = statement_identity(o.statement)
    key = (subject.lower(), relation, obj.lower(), ended, said)
    if key in seen:
        return None
    seen.add(key)
    # the time comes from the statement's own words: a separate "time" field was copied
    # across statements by the 1.5B model ("yesterday" on every fact of a turn)
    time_text = (find_time_phrase(o.statement, seasons=rules in STATE_RULES)
                 or (o.time if o.time and o.time.lower() in o.statement.lower()
                     and not (rules in STATE_RULES and counts_from_a_named_year(o.time)) else ""))
    if rules in STATE_RULES:
        time_text = states.range_phrase(o.statement) or time_text  # "from 2014 to 2016": both ends
    if typing_8 and time_text:
        time_text = line_time_phrase(time_text, found)
    text, resolved = with_date(o.statement, time_text, msg.timestamp)
    said = cjk_line_time(msg.text, (obj, o.object)) if not time_text and (
        has_cjk(o.statement) or has_cjk(msg.text)) else ""
    if said:
        # the 1.5B model drops a Japanese or Chinese line's time words from its statement ("マヤ lives_in リスボン"
        # for "マヤは先月リスボンに引っ越しました"): the line's date it; the text stays the statement, which says no time
        notes.append(f"dated by line {msg.id} ({said}): {o.statement}")
        resolved = timeexpr.resolve(said, msg.timestamp)
    valid_from, valid_to = timeexpr.validity(resolved, msg.timestamp, ended=ended)
    conf = confidence.score("certain", msg.text, obj, relation)
    return FactInput(
        subject=subject, relation=relation, object=obj, valid_from=valid_from, valid_to=valid_to,
        confidence=conf, intent=_intent(relation, ended, resolved, o.statement), source_ids=[m.id for m in found],
        session_id=msg.session_id, text=text, origin=Origin.STATED,
        subject_type="person" if subject in speakers else None,
        object_type="person" if obj in speakers else None,
    )


#: the note (and AddResult warning) that a deterministic rule raised: the chunk kept the rest of its facts
RULE_FAILED = "an extraction rule failed"
_T = TypeVar("_T")


def _rule_failed(what: str, error: Exception, notes: list[str]) -> None:
    # the log names the error and where it was raised, but quotes nothing (``what`` and the error's
    # message may quote the turns: logs outlive forget); all of it goes to the caller's notes
    frames = "".join(traceback.format_tb(error.__traceback__))
    log.error("%s: %s; the chunk keeps its other facts\n%s", RULE_FAILED, log_reason(error), frames)
    log.debug("%s: %s", RULE_FAILED, what, exc_info=error)
    notes.append(f"{RULE_FAILED}: {what}: {type(error).__name__}: {error}")


def _guarded(name: str, step: Callable[[_T], _T], value: _T, notes: list[str]) -> _T:
    """``step(value)``, or ``value`` unchanged when the step raises: the rules that add facts (a line's states,
    kin, a statement's other clauses) are pure code, and a bug in one (a KeyError in session 28) failed the whole
    chunk — every fact the model wrote for it lost, with a warning only.  Now the step's own facts are what is
    lost; the error is logged with its traceback and named in the chunk's notes (:data:`RULE_FAILED`), which
    :meth:`Memory.add` reports in ``AddResult.warnings``."""
    try:
        return step(value)
    except Exception as e:  # noqa: BLE001 - see the docstring
        _rule_failed(f"the {name} step", e, notes)
        return value


#: rules 13/14: the states an ending in the statement closes even when the model said it goes on
_ENDABLE_STATES = frozenset({"works_at", "lives_in", "moved_to", "studies_at", "married_to", "partner_of", "job_title"})
#: a couple in other words than a marriage or an engagement (session 28)
_DATING = re.compile(r"\b(?:going out|dating|seeing each other|been together|in a relationship)\b", re.IGNORECASE)
#: relations between two people that a couple-as-subject ("Lucie and Radek") can be typed with
_PAIR_RELATIONS = frozenset({"married_to", "partner_of", "friend_of", "sibling_of"})
#: the states whose owner the source line's clause decides (:func:`.states.line_owner`, session 28)
_LINE_OWNED = frozenset({"works_at", "lives_in", "moved_to", "studies_at", "job_title"})
#: rules 13/14: relations the 1.5B model gives a job begun ("Tariq started St James's Hospital")
_BEGUN = frozenset({"started", "starts", "start", "began", "begins", "joined", "joins"})
_BROKE_UP = re.compile(r"\b(?:broke up|break up|breaking up|split up)\b", re.IGNORECASE)
_DIVORCE = re.compile(r"\b(?:divorc\w*|ex-(?:wife|husband))\b", re.IGNORECASE)
#: relations the 1.5B model gives a relative it did not recognise ("Diego has_pet Lucia" for his daughter)
_KIN_RETYPED = frozenset({"has_pet", "owns", "did", "met", "likes", "friend_of"})


def _with_state_clauses(observations: Sequence[Observation]) -> list[Observation]:
    """Each observation followed by a copy per state its statement changes besides the typed one
    (:func:`.states.state_clauses`: "… and moved to Tokyo", "left Sony …", "joined Novartis as …")."""
    return _with_copies(observations, lambda o: (
        {"relation": rel, "object": obj, "ended": ended, "subject": who or o.subject}
        for rel, obj, ended, who in states.state_clauses(o.statement, o.relation or "did", o.object)))


def _with_line_states(facts: list[FactInput], numbered: dict[int, Message], canonical: Callable[[str], str],
                      notes: list[str]) -> list[FactInput]:
    """Rules 13/14: where a line's speaker says they live or work (:func:`.states.line_states`: "I'm
    sharing an apartment in Osaka") when no fact of the chunk says it already: one slot holds one fact,
    and the model wrote the job ("started at Sony") and lost the city."""
    out = list(facts)
    lines = [numbered[n] for n in sorted(numbered)]
    for i, msg in enumerate(lines):
        said = states.line_states(msg.text)
        prev = lines[i - 1] if i > 0 and lines[i - 1].speaker != msg.speaker else None
        home = replies.home_answered(prev.text, msg.text) if prev is not None else None
        if home is not None:
            said.append(states.LineState("lives_in", home, msg.text.split(".")[0]))
        if prev is not None:  # session 29: what an answer tells of a person or a place the question names
            said += replies.moved_here(prev.text, msg.text)
            said += replies.told_states(prev.text, prev.speaker, msg.text, msg.speaker)
            said += replies.couple_answered(prev.text, prev.speaker, msg.text, msg.speaker)
            job = replies.job_answered(prev.text, msg.text,
                                      who=replies.asked_person(prev.text, prev.speaker, msg.speaker) or "")
            said += [job] if job is not None else []
            named = replies.job_named(prev.text, msg.text)
            said += [named] if named is not None else []
        if span := states.marriage_length(msg.text):  # session 30: "Three years married and Laila …"
            said += [states.LineState("married_to", f.object, msg.text, time=span) for f in out
                     if f.subject == msg.speaker and f.relation == canonical("married_to") and _undated_from(f, msg)]
        for st in said:
            subject = st.who or msg.speaker
            relation = canonical(st.relation)
            name = st.name.lower()
            same = [j for j, f in enumerate(out) if f.subject == subject and f.relation == relation
                    and (name in f.object.lower() or f.object.lower() in name)]
            before = st.sentence[:st.sentence.find(st.clause)] if st.clause and st.clause in st.sentence else ""
            time_text = st.time or (st.clause and find_time_phrase(st.clause, seasons=True, before=before)) \
                or find_time_phrase(st.sentence, seasons=True)
            text, resolved = with_date(st.statement(msg.speaker), time_text, msg.timestamp)
            if st.time and resolved is not None and resolved.kind == "range":
                if any(out[j].valid_to is not None for j in same):
                    continue  # the model dated it already
                # a past told with its years: the model's undated copy from this line ("Radek is sharing his
                # experience of living in Dublin") said "now"; the line's years replace it
                undated = {j for j in same if _undated_from(out[j], msg)}
                if undated:
                    notes.append(f"dated from {msg.id}: {', '.join(out[j].text for j in sorted(undated))}")
                    out = [f for j, f in enumerate(out) if j not in undated]
            elif any((out[j].valid_to is not None) == st.ended for j in same):
                if resolved is not None and not st.ended:
                    # "since we moved here in spring 2018": the model's undated copy from this line takes the date
                    start, _ = timeexpr.validity(resolved, msg.timestamp, ended=False)
                    for j in same:  # session 30: or a later line's ("… since 2012" then "Manchester suits us")
                        if any(_undated_from(out[j], line) for line in lines[i:]):
                            notes.append(f"dated from {msg.id} ({time_text}): {out[j].text}")
                            out[j] = replace(out[j], valid_from=start)
                continue
            valid_from, valid_to = timeexpr.validity(resolved, msg.timestamp, ended=st.ended)
            notes.append(f"{st.relation} read from {msg.id}: {text}")
            out.append(FactInput(
                subject=subject, relation=relation, object=st.name, valid_from=valid_from, valid_to=valid_to,
                confidence=confidence.score("certain", msg.text, st.name, relation), intent=Intent.FACT,
                source_ids=[msg.id], session_id=msg.session_id, text=text, origin=Origin.STATED,
                subject_type="person"))
    return out


def _named_by_its_owner(facts: list[FactInput], numbered: dict[int, Message], speakers: Sequence[str],
                        notes: list[str]) -> list[FactInput]:
    """Session 30: one state given to both speakers, its object named in one speaker's own lines only
    ("How's married life? Eight months already?" — "Since last October … being Hendra's wife": the model wrote
    "Putri married_to Hendra" from the question as well): the copy whose line never names the object goes.
    Its speaker then seemed married to Hendra too, which closed the speaker's real marriage."""
    by_id = {m.id: m for m in numbered.values()}

    def names(f: FactInput) -> bool:  # a line of the subject's own that cites the fact names its object
        return any(f.object.lower() in by_id[i].text.lower() for i in f.source_ids
                   if i in by_id and by_id[i].speaker == f.subject)

    groups: dict[tuple[str, str], list[FactInput]] = {}
    for f in facts:
        if f.subject in speakers and f.relation in _ENDABLE_STATES:
            groups.setdefault((f.relation, f.object.lower()), []).append(f)
    drop: set[int] = set()
    for group in groups.values():
        if len({f.subject for f in group}) < 2 or not any(names(f) for f in group):
            continue
        for f in group:
            if not names(f):
                drop.add(id(f))
                notes.append(f"dropped copy whose line does not name {f.object}: {f.text}")
    return [f for f in facts if id(f) not in drop]


def _undated_from(fact: FactInput, msg: Message) -> bool:
    """Is ``fact`` the model's undated reading of line ``msg`` (open, and starting when the line was said)?"""
    return msg.id in fact.source_ids and fact.valid_to is None and fact.valid_from == msg.timestamp


def _with_kin(facts: list[FactInput], numbered: dict[int, Message], speakers: Sequence[str],
              canonical: Callable[[str], str], notes: list[str]) -> list[FactInput]:
    """Rules 13/14: family and friends a line names ("my daughter Lucia", "your brother Felix", or "And
    your sister?" answered "Carmen is …") as facts of their own, each cited to its line; a fact the model typed otherwise for the same two
    people ("Diego has_pet Lucia") takes the kin relation."""
    out = list(facts)
    lines = [numbered[n] for n in sorted(numbered)]
    for i, msg in enumerate(lines):
        others = [s for s in speakers if s != msg.speaker]
        mentions = states.kin_mentions(msg.text, msg.speaker, others[0] if len(others) == 1 else None)
        if i > 0 and lines[i - 1].speaker != msg.speaker:
            answered = replies.kin_answered(lines[i - 1].text, lines[i - 1].speaker, msg.text, msg.speaker)
            mentions += [answered] if answered is not None else []
        for k in mentions:
            relation = canonical(k.relation)
            same = [i for i, f in enumerate(out) if f.subject.lower() == k.holder.lower()
                    and f.object.lower() == k.name.lower()]
            if any(out[i].relation == relation for i in same):
                continue
            retyped = [i for i in same if out[i].relation in _KIN_RETYPED]
            if retyped:
                i = retyped[0]
                notes.append(f"{out[i].relation} → {relation} (the line says {k.word}): {out[i].text}")
                out[i] = replace(out[i], relation=relation, object_type="person")
                continue
            notes.append(f"kin named in {msg.id}: {k.statement()}")
            out.append(FactInput(
                subject=k.holder, relation=relation, object=k.name, valid_from=msg.timestamp, confidence=0.9,
                intent=Intent.FACT, source_ids=[msg.id], session_id=msg.session_id, text=k.statement(),
                origin=Origin.STATED, subject_type="person", object_type="person"))
    return out


def _typed_as(relation: str, canonical: Callable[[str], str]) -> str:
    """The registry relation ``relation`` is stored as ("joined" → ``works_at``); itself when the registry
    refuses it (rules 11 check a typed fact against its statement under that name)."""
    try:
        return canonical(relation)
    except Exception:  # noqa: BLE001 - the registry rejects it; the caller drops it later
        return relation


def _with_clause_facts(observations: Sequence[Observation]) -> list[Observation]:
    """Each observation followed by a copy per registry fact its statement states besides the
    typed one (:func:`clause_facts`); the copies go through the same rules."""
    return _with_copies(observations, lambda o: (
        {"relation": rel, "object": obj, "ended": False} for rel, obj in clause_facts(o.statement, o.relation, o.object)))


def _with_copies(observations: Sequence[Observation],
                 changes: Callable[[Observation], Iterable[dict[str, Any]]]) -> list[Observation]:
    """Each observation followed by one copy per update ``changes`` reads from it (another fact its
    statement states: rules 7's clauses, the state rules' clauses)."""
    out: list[Observation] = []
    for o in observations:
        out.append(o)
        out.extend(o.model_copy(update=update) for update in changes(o))
    return out


def _ended_wins(facts: list[FactInput], notes: list[str]) -> list[FactInput]:
    """"Jon lost his job as a banker" and "Jon is a banker" from one chunk: the ending is what
    the turn says; the present-tense copy would reopen the state it closes."""
    ended = {(f.subject.lower(), f.relation, f.object.lower()) for f in facts
             if f.valid_to is not None and f.valid_from is None}
    out = []
    for f in facts:
        if f.valid_to is None and (f.subject.lower(), f.relation, f.object.lower()) in ended:
            notes.append(f"dropped the current-state copy of an ended fact: {f.text}")
            continue
        out.append(f)
    return out


# ----------------------------------------------------------------- the call


def system_prompt(relations: Sequence[str] = RELATIONS, version: str = PROMPT_VERSION) -> str:
    """The v2 system prompt (identical for every chunk, so llama.cpp reuses its KV cache)."""
    return v1.system_prompt(relations, version)


class ObservationExtractor(Extractor):
    """Runs the one structured observation call per chunk: v1's :class:`~chronomem.extract.extractor.Extractor`
    (transcript, shared system prefix) with the v2 prompt, its fixed relation vocabulary and its own
    output handling."""

    #: The prompt and generation cap when the caller names none (:mod:`.line_observations` sets its own).
    default_prompt: str = PROMPT_VERSION
    default_max_tokens: int = MAX_TOKENS

    def __init__(
        self,
        llm: LLM,
        *,
        canonical: Callable[[str], str] = lambda r: r,
        prompt_version: str | None = None,
        max_tokens: int | None = None,
        penalties: Penalties | None = None,
        rules: int = POSTPROCESS_VERSION,
    ) -> None:
        check_rules(rules)
        super().__init__(llm, relations=RELATIONS, canonical=canonical,
                         prompt_version=prompt_version or self.default_prompt,
                         max_tokens=max_tokens or self.default_max_tokens)
        self.penalties = penalties
        self.rules = rules  # the post-processing rule set (RULE_VERSIONS)

    def run(self, chunk: Chunk[Message]) -> ChunkResult:
        """Extract one chunk.  Raises :class:`~chronomem.errors.StructuredOutputError`
        (after the provider's repair/retry budget) or ``pydantic.ValidationError``."""
        messages, numbered = self.messages_for(chunk)
        res = self.llm.chat(messages, schema=schema_for(len(chunk.turns)), max_tokens=self.max_tokens,
                            temperature=0.0, purpose="extract", penalties=self.penalties)
        observations = parse_observations(res.data)
        cands, notes = postprocess_observations(
            observations, numbered, canonical=self.canonical, context_speakers=[m.speaker for m in chunk.context],
            context=dict(enumerate(chunk.context)), rules=self.rules,
        )
        return ChunkResult(candidates=cands, usage=res.usage, notes=notes, raw=res.text)
