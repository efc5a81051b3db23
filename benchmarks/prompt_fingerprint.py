"""Record every prompt chronomem sends to the model in a fixed scenario, without a model.

The benchmark LLM caches (benchmarks/results/*/llm-cache.sqlite.gz) key on the exact
messages, so a refactor that changes no prompt byte leaves every cached number valid.
Run it on two checkouts and compare the digests:

    PYTHONPATH=/work/main/src .venv/bin/python benchmarks/prompt_fingerprint.py --out /tmp/a.json
    PYTHONPATH=$PWD/src       .venv/bin/python benchmarks/prompt_fingerprint.py --out /tmp/b.json
    cmp /tmp/a.json /tmp/b.json

The scenario covers the extraction, intent, evaluator, answer, Rsum update, Rsum reply
and compaction prompts.  It uses only the public ``Memory`` API, so it runs unchanged
on either side of an internal refactor.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import tempfile
from pathlib import Path
from typing import Any

from chronomem import Memory
from chronomem.providers.base import CallUsage, ChatResult

TURNS = [
    {"id": "t0", "speaker": "Maya", "text": "I live in Berlin and work at Acme.", "timestamp": "2023-01-10T10:00:00Z"},
    {"id": "t1", "speaker": "Tom", "text": "Nice, how is Berlin?", "timestamp": "2023-01-10T10:01:00Z"},
    {"id": "t2", "speaker": "Maya", "text": "I moved to Munich last week.", "timestamp": "2023-02-10T10:00:00Z"},
    {"id": "t3", "speaker": "Tom", "text": "My sister Ana is a nurse in Porto.", "timestamp": "2023-02-10T10:01:00Z"},
]


class RecordingLLM:
    """Answers by purpose with fixed data and records each call's messages and arguments."""

    name = "recording"
    context_window = 8192

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def chat(self, messages: list[dict[str, Any]], *, schema: Any = None, max_tokens: int = 512,
             temperature: float = 0.0, stop: Any = None, purpose: str = "", penalties: Any = None) -> ChatResult:
        call = {"purpose": purpose, "messages": messages, "max_tokens": max_tokens,
                "temperature": temperature, "stop": stop, "schema": schema is not None}
        if penalties is not None:  # recorded only when sent, so a call without them fingerprints as before
            call["penalties"] = penalties.request_fields()
        self.calls.append(call)
        usage = CallUsage(prompt_tokens=10, completion_tokens=5, purpose=purpose)
        if purpose == "extract":
            return ChatResult(text="{}", usage=usage, data={"facts": [
                {"turns": [0], "subject": "I", "relation": "lives_in", "object": "Munich", "time": "last week",
                 "ended": False, "certainty": "certain", "intent": "FACT"},
                {"turns": [0], "subject": "I", "relation": "works_at", "object": "Acme", "time": "",
                 "ended": False, "certainty": "uncertain", "intent": "FACT"}]})
        if purpose == "intents":
            return ChatResult(text="{}", usage=usage, data={"intents": ["FACT"]})
        if purpose == "evaluate":
            return ChatResult(text="{}", usage=usage, data={"score": 0.5, "sufficient": False})
        if purpose == "rsum":
            return ChatResult(text="Maya lives in Munich and works at Acme.", usage=usage)
        if purpose == "compact":
            return ChatResult(text="They talked about moving.", usage=usage)
        return ChatResult(text="Munich", usage=usage)


def scenario() -> list[dict[str, Any]]:
    llm = RecordingLLM()
    with tempfile.TemporaryDirectory() as tmp:
        with Memory(Path(tmp) / "m.db", llm=llm, embedder=False) as mem:
            mem.add(TURNS[:2], user_id="u1", session_id="s1")
            mem.end_session(user_id="u1", session_id="s1", ended_at="2023-01-10T11:00:00Z")
            mem.add(TURNS[2:], user_id="u1", session_id="s2")
            mem.end_session(user_id="u1", session_id="s2", ended_at="2023-02-10T11:00:00Z")
            mem.add_facts([{"subject": "Rui", "relation": "sibling_of", "object": "Maya"},
                           {"subject": "Rui", "relation": "lives_in", "object": "Braga"}], user_id="u1")
            for q in ("Where does Maya's brother live?", "what happened with that thing?",
                      "Where did Maya live in 2023?"):
                for method in ("real", "rsum", "real+rsum"):
                    mem.answer(q, user_id="u1", method=method, as_of="2024-01-01")
            mem.context([{"role": "user", "content": f"message {i} " + "word " * 60} for i in range(12)],
                        user_id="u1", budget_tokens=300, strategy="summary", keep_turns=2)
    return llm.calls


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    calls = scenario()
    # fact ids are random per run: mask them (the rest of every prompt must match byte for byte)
    text = re.sub(r"id:[0-9a-f]{8}", "id:<fact>", json.dumps(calls, indent=1, sort_keys=True, default=str))
    args.out.write_text(text)
    by_purpose: dict[str, int] = {}
    for c in calls:
        by_purpose[c["purpose"]] = by_purpose.get(c["purpose"], 0) + 1
    print(f"{len(calls)} calls {by_purpose} sha256={hashlib.sha256(text.encode()).hexdigest()}")


if __name__ == "__main__":
    main()
