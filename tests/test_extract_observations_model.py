"""Extraction v2 end to end with the real local model (Qwen2.5-Coder-1.5B, temperature 0) on the
bundled sample: the demo's collision ("works_at Globex" closed by "works_at product manager")
must not happen, and the moves and job change still close the old states.  Marked ``model``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from chronomem import Memory
from chronomem.extract.formats import load_conversations, sample_conversation_path

pytestmark = [pytest.mark.model, pytest.mark.timeout(1800)]


@pytest.fixture(scope="module")
def maya(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Memory]:
    pytest.importorskip("xllamacpp")
    db = tmp_path_factory.mktemp("extract_v2_model") / "m.db"
    with Memory(db, llm="local", embedder=False) as mem:
        (conv,) = load_conversations(sample_conversation_path())
        pipe = mem.write_pipeline(method="v2")
        for s in conv.sessions:
            assert pipe.add(s.messages, user_id="maya", session_id=s.session_id, timestamp=s.timestamp).ok
        yield mem


def _objs(mem: Memory, relation: str, **kw: str) -> set[str]:
    return {f.object for f in mem.facts(user_id="maya", subject="Maya", **kw) if f.relation == relation}


def test_employer_and_job_title_do_not_collide(maya: Memory) -> None:
    assert "Globex" in _objs(maya, "works_at")
    assert not {o for o in _objs(maya, "works_at") if "manager" in o or "analyst" in o}
    assert "Acme" in _objs(maya, "works_at", as_of="2023-03-01") and "Acme" not in _objs(maya, "works_at")


def test_facts_keep_their_statement_as_text(maya: Memory) -> None:
    texts = [f.text for f in maya.history(user_id="maya")]
    assert any("Munich" in t and "(" in t for t in texts)  # "… last month (May 2023)."
    assert all(" | " not in t and t for t in texts)
