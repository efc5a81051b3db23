"""Every CLI error is one line on stderr and exit status 2, never a traceback (issue #20 finding 7).

The cases run ``chronomem.cli.main`` in-process (the console script's entry point) and one
runs it as a subprocess, as a user would.
"""

from __future__ import annotations

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
    Memory(tmp_path / "m.db").close()  # an empty store: the read commands below fail on their input, not on --db
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
    (("export", "--user", "u", "-o", "{adir}", "--db", "{db}"), ("--out", "is a directory")),
    (("export", "--user", "u", "-o", "{tmp}/no/such/dir/u.json", "--db", "{db}"), ("--out", "cannot be written")),
    (("export", "--user", "u", "-o", "/proc/u.json", "--db", "{db}"), ("--out", "cannot be written")),
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
        rc, _, err = cli(capsys, "export", "--user", "u", "-o", str(target / "u.json"), "--db", files["db"])
        if rc == 0:  # running as root: the folder is writable anyway; then the file must be whole
            assert json.loads((target / "u.json").read_text())["user_id"] == "u"
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
    monkeypatch.setenv("CHRONOMEM_CONFIG", str(tmp_path / "absent.toml"))
    for location in (None, ":memory:", "sqlite:///:memory:", "postgresql://me@nowhere/db", "postgres://x/y"):
        require_existing_db(location)  # the default location, in-memory databases and servers: the store decides
    monkeypatch.setenv("CHRONOMEM_DB", "postgresql://me@nowhere/db")
    require_existing_db(None)
    monkeypatch.setenv("CHRONOMEM_DB", ":memory:")
    require_existing_db(None)
