"""The core CLI commands, run in-process through Typer's runner."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from chronomem.cli import app

runner = CliRunner()


def run(*args: str):
    return runner.invoke(app, list(args), catch_exceptions=False)


def test_add_facts_then_facts_and_history(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    f = tmp_path / "facts.jsonl"
    f.write_text("\n".join(json.dumps(x) for x in [
        {"subject": "Maya", "relation": "lives_in", "object": "Porto", "valid_from": "2018-01-01"},
        {"subject": "Maya", "relation": "lives_in", "object": "Lisbon", "valid_from": "2021-01-01"}]))
    r = run("add-facts", str(f), "--user", "u1", "--db", db)
    assert r.exit_code == 0 and "added 2, closed 1" in r.output
    r = run("facts", "--user", "u1", "--subject", "maya", "--json", "--db", db)
    assert [x["object"] for x in json.loads(r.output)] == ["Lisbon"]
    r = run("facts", "--user", "u1", "--as-of", "2019-05-01", "--json", "--db", db)
    assert [x["object"] for x in json.loads(r.output)] == ["Porto"]
    r = run("history", "--user", "u1", "Maya", "lives_in", "--json", "--db", db)
    assert [x["object"] for x in json.loads(r.output)] == ["Porto", "Lisbon"]


def test_empty_answers_say_what_was_looked_for(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    f = tmp_path / "facts.json"
    f.write_text(json.dumps([{"subject": "Maya", "relation": "lives_in", "object": "Porto"}]))
    run("add-facts", str(f), "--user", "u1", "--db", db)
    r = run("history", "--user", "u1", "Nobody", "--db", db)
    assert r.exit_code == 0 and "no facts about 'Nobody' for user 'u1'" in r.output
    r = run("history", "--user", "u1", "[bold]Maya[/bold]", "--db", db)  # names are printed, not rendered
    assert "no facts about '[bold]Maya[/bold]'" in r.output
    r = run("history", "--user", "u2", "Maya", "lives_in", "--db", db)  # another user's facts stay invisible
    assert "no facts about 'Maya' with relation 'lives_in' for user 'u2'" in r.output
    r = run("facts", "--user", "u1", "--subject", "Maya", "--as-of", "1990-01-01", "--db", db)
    assert "no facts about 'Maya' for user 'u1' valid 1990-01-01" in r.output
    r = run("facts", "--user", "u1", "--subject", "Maya", "--db", db)  # and a hit still prints the table
    assert "Porto" in r.output and "no facts" not in r.output


def test_export_import_and_forget(tmp_path: Path) -> None:
    db, db2 = str(tmp_path / "a.db"), str(tmp_path / "b.db")
    f = tmp_path / "facts.json"
    f.write_text(json.dumps([{"subject": "Maya", "relation": "likes", "object": "jazz"}]))
    run("add-facts", str(f), "--user", "u1", "--db", db)
    out = tmp_path / "export.json"
    assert run("export", "--user", "u1", "--out", str(out), "--db", db).exit_code == 0
    assert run("import", str(out), "--user", "u9", "--db", db2).exit_code == 0
    r = run("facts", "--user", "u9", "--json", "--db", db2)
    assert [x["object"] for x in json.loads(r.output)] == ["jazz"]
    assert run("forget", "--user", "u9", "--everything", "--yes", "--db", db2).exit_code == 0
    assert json.loads(run("facts", "--user", "u9", "--json", "--db", db2).output) == []


def test_forget_takes_the_short_id_the_tables_show(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    f = tmp_path / "facts.json"
    f.write_text(json.dumps([{"subject": "Maya", "relation": "likes", "object": "jazz", "id": "abcd1234ffff"},
                             {"subject": "Maya", "relation": "likes", "object": "tea", "id": "abcd1234eeee"},
                             {"subject": "Maya", "relation": "likes", "object": "chess", "id": "99990000aaaa"}]))
    run("add-facts", str(f), "--user", "u1", "--db", db)
    assert "99990000" in run("facts", "--user", "u1", "--db", db).output  # the table's short id
    r = run("forget", "--user", "u1", "--fact", "99990000", "--db", db)
    assert r.exit_code == 0 and "facts_deleted=1" in r.output
    r = runner.invoke(app, ["forget", "--user", "u1", "--fact", "abcd1234", "--db", db])
    assert r.exit_code != 0 and "names 2 facts" in str(r.exception)  # ambiguous: nothing deleted
    r = run("facts", "--user", "u1", "--json", "--db", db)
    assert sorted(x["object"] for x in json.loads(r.output)) == ["jazz", "tea"]


def test_bad_input_gives_message_and_nonzero_exit(tmp_path: Path) -> None:
    import subprocess
    import sys

    db = str(tmp_path / "m.db")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"subject": "Maya", "relation": "lives_in", "object": "Porto",
                                "valid_from": "not a date"}]))
    cmd = [sys.executable, "-c", "from chronomem.cli import main; main()"]
    p = subprocess.run(cmd + ["add-facts", str(bad), "--user", "u1", "--db", db],
                       capture_output=True, text=True)
    assert p.returncode != 0
    assert "valid_from" in p.stderr and "Traceback" not in p.stderr
    broken = tmp_path / "broken.json"
    broken.write_text("[{oops")
    p = subprocess.run(cmd + ["add-facts", str(broken), "--user", "u1", "--db", db],
                       capture_output=True, text=True)
    assert p.returncode != 0 and "not valid JSON" in p.stderr
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"nope" * 1000)
    p = subprocess.run(cmd + ["facts", "--user", "u1", "--db", str(garbage)], capture_output=True, text=True)
    assert p.returncode != 0 and "not a usable chronomem database" in p.stderr and "Traceback" not in p.stderr


def test_demo_graph_runs_on_the_bundled_sample(tmp_path: Path) -> None:
    from chronomem import Memory
    from chronomem.cli.core import demo_graph

    with Memory(tmp_path / "d.db") as mem:
        demo_graph(mem)
        assert [f.object for f in mem.facts(user_id="demo", subject="Maya", relation="lives_in")] == ["Lisbon"]
        assert [f.object for f in mem.facts(user_id="demo", subject="Maya", relation="lives_in",
                                            as_of="2015-06-01")] == ["Oslo"]
        assert mem.facts(user_id="demo", subject="Maya", relation="has_pet") == []
        paris = mem.facts(user_id="demo", subject="Maya", relation="lives_in", include_unstable=True)
        assert "Paris" in [f.object for f in paris]


def test_models_show_names_the_llama_cpp_build(monkeypatch) -> None:
    import xllamacpp

    from chronomem.providers.local_llama import cpu_build

    monkeypatch.setattr(xllamacpp, "get_system_info", lambda: "CPU : SSE3 = 1 | AVX = 1 | AVX2 = 1 | AVX512 = 1 |")
    assert cpu_build() == "AVX-512"
    r = run("models", "show")
    assert r.exit_code == 0 and "llama.cpp kernels: AVX-512 (built for this CPU" in r.output
    monkeypatch.setattr(xllamacpp, "get_system_info", lambda: "CPU : SSE3 = 1 | AVX = 1 | AVX2 = 1 | FMA = 1 |")
    assert cpu_build() == "AVX2"
    assert "PyPI's portable wheel" in run("models", "show").output
