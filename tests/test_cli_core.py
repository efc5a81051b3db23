"""The core CLI commands, run in-process through Typer's runner."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from chronomem import Memory
from chronomem.cli import app
from chronomem.errors import NotFoundError, ValidationError

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


def test_merge_makes_two_entities_one(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    f = tmp_path / "facts.jsonl"
    f.write_text("\n".join(json.dumps(x) for x in [
        {"subject": "Mom", "relation": "likes", "object": "tea"},
        {"subject": "Linda", "relation": "likes", "object": "tea"}]))
    run("add-facts", str(f), "--user", "u1", "--db", db)
    r = runner.invoke(app, ["merge", "--user", "u1", "Mom", "Linda", "--db", db])
    assert r.exit_code == 0 and "merged 'Mom' into 'Linda' (also 'Mom'): 1 fact moved, 1 of them" in r.output
    r = run("history", "--user", "u1", "Mom", "likes", "--json", "--db", db)
    assert [(x["subject"], x["object"]) for x in json.loads(r.output)] == [("Linda", "tea")]
    with pytest.raises(ValidationError, match="names the same entity"):  # `chronomem.cli.main`: exit 2
        run("merge", "--user", "u1", "Mom", "Linda", "--db", db)
    r = run("alias", "--user", "u1", "Linda", "Lin", "--db", db)
    assert r.exit_code == 0 and "'Linda' is also 'Lin', 'Mom'" in r.output
    r = run("facts", "--user", "u1", "--subject", "lin", "--json", "--db", db)
    assert [x["object"] for x in json.loads(r.output)] == ["tea"]


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
    r = run("import", str(out), "--user", "u9", "--db", db2)
    assert r.exit_code == 0 and "imported 2 entities, 2 entity_names, 1 facts" in r.output.replace("\n", " ")
    r = run("import", str(out), "--user", "u9", "--db", db2)  # again: nothing new, said so
    assert "imported nothing new; 5 row(s) were there already" in r.output.replace("\n", " ")
    r = run("facts", "--user", "u9", "--json", "--db", db2)
    assert [x["object"] for x in json.loads(r.output)] == ["jazz"]
    assert run("forget", "--user", "u9", "--everything", "--yes", "--db", db2).exit_code == 0
    assert json.loads(run("facts", "--user", "u9", "--json", "--db", db2).output) == []


def test_an_import_on_a_terminal_shows_the_bytes_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    from rich.console import Console

    from chronomem.cli import core

    db = str(tmp_path / "a.db")
    f = tmp_path / "facts.json"
    f.write_text(json.dumps([{"subject": "Maya", "relation": "likes", "object": "jazz"}]))
    run("add-facts", str(f), "--user", "u1", "--db", db)
    out = tmp_path / "export.json"
    run("export", "--user", "u1", "--out", str(out), "--db", db)
    screen = io.StringIO()
    monkeypatch.setattr(core, "status", Console(file=screen, force_terminal=True, width=100))
    assert run("import", str(out), "--user", "u2", "--db", db).exit_code == 0
    assert "importing export.json" in screen.getvalue()  # the bar, cleared when done


def test_forget_takes_the_short_id_the_tables_show(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    f = tmp_path / "facts.json"
    f.write_text(json.dumps([{"subject": "Maya", "relation": "likes", "object": "jazz", "id": "abcd1234ffff"},
                             {"subject": "Maya", "relation": "likes", "object": "tea", "id": "abcd1234eeee"},
                             {"subject": "Maya", "relation": "likes", "object": "chess", "id": "99990000aaaa"}]))
    run("add-facts", str(f), "--user", "u1", "--db", db)
    assert "99990000" in run("facts", "--user", "u1", "--db", db).output  # the table's short id
    r = run("forget", "--user", "u1", "--fact", "99990000", "--db", db)
    assert r.exit_code == 0 and "forgot 1 fact, 0 turns, 0 sessions" in r.output
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


def _two_tenants(tmp_path: Path) -> str:
    """A store where only tenant acme has a user u1 (Maya lives in Porto); beta has u1 too (Oslo)."""
    db = str(tmp_path / "m.db")
    f = tmp_path / "facts.json"
    f.write_text(json.dumps([{"subject": "Maya", "relation": "lives_in", "object": "Porto"}]))
    assert run("add-facts", str(f), "--user", "u1", "--tenant", "acme", "--db", db).exit_code == 0
    with Memory(db, tenant="beta") as mem:
        mem.add_facts([{"subject": "Maya", "relation": "lives_in", "object": "Oslo"}], user_id="u1")
    return db


def objects(output: str) -> list[str]:
    return sorted(x["object"] for x in json.loads(output))


def test_every_user_command_takes_a_tenant(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = _two_tenants(tmp_path)
    with Memory(db, tenant="acme") as mem:  # add-facts --tenant wrote into acme, not the default tenant
        assert [f.object for f in mem.facts(user_id="u1")] == ["Porto"]
    with Memory(db) as mem:
        assert mem.users() == [] and mem.tenants() == ["acme", "beta"]
    assert objects(run("facts", "--user", "u1", "--json", "--db", db).output) == []
    assert objects(run("facts", "--user", "u1", "--json", "--tenant", "acme", "--db", db).output) == ["Porto"]
    assert objects(run("history", "--user", "u1", "Maya", "--json", "--tenant", "beta", "--db", db).output) == ["Oslo"]
    r = run("facts", "--user", "u1", "--tenant", "acme", "--subject", "Nobody", "--db", db)
    assert "no facts about 'Nobody' for user 'u1' in tenant 'acme' valid now" in r.output
    monkeypatch.setenv("CHRONOMEM_TENANT", "beta")  # the environment names the tenant too; --tenant wins
    assert objects(run("facts", "--user", "u1", "--json", "--db", db).output) == ["Oslo"]
    assert objects(run("facts", "--user", "u1", "--json", "--tenant", "acme", "--db", db).output) == ["Porto"]
    monkeypatch.delenv("CHRONOMEM_TENANT")
    out = tmp_path / "u1.json"
    assert run("export", "--user", "u1", "--tenant", "acme", "-o", str(out), "--db", db).exit_code == 0
    assert run("import", str(out), "--user", "u2", "--tenant", "gamma", "--db", db).exit_code == 0
    assert objects(run("facts", "--user", "u2", "--json", "--tenant", "gamma", "--db", db).output) == ["Porto"]
    assert objects(run("facts", "--user", "u2", "--json", "--db", db).output) == []
    r = run("forget", "--user", "u1", "--everything", "--yes", "--tenant", "acme", "--db", db)
    assert r.exit_code == 0 and "forgot 1 fact" in r.output and "in tenant 'acme'" in r.output
    assert objects(run("facts", "--user", "u1", "--json", "--tenant", "acme", "--db", db).output) == []
    assert objects(run("facts", "--user", "u1", "--json", "--tenant", "beta", "--db", db).output) == ["Oslo"]


def test_forget_everything_of_a_user_with_nothing_stored_fails(tmp_path: Path) -> None:
    db = _two_tenants(tmp_path)
    r = runner.invoke(app, ["forget", "--user", "u1", "--everything", "--yes", "--db", db])
    assert r.exit_code != 0 and isinstance(r.exception, NotFoundError)
    assert "user 'u1' has nothing stored in tenant 'default'" in str(r.exception)
    r = runner.invoke(app, ["forget", "--user", "u1", "--everything", "--db", db], input="y\n")
    assert isinstance(r.exception, NotFoundError) and "Delete everything" not in r.output  # refused before asking
    assert objects(run("facts", "--user", "u1", "--json", "--tenant", "acme", "--db", db).output) == ["Porto"]


def test_forget_prints_a_readable_line_or_json(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    f = tmp_path / "facts.json"
    f.write_text(json.dumps([{"subject": "Maya", "relation": "lives_in", "object": "Porto", "id": "f1aaaaaa",
                              "valid_from": "2018-01-01"},
                             {"subject": "Maya", "relation": "lives_in", "object": "Lisbon", "id": "f2bbbbbb",
                              "valid_from": "2021-01-01"},
                             {"subject": "Maya", "relation": "likes", "object": "jazz", "id": "f3cccccc"}]))
    run("add-facts", str(f), "--user", "u1", "--db", db)
    r = run("forget", "--user", "u1", "--fact", "f2bbbbbb", "--db", db)
    assert r.exit_code == 0 and "ForgetResult" not in r.output and "=" not in r.output
    assert "forgot 1 fact, 0 turns, 0 sessions and 1 entity of user 'u1' in tenant 'default'" in r.output
    assert "1 fact it had closed holds again" in r.output  # Porto holds again
    r = run("forget", "--user", "u1", "--fact", "f3cccccc", "--json", "--db", db)
    data = json.loads(r.stdout)
    assert data["facts_deleted"] == 1 and data["reopened"] == 0 and data["warnings"] == []
    r = run("forget", "--user", "u1", "--everything", "--yes", "--json", "--db", db)
    assert json.loads(r.stdout)["facts_deleted"] == 1


@pytest.mark.parametrize("targets", [(), ("--fact", "f1", "--session", "s1"), ("--session", "s1", "--everything")])
def test_forget_names_its_cli_options_when_not_given_one_target(tmp_path: Path, targets: tuple[str, ...]) -> None:
    db = str(tmp_path / "m.db")
    Memory(db).close()
    r = runner.invoke(app, ["forget", "--user", "u1", *targets, "--db", db])
    assert r.exit_code == 2, r.output
    assert "--fact" in r.output and "--session" in r.output and "--everything" in r.output
    assert "fact_id" not in r.output and "everything=True" not in r.output


def test_forget_everything_asks_on_stderr_so_json_stays_json(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    with Memory(db) as mem:
        mem.add_facts([{"subject": "Maya", "relation": "likes", "object": "jazz"}], user_id="u1")
    r = runner.invoke(app, ["forget", "--user", "u1", "--everything", "--json", "--db", db], input="y\n")
    assert r.exit_code == 0, r.output
    assert r.stdout.startswith("{") and json.loads(r.stdout)["facts_deleted"] == 1  # the answer only
    assert "Delete everything stored for user 'u1'" in r.stderr
    r = runner.invoke(app, ["forget", "--user", "u2", "--everything", "--db", db], input="n\n")
    assert r.exit_code != 0  # nothing stored for u2: refused before asking
    with Memory(db) as mem:
        mem.add_facts([{"subject": "Maya", "relation": "likes", "object": "tea"}], user_id="u2")
    r = runner.invoke(app, ["forget", "--user", "u2", "--everything", "--json", "--db", db], input="n\n")
    assert r.exit_code != 0 and r.stdout == ""  # declined: nothing deleted, nothing on stdout
    assert objects(run("facts", "--user", "u2", "--json", "--db", db).output) == ["tea"]
