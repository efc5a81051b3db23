"""Every CLI error is one line on stderr and exit status 2, never a traceback (issue #20 finding 7).

The cases run ``chronomem.cli.main`` in-process (the console script's entry point) and one
runs it as a subprocess, as a user would.
"""

from __future__ import annotations

import os
import json
import subprocess
import sys
from pathlib import Path

import pytest

from chronomem import Memory
from chronomem.cli import main
from chronomem.cli.core import require_existing_db


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as e:
        main(list(args))
        raise SystemExit(0)
    out = capsys.readouterr()
    return int(e.value.code or 0), out.out, out.err


def one_line_error(rc: int, err: str, *needles: str) -> None:
    assert rc == 2, err
    assert err.endswith("\n") and err.count("\n") == 1 and err.startswith("error: "), err
    assert "Traceback" not in err
    for n in needles:
        assert n in err, (n, err)


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "empty.json").write_text("[]")
    (tmp_path / "two.json").write_text('[{"format": "chronomem.export"}, {"format": "chronomem.export"}]')
    (tmp_path / "broken.json").write_text('{"format": "chronomem.export", ')
    (tmp_path / "badrows.json").write_text(json.dumps(
        {"format": "chronomem.export", "version": 1, "user_id": "u",
         "tables": {"facts": [{"id": "f1", "subject": None}]}}))
    (tmp_path / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    (tmp_path / "deepfield.json").write_text('{"format": ' + "[" * 100_000 + "]" * 100_000 + "}")
    (tmp_path / "adir").mkdir()
    with Memory(tmp_path / "m.db") as mem:  # the read commands below fail on their input, not on --db
        mem.add_facts([{"subject": "Maya", "relation": "likes", "object": "jazz"}], user_id="e")  # e: exported
    return {p.name: str(p) for p in tmp_path.iterdir()} | {"db": str(tmp_path / "m.db"),
                                                           "tmp": str(tmp_path)}


@pytest.mark.parametrize("args, needles", [
    (("import", "{empty.json}", "--db", "{db}"), ("empty.json", "not a chronomem export")),
    (("import", "{two.json}", "--db", "{db}"), ("not a chronomem export",)),
    (("import", "{broken.json}", "--db", "{db}"), ("not valid JSON",)),
    (("import", "{badrows.json}", "--db", "{db}"), ("data.tables.facts[0]",)),
    (("import", "{adir}", "--db", "{db}"), ("adir", "cannot be read")),
    (("import", "{tmp}/missing.json", "--db", "{db}"), ("missing.json",)),
    (("add-facts", "{empty.json}", "--user", "u", "--db", "{db}"), ("holds no facts",)),
    (("add-facts", "{adir}", "--user", "u", "--db", "{db}"), ("cannot be read",)),
    (("add-facts", "{deep.json}", "--user", "u", "--db", "{db}"), ("deep.json", "nested too deeply")),
    (("import", "{deep.json}", "--db", "{db}"), ("deep.json", "not a chronomem export")),
    (("import", "{deepfield.json}", "--db", "{db}"), ("deepfield.json", "data.format", "nested too deeply")),
    (("export", "--user", "e", "-o", "{adir}", "--db", "{db}"), ("--out", "is a directory")),
    (("export", "--user", "e", "-o", "{tmp}/no/such/dir/u.json", "--db", "{db}"), ("--out", "cannot be written")),
    (("export", "--user", "e", "-o", "/proc/u.json", "--db", "{db}"), ("--out", "cannot be written")),
    (("export", "--user", "u", "--db", "{db}"), ("user 'u' has nothing stored in tenant 'default'",
                                                 "nothing was exported")),
    (("export", "--user", "e", "--tenant", "acme", "--db", "{db}"), ("user 'e' has nothing stored in tenant 'acme'",)),
    (("facts", "--user", "u", "--db", "{adir}"), ("not a usable chronomem database",)),
    (("facts", "--user", "u", "--as-of", "someday", "--db", "{db}"), ("as_of",)),
    (("facts", "--user", "u\ud800", "--db", "{db}"), ("user_id",)),
    (("forget", "--user", "u", "--fact", "nope", "--db", "{db}"), ("nope",)),
    (("forget", "--user", "u", "--db", "{db}"), ("--fact", "--session", "--everything")),
    (("forget", "--user", "u", "--everything", "--yes", "--db", "{db}"),
     ("user 'u' has nothing stored in tenant 'default'",)),
    (("forget", "--user", "u", "--everything", "--yes", "--tenant", "acme", "--db", "{db}"),
     ("user 'u' has nothing stored in tenant 'acme'",)),
    (("facts", "--user", "u", "--tenant", "no tenant", "--db", "{db}"), ("tenant", "no tenant")),
    (("ask", "q", "--user", "u", "--method", "best", "--db", "{db}"), ("--method", "real+rsum")),
    (("import",), ("Missing argument",)),
    (("facts", "--user"), ("requires an argument",)),
    (("no-such-command",), ("No such command",)),
])
def test_each_cli_error_is_one_line_and_exit_2(capsys, files, args, needles) -> None:
    for name, path in files.items():
        args = tuple(a.replace("{" + name + "}", path) for a in args)
    rc, _, err = cli(capsys, *args)
    one_line_error(rc, err, *needles)


def test_a_failed_export_leaves_no_partial_file(capsys, files) -> None:
    target = Path(files["tmp"]) / "ro"
    target.mkdir()
    target.chmod(0o500)
    try:
        rc, _, err = cli(capsys, "export", "--user", "e", "-o", str(target / "u.json"), "--db", files["db"])
        if rc == 0:  # running as root: the folder is writable anyway; then the file must be whole
            assert json.loads((target / "u.json").read_text())["user_id"] == "e"
        else:
            one_line_error(rc, err, "cannot be written")
            assert list(target.iterdir()) == []
    finally:
        target.chmod(0o700)


def test_the_console_script_prints_one_line_without_traceback(files) -> None:
    p = subprocess.run([sys.executable, "-c", "from chronomem.cli import main; main()", "import",
                        files["empty.json"], "--db", files["db"]], capture_output=True, text=True)
    one_line_error(p.returncode, p.stderr, "not a chronomem export")


MISSING_DB_READS = [
    ("facts", "--user", "u"),
    ("history", "--user", "u", "Maya"),
    ("forget", "--user", "u", "--everything", "--yes"),
    ("forget", "--user", "u", "--session", "s1"),
    ("export", "--user", "u"),
    ("ask", "Where?", "--user", "u", "--search-only"),
    ("session", "list", "--user", "u"),
    ("session", "end", "--user", "u", "--session", "s1"),
    ("session", "summary", "--user", "u"),
    ("session", "context", "{empty.json}", "--user", "u"),
    ("session", "end-idle", "--idle", "60"),
]


@pytest.mark.parametrize("args", MISSING_DB_READS, ids=" ".join)
def test_a_read_or_delete_command_refuses_a_database_that_does_not_exist(capsys, files, args) -> None:
    typo = Path(files["tmp"]) / "no-such-dir" / "mem.db"
    args = tuple(a.replace("{empty.json}", files["empty.json"]) for a in args)
    rc, out, err = cli(capsys, *args, "--db", str(typo))
    one_line_error(rc, err, "--db", str(typo), "does not exist")
    assert out == "" and not typo.parent.exists()  # nothing created, not even the folder


def test_the_database_in_the_environment_must_exist_too(capsys, files, monkeypatch) -> None:
    typo = Path(files["tmp"]) / "typo.db"
    monkeypatch.setenv("CHRONOMEM_DB", str(typo))
    rc, _, err = cli(capsys, "facts", "--user", "u")
    one_line_error(rc, err, "CHRONOMEM_DB", str(typo))
    assert not typo.exists()
    rc, _, err = cli(capsys, "facts", "--user", "u", "--db", f"sqlite:///{typo}")
    one_line_error(rc, err, "--db", str(typo))
    monkeypatch.setenv("CHRONOMEM_DB", files["db"])  # an existing one is read
    assert cli(capsys, "facts", "--user", "u")[0] == 0


def test_commands_that_create_data_still_create_the_database(capsys, files) -> None:
    tmp = Path(files["tmp"])
    facts, export = tmp / "facts.json", tmp / "u.json"
    facts.write_text(json.dumps([{"subject": "Maya", "relation": "likes", "object": "jazz"}]))
    assert cli(capsys, "add-facts", str(facts), "--user", "u", "--db", str(tmp / "a" / "m.db"))[0] == 0
    assert cli(capsys, "export", "--user", "u", "-o", str(export), "--db", str(tmp / "a" / "m.db"))[0] == 0
    assert cli(capsys, "import", str(export), "--db", str(tmp / "b" / "m.db"))[0] == 0
    assert (tmp / "a" / "m.db").exists() and (tmp / "b" / "m.db").exists()


def test_only_an_explicit_missing_file_is_refused(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("CHRONOMEM_DB", raising=False)
    monkeypatch.setenv("CHRONOMEM_CONFIG", os.devnull)
    for location in (None, ":memory:", "sqlite:///:memory:", "postgresql://me@nowhere/db", "postgres://x/y"):
        require_existing_db(location)  # the default location, in-memory databases and servers: the store decides
    monkeypatch.setenv("CHRONOMEM_DB", "postgresql://me@nowhere/db")
    require_existing_db(None)
    monkeypatch.setenv("CHRONOMEM_DB", ":memory:")
    require_existing_db(None)


# ------------------------------------------------------------------ the tester's findings (CLI issue list)


@pytest.mark.parametrize("args", [("copy", "{typo}", "{tmp}/dst.db"), ("keys", "list", "--db", "{typo}"),
                                  ("keys", "revoke", "abcdef", "--db", "{typo}")], ids=" ".join)
def test_admin_commands_that_only_read_refuse_a_missing_database(capsys, files, args) -> None:
    typo = Path(files["tmp"]) / "typo.db"
    args = tuple(a.replace("{typo}", str(typo)).replace("{tmp}", files["tmp"]) for a in args)
    rc, out, err = cli(capsys, *args)
    one_line_error(rc, err, str(typo), "does not exist", "SRC" if args[0] == "copy" else "--db")
    assert out == "" and not typo.exists() and not (Path(files["tmp"]) / "dst.db").exists()


def test_a_tilde_in_a_database_path_is_the_home_folder(capsys, files, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("CHRONOMEM_DB", raising=False)
    facts = tmp_path / "facts.json"
    facts.write_text(json.dumps([{"subject": "Maya", "relation": "likes", "object": "jazz"}]))
    assert cli(capsys, "add-facts", str(facts), "--user", "u", "--db", "~/sub/m.db")[0] == 0  # quoted: as typed
    assert (tmp_path / "home" / "sub" / "m.db").exists() and not Path("~").exists()
    rc, out, _ = cli(capsys, "facts", "--user", "u", "--json", "--db", "~/sub/m.db")
    assert rc == 0 and [f["object"] for f in json.loads(out)] == ["jazz"]
    config = tmp_path / "config.toml"
    config.write_text('[memory]\ndb = "~/sub/m.db"\n')
    monkeypatch.setenv("CHRONOMEM_CONFIG", str(config))
    rc, out, err = cli(capsys, "facts", "--user", "u", "--json")  # the config file's db, read-only command
    assert rc == 0 and [f["object"] for f in json.loads(out)] == ["jazz"], err
    monkeypatch.setenv("CHRONOMEM_DB", "~/sub/m.db")
    assert cli(capsys, "keys", "list")[0] == 0
    monkeypatch.setenv("CHRONOMEM_DB", "~/typo.db")
    one_line_error(*cli(capsys, "facts", "--user", "u")[::2], f"{tmp_path}/home/typo.db", "does not exist")


@pytest.mark.parametrize("setting, needles", [
    ({"file": 'theta_stable = "high"'}, ("theta_stable", "'high'", "in [memory] of")),
    ({"CHRONOMEM_THETA_STABLE": "abc"}, ("theta_stable", "'abc'", "from CHRONOMEM_THETA_STABLE")),
    ({"CHRONOMEM_THETA_STABLE": "nan"}, ("theta_stable", "from CHRONOMEM_THETA_STABLE")),
    ({"CHRONOMEM_SESSION_IDLE": "soon"}, ("session_idle", "from CHRONOMEM_SESSION_IDLE")),
], ids=["file", "env", "nan", "other"])
def test_a_bad_setting_is_named_with_where_it_came_from(capsys, files, tmp_path, monkeypatch, setting,
                                                       needles) -> None:
    config = tmp_path / "config.toml"
    config.write_text("[memory]\n" + setting.pop("file", "") + "\n")
    monkeypatch.setenv("CHRONOMEM_CONFIG", str(config))
    for name, value in setting.items():
        monkeypatch.setenv(name, value)
    rc, _, err = cli(capsys, "facts", "--user", "u", "--db", files["db"])
    one_line_error(rc, err, *needles)
    assert "unexpected" not in err


@pytest.mark.parametrize("value", ["0.7", "high", True])
def test_memory_names_a_theta_stable_that_is_no_number(tmp_path, monkeypatch, value) -> None:
    from chronomem.errors import ValidationError

    monkeypatch.setenv("CHRONOMEM_CONFIG", os.devnull)
    with pytest.raises(ValidationError) as e:
        Memory(":memory:", theta_stable=value, embedder=False)
    assert e.value.field == "theta_stable"


def test_serve_refuses_a_port_out_of_range_or_busy_before_starting(capsys, files, monkeypatch) -> None:
    import socket

    import uvicorn

    def no_server(*args: object, **kwargs: object) -> None:
        raise AssertionError("uvicorn must not start")

    monkeypatch.setattr(uvicorn, "run", no_server)
    for port in ("99999", "-1", "0"):
        rc, _, err = cli(capsys, "serve", "--port", port, "--db", files["db"])
        one_line_error(rc, err, "Invalid value for '--port'")
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = str(busy.getsockname()[1])
        rc, _, err = cli(capsys, "serve", "--port", port, "--db", files["db"])
    one_line_error(rc, err, f"--port={int(port)}", "cannot be bound on 127.0.0.1")


def test_input_files_name_the_broken_line_and_skip_a_byte_order_mark(capsys, files, tmp_path) -> None:
    jsonl = tmp_path / "partial.jsonl"
    jsonl.write_text('{"subject": "Zed", "relation": "lives_in", "object": "Oslo"}\n{"subject": "Zed",\n')
    rc, _, err = cli(capsys, "add-facts", str(jsonl), "--user", "u", "--db", files["db"])
    one_line_error(rc, err, "partial.jsonl", "at line 2 column")
    bom = b"\xef\xbb\xbf"
    facts = tmp_path / "bom.json"
    facts.write_bytes(bom + json.dumps([{"subject": "Zed", "relation": "likes", "object": "tea"}]).encode())
    assert cli(capsys, "add-facts", str(facts), "--user", "u", "--db", files["db"])[0] == 0
    conv = tmp_path / "conv_bom.json"
    conv.write_bytes(bom + json.dumps([{"speaker": "Ann", "text": "hi"}]).encode())
    rc, _, err = cli(capsys, "add", str(conv), "--user", "u", "--no-extract", "--db", files["db"])
    assert rc == 0, err
    chat = tmp_path / "chat_bom.json"
    chat.write_bytes(bom + json.dumps([{"role": "user", "content": "hi"}]).encode())
    rc, out, err = cli(capsys, "session", "context", str(chat), "--user", "u", "--db", files["db"])
    assert rc == 0 and json.loads(out), err
    shape = tmp_path / "shape.json"
    shape.write_text('{"foo": 1}')
    rc, _, err = cli(capsys, "add", str(shape), "--user", "u", "--db", files["db"])
    one_line_error(rc, err, "file='", "shape.json", "JSON object")
    assert "'dict'" not in err


def test_copy_names_a_tenant_user_as_a_person_reads_it(capsys, tmp_path) -> None:
    src, dst = str(tmp_path / "src.db"), str(tmp_path / "dst.db")
    with Memory(src, tenant="acme", embedder=False) as mem:
        mem.add_facts([{"subject": "Maya", "relation": "likes", "object": "jazz"}], user_id="maya")
    assert cli(capsys, "copy", src, dst)[0] == 0
    rc, _, err = cli(capsys, "copy", src, dst)
    one_line_error(rc, err, "maya (tenant acme)", "--replace")
    rc, _, err = cli(capsys, "copy", src, dst, "--user", "ghost", "--tenant", "acme")
    one_line_error(rc, err, "ghost (tenant acme)")
    assert "\\x1f" not in err


def test_ctrl_c_says_interrupted(capsys, files, tmp_path, monkeypatch) -> None:
    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(Memory, "add_facts", interrupted)
    facts = tmp_path / "facts.json"
    facts.write_text(json.dumps([{"subject": "Zed", "relation": "likes", "object": "tea"}]))
    rc, out, err = cli(capsys, "add-facts", str(facts), "--user", "u", "--db", files["db"])
    assert (rc, out, err) == (130, "", "error: interrupted\n")


@pytest.mark.parametrize("args, needles, absent", [
    (("ask", "Where?", "--user", "e"), ("--search-only", "CHRONOMEM_LLM"), "llm='local'"),
    (("alias", "--user", "e", "Maya", "jazz"), ("`chronomem merge`",), "merge_entities"),
    (("keys", "list", "--tenant", "bad/tenant"), ("tenant", "bad/tenant"), "Traceback"),
], ids=["ask", "alias", "keys"])
def test_errors_name_the_cli_not_python(capsys, files, monkeypatch, args, needles, absent) -> None:
    monkeypatch.setenv("CHRONOMEM_LLM", "none")
    rc, _, err = cli(capsys, *args, "--db", files["db"])
    one_line_error(rc, err, *needles)
    assert absent not in err


def test_alias_of_a_name_to_itself_says_so(capsys, files) -> None:
    rc, _, err = cli(capsys, "alias", "--user", "e", "Maya", "Maya", "--db", files["db"])
    assert rc == 0 and err == "'Maya' has no other name\n"
