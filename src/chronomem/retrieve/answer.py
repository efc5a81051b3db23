"""Answer generation from the serialised evidence (prompt ``prompts/answer_v1.md``).

When the search found nothing the answer is ``"Not mentioned"`` and no model
is called: the memory has nothing to say, and a model asked anyway would
guess.  Otherwise one chat call at temperature 0 produces a short answer from
the context; the answer's evidence is the facts that were in that context.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..model import Fact
from ..providers.base import LLM, CallUsage
from ..registry import RelationRegistry
from .render import fmt_time
from ..prompts import load_template

log = logging.getLogger(__name__)

ANSWER_PROMPT_VERSION = "answer_v1"
NOT_MENTIONED = "Not mentioned"
_PREFIX = re.compile(r"^\s*(short answer|answer)\s*:\s*", re.I)


@dataclass
class Answer:
    """A reply with the evidence it rests on and what it cost."""

    text: str
    evidence: list[Fact]
    context_tokens: int
    usage: dict[str, Any] = field(default_factory=dict)
    trace: Any = None  # the search's :class:`~chronomem.retrieve.search.Trace`
    context: str = ""
    method: str = "real"
    prompt_version: str = ANSWER_PROMPT_VERSION

    @property
    def not_mentioned(self) -> bool:
        return self.text.strip().lower().startswith("not mentioned")


def answer_messages(question: str, context: str, as_of: datetime) -> list[dict[str, str]]:
    t = load_template("chronomem.retrieve", ANSWER_PROMPT_VERSION)
    system, user = t.system, t.user
    return [{"role": "system", "content": system},
            {"role": "user", "content": user.format(context=context, question=question, as_of=fmt_time(as_of))}]


#: what a "where" question about an organisation relation asks for, by relation (others: the generic one)
_ORGANISATION_WORDS = {"works_at": "the employer (company or organisation)",
                       "studies_at": "the school or university"}


def organisation_hint(analysis: Mapping[str, Any], registry: RelationRegistry) -> str | None:
    """For "where did Nikos work?" / "where did Renato study?": the sentence that tells the model to
    name the organisation, not its town.  Pure.

    A small model reads "where" as "which place" and answers "Patras" with "Nikos worked at
    Costamare in Patras" in front of it.  The question's relation words (the rule analysis's
    ``relation_groups``) say what is asked: when one of them is a relation whose object is an
    organisation (``works_at``, ``studies_at`` or a user-defined one) and none a place
    ("where did she move for work" keeps lives_in), the answer is the organisation.  ``None`` otherwise.

    >>> from chronomem.registry import RelationRegistry
    >>> organisation_hint({"wh": "where", "relation_groups": {"study": ["studies_at"]}}, RelationRegistry())
    'Name the school or university, not the town it is in.'
    """
    if analysis.get("wh") != "where":
        return None
    relations = [r for group in (analysis.get("relation_groups") or {}).values() for r in group]
    types = {r: registry.spec(r).object_type for r in relations if registry.is_known(r)}
    if "place" in types.values():
        return None
    organisations = [r for r, t in types.items() if t == "organisation"]
    if not organisations:
        return None
    what = _ORGANISATION_WORDS.get(organisations[0], "the organisation")
    return f"Name {what}, not the town it is in."


def clean_answer(text: str) -> str:
    """First non-empty line of the reply, without an "Answer:" prefix or wrapping quotes."""
    for line in text.strip().splitlines():
        line = _PREFIX.sub("", line).strip().strip('"').strip()
        if line:
            return line
    return NOT_MENTIONED


def generate(llm: LLM, question: str, context: str, *, as_of: datetime,
             max_tokens: int = 64) -> tuple[str, CallUsage | None]:
    """The short answer for ``question`` from ``context`` (no call when the context is empty)."""
    if not context.strip():
        return NOT_MENTIONED, None
    r = llm.chat(answer_messages(question, context, as_of), max_tokens=max_tokens, temperature=0.0,
                 purpose="answer")
    return clean_answer(r.text), r.usage
