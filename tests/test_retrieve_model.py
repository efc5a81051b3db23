"""``Memory.answer`` end to end with the real local model (Qwen2.5-Coder-1.5B) — slow, marked ``model``."""

from __future__ import annotations

import json
from importlib import resources

import pytest

from chronomem import Memory
from chronomem.model import Origin

pytestmark = pytest.mark.model


def test_answer_end_to_end_with_local_model(tmp_path) -> None:
    pytest.importorskip("xllamacpp")
    with Memory(tmp_path / "m.db", llm="local", embedder=False) as mem:
        sample = json.loads(resources.files("chronomem.data").joinpath("sample_facts.json").read_text("utf-8"))
        for step in sample["steps"]:
            mem.add_facts(step["facts"], user_id="u1")
        ans = mem.answer("Where does Maya's brother live?", user_id="u1")
        assert "braga" in ans.text.lower()
        assert any(f.object == "Braga" for f in ans.evidence)
        assert any(f.origin == Origin.DERIVED and f.relation == "sibling_of" for f in ans.evidence)
        assert 0 < ans.context_tokens <= 1200
        assert ans.usage["llm_calls"] >= 1 and ans.usage["answer_prompt_tokens"] > 0
        assert ans.trace.roots[0]["name"] == "Maya"
