"""Extraction v3: observation-first with one grammar-fixed slot per line.

v2 (:mod:`.observations`) lets the model write up to ¾ of a chunk's turns as
statements and finds each statement's turn in code.  The 1.5B model writes
fewer statements than the chunk holds informative lines (it covered 0.58 of
conv-30's gold evidence turns), and asking it for turn numbers made it count
lines instead of reading them.  Here the grammar writes the line numbers: the
reply is one slot per line under "Turns", in order, ``{"line": k, "fact":
null | {...}}`` with ``k`` a constant of the schema, so the model decides for
every line whether it tells something, and the line it wrote about is known.

The fact object is v2's (statement, subject, relation from the closed
vocabulary, object, ended) and goes through v2's post-processing (speaker
fixes, job typing, time resolution, the statement kept as the fact's text);
the slot's line is the fact's source unless the statement shares no content
word with it and another line clearly supports it.

Slots are decoded greedily.  A repetition penalty (presence 0.5 + frequency 0.3 over
llama.cpp's last 64 tokens, ``penalties=``) stopped one slot's statement being copied into
the next ones on conv-30 sessions 1, 7 and 12, but matched 8 of 13 gold observations against
greedy's 9 (BENCHMARKS.md "Extraction v3"), so it is off.

The prompt is the versioned file ``prompts/observe_lines_v1.md``; selecting this
method is ``WritePipeline(method="v3")`` / ``Config.extraction = "v3"``.  Two other reply
shapes, selected by their prompt version, were measured for speed and not adopted: shorter slot
layouts (:data:`LAYOUTS`) and plain rows under a grammar (:data:`ROW_PROMPTS`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, field_validator

from ..model import Message
from .chunking import Chunk
from .extractor import ChunkResult
from .observations import (RELATIONS, STATEMENT_SCHEMA, Observation, ObservationExtractor, postprocess_observations,
                           says_ended)

PROMPT_VERSION = "observe_lines_v1"
#: ≈ 8 slots × (45 tokens for a fact, 10 for a null) + slack; a chunk has at most ~8 turns
MAX_TOKENS = 900


#: A fact's fields, all of them (:data:`~.observations.STATEMENT_SCHEMA`) or the slim ones: no
#: ``subject`` or ``ended``, which code reads from the statement (its first speaker name;
#: :func:`~.observations.says_ended`, which decides whether a model's ``ended`` stands anyway).
FULL_FIELDS: tuple[str, ...] = ("statement", "subject", "relation", "object", "ended")
SLIM_FIELDS: tuple[str, ...] = ("statement", "relation", "object")


@dataclass(frozen=True, slots=True)
class SlotLayout:
    """How a reply lays out its slots, one per transcript line:

    * ``nested``: ``{"lines": [{"line": k, "fact": null | {…}}, …]}`` (the default prompt's);
    * ``flat``: ``{"lines": [{"line": k, "statement": null | "…", "relation": …, "object": …}, …]}``;
    * ``keyed``: ``{"lines": {"k": null | {…}, …}}``;

    and which of the fact's fields the model writes (``fields``)."""

    shape: Literal["nested", "flat", "keyed"] = "nested"
    fields: tuple[str, ...] = FULL_FIELDS


#: Each prompt version's layout (a prompt not listed here: nested slots, all fields).  Every
#: token of a slot costs the 1.5B model about a decoding step on this CPU, fixed keys included
#: (under fast-forward decoding they are read, not written, at nearly the same cost), so the
#: layout's length is most of ingestion's cost: per line of conv-30's replies, nested 48.3 tokens,
#: keyed 42.3, nested and slim 38.5, keyed and slim 32.5.  Measured on conv-30 and not adopted
#: (BENCHMARKS.md "Extraction v3 under 3 s per turn?" and "Shorter slots"): the flat slots
#: (v3) and the keyed ones (v4, v5) matched fewer observations; without the ``"fact":`` key
#: before it the model fills more lines, and writes questions and small talk into them.
LAYOUTS: dict[str, SlotLayout] = {
    "observe_lines_v3": SlotLayout("flat", SLIM_FIELDS),
    "observe_lines_v4": SlotLayout("keyed", SLIM_FIELDS),
    "observe_lines_v5": SlotLayout("keyed", FULL_FIELDS),
    "observe_lines_v6": SlotLayout("nested", SLIM_FIELDS),
}


def layout_for(prompt_version: str) -> SlotLayout:
    """The slot layout a prompt version's replies use (:data:`LAYOUTS`)."""
    return LAYOUTS.get(prompt_version, SlotLayout())


def _fact_schema(fields: Sequence[str]) -> dict[str, Any]:
    return {"type": "object", "properties": {k: STATEMENT_SCHEMA["properties"][k] for k in fields},
            "required": list(fields), "additionalProperties": False}


def _slot_schema(n: int, layout: SlotLayout) -> dict[str, Any]:
    if layout.shape == "flat":
        told_fields = _fact_schema(layout.fields)["properties"]
        empty = {"type": "object", "properties": {"line": {"const": n}, "statement": {"type": "null"}},
                 "required": ["line", "statement"], "additionalProperties": False}
        told = {"type": "object", "properties": {"line": {"const": n}, **told_fields},
                "required": ["line", *told_fields], "additionalProperties": False}
        return {"anyOf": [empty, told]}
    return {
        "type": "object",
        "properties": {"line": {"const": n}, "fact": {"anyOf": [{"type": "null"}, _fact_schema(layout.fields)]}},
        "required": ["line", "fact"],
        "additionalProperties": False,
    }


def schema_for_lines(lines: list[int], layout: SlotLayout = SlotLayout()) -> dict[str, Any]:
    """The reply's JSON schema: exactly one slot per line number of ``lines``, in order, laid out
    as ``layout`` says (:class:`SlotLayout`; the default: nested slots with all fields)."""
    if layout.shape == "keyed":
        fact = _fact_schema(layout.fields)
        slots = {str(n): {"anyOf": [{"type": "null"}, fact]} for n in lines}
        items: dict[str, Any] = {"type": "object", "properties": slots, "required": list(slots),
                                 "additionalProperties": False}
    else:
        items = {"type": "array", "prefixItems": [_slot_schema(n, layout) for n in lines],
                 "minItems": len(lines), "maxItems": len(lines)}
    return {
        "title": "line_observations",
        "type": "object",
        "properties": {"lines": items},
        "required": ["lines"],
        "additionalProperties": False,
    }


#: Prompts whose reply is plain rows instead of JSON, one per line of the chunk:
#: ``3|statement|subject|relation|object`` or ``3|-``.  JSON spends a decoding step on every
#: quote, key and brace (≈ 30 of a filled slot's ≈ 60 tokens); a row spends four separators.  The
#: embedded model is held to the rows by a llama.cpp grammar (:func:`rows_grammar`); a remote model
#: gets the same prompt and :func:`parse_line_rows` reads what it can.  ``ended`` is
#: :func:`~.observations.says_ended`.  Measured and rejected (BENCHMARKS.md): under 3 s per turn,
#: but the 1.5B model alternates fact and ``-`` row by row and matches a third fewer observations.
ROW_PROMPTS = frozenset({"observe_rows_v1", "observe_rows_v2"})

#: Longest statement, subject and object a row may hold (characters), as the JSON schema's maxLength
ROW_LIMITS = (STATEMENT_SCHEMA["properties"]["statement"]["maxLength"],
              STATEMENT_SCHEMA["properties"]["subject"]["maxLength"],
              STATEMENT_SCHEMA["properties"]["object"]["maxLength"])


def rows_grammar(lines: list[int], relations: tuple[str, ...] = RELATIONS) -> str:
    """A GBNF grammar for exactly one row per line number of ``lines``, in order: ``n|-`` or
    ``n|statement|subject|relation|object`` with the relation from ``relations``."""
    stmt, subj, obj = ROW_LIMITS
    rules = [
        "root ::= " + " ".join(f"row{n}" for n in lines),
        *(f'row{n} ::= "{n}|" (nil | fact) "\\n"' for n in lines),
        'nil ::= "-"',
        'fact ::= stmt "|" subj "|" rel "|" obj',
        f"stmt ::= [^|\\n-] [^|\\n]{{0,{stmt - 1}}}",
        f"subj ::= [^|\\n]{{1,{subj}}}",
        "rel ::= " + " | ".join(f'"{r}"' for r in relations),
        f"obj ::= [^|\\n]{{1,{obj}}}",
    ]
    return "\n".join(rules) + "\n"


_ROW = re.compile(r"^\s*\[?(\d+)\]?\s*\|(.*)$")


def parse_line_rows(text: str, relations: tuple[str, ...] = RELATIONS) -> list[Observation]:
    """Read a rows reply (:data:`ROW_PROMPTS`) into observations, each with its row's line as ``turn``.

    Tolerant, for models no grammar holds: lines that are not rows are skipped, a missing
    column is empty (subject: the statement's first speaker, later), a relation outside
    ``relations`` reads as ``did``, a ``|`` inside the object is kept; empty statements, ``-``
    and exact repeats are dropped."""
    out: list[Observation] = []
    seen: set[str] = set()
    for line in text.splitlines():
        m = _ROW.match(line)
        if not m:
            continue
        cols = [c.strip() for c in m.group(2).split("|")]
        statement = cols[0]
        if not statement or statement == "-" or statement.lower() in seen:
            continue
        relation = cols[2] if len(cols) > 2 and cols[2] in relations else "did"
        obs = Observation(turn=int(m.group(1)), statement=statement, subject=cols[1] if len(cols) > 1 else "",
                          relation=relation, object="|".join(cols[3:]), ended=says_ended(statement))
        seen.add(statement.lower())
        out.append(obs)
    return out


class _Slot(BaseModel):
    model_config = ConfigDict(extra="ignore")

    line: int | None = None
    fact: dict[str, Any] | None = None
    # the flat layout's fields (LAYOUTS)
    statement: str | None = None
    relation: str | None = None
    object: str | None = None

    def told(self) -> dict[str, Any] | None:
        """The slot's fact fields, whichever layout; ``None`` for a line that tells nothing."""
        if self.fact is not None:
            if "ended" not in self.fact and isinstance(self.fact.get("statement"), str):  # a slim fact
                return {**self.fact, "ended": says_ended(self.fact["statement"])}
            return self.fact
        if self.statement is None:
            return None
        return {"statement": self.statement, "relation": self.relation or "did", "object": self.object or "",
                "ended": says_ended(self.statement)}


class _Reply(BaseModel):
    model_config = ConfigDict(extra="ignore")

    lines: list[_Slot]  # required: v1's {"facts": …} would otherwise read as "nothing on any line"

    @field_validator("lines", mode="before")
    @classmethod
    def _keyed(cls, v: Any) -> Any:
        """The keyed layout (:class:`SlotLayout`): ``{"3": fact | null, …}`` → slots."""
        if not isinstance(v, dict):
            return v
        slots = []
        for key, fact in v.items():
            m = re.fullmatch(r"\s*\[?(\d+)\]?\s*", str(key))
            if m is None:
                raise ValueError(f"a slot key must be a line number, got {key!r}")
            if fact is not None and not isinstance(fact, dict):
                raise ValueError(f"slot {key}: a fact object or null, got {type(fact).__name__}")
            slots.append({"line": int(m.group(1)), "fact": fact})
        return slots


def parse_line_observations(data: Any) -> list[Observation]:
    """Validate a reply: ``{"lines": [{"line": k, "fact": null | {...}}, ...]}``, the keyed
    layout's ``{"lines": {"k": null | {"statement": …, "relation": …, "object": …}, ...}}``, or the flat
    layout's ``{"lines": [{"line": k, "statement": null | "…", "relation": …, "object": …}, ...]}``
    (no subject: :func:`~.observations.postprocess_observations` reads it from the statement;
    ``ended`` is :func:`~.observations.says_ended`).

    Each non-null slot becomes an :class:`~.observations.Observation` whose
    ``turn`` is the slot's line; empty statements and exact repeats are dropped.
    Raises ``pydantic.ValidationError`` when the reply is not that shape (an object without
    ``lines``: a model that answered another prompt's shape fails the chunk instead of storing
    nothing).
    """
    if hasattr(data, "model_dump"):
        data = data.model_dump(mode="json")
    reply = _Reply.model_validate(data)
    out: list[Observation] = []
    seen: set[str] = set()
    for slot in reply.lines:
        told = slot.told()
        if told is None:
            continue
        obs = Observation.model_validate({**told, "turn": slot.line})
        key = obs.statement.lower()
        if not obs.statement or key in seen:
            continue
        seen.add(key)
        out.append(obs)
    return out


class LineObservationExtractor(ObservationExtractor):
    """One structured call per chunk with a slot per line (see the module docstring)."""

    default_prompt = PROMPT_VERSION
    default_max_tokens = MAX_TOKENS

    def messages_for(self, chunk: Chunk[Message]) -> tuple[list[dict[str, str]], dict[int, Message]]:
        """v1's messages with the transcript's double quotes made single: a title in double quotes
        ('reading "The Lean Startup"') ended the 1.5B model's JSON string at its first quote."""
        messages, numbered = super().messages_for(chunk)
        messages[-1] = {**messages[-1], "content": messages[-1]["content"].replace('"', "'")}
        return messages, numbered

    def run(self, chunk: Chunk[Message]) -> ChunkResult:
        """Extract one chunk.  Raises :class:`~chronomem.errors.StructuredOutputError`
        (after the provider's repair/retry budget) or ``pydantic.ValidationError``."""
        messages, numbered = self.messages_for(chunk)
        lines = sorted(numbered)
        rows = self.prompt_version in ROW_PROMPTS
        shape: dict[str, Any] = ({"grammar": rows_grammar(lines)} if rows else
                                 {"schema": schema_for_lines(lines, layout_for(self.prompt_version))})
        res = self.llm.chat(messages, **shape, max_tokens=self.max_tokens, temperature=0.0, purpose="extract",
                            penalties=self.penalties)
        observations = parse_line_rows(res.text) if rows else parse_line_observations(res.data)
        cands, notes = postprocess_observations(
            observations, numbered, canonical=self.canonical, context_speakers=[m.speaker for m in chunk.context],
            trust_turn=True, context=dict(enumerate(chunk.context)), rules=self.rules,
        )
        return ChunkResult(candidates=cands, usage=res.usage, notes=notes, raw=res.text)


__all__ = ["FULL_FIELDS", "LAYOUTS", "PROMPT_VERSION", "RELATIONS", "ROW_PROMPTS", "SLIM_FIELDS",
           "LineObservationExtractor", "SlotLayout", "layout_for", "parse_line_observations", "parse_line_rows",
           "rows_grammar", "schema_for_lines"]
