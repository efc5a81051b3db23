"""The evidence context: numbered fact lines, a repeated fact by its number, paths within the budget.

Context format 4: format 2 (as #21's held-out run measured it) without the stored facts' random ids,
so two ingests of one conversation give the answer model the same prompt.  Two facts typed from one
statement ("lives in Berlin and works at Acme") still write that statement twice: writing it once
(format 3) measured 46.9 against 50.9 on conv-30's tuning sample (BENCHMARKS.md "Context format 3").
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timezone

from chronomem.model import Fact, Intent, Origin
from chronomem.retrieve.anchoring import Anchor
from chronomem.retrieve.beam import Path
from chronomem.retrieve.serialize import CONTEXT_FORMAT, content_id, serialize

T0 = datetime(2024, 3, 1, tzinfo=timezone.utc)
AS_OF = datetime(2024, 6, 1, tzinfo=timezone.utc)
STATEMENT = "Maya lives in Berlin and works at Acme"


def fact(fid: str, relation: str, obj: str, text: str = "", confidence: float = 0.9) -> Fact:
    return Fact(id=fid, user_id="u", subject="Maya", relation=relation, object=obj, valid_from=T0, valid_to=None,
                confidence=confidence, intent=Intent.FACT, origin=Origin.STATED, recorded_at=T0,
                source_ids=["m1"], text=text)


def path(*facts: Fact) -> Path:
    return Path(root=Anchor("e-maya", "Maya", "name", 1.0), intent=Intent.FACT, facts=facts,
                names=("Maya", *(f.object for f in facts)), score=1.0)


def test_facts_that_read_differently_keep_their_own_lines_and_numbers() -> None:
    same_text_other_confidence = fact("cccccccc03", "works_at", "Acme", STATEMENT, confidence=0.5)
    other = fact("dddddddd04", "owns", "a bike")
    lives = fact("aaaaaaaa01", "lives_in", "Berlin", STATEMENT)
    ctx = serialize([path(lives, other), path(same_text_other_confidence, lives)], as_of=AS_OF, budget_tokens=500)
    lines = ctx.text.splitlines()
    assert [ln.split()[0] for ln in lines if ln.startswith("  F")] == ["F1", "F2", "F3"]
    assert ctx.text.count(STATEMENT) == 2
    assert CONTEXT_FORMAT == 5
    assert "Maya owns a bike" in ctx.text
    assert lines[-1] == "  (F1)"  # the same fact again
    assert ctx.fact_ids == ["aaaaaaaa01", "dddddddd04", "cccccccc03"]


def test_a_path_that_does_not_fit_leaves_no_numbers_behind() -> None:
    long = fact("eeeeeeee05", "did", "x", "Maya " + "talked at length " * 40)
    lives = fact("aaaaaaaa01", "lives_in", "Berlin", STATEMENT)
    works = fact("bbbbbbbb02", "works_at", "Acme", STATEMENT)
    ctx = serialize([path(long, lives), path(works)], as_of=AS_OF, budget_tokens=60)
    assert ctx.truncated
    # the first path was skipped, so the second's fact is F1
    assert [ln for ln in ctx.text.splitlines() if ln.startswith("  ")][0].startswith("  F1 " + STATEMENT)
    assert ctx.fact_ids == ["bbbbbbbb02"]


def test_the_same_memory_under_other_ids_gives_the_same_context() -> None:
    """Stored ids are random per ingest; the model-facing text must not depend on them."""
    lives = fact("aaaaaaaa01", "lives_in", "Berlin", STATEMENT)
    works = fact("bbbbbbbb02", "works_at", "Acme", STATEMENT)
    first = serialize([path(lives, works), path(works)], as_of=AS_OF, budget_tokens=500)
    lives2, works2 = replace(lives, id="0f1e2d3c4b"), replace(works, id="9a8b7c6d5e")
    again = serialize([path(lives2, works2), path(works2)], as_of=AS_OF, budget_tokens=500)
    assert first.text == again.text  # identical, character for character
    assert "aaaaaaaa" not in first.text and "0f1e2d3c" not in again.text
    assert f"id:{content_id(lives)}" in first.text and content_id(lives) == content_id(lives2)
    assert first.fact_ids == ["aaaaaaaa01", "bbbbbbbb02"]  # the caller still gets the stored ids


def test_a_derived_fact_names_its_supports_by_their_numbers_in_the_context() -> None:
    stored = fact("aaaaaaaa01", "sibling_of", "Rui")
    outside = "cccccccc03"  # a support the context does not hold is not named
    derived = replace(fact("derived:symmetry:aaaaaaaa01", "sibling_of", "Maya"), origin=Origin.DERIVED,
                      rule="symmetry", support_ids=[stored.id, outside])
    ctx = serialize([path(derived, stored)], as_of=AS_OF, budget_tokens=500)
    lines = [ln.strip() for ln in ctx.text.splitlines() if ln.startswith("  F")]
    assert lines[0].startswith("F1 ") and lines[0].endswith("derived:symmetry from F2 src:m1")
    assert lines[1].startswith("F2 ") and "from" not in lines[1]
    assert lines[1].endswith(f"id:{content_id(stored)} src:m1") and "id:" not in lines[0]
    assert outside[:8] not in ctx.text


def test_two_memories_of_the_same_facts_give_the_model_the_same_context(tmp_path) -> None:
    """End to end: every store draws new fact ids, and the answer context must not show it."""
    from chronomem import Memory

    facts = [{"subject": "Maya", "relation": "lives_in", "object": "Berlin", "valid_from": "2020-01-01",
              "text": STATEMENT},
             {"subject": "Maya", "relation": "works_at", "object": "Acme", "valid_from": "2020-01-01",
              "text": STATEMENT},
             {"subject": "Maya", "relation": "married_to", "object": "Rui", "valid_from": "2021-05-01"}]
    contexts, ids = [], []
    for name in ("a", "b"):
        with Memory(tmp_path / f"{name}.db", embedder=False) as mem:
            mem.add_facts(facts, user_id="u")
            res = mem.search("Where does Maya live and who is Rui married to?", user_id="u", as_of=AS_OF)
            contexts.append(res.context)
            ids.append(sorted(f.id for f in res.facts))
    assert "Berlin" in contexts[0] and "Rui" in contexts[0]
    assert ids[0] != ids[1]  # the stores' ids differ …
    assert contexts[0] == contexts[1]  # … and the model's context does not


def test_a_content_id_follows_what_the_fact_says() -> None:
    lives = fact("aaaaaaaa01", "lives_in", "Berlin", STATEMENT)
    assert content_id(lives) == content_id(replace(lives, id="bbbbbbbb02", confidence=0.3, text="other words"))
    assert len({content_id(lives), content_id(replace(lives, object="Bonn")),
                content_id(replace(lives, valid_from=AS_OF)), content_id(replace(lives, source_ids=["m2"]))}) == 4
    assert all(c in "0123456789abcdef" for c in content_id(lives)) and len(content_id(lives)) == 8
