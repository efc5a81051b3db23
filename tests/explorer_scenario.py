"""Maya's memory for the explorer tests: structured facts (a move, two jobs, a sibling, a hedged
plan, a containment) plus one conversation whose turns are the provenance of a fact and whose end
writes an Rsum checkpoint.  The model is a deterministic double that reads its prompts."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from slot_replies import as_reply
from chronomem import Memory
from chronomem.cli import app as cli_app
from chronomem.providers.base import CallUsage, ChatResult

USER = "maya"
TENANT = "acme"
LINE = re.compile(r"^\[(\d+)\] (?:\(([^)]*)\) )?([^:]+): (.*)$")

FACTS: list[dict[str, Any]] = [
    {"subject": "Maya", "relation": "lives_in", "object": "Berlin", "valid_from": "2018-03-01"},
    {"subject": "Maya", "relation": "works_at", "object": "Zalando", "valid_from": "2018-04-01"},
    {"subject": "Maya", "relation": "lives_in", "object": "Munich", "valid_from": "2021-06-01"},
    {"subject": "Maya", "relation": "works_at", "object": "Siemens", "valid_from": "2021-09-01"},
    {"subject": "Rui", "relation": "sibling_of", "object": "Maya", "valid_from": "2017-01-01"},
    {"subject": "Munich", "relation": "located_in", "object": "Germany", "valid_from": "2021-06-01"},
    {"subject": "Maya", "relation": "plans_to_visit", "object": "Lisbon", "valid_from": "2024-01-01",
     "confidence": 0.4},
]
TURNS = [
    {"speaker": "Maya", "text": "I took up the cello last month.", "timestamp": "2022-03-10T18:00:00Z"},
    {"speaker": "Assistant", "text": "How are the lessons going?", "timestamp": "2022-03-10T18:00:30Z"},
]
SUMMARY = "Maya took up the cello in 2022 and enjoys her lessons."


class ExplorerLLM:
    """Extraction reads the numbered turns, the Rsum step writes SUMMARY, an answer names the city
    the context says Maya lives in (or "Not mentioned")."""

    name = "explorer-double"
    context_window = 8192

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def chat(self, messages: list[dict[str, str]], *, schema: Any = None, max_tokens: int = 512,
             temperature: float = 0.0, stop: Any = None, purpose: str = "", penalties: Any = None) -> ChatResult:
        usage = CallUsage(prompt_tokens=50, completion_tokens=10, purpose=purpose)
        prompt = messages[-1]["content"]
        if purpose == "extract":
            facts = []
            for line in prompt.splitlines():
                m = LINE.match(line)
                if m and "cello" in m.group(4) and m.group(3) == "Maya":
                    facts.append({"turns": [int(m.group(1))], "subject": "I", "relation": "hobby",
                                  "object": "cello", "time": "last month", "ended": False,
                                  "certainty": "certain", "intent": "FACT"})
            return ChatResult(text="{}", usage=usage, data=as_reply(schema, prompt, facts))
        if purpose == "rsum":
            return ChatResult(text=SUMMARY, usage=usage)
        if purpose == "answer":
            m = re.search(r"lives_in (\w+)|lives in (\w+)", prompt)
            return ChatResult(text=(m.group(1) or m.group(2)) if m else "Not mentioned", usage=usage)
        raise AssertionError(f"unexpected model call: {purpose}")


def create_key(db: Path | str, tenant: str = TENANT) -> str:
    r = CliRunner().invoke(cli_app, ["keys", "create", "--tenant", tenant, "--db", str(db)],
                           catch_exceptions=False)
    assert r.exit_code == 0, r.output
    return r.stdout.strip().splitlines()[0]


def build(mem: Memory) -> None:
    """Write Maya's memory into ``mem`` (a tenant's Memory)."""
    mem.add_facts(FACTS, user_id=USER)
    res = mem.add(TURNS, user_id=USER, session_id="s1")
    assert res.facts_added == 1, res
    mem.end_session(user_id=USER, session_id="s1", ended_at="2022-03-10T19:00:00Z")
