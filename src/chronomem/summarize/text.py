"""Text helpers shared by Rsum and compaction: prompts, transcripts, sentences.

All functions here are pure (the prompt files are read-only package data).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from string import Template
from typing import Any

from ..errors import ValidationError
from ..model import Message

__all__ = [
    "render_prompt",
    "split_sentences",
    "cap_sentences",
    "drop_repeated_sentences",
    "clean_model_text",
    "format_turn",
    "format_transcript",
]

def render_prompt(template: str, **values: Any) -> str:
    """Fill ``$name`` placeholders; a missing value is an error, not a silent blank."""
    try:
        return Template(template).substitute({k: str(v) for k, v in values.items()})
    except KeyError as exc:
        raise ValidationError("prompt", exc.args[0], "placeholder has no value") from None


# Abbreviations that end with a period but do not end a sentence.
_ABBREV = {
    "mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "vs", "etc", "e.g", "i.e",
    "inc", "ltd", "co", "mt", "no", "jan", "feb", "mar", "apr", "jun", "jul",
    "aug", "sep", "sept", "oct", "nov", "dec", "u.s", "u.k", "a.m", "p.m",
}
_SENT_END = re.compile(r"([.!?]+[\"')\]]*)\s+")


def split_sentences(text: str) -> list[str]:
    """Split text into sentences: on line breaks and on ``.``/``!``/``?`` followed by space.

    Bullets and list numbering at the start of a line are removed.  A period
    after a common abbreviation ("Dr.", "e.g.") or an initial ("J.") does not
    end a sentence.
    """
    out: list[str] = []
    for raw_line in text.splitlines():
        line = _strip_bullet(raw_line.strip())
        if not line:
            continue
        start = 0
        for m in _SENT_END.finditer(line):
            end = m.end(1)
            candidate = line[start:end]
            words = candidate.rstrip(".!?\"')]").split()
            last_word = words[-1].lower() if words else ""
            if m.group(1).startswith(".") and (last_word in _ABBREV or (len(last_word) == 1 and last_word.isalpha())):
                continue
            if candidate.strip():
                out.append(candidate.strip())
            start = m.end()
        rest = line[start:].strip()
        if rest:
            out.append(rest)
    return out


_BULLET = re.compile(r"^(?:[-*•·]+|\(?\d{1,3}[.)](?=\s))\s*")


def _strip_bullet(line: str) -> str:
    return _BULLET.sub("", line, count=1).strip()


def cap_sentences(text: str, max_sentences: int) -> tuple[str, int]:
    """Keep the first ``max_sentences`` sentences, one per line.

    Returns the capped text and how many sentences were dropped.
    """
    if max_sentences < 1:
        raise ValidationError("max_sentences", max_sentences, "must be >= 1")
    sentences = split_sentences(text)
    kept = sentences[:max_sentences]
    return "\n".join(kept), len(sentences) - len(kept)


_WORD = re.compile(r"[a-z0-9']+")
REPEAT_SIMILARITY = 0.85  # word-set overlap (Jaccard) at which a sentence counts as a repeat
_NAME = re.compile(r"\b[A-Z][A-Za-z0-9'-]*")
_FILLER = frozenset({"also", "still", "too", "really", "very", "currently", "now", "just"})


def drop_repeated_sentences(text: str, similarity: float = REPEAT_SIMILARITY) -> tuple[str, int]:
    """Drop every sentence that repeats an earlier one, one sentence per line in the result.

    A repeat names the same people and things (its capitalised words) as an earlier sentence
    and has the same words, or nearly: the overlap of the two sets of words (Jaccard; case,
    punctuation and fillers such as "also" ignored) is at least ``similarity``.  So "Ana is a
    nurse." repeats "Ana is also a nurse.", while "Ben is a nurse." does not, however long
    the rest of the sentence they share.
    Small models at temperature 0 fall into loops that write the same sentences again
    until the token limit.  Returns the text and how many sentences were dropped.
    """
    if not 0.0 < similarity <= 1.0:
        raise ValidationError("similarity", similarity, "must be in (0, 1]")
    kept: list[str] = []
    seen: list[tuple[frozenset[str], frozenset[str]]] = []
    dropped = 0
    for sentence in split_sentences(text):
        words = frozenset(_WORD.findall(sentence.lower())) - _FILLER
        names = frozenset(w.lower() for w in _NAME.findall(sentence))
        if words and any(names == n and len(words & w) / len(words | w) >= similarity for n, w in seen):
            dropped += 1
            continue
        kept.append(sentence)
        seen.append((names, words))
    return "\n".join(kept), dropped


_PREAMBLE = re.compile(
    r"^\s*(?:#+\s*)?(?:\*\*)?(?:updated memory|memory|summary|new memory)(?:\*\*)?\s*:?\s*(?:\*\*)?\s*$",
    re.IGNORECASE,
)


def clean_model_text(text: str) -> str:
    """Remove wrappers small models add around an answer: code fences, a title line."""
    lines = [ln for ln in text.strip().splitlines() if not ln.strip().startswith("```")]
    while lines and (_PREAMBLE.match(lines[0]) or not lines[0].strip()):
        lines.pop(0)
    return "\n".join(lines).strip()


def content_text(content: Any, where: str = "content") -> str:
    """A chat message's content as text: a string as it is; OpenAI's list of parts as its text parts, each
    other part (an image, audio) as ``[its type]`` so a reader knows something was there.

    >>> content_text([{"type": "text", "text": "What is this?"}, {"type": "image_url", "image_url": {}}])
    'What is this? [image_url]'
    """
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(isinstance(p, Mapping) and isinstance(p.get("type"), str)
                                         for p in content):
        return " ".join(p["text"] if p["type"] == "text" and isinstance(p.get("text"), str) else f"[{p['type']}]"
                        for p in content)
    raise ValidationError(where, type(content).__name__, "expected a string or a list of content parts "
                                                          "({\"type\": \"text\", \"text\": ...})")


def format_turn(turn: Message | Mapping[str, Any]) -> str:
    """``"Speaker: text"`` for a :class:`Message` or an OpenAI-shaped chat dict."""
    if isinstance(turn, Message):
        speaker, text = turn.speaker, turn.text
    else:
        speaker = str(turn.get("name") or turn.get("speaker") or turn.get("role") or "unknown")
        text = content_text(turn.get("content", turn.get("text", "")))
    return f"{speaker}: {' '.join(text.split())}"


def format_transcript(turns: Sequence[Message | Mapping[str, Any]]) -> str:
    """One ``"Speaker: text"`` line per turn, in the given order."""
    return "\n".join(format_turn(t) for t in turns)


def session_header(session_time: datetime | None) -> str:
    """The optional date suffix of the session heading in the memory prompt."""
    return f" (ended {session_time.date().isoformat()})" if session_time else ""
