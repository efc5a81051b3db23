"""The evolving-state benchmark's data and its check logic (no model: facts put in directly)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from bench_scripts import BENCHMARKS, load_script

from chronomem import Memory
from chronomem.registry import RelationRegistry
from chronomem.timeutil import parse_time

evolving = load_script("bench_evolving")
SETS = ("tune", "check", "check2", "check3", "check4", "check5", "check6", "check7", "check8", "check9", "check10", "check11",
        "check12", "check13", "check14", "check15", "check16", "check17", "check18", "check19", "check20", "check21")


def test_the_bench_offers_every_set() -> None:
    assert evolving.SETS == SETS  # read from benchmarks/evolving/*.json: a set file added or lost shows here


@pytest.mark.parametrize("name", SETS)
def test_every_set_is_well_formed(name: str) -> None:
    data = json.loads((BENCHMARKS / "evolving" / f"{name}.json").read_text())
    registry = RelationRegistry()
    ids: set[str] = set()
    for conv in data["conversations"]:
        assert conv["name"] and conv["user"] and conv["checks"]
        times = [parse_time(s["timestamp"], "timestamp") for s in conv["sessions"]]
        assert times == sorted(times), f"{conv['name']}: sessions out of order"
        for s in conv["sessions"]:
            for m in s["messages"]:
                assert m["id"] not in ids and m["speaker"] and m["text"]
                ids.add(m["id"])
        for check in conv["checks"]:
            assert check["kind"] in ("facts", "answer")
            assert check.get("expect") or check.get("reject")
            if check["kind"] == "facts":
                assert registry.is_known(check["relation"]), check
                if "as_of" in check:
                    parse_time(check["as_of"], "as_of")
            else:
                assert check["question"].endswith("?")


def test_facts_checks_pass_and_fail_on_what_is_stored(tmp_path: Path) -> None:
    with Memory(tmp_path / "m.db", llm=False, embedder=False) as mem:
        mem.add_facts([
            {"subject": "Lena", "relation": "lives_in", "object": "Leeds", "valid_from": "2019-03-01"},
            {"subject": "Lena", "relation": "lives_in", "object": "Basel", "valid_from": "2021-07-01"},
            {"subject": "Lena", "relation": "married_to", "object": "Jonas", "valid_from": "2018-07-01"},
        ], user_id="lena")
        then = {"kind": "facts", "subject": "Lena", "relation": "lives_in", "as_of": "2020-01-01", "expect": ["Leeds"]}
        now = {"kind": "facts", "subject": "Lena", "relation": "lives_in", "expect": ["Basel"], "reject": ["Leeds"]}
        wrong = {"kind": "facts", "subject": "Lena", "relation": "lives_in", "expect": ["Leeds"]}
        spouse = {"kind": "facts", "subject": "Jonas", "relation": "married_to", "expect": ["Lena"]}
        assert evolving.run_check(mem, "lena", then) == (True, "Lena lives_in Leeds")
        assert evolving.run_check(mem, "lena", now)[0]
        assert evolving.run_check(mem, "lena", wrong) == (False, "Lena lives_in Basel")
        assert evolving.run_check(mem, "lena", spouse) == (True, "Jonas married_to Lena")
        assert evolving.run_check(mem, "lena", spouse, other_side=False) == (False, "(none)")
        assert evolving.describe(then) == "facts Lena lives_in @2020-01-01"


def test_an_answer_check_runs_with_the_config_it_is_given() -> None:
    """``--no-organisation-hint`` reaches answer() through run_check's ``config``."""
    seen: list[object] = []
    speakers: list[object] = []

    class Answering:
        def answer(self, question: str, **kw: object) -> object:
            seen.append(kw.get("config"))
            speakers.append(kw.get("speaker"))
            return type("A", (), {"text": "Novartis"})()

    check = {"kind": "answer", "question": "Where does Lena work?", "expect": ["novartis"]}
    marker = object()
    assert evolving.run_check(Answering(), "lena", check, config=marker) == (True, "Novartis")
    assert evolving.run_check(Answering(), "lena", check) == (True, "Novartis")
    assert seen == [marker, None]
    assert evolving.run_check(Answering(), "lena", check, speaker="Lena")[0]  # "I" in a question is Lena
    assert speakers == [None, None, "Lena"]
