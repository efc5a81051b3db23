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

from chronomem.cli import main


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
    (tmp_path / "adir").mkdir()
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
    (("import", "{deep.json}", "--db", "{db}"), ("deep.json", "nested too deeply")),
    (("export", "--user", "u", "-o", "{adir}", "--db", "{db}"), ("--out", "is a directory")),
    (("export", "--user", "u", "-o", "{tmp}/no/such/dir/u.json", "--db", "{db}"), ("--out", "cannot be written")),
    (("export", "--user", "u", "-o", "/proc/u.json", "--db", "{db}"), ("--out", "cannot be written")),
    (("facts", "--user", "u", "--db", "{adir}"), ("not a usable chronomem database",)),
    (("facts", "--user", "u", "--as-of", "someday", "--db", "{db}"), ("as_of",)),
    (("facts", "--user", "u\ud800", "--db", "{db}"), ("user_id",)),
    (("forget", "--user", "u", "--fact", "nope", "--db", "{db}"), ("nope",)),
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
