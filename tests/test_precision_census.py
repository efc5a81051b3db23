"""benchmarks/precision_census.py: every fact judged once per rater, shared facts judged once, blind."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench_scripts import load_script

DATA = [{"sample_id": "conv-x", "conversation": {
    "session_1_date_time": "1:00 pm on 20 January, 2023",
    "session_1": [{"dia_id": "D1:1", "speaker": "Jon", "text": "Lost my job as a banker yesterday."},
                  {"dia_id": "D1:2", "speaker": "Gina", "text": "Oh no! Look at my pup.", "blip_caption": "a dog"},
                  {"dia_id": "D1:3", "speaker": "Jon", "text": "So cute!"}]}}]


def census() -> Any:
    return load_script("precision_census")


def row(s: str, r: str, o: str, text: str, src: list[str]) -> dict[str, Any]:
    return {"s": s, "r": r, "o": o, "text": text, "from": None, "to": None, "src": src}


def replay(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text(json.dumps({"session": 1, "fact_rows": rows}) + "\n")
    return path


JOB = row("Jon", "job_title", "banker", "Jon lost his job as a banker yesterday (19 January 2023).", ["D1:1"])
PUP = row("Gina", "has_pet", "pup", "Gina shares a photo of her pup.", ["D1:2"])
CUTE = row("Jon", "did", "Gina", "Jon agrees the pup is cute.", ["D1:3"])


@pytest.fixture
def setup(tmp_path: Path) -> tuple[Any, Path, Path, Path, Path]:
    data = tmp_path / "locomo.json"
    data.write_text(json.dumps(DATA))
    a = replay(tmp_path / "a.jsonl", [JOB, PUP, CUTE])
    b = replay(tmp_path / "b.jsonl", [JOB, PUP])
    return census(), data, a, b, tmp_path / "census"


def test_a_fact_two_replays_share_is_judged_once_and_blind(setup: tuple[Any, Path, Path, Path, Path]) -> None:
    mod, data, a, b, folder = setup
    (batch,) = mod.build(folder, [a, b], data, "conv-x", batch_size=10, seed=1)
    items = json.loads(batch.read_text())
    assert sorted(i["statement"] for i in items) == sorted(r["text"] for r in (JOB, PUP, CUTE))
    assert "a.jsonl" not in batch.read_text() and "b.jsonl" not in batch.read_text()
    pup = next(i for i in items if i["fact"]["relation"] == "has_pet")
    assert pup["cited_turns"] == [{"id": "D1:2", "date": "1:00 pm on 20 January, 2023", "speaker": "Gina",
                                   "text": "Oh no! Look at my pup. [shares an image: a dog]"}]
    assert [c["id"] for c in pup["context_before"]] == ["D1:1"]
    assert mod.build(folder, [a, b], data, "conv-x", batch_size=10, seed=1) == []  # nothing new to judge


def test_score_per_rater_strict_and_lenient(setup: tuple[Any, Path, Path, Path, Path]) -> None:
    mod, data, a, b, folder = setup
    (batch,) = mod.build(folder, [a, b], data, "conv-x", batch_size=10, seed=1)
    items = json.loads(batch.read_text())
    by_text = {i["statement"]: i["id"] for i in items}
    verdicts = {JOB["text"]: ("correct", "correct"), PUP["text"]: ("call", "correct"),
                CUTE["text"]: ("wrong", "wrong")}
    for k, rater in enumerate("AB"):
        (folder / f"verdicts_b1_{rater}.json").write_text(json.dumps([
            {"id": by_text[t], "verdict": v[k], "category": None if v[k] == "correct" else "small_talk_or_reaction",
             "reason": ""} for t, v in verdicts.items()]))
    ra, rb = mod.score(folder, [a, b])
    assert (ra["facts"], ra["unjudged"], ra["agreement"]) == (3, 0, "2/3")
    assert (ra["strict_A"], ra["strict_B"], ra["lenient_A"]) == (round(1 / 3, 3), round(2 / 3, 3), round(2 / 3, 3))
    assert (rb["strict_A"], rb["strict_B"], rb["lenient"]) == (0.5, 1.0, 1.0)
    assert ra["not_correct"]["wrong:small_talk_or_reaction"] == 1.0


def test_a_malformed_verdict_is_refused_by_name(setup: tuple[Any, Path, Path, Path, Path]) -> None:
    mod, data, a, b, folder = setup
    mod.build(folder, [a], data, "conv-x", batch_size=10, seed=1)
    (folder / "verdicts_b1_A.json").write_text(json.dumps([{"id": "x", "verdict": "maybe"}]))
    with pytest.raises(ValueError, match="verdict for 'x' must be one of"):
        mod.score(folder, [a])
