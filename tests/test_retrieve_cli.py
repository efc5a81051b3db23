"""``chronomem ask``: search-only answers and a readable --explain trace (no model)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from chronomem import Memory
from chronomem.cli import app


def _db(tmp_path: Path) -> str:
    db = str(tmp_path / "m.db")
    with Memory(db, embedder=False) as m:
        m.add_facts([{"subject": "Rui", "relation": "sibling_of", "object": "Maya", "valid_from": "2017-03-01"},
                     {"subject": "Rui", "relation": "lives_in", "object": "Braga", "valid_from": "2017-03-01"},
                     {"subject": "Maya", "relation": "lives_in", "object": "Lisbon", "valid_from": "2020-09-01"}],
                    user_id="u1")
    return db


def test_ask_search_only_explain(tmp_path: Path) -> None:
    db = _db(tmp_path)
    r = CliRunner().invoke(app, ["ask", "Where does Maya's brother live?", "--user", "u1", "--db", db,
                                 "--search-only", "--no-embeddings", "--explain"], terminal_width=200)
    assert r.exit_code == 0, r.output
    out = r.output
    assert "Braga" in out and "search trace" in out
    assert "counterfactual" in out and "after global pruning" in out and "roots" in out
    assert "Maya -sibling_of*-> Rui -lives_in-> Braga" in out


def test_ask_json_with_trace(tmp_path: Path) -> None:
    db = _db(tmp_path)
    r = CliRunner().invoke(app, ["ask", "Where did Maya live?", "--user", "u1", "--db", db, "--as-of",
                                 "2019-01-01", "--search-only", "--no-embeddings", "--json", "--explain"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    assert data["answer"] is None
    assert data["evidence"] == [] or all(f["object"] != "Lisbon" for f in data["evidence"])
    assert data["trace"]["as_of"].startswith("2019-01-01")
