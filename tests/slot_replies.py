"""Scripted model replies in the shape an extraction request asks for.

Test doubles script what a model "finds" as v1 facts (``{"turns": [n], "subject": "I",
"relation": …, "object": …, "ended": …}``).  The default extraction method (v4) asks for one slot
per transcript line instead (``{"lines": [{"line": k, "fact": null | {statement, subject,
relation, object, ended}}]}``); :func:`as_reply` turns the scripted facts into whichever shape the
request's JSON schema names, so one script serves both.  A slot holds one fact: the first one
scripted for its line (a fact scripted without ``turns`` belongs to the lines that name its object).  Its statement is the line retold in the third person ("I moved to Munich
last week." by Maya → "Maya moved to Munich last week."), as the model writes it, so the write
path's grounding, time and hedge rules read the same words the line says.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

LINE = re.compile(r"^\[(\d+)\] ([^:]+): (.*)$")
_FIRST_PERSON = ((r"\bI'm\b", "{s} is"), (r"\bI've\b", "{s} has"), (r"\bI'll\b", "{s} will"), (r"\bI\b", "{s}"),
                 (r"\b[Mm]y\b", "their"), (r"\bme\b", "{s}"), (r"\bWe\b", "{s} and family"), (r"\bwe\b", "{s} and family"))


def wants_slots(schema: Any) -> bool:
    """Does the request's schema ask for one slot per line (extraction v3/v4)?"""
    return isinstance(schema, dict) and "lines" in schema.get("properties", {})


def numbered_lines(transcript: str) -> list[tuple[int, str, str]]:
    """``(number, speaker, text)`` of the lines under ``Turns:``."""
    out, in_turns = [], False
    for line in transcript.splitlines():
        if line.strip() == "Turns:":
            in_turns = True
            continue
        m = LINE.match(line)
        if in_turns and m:
            out.append((int(m.group(1)), m.group(2).strip(), m.group(3)))
    return out


def retold(speaker: str, text: str) -> str:
    """The line in the third person: "I moved to Munich." by Maya → "Maya moved to Munich."."""
    for pattern, repl in _FIRST_PERSON:
        text = re.sub(pattern, repl.format(s=speaker), text)
    return text


def as_reply(schema: Any, transcript: str, facts: list[dict[str, Any]],
             statement: Callable[[str, str, dict[str, Any]], str] | None = None) -> dict[str, Any]:
    """``{"facts": facts}``, or the slots of the transcript's lines when ``schema`` asks for them.
    ``statement(speaker, text, fact)`` writes a slot's statement (default: the line retold)."""
    if not wants_slots(schema):
        return {"facts": facts}
    slots = []
    for n, speaker, text in numbered_lines(transcript):
        mine = [f for f in facts if n in (f.get("turns") or [])
                or (not f.get("turns") and str(f["object"]).lower() in text.lower())]
        told = None
        if mine:
            f = mine[0]
            subject = f.get("subject") or speaker
            subject = speaker if subject.lower() in ("i", "me", "user") else subject
            said = statement(speaker, text, f) if statement else retold(speaker, text)
            told = {"statement": said, "subject": subject, "relation": f["relation"],
                    "object": f["object"], "ended": bool(f.get("ended", False))}
        slots.append({"line": n, "fact": told})
    return {"lines": slots}
