"""End-to-end with the real local models: few and small, they load once per module.

The LLM test uses the default Qwen2.5-Coder-1.5B at temperature 0 and asserts
only what such a model reliably gets right: copying a named person, a city
and a year out of two plain sentences into a schema.
"""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import BaseModel

from chronomem.errors import ModelUnavailableError
from chronomem.providers import make_embedder, make_llm

pytestmark = pytest.mark.model


class Move(BaseModel):
    person: str
    city: str
    year: int


@pytest.fixture(scope="module")
def llm():
    try:
        return make_llm("local", cache=False, n_ctx=2048)
    except ModelUnavailableError as e:
        pytest.skip(str(e))


def test_local_structured_extraction(llm) -> None:
    messages = [
        {"role": "system", "content": "Extract the move described by the user. Reply with JSON only."},
        {"role": "user", "content": "Maria grew up in Lisbon. In 2019 she moved to Berlin for a new job."},
    ]
    r = llm.chat(messages, schema=Move, max_tokens=64, purpose="extract")
    assert isinstance(r.data, Move)
    assert r.data.person == "Maria"
    assert r.data.city == "Berlin"
    assert r.data.year == 2019
    assert r.usage.prompt_tokens > 20 and 0 < r.usage.completion_tokens <= 64
    # the model's own tokenizer, offline
    assert llm.count_tokens("Maria grew up in Lisbon.") == 6
    assert llm.usage.snapshot()["by_purpose"]["extract"]["calls"] == 1


def test_local_grammar_holds_the_reply_to_rows(llm) -> None:
    from chronomem.extract.line_observations import parse_line_rows, rows_grammar

    messages = [
        {"role": "system", "content": "For each numbered line write: number|statement|subject|relation|object, or number|-"},
        {"role": "user", "content": "[1] Maria: Hi!\n[2] Maria: I moved to Berlin in 2019 for a new job."},
    ]
    r = llm.chat(messages, grammar=rows_grammar([1, 2]), max_tokens=80, purpose="extract")
    rows = r.text.splitlines()
    assert [row.split("|")[0] for row in rows] == ["1", "2"]  # one row per line, in order, nothing else
    assert all(row.endswith("|-") or row.count("|") == 4 for row in rows)
    assert all(o.turn in (1, 2) for o in parse_line_rows(r.text))


def test_local_prefill_fills_the_prompt_cache_with_the_shared_start(llm) -> None:
    head = [{"role": "system", "content": "You note down where people live. Reply with JSON only."}]
    first = llm.prefill(head)
    assert first > 10  # the system prompt and the template's opening of the user turn
    assert llm.prefill(head) <= 1  # cached now: llama.cpp re-reads only the last token
    r = llm.chat([*head, {"role": "user", "content": "Maria lives in Berlin."}], schema=Move, max_tokens=32)
    assert r.usage.prompt_tokens > first


def test_local_embedding_similarity_ordering() -> None:
    try:
        emb = make_embedder("local", cache=False)
        vecs = np.asarray(
            emb.embed(["A cat is sleeping on the sofa.", "The kitten naps on the couch.", "Stock prices fell sharply."])
        )
    except ModelUnavailableError as e:
        pytest.skip(str(e))
    assert vecs.shape == (3, emb.dim) == (3, 384)
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    sims = vecs @ vecs[0]
    assert sims[1] > sims[2] + 0.3
