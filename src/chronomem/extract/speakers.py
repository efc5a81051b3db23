"""Who a statement is about (rules 12): the speaker checks a 1.5B model gets wrong most.

A census of every fact conv-26 and conv-30 keep under rules 11 found a wrong subject in about one
fact in seven (BENCHMARKS.md "Precision by census").  Four kinds of it can be seen without the model,
from the chunk's own lines:

* a photo described from another line: "Melanie shared a photo of a stained glass window with a
  person on a horse" when the horse is in Caroline's caption (:func:`photo_line`);
* a line copied nearly word for word under the other speaker's name: "Melanie visited the pride
  event" for Caroline's "The pride event was awesome!" (:func:`copied_line`);
* one speaker's "we" written as both speakers: "Melanie and Caroline had a great day playing games"
  for Melanie's family day (:func:`joint_speaker`);
* a nickname the other speaker uses, kept as a person of its own: "Mel" for Melanie
  (:func:`nickname_of`).

Pure functions over :class:`~chronomem.model.Message` lines; :func:`postprocess_observations` applies
them under rules 12.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..model import Message
from .extractor import _hits, _words

_CAPTION = re.compile(r"\[shares an image:\s*([^\]]*)\]", re.IGNORECASE)
#: "shares a photo of …", "an image of …", "this pic from …": a statement about a shared picture
_PICTURE = re.compile(r"\b(?:photo|photograph|image|picture|pic|snapshot|selfie)s?\b", re.IGNORECASE)
_PICTURE_WORDS = frozenset({"photo", "photograph", "image", "picture", "pic", "snapshot", "selfie",
                            "share", "shares", "shared", "sharing", "show", "shows", "showed"})
#: a caption must share this many content words with the statement, and more than any other caption
MIN_CAPTION_HITS = 2
#: a statement is a copy of a line when this share of its content words is in the line ...
COPY_SHARE = 0.8
#: ... and it has at least this many (a short statement matches many lines by chance)
MIN_COPY_WORDS = 6
_MIN_NICKNAME = 3
_AGREEMENT = {"are": "is", "were": "was", "have": "has"}


def caption(m: Message) -> str:
    """What the image a line shares shows ("" when it shares none)."""
    found = _CAPTION.search(m.text)
    return found.group(1) if found else ""


def _content(text: str, speakers: Sequence[str]) -> set[str]:
    names = {w for s in speakers for w in _words(s)}
    return _words(text) - names - _PICTURE_WORDS


def photo_line(statement: str, lines: Sequence[Message], speakers: Sequence[str]) -> Message | None:
    """The line whose shared image a statement describes: the caption that shares the most content
    words with it (at least :data:`MIN_CAPTION_HITS`, and strictly more than any other caption);
    ``None`` when the statement speaks of no picture or no caption stands out."""
    if not _PICTURE.search(statement):
        return None
    words = _content(statement, speakers)
    scored = sorted(((_hits(words, _words(caption(m))), i) for i, m in enumerate(lines) if caption(m)), reverse=True)
    if not scored or scored[0][0] < MIN_CAPTION_HITS:
        return None
    if len(scored) > 1 and scored[1][0] == scored[0][0] and lines[scored[1][1]].speaker != lines[scored[0][1]].speaker:
        return None
    return lines[scored[0][1]]


def copied_line(statement: str, lines: Sequence[Message], speakers: Sequence[str]) -> Message | None:
    """The line a statement copies nearly word for word (:data:`COPY_SHARE` of its content words,
    at least :data:`MIN_COPY_WORDS` of them); ``None`` when it copies none, or two speakers' lines
    equally."""
    words = _content(_CAPTION.sub(" ", statement), speakers)
    if len(words) < MIN_COPY_WORDS:
        return None
    best: tuple[float, Message] | None = None
    tie = False
    for m in lines:
        share = _hits(words, _words(_CAPTION.sub(" ", m.text))) / len(words)
        if share < COPY_SHARE:
            continue
        if best is None or share > best[0]:
            best, tie = (share, m), False
        elif share == best[0] and m.speaker != best[1].speaker:
            tie = True
    return None if best is None or tie else best[1]


def _both(speakers: Sequence[str]) -> re.Pattern[str] | None:
    if len(speakers) != 2:
        return None
    a, b = (re.escape(s) for s in speakers)
    return re.compile(rf"^\s*(?:{a}\s+and\s+{b}|{b}\s+and\s+{a})\b(?!\s+both\b)(?:\s+(are|were|have)\b)?")


def joint_speaker(statement: str, lines: Sequence[Message], speakers: Sequence[str]) -> str | None:
    """The one speaker a statement about both speakers comes from: it opens "A and B" and every
    line it cites is one speaker's own, naming the other nowhere (their "we" is their family, team
    or friends, not the listener; "A and B both …" is both); ``None`` otherwise."""
    both = _both(speakers)
    if both is None or not lines or not both.match(statement):
        return None
    said_by = {m.speaker for m in lines}
    if len(said_by) != 1:
        return None
    (one,) = said_by
    other = next(s for s in speakers if s != one)
    if any(re.search(rf"\b{re.escape(other)}\b", m.text) for m in lines):
        return None
    return one


def as_one_speaker(statement: str, one: str, speakers: Sequence[str]) -> str:
    """"Melanie and Caroline are …" → "Melanie is …" (:func:`joint_speaker`'s rewrite)."""
    both = _both(speakers)
    if both is None:
        return statement

    def one_of(m: re.Match[str]) -> str:
        verb = m.group(1)
        return f"{one} {_AGREEMENT[verb.lower()]}" if verb else one

    return both.sub(one_of, statement, count=1)


def opens_with_speaker(statement: str, speakers: Sequence[str]) -> bool:
    """Does the statement open with a speaker's name or nickname ("Jon lost his job …": a retelling, not
    a copy of the line's words)?"""
    first = re.match(r"\s*([A-Za-z]+)", statement)
    if first is None:
        return False
    return first.group(1) in speakers or nickname_of(first.group(1), speakers) is not None


def full_names(statement: str, speakers: Sequence[str]) -> str:
    """The statement with the nickname it opens with written as the speaker's name ("Mel shared a
    photo …" → "Melanie shared a photo …"), so the rules that read names in it find the speaker."""
    first = re.match(r"(\s*)([A-Z][A-Za-z]*)\b", statement)
    if first is None:
        return statement
    name = nickname_of(first.group(2), speakers)
    return f"{first.group(1)}{name}{statement[first.end():]}" if name else statement


def nickname_of(name: str, speakers: Sequence[str]) -> str | None:
    """The speaker a short name stands for: "Mel" → "Melanie", when it begins exactly one speaker's
    name (at least three letters, case aside) and is no speaker's whole name; ``None`` otherwise."""
    n = name.strip().lower()
    if len(n) < _MIN_NICKNAME or not n.isalpha() or any(n == s.lower() for s in speakers):
        return None
    matches = [s for s in speakers if s.lower().startswith(n)]
    return matches[0] if len(matches) == 1 else None
