"""benchmarks/snapshot.py: a benchmark run carried across machines, answers and ingestion alike."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from bench_scripts import load_script


def load_snapshot():
    return load_script("snapshot")


def write_cache(path: Path, rows: list[tuple[str, str]]) -> None:
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE responses (key TEXT PRIMARY KEY, body TEXT)")
    db.executemany("INSERT INTO responses VALUES (?, ?)", rows)
    db.commit()
    db.close()


def read_cache(path: Path) -> list[tuple[str, str]]:
    db = sqlite3.connect(path)
    try:
        return db.execute("SELECT key, body FROM responses ORDER BY key").fetchall()
    finally:
        db.close()


def test_answers_and_cache_round_trip(tmp_path: Path) -> None:
    snap = load_snapshot()
    run, saved, fresh = tmp_path / "run", tmp_path / "saved", tmp_path / "fresh"
    run.mkdir()
    (run / "results.jsonl").write_text('{"q": 1}\n{"q": 2}\n')
    (run / "runs.jsonl").write_text('{"run": 1}\n')
    write_cache(run / "llm-cache.sqlite", [("a", "x"), ("b", "y")])

    assert set(snap.save(run, saved)) == {"results.jsonl", "runs.jsonl", "llm-cache.sqlite.gz"}
    assert set(snap.restore(saved, fresh)) == {"results.jsonl", "runs.jsonl", "llm-cache.sqlite"}
    assert (fresh / "results.jsonl").read_text() == '{"q": 1}\n{"q": 2}\n'
    assert read_cache(fresh / "llm-cache.sqlite") == [("a", "x"), ("b", "y")]


def test_an_ingestion_under_way_is_carried_without_answers(tmp_path: Path) -> None:
    # a session that stops while the memories are still being written has only the cache to hand on
    snap = load_snapshot()
    run, saved, fresh = tmp_path / "run", tmp_path / "saved", tmp_path / "fresh"
    run.mkdir()
    write_cache(run / "llm-cache.sqlite", [("extract-1", "facts")])

    assert snap.save(run, saved) == ["llm-cache.sqlite.gz"]
    assert snap.restore(saved, fresh) == ["llm-cache.sqlite"]
    assert read_cache(fresh / "llm-cache.sqlite") == [("extract-1", "facts")]


def test_a_longer_journal_on_the_machine_is_kept(tmp_path: Path) -> None:
    snap = load_snapshot()
    run, saved = tmp_path / "run", tmp_path / "saved"
    saved.mkdir()
    run.mkdir()
    (saved / "results.jsonl").write_text('{"q": 1}\n')
    (run / "results.jsonl").write_text('{"q": 1}\n{"q": 2}\n')

    assert snap.restore(saved, run) == []
    assert (run / "results.jsonl").read_text() == '{"q": 1}\n{"q": 2}\n'


def test_a_folder_that_is_no_run_is_refused_by_name(tmp_path: Path) -> None:
    snap = load_snapshot()
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(SystemExit, match="empty: no journals or llm-cache.sqlite here"):
        snap.save(empty, tmp_path / "dest")
    with pytest.raises(SystemExit, match="empty: no journals or llm-cache.sqlite.gz here"):
        snap.restore(empty, tmp_path / "run")
    assert not (tmp_path / "dest").exists()


def test_an_unchanged_cache_saves_to_the_same_bytes(tmp_path: Path) -> None:
    # periodic saves (run_harness.sh SAVE_EVERY) must not turn an unchanged cache into a new blob
    snap = load_snapshot()
    run = tmp_path / "run"
    run.mkdir()
    write_cache(run / "llm-cache.sqlite", [("a", "x")])
    snap.save(run, tmp_path / "one")
    snap.save(run, tmp_path / "two")
    assert (tmp_path / "one" / "llm-cache.sqlite.gz").read_bytes() == (tmp_path / "two" / "llm-cache.sqlite.gz").read_bytes()
    db = sqlite3.connect(run / "llm-cache.sqlite")
    db.execute("INSERT INTO responses VALUES ('b', 'y')")
    db.commit()
    db.close()
    snap.save(run, tmp_path / "three")
    assert (tmp_path / "three" / "llm-cache.sqlite.gz").read_bytes() != (tmp_path / "one" / "llm-cache.sqlite.gz").read_bytes()
