"""A structured reply cut off mid-way is never accepted silently (issue #20 finding 2).

Provider level: a reply that stops before its arrays are full (``finish_reason="length"``, or
a server that just stops mid-fact) is retried with a larger token budget; if every attempt is
cut, the call raises :class:`TruncatedOutputError`.  A reply cut only where the array cap
would drop the rest anyway is still accepted.  Served by tests/fake_openai.py.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from fake_openai import FakeModelServer, Reply, fact

from chronomem.errors import StructuredOutputError, TruncatedOutputError
from chronomem.extract.schema import EXTRACTION_SCHEMA
from chronomem.providers.openai_compat import OpenAICompatLLM

THREE = json.dumps({"facts": [fact("Maya", "lives_in", "Porto"), fact("Maya", "works_at", "Acme"),
                              fact("Maya", "likes", "jazz")]})
CUT_MID_FACT = THREE[: THREE.index('"jazz"') - 12]  # two whole facts, the third half-written


class Script:
    def __init__(self, *replies: Reply) -> None:
        self.replies = list(replies)

    def __call__(self, body: dict[str, Any]) -> Reply:
        return self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]


def llm(server: FakeModelServer) -> OpenAICompatLLM:
    return OpenAICompatLLM("fake", server.url, None, backoff_base=0.01, timeout=10.0)


@pytest.mark.parametrize("finish", ["length", "stop"])
def test_a_reply_cut_mid_fact_is_retried_with_more_tokens(server: FakeModelServer, finish: str) -> None:
    server.inject = Script(Reply(CUT_MID_FACT, finish), Reply(THREE))
    res = llm(server).chat([{"role": "user", "content": "x"}], schema=EXTRACTION_SCHEMA, max_tokens=300)
    assert [f["object"] for f in res.data["facts"]] == ["Porto", "Acme", "jazz"]  # nothing lost
    budgets = [r["max_tokens"] for r in server.requests]
    assert budgets == [300, 600]
    assert "cut off" in server.requests[1]["messages"][-1]["content"]


def test_a_reply_cut_on_every_attempt_raises_truncated_output_error(server: FakeModelServer) -> None:
    server.inject = Script(Reply(CUT_MID_FACT, "length"))
    with pytest.raises(TruncatedOutputError) as e:
        llm(server).chat([{"role": "user", "content": "x"}], schema=EXTRACTION_SCHEMA, max_tokens=300)
    assert isinstance(e.value, StructuredOutputError) and e.value.raw == CUT_MID_FACT
    assert len(server.requests) == 3


def test_a_complete_reply_at_the_token_limit_is_accepted(server: FakeModelServer) -> None:
    server.inject = Script(Reply(THREE, "length"))
    res = llm(server).chat([{"role": "user", "content": "x"}], schema=EXTRACTION_SCHEMA)
    assert len(res.data["facts"]) == 3 and len(server.requests) == 1


def test_a_reply_cut_beyond_a_full_array_loses_nothing_and_is_accepted(server: FakeModelServer) -> None:
    schema = {"type": "object", "properties": {"items": {"type": "array", "items": {"type": "string"},
                                                         "maxItems": 2}}, "required": ["items"]}
    server.inject = Script(Reply('{"items": ["a", "b", "c", "d', "length"))
    res = llm(server).chat([{"role": "user", "content": "x"}], schema=schema)
    assert res.data == {"items": ["a", "b"]} and len(server.requests) == 1
