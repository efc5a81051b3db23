"""Serialisation: the chosen paths become a compact context under a token budget.

Each fact is written once, numbered (``F1``, ``F2`` …), with its validity
interval, confidence, a short id and source message ids; derived facts say
which rule produced them and which facts of the context support them (by
number).  A path that reuses a fact refers to its number.  The short id is
derived from what the fact says (:func:`content_id`), not the stored id:
stored ids are random, so two ingests of the same conversation would give
the model two different prompts for the same memory (``Context.fact_ids``
keeps the stored ids for the caller).  Paths are added best first until
the next one would exceed the budget.  Optionally (``SearchConfig.quote_sources``)
the verbatim source turns of the included facts follow, in the order of the
facts that cite them, while the budget lasts; then (``SearchConfig.search_turns``)
other turns that full-text search finds for the question.

Example::

    Evidence (as of 1 June 2025; [from -> to), "now" = still holds; c = confidence):
    P1 Maya -> Rui -> Braga
      F1 Maya sibling of Rui [1 March 2017 -> now) c=0.95 derived:symmetry src:m2
      F2 Rui lives in Braga [1 March 2017 -> now) c=1.00 id:b9037df4 src:m3
    P2 Rui -> Maya
      F3 Rui sibling of Maya [1 March 2017 -> now) c=0.95 id:78764a30 src:m2

    (F1 reads the stored F3 from Maya's side; it would say ``from F3`` had F3 come first.)
    Source turns:
    [20 February 2017] m3 Rui: We finally moved to Braga!
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from ..model import Fact, Message, Origin
from ..timewords import dated_text
from .beam import Path
from .render import fmt_time, render_fact

_TOKENS = re.compile(r"\w+|[^\w\s]")

#: Version of the context's layout; benchmark results record it (a change is a new version).
#: 2: dates as "1 September 2020", resolved time words dropped from fact texts, source quotes.
#: (3: a repeated statement written once; measured and reverted, BENCHMARKS.md.)
#: 4: no stored fact ids (random per ingest: the same memory gave differing prompts); a derived
#:    fact names its supports by their numbers in the context.
#: 5: format 2's layout again, deterministic: each stored fact carries ``id:`` + a short hash of what it
#:    says (:func:`content_id`) — format 4 scored lower than format 2 on the same memories (BENCHMARKS.md).
CONTEXT_FORMAT = 5
HEADER = 'Evidence (as of {as_of}; [from -> to), "now" = still holds; c = confidence):'
#: the header of evidence shown below another "as of" (:func:`undate`)
UNDATED_HEADER = 'Evidence ([from -> to), "now" = still holds; c = confidence):'
QUOTES_HEADER = "Source turns:"
SEARCH_HEADER = "Other turns that match the question:"
#: longest quoted turn, in characters (a pasted document is cut, not dropped)
MAX_QUOTE_CHARS = 400


def approx_tokens(text: str) -> int:
    """A tokenizer-free estimate: words and punctuation marks (close to BPE counts for English)."""
    return len(_TOKENS.findall(text))


@dataclass(slots=True)
class Context:
    """The serialised evidence handed to the answer model."""

    text: str
    tokens: int
    paths: int  # paths included
    fact_ids: list[str] = field(default_factory=list)  # facts included, in order (derived ids too)
    truncated: bool = False  # some chosen paths did not fit the budget

    @property
    def empty(self) -> bool:
        return not self.fact_ids


_GENERATED_ID = re.compile(r"[0-9a-f]{32}")


def short_id(message_id: str) -> str:
    """A generated 32-hex message id shortened to 8 digits (as fact ids are); ids users gave stay whole."""
    return message_id[:8] if _GENERATED_ID.fullmatch(message_id) else message_id


def content_id(f: Fact) -> str:
    """Eight hex digits that depend only on what ``f`` says (subject, relation, object, start,
    sources): the same memory ingested twice shows the model the same ids."""
    key = "\x1f".join([f.subject, f.relation, f.object, str(f.valid_from), ",".join(f.source_ids)])
    return hashlib.sha1(key.encode("utf-8")).hexdigest()[:8]


def fact_line(n: int, f: Fact, numbers: Mapping[str, int] | None = None) -> str:
    """``F2 Rui lives in Braga [1 March 2017 -> now) c=1.00 id:b9037df4 src:m3``.

    A stored fact carries its :func:`content_id`.  A derived fact adds ``from F3,F7`` instead:
    those of its supporting facts that ``numbers`` (fact id -> number in this context) holds;
    supports outside the context are not named.
    """
    line = f"F{n} {render_fact(f)}"
    if f.origin == Origin.DERIVED and f.support_ids and numbers:
        refs = [f"F{numbers[i]}" for i in f.support_ids if i in numbers]
        if refs:
            line += " from " + ",".join(refs)
    if f.origin != Origin.DERIVED:
        line += f" id:{content_id(f)}"
    if f.source_ids:
        line += " src:" + ",".join(short_id(i) for i in f.source_ids[:4]) + ("…" if len(f.source_ids) > 4 else "")
    return line


def path_title(n: int, p: Path) -> str:
    if not p.facts:
        return f"P{n} {p.root.name}"
    return f"P{n} " + " -> ".join(p.names)


def undate(context: str, as_of: datetime) -> str:
    """``context`` (serialised ``as_of``) with the "as of" taken out of its evidence header.  Pure.

    ``answer()`` asks a question with a time window ("where did Maya live in 2020?") as of a point
    in that window; the evidence was searched, and its header dated, as of the caller's time.  Two
    dates would then head one prompt ("Memory (as of 1 July 2020)" above "Evidence (as of
    4 December 2026; …)"), and a small model may take either; the prompt's own "as of" is the one
    that answers the question.

    >>> from datetime import datetime, timezone
    >>> undate('Evidence (as of 1 June 2025; [from -> to), "now" = still holds; c = confidence):',
    ...        datetime(2025, 6, 1, tzinfo=timezone.utc))
    'Evidence ([from -> to), "now" = still holds; c = confidence):'
    """
    return context.replace(HEADER.format(as_of=fmt_time(as_of)), UNDATED_HEADER, 1)


def serialize(paths: Sequence[Path], *, as_of: datetime, budget_tokens: int,
              count_tokens: Callable[[str], int] | None = None) -> Context:
    """Write ``paths`` (best first) as a context of at most ``budget_tokens`` tokens."""
    count = count_tokens or approx_tokens
    header = HEADER.format(as_of=fmt_time(as_of))
    lines = [header]
    used = count(header)
    numbers: dict[str, int] = {}
    order: list[str] = []
    included = 0
    truncated = False
    for p in paths:
        if not p.facts:
            continue
        block = [path_title(included + 1, p)]
        new: dict[str, int] = {}
        for f in p.facts:  # number the path's new facts first: a derived fact may precede its support
            if f.id not in numbers and f.id not in new:
                new[f.id] = len(numbers) + len(new) + 1
        known = {**numbers, **new}
        written: set[str] = set()
        for f in p.facts:
            if f.id in numbers or f.id in written:
                block.append(f"  (F{known[f.id]})")
            else:
                written.add(f.id)
                block.append("  " + fact_line(new[f.id], f, known))
        cost = count("\n".join(block))
        if used + cost > budget_tokens:
            truncated = True
            continue  # a shorter later path may still fit
        lines.extend(block)
        used += cost
        numbers.update(new)
        order.extend(new)
        included += 1
    if not included:
        return Context(text="", tokens=0, paths=0, fact_ids=[], truncated=truncated)
    text = "\n".join(lines)
    return Context(text=text, tokens=count(text), paths=included, fact_ids=order, truncated=truncated)


def quote_line(m: Message, dated: bool = False) -> str:
    """``[20 January 2023] D1:4 Jon: I lost my job …``: one verbatim turn, dated, cut at MAX_QUOTE_CHARS;
    ``dated``: its relative time words followed by the dates they stand for (:func:`dated_text`)."""
    text = " ".join(m.text.split())
    if len(text) > MAX_QUOTE_CHARS:
        text = text[: MAX_QUOTE_CHARS - 1].rstrip() + "…"
    if dated:
        text = dated_text(text, m.timestamp)
    return f"[{fmt_time(m.timestamp)}] {short_id(m.id)} {m.speaker}: {text}"


def append_quotes(ctx: Context, turns: Sequence[Message], *, budget_tokens: int, header: str = QUOTES_HEADER,
                  count_tokens: Callable[[str], int] | None = None, dated: bool = False) -> tuple[Context, list[str]]:
    """Add the ``turns`` (in the given order) under ``header`` below ``ctx`` while ``budget_tokens`` allows.

    Returns the extended context and the ids of the turns quoted.  A turn that
    does not fit is skipped (a shorter later one may still fit).  ``ctx`` may be
    empty: the turns are then the whole context.
    """
    if not turns:
        return ctx, []
    count = count_tokens or approx_tokens
    used = ctx.tokens + count(header)
    lines: list[str] = []
    quoted: list[str] = []
    for m in turns:
        line = quote_line(m, dated)
        cost = count(line)
        if used + cost > budget_tokens:
            continue
        lines.append(line)
        quoted.append(m.id)
        used += cost
    if not lines:
        return ctx, []
    text = "\n".join([*([ctx.text] if ctx.text else []), header, *lines])
    return Context(text=text, tokens=count(text), paths=ctx.paths, fact_ids=ctx.fact_ids,
                   truncated=ctx.truncated), quoted
