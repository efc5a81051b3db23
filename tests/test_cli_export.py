"""``chronomem export -o PATH`` writes the file PATH names, whole or not at all, and no more widely readable.

It used to replace PATH with a new file: a symlink became a regular file (its target untouched), a
0600 file came back 0644 and a FIFO was replaced.  And an export of a user with nothing stored (a
wrong --user or --tenant) wrote an empty export with exit status 0, where ``forget --everything``
calls the same mistake an error.
"""

from __future__ import annotations

import json
import os
import stat
import threading
from pathlib import Path

import pytest
from test_cli_errors import cli

from chronomem import Memory


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("CHRONOMEM_CONFIG", os.devnull)
    monkeypatch.delenv("CHRONOMEM_TENANT", raising=False)
    path = str(tmp_path / "m.db")
    with Memory(path, embedder=False) as mem:
        mem.for_tenant("acme").add_facts([{"subject": "Maya", "relation": "likes", "object": "jazz"}], user_id="u1")
    return path


def exported_user(path: Path) -> str:
    return str(json.loads(path.read_text())["user_id"])


def test_a_symlink_stays_a_link_and_its_target_is_written(capsys, db: str, tmp_path: Path) -> None:
    target, link = tmp_path / "real.json", tmp_path / "link.json"
    target.write_text("")
    link.symlink_to(target.name)
    assert cli(capsys, "export", "--user", "u1", "--tenant", "acme", "-o", str(link), "--db", db)[0] == 0
    assert link.is_symlink() and os.readlink(link) == "real.json"
    assert exported_user(target) == "u1"
    dangling = tmp_path / "dangling.json"
    dangling.symlink_to("new.json")  # a link to a file not written yet: the file is created where it points
    assert cli(capsys, "export", "--user", "u1", "--tenant", "acme", "-o", str(dangling), "--db", db)[0] == 0
    assert dangling.is_symlink() and exported_user(tmp_path / "new.json") == "u1"


def test_an_existing_file_keeps_its_mode_and_a_new_one_is_private(capsys, db: str, tmp_path: Path) -> None:
    old_umask = os.umask(0o022)  # a umask that would make a plain new file 0644
    try:
        private, shared, new = tmp_path / "private.json", tmp_path / "shared.json", tmp_path / "new.json"
        private.write_text("")
        private.chmod(0o600)
        shared.write_text("")
        shared.chmod(0o640)
        for out in (private, shared, new):
            assert cli(capsys, "export", "--user", "u1", "--tenant", "acme", "-o", str(out), "--db", db)[0] == 0
            assert exported_user(out) == "u1"
        assert stat.S_IMODE(private.stat().st_mode) == 0o600
        assert stat.S_IMODE(shared.stat().st_mode) == 0o640
        assert stat.S_IMODE(new.stat().st_mode) == 0o600  # an export is a dump of someone's memory
        assert sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")) == []  # no leftovers
    finally:
        os.umask(old_umask)


def test_a_fifo_is_written_to_not_replaced(capsys, db: str, tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()  # a FIFO's writer waits for its reader: read it as a consumer process would
    rc, _, err = cli(capsys, "export", "--user", "u1", "--tenant", "acme", "-o", str(fifo), "--db", db)
    reader.join(10)
    assert rc == 0, err
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    assert got and json.loads(got[0])["user_id"] == "u1"


@pytest.mark.parametrize("args", [("--user", "u1"), ("--user", "u2", "--tenant", "acme")], ids=["tenant", "user"])
def test_exporting_a_user_with_nothing_stored_is_an_error(capsys, db: str, tmp_path: Path, args) -> None:
    out = tmp_path / "backup.json"
    rc, stdout, err = cli(capsys, "export", *args, "-o", str(out), "--db", db)
    assert rc == 2 and err.count("\n") == 1, err
    assert "has nothing stored in tenant" in err and "check --user, --tenant and --db" in err
    assert "nothing was exported" in err and not out.exists()
    rc, stdout, err = cli(capsys, "export", *args, "--db", db)  # to stdout: nothing written there either
    assert rc == 2 and stdout == ""
