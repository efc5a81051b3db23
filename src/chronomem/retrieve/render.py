"""How facts and times read in the evidence: one line per fact, dates with month names.

Shared by the serialiser, the evaluator prompt and the answer prompt; any
change here changes prompts (and so invalidates cached benchmark answers).
"""

from __future__ import annotations

import re
from datetime import datetime

from .. import timeexpr
from ..model import Fact, Origin

__all__ = ["fact_dates", "fact_text", "fmt_time", "render_fact"]


def fmt_time(t: datetime | None) -> str:
    """``1 September 2020`` at midnight UTC, else ``1 September 2020 14:03`` (UTC).

    Month names, not ISO dates: answer models copy the evidence's dates into
    their replies, and people (and LoCoMo's gold answers) write "1 September 2020".
    """
    if t is None:
        return "?"
    day = f"{t.day} {t.strftime('%B %Y')}"
    return day if (t.hour, t.minute, t.second) == (0, 0, 0) else f"{day} {t.strftime('%H:%M')}"


_TIME_NOTE = re.compile(r"\s*\[([^\[\]]+)\]\s*$")


def fact_text(f: Fact) -> str:
    """The fact's one-line text without a trailing ``[yesterday]``-style note the interval already dates.

    Extraction keeps the speaker's time words in the text ("Jon started a dance
    studio [yesterday]"); once they resolved to an exact date the interval shows
    it, and the bare word misleads a reader who does not know when it was said.
    Vague words ("a few years ago", "soon") are kept: the interval's date is only
    an estimate then.
    """
    text = f.render()
    m = _TIME_NOTE.search(text)
    if m is None or f.valid_from is None:
        return text
    resolved = timeexpr.resolve(m.group(1), f.valid_from)
    if resolved is None or resolved.approximate:
        return text
    return text[: m.start()]


def fact_dates(f: Fact) -> str:
    """``[1 September 2020 -> now) c=0.95`` (+ `` derived:rule`` for derived facts): how a fact's
    interval, confidence and origin read after its text.  A start nobody said, guessed from where the
    stints before it ended (:attr:`~chronomem.model.Fact.start_guessed`), reads ``[after 1 September 2020 -> …``:
    the model must not state it as a date the user gave."""
    end = "now" if f.valid_to is None else fmt_time(f.valid_to)
    start = "?" if f.valid_from is None else fmt_time(f.valid_from)
    if f.start_guessed and f.valid_from is not None:
        start = f"after {start}"
    out = f"[{start} -> {end}) c={f.confidence:.2f}"
    if f.origin == Origin.DERIVED:
        out += f" derived:{f.rule}"
    return out


def render_fact(f: Fact) -> str:
    """``Maya lives in Lisbon [1 September 2020 -> now) c=0.95`` (+ rule for derived facts)."""
    return f"{fact_text(f)} {fact_dates(f)}"
