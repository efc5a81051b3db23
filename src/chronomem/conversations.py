"""LoCoMo and MSC conversation records and their parsers (no file paths, no harness).

LoCoMo: conversations of many dated sessions, QA with a category and gold
evidence ``dia_id``s.  MSC: episodes of three sessions, the next session and
gold persona facts.  Both are turned into the same :class:`Conversation`
shape.  ``chronomem add`` reads these files through :mod:`chronomem.extract.formats`;
the benchmark harness loads them with :mod:`chronomem.bench.datasets`.

The parsers tolerate the known LoCoMo quirks: integer answers, empty
evidence, malformed evidence ids (``'D8:6; D9:17'``, ``'D'``, ``'D:11:26'``,
``'D30:05'``) and category-5 items that carry ``adversarial_answer`` instead
of ``answer``.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from .errors import ValidationError

log = logging.getLogger(__name__)

UTC = timezone.utc

CATEGORY_NAMES: dict[int, str] = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}


@dataclass(frozen=True, slots=True)
class Turn:
    """One verbatim utterance.  ``dia_id`` is ``D<session>:<turn>``."""

    dia_id: str
    speaker: str
    text: str
    session: int  # 1-based session number
    blip_caption: str | None = None  # caption of a shared image (LoCoMo image turns)
    time: datetime | None = None  # the session's date/time (UTC)

    def render(self) -> str:
        """The turn as one line of text, image caption included."""
        text = self.text
        if self.blip_caption:
            text = f"{text} [shares an image: {self.blip_caption}]"
        return f"{self.speaker}: {text}"


@dataclass(slots=True)
class Session:
    index: int  # 1-based
    turns: list[Turn]
    date_time: datetime | None = None
    date_time_raw: str = ""  # as written in the data, e.g. "1:56 pm on 8 May, 2023"


@dataclass(frozen=True, slots=True)
class QA:
    qid: str  # "<sample_id>:q<index>", stable across runs
    question: str
    answer: str  # gold answer as text ("" for adversarial items without one)
    category: int
    evidence: tuple[str, ...]  # normalised dia_ids, malformed ones repaired or dropped
    evidence_raw: tuple[str, ...] = ()
    adversarial_answer: str | None = None

    @property
    def category_name(self) -> str:
        return CATEGORY_NAMES.get(self.category, str(self.category))


@dataclass(slots=True)
class Conversation:
    """A multi-session dialogue, plus its questions (LoCoMo) or gold facts (MSC)."""

    sample_id: str
    speaker_a: str
    speaker_b: str
    sessions: list[Session]
    qa: list[QA] = field(default_factory=list)
    session_summaries: dict[int, str] = field(default_factory=dict)

    @property
    def turns(self) -> list[Turn]:
        return [t for s in self.sessions for t in s.turns]

    def turn_by_id(self) -> dict[str, Turn]:
        return {t.dia_id: t for t in self.turns}


# --------------------------------------------------------------------------- parsing helpers

_DT_RE = re.compile(
    r"^\s*(\d{1,2}):(\d{2})\s*([ap]m)\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})\s*$", re.I
)
_MONTHS = {
    m: i
    for i, m in enumerate(
        ["january", "february", "march", "april", "may", "june", "july", "august",
         "september", "october", "november", "december"],
        start=1,
    )
}


def parse_locomo_datetime(text: str) -> datetime:
    """``"1:56 pm on 8 May, 2023"`` → ``datetime(2023, 5, 8, 13, 56, tzinfo=UTC)``."""
    m = _DT_RE.match(text or "")
    if not m:
        raise ValidationError("session_date_time", text, "expected e.g. '1:56 pm on 8 May, 2023'")
    hour, minute, ampm, day, month_name, year = m.groups()
    month = _MONTHS.get(month_name.lower()) or _MONTHS.get(
        next((k for k in _MONTHS if k.startswith(month_name.lower()[:3])), ""), 0
    )
    if not month:
        raise ValidationError("session_date_time", text, f"unknown month {month_name!r}")
    h = int(hour) % 12 + (12 if ampm.lower() == "pm" else 0)
    return datetime(int(year), month, int(day), h, int(minute), tzinfo=UTC)


_EVIDENCE_RE = re.compile(r"D\s*:?\s*(\d+)\s*:\s*(\d+)", re.I)


def parse_evidence(raw: Any) -> tuple[str, ...]:
    """Normalise gold evidence into canonical ``D<s>:<t>`` ids, in order, without duplicates.

    ``'D8:6; D9:17'`` → ``('D8:6', 'D9:17')``; ``'D:11:26'`` → ``('D11:26',)``;
    ``'D30:05'`` → ``('D30:5',)``; ``'D'`` and other unreadable ids are dropped.
    """
    items = raw if isinstance(raw, (list, tuple)) else [raw]
    out: list[str] = []
    for item in items:
        if item is None:
            continue
        found = _EVIDENCE_RE.findall(str(item))
        if not found:
            log.debug("dropping unreadable evidence id %r", item)
        for s, t in found:
            ident = f"D{int(s)}:{int(t)}"
            if ident not in out:
                out.append(ident)
    return tuple(out)


def normalize_dia_id(dia_id: str) -> str:
    ids = parse_evidence(dia_id)
    return ids[0] if ids else dia_id


def _answer_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value)


# --------------------------------------------------------------------------- LoCoMo


def parse_locomo_record(rec: dict[str, Any]) -> Conversation:
    sample_id = str(rec["sample_id"])
    conv = rec["conversation"]
    numbers = sorted(
        int(m.group(1))
        for k in conv
        if (m := re.fullmatch(r"session_(\d+)", k)) and isinstance(conv[k], list)
    )
    sessions: list[Session] = []
    for n in numbers:
        raw_dt = str(conv.get(f"session_{n}_date_time", "") or "")
        try:
            dt: datetime | None = parse_locomo_datetime(raw_dt)
        except ValidationError:
            log.warning("%s session %d: unreadable date %r", sample_id, n, raw_dt)
            dt = None
        turns = [
            Turn(
                dia_id=normalize_dia_id(str(t["dia_id"])),
                speaker=str(t["speaker"]),
                text=str(t.get("text", "")),
                session=n,
                blip_caption=t.get("blip_caption") or None,
                time=dt,
            )
            for t in conv[f"session_{n}"]
        ]
        sessions.append(Session(index=n, turns=turns, date_time=dt, date_time_raw=raw_dt))
    qa: list[QA] = []
    for i, q in enumerate(rec.get("qa", [])):
        evidence_raw = q.get("evidence") or []
        if not isinstance(evidence_raw, list):
            evidence_raw = [evidence_raw]
        adversarial = q.get("adversarial_answer")
        qa.append(
            QA(
                qid=f"{sample_id}:q{i}",
                question=str(q["question"]),
                answer=_answer_text(q.get("answer")),
                category=int(q["category"]),
                evidence=parse_evidence(evidence_raw),
                evidence_raw=tuple(str(e) for e in evidence_raw),
                adversarial_answer=None if adversarial is None else _answer_text(adversarial),
            )
        )
    summaries: dict[int, str] = {}
    for k, v in (rec.get("session_summary") or {}).items():
        if m := re.fullmatch(r"session_(\d+)_summary", k):
            summaries[int(m.group(1))] = str(v)
    return Conversation(
        sample_id=sample_id,
        speaker_a=str(conv.get("speaker_a", "")),
        speaker_b=str(conv.get("speaker_b", "")),
        sessions=sessions,
        qa=qa,
        session_summaries=summaries,
    )


# --------------------------------------------------------------------------- MSC

MSC_BASE_TIME = datetime(2023, 1, 1, 9, 0, tzinfo=UTC)
_GAP_RE = re.compile(r"(\d+)\s*(minute|hour|day|week|month|year)s?", re.I)
_GAP_UNIT = {
    "minute": timedelta(minutes=1),
    "hour": timedelta(hours=1),
    "day": timedelta(days=1),
    "week": timedelta(weeks=1),
    "month": timedelta(days=30),
    "year": timedelta(days=365),
}


def parse_time_gap(text: str | None) -> timedelta | None:
    """``"5 days"`` → ``timedelta(days=5)``; None or unreadable → None."""
    if not text:
        return None
    m = _GAP_RE.search(text)
    if not m:
        return None
    return int(m.group(1)) * _GAP_UNIT[m.group(2).lower()]


@dataclass(slots=True)
class MscEpisode:
    """An MSC episode as a three-session :class:`Conversation` plus the next session.

    Speaker names are kept as in the sessions ("Speaker 1", "Speaker 2");
    next-session speakers ``bot_0``/``bot_1`` are mapped onto them.  Absolute
    times are synthetic: session 1 at :data:`MSC_BASE_TIME`, then each
    session's recorded ``time_back`` gap; the next session one day later.
    """

    episode_id: str
    conversation: Conversation
    next_session: list[Turn]
    personas_after_session_3: dict[str, list[str]]
    persona_facts_session_4: dict[str, list[str]]
    init_personas: dict[str, list[str]]


_BOT_TO_SPEAKER = {"bot_0": "Speaker 1", "bot_1": "Speaker 2"}


def parse_msc_episode(rec: dict[str, Any]) -> MscEpisode:
    eid = str(rec["id"])
    t = MSC_BASE_TIME
    sessions: list[Session] = []
    for n, s in enumerate(rec["sessions"], start=1):
        gap = parse_time_gap(s.get("time_back"))
        if n > 1:
            t = t + (gap or timedelta(days=1))
        turns = [
            Turn(dia_id=f"D{n}:{i}", speaker=str(u["speaker"]), text=str(u["text"]), session=n, time=t)
            for i, u in enumerate(s["turns"], start=1)
        ]
        sessions.append(Session(index=n, turns=turns, date_time=t, date_time_raw=str(s.get("time_back") or "")))
    next_n = len(sessions) + 1
    next_time = t + timedelta(days=1)
    next_turns = [
        Turn(
            dia_id=f"D{next_n}:{i}",
            speaker=_BOT_TO_SPEAKER.get(str(u["speaker"]), str(u["speaker"])),
            text=str(u["text"]),
            session=next_n,
            time=next_time,
        )
        for i, u in enumerate(rec.get("next_session", []), start=1)
    ]

    def per_speaker(pair: Any) -> dict[str, list[str]]:
        if isinstance(pair, dict):
            return {_BOT_TO_SPEAKER.get(str(k), str(k)): [str(x) for x in v] for k, v in pair.items()}
        if isinstance(pair, list) and len(pair) == 2:
            return {"Speaker 1": [str(x) for x in pair[0]], "Speaker 2": [str(x) for x in pair[1]]}
        return {}

    conv = Conversation(sample_id=eid, speaker_a="Speaker 1", speaker_b="Speaker 2", sessions=sessions)
    return MscEpisode(
        episode_id=eid,
        conversation=conv,
        next_session=next_turns,
        personas_after_session_3=per_speaker(rec.get("personas_after_session_3")),
        persona_facts_session_4=per_speaker(rec.get("persona_facts_session_4")),
        init_personas=per_speaker(rec.get("init_personas")),
    )
