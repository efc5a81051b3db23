"""Operator-facing settings of the CLI: secrets in what `migrate` prints, a mistyped CHRONOMEM_CONFIG, and
CHRONOMEM_LOG_LEVEL of `serve` (run in-process through Typer's runner)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from chronomem import Memory
from chronomem.cli import app
from chronomem.errors import ConfigError

runner = CliRunner()


def run(*args: str) -> Any:
    return runner.invoke(app, list(args), catch_exceptions=False)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty home folder, so the default database and config file are ours to look at."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for var in ("XDG_DATA_HOME", "CHRONOMEM_DB", "CHRONOMEM_CONFIG", "CHRONOMEM_LOG_LEVEL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("CHRONOMEM_LLM", "none")
    monkeypatch.setenv("CHRONOMEM_EMBEDDER", "none")
    (tmp_path / "home").mkdir()
    return tmp_path / "home"


@pytest.fixture
def uvicorn_runs(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """`serve` without a server: the log levels it would have handed uvicorn."""
    import uvicorn

    levels: list[Any] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: levels.append(kw.get("log_level")))
    return levels


# ------------------------------------------------------------------ migrate: the password stays out


def test_migrate_does_not_print_the_database_password(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import chronomem.cli.store_admin as store_admin

    real_open = store_admin.open_store

    def open_as_postgres(location: str) -> Any:  # a SQLite store that reports a PostgreSQL URL with a password
        store = real_open(location)
        store.url = "postgresql://postgres:hunter2pw@127.0.0.1/adv_ops?schema=leak&password=hunter3pw"
        return store

    monkeypatch.setattr(store_admin, "open_store", open_as_postgres)
    r = run("migrate", "--db", str(tmp_path / "m.db"))
    assert r.exit_code == 0 and "schema version" in r.output
    assert "hunter2pw" not in r.output and "hunter3pw" not in r.output
    assert "postgresql://postgres:***@127.0.0.1/adv_ops" in r.output


def test_migrate_shows_a_sqlite_location_as_it_is(tmp_path: Path) -> None:
    r = run("migrate", "--db", str(tmp_path / "m.db"))
    assert r.exit_code == 0 and f"sqlite:///{tmp_path / 'm.db'}: schema version" in r.output.replace("\n", "")


# ------------------------------------------------------------------ a CHRONOMEM_CONFIG that names no file


def test_a_mistyped_config_path_is_refused_not_ignored(home: Path, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch, uvicorn_runs: list) -> None:
    (tmp_path / "prod.toml").write_text(f'[memory]\ndb = "{tmp_path / "prod.db"}"\n')
    facts = tmp_path / "f.json"
    facts.write_text(json.dumps([{"subject": "Maya", "relation": "lives_in", "object": "Porto"}]))
    typo = tmp_path / "prod.tml"
    monkeypatch.setenv("CHRONOMEM_CONFIG", str(typo))
    for args in (("add-facts", str(facts), "--user", "u1"), ("facts", "--user", "u1"), ("serve",)):
        with pytest.raises(ConfigError, match=r"CHRONOMEM_CONFIG names no config file: .*prod\.tml does not exist"):
            run(*args)
    with pytest.raises(ConfigError, match="CHRONOMEM_CONFIG"):  # the Python API reads the same settings
        Memory()
    assert uvicorn_runs == [] and not list(tmp_path.rglob("*.db"))  # nothing served, no default database made
    monkeypatch.setenv("CHRONOMEM_CONFIG", str(tmp_path / "prod.toml"))  # the right path still works
    assert run("add-facts", str(facts), "--user", "u1").exit_code == 0
    assert (tmp_path / "prod.db").exists()


def test_a_missing_default_config_file_is_fine(home: Path, tmp_path: Path) -> None:
    assert not (home / ".config" / "chronomem" / "config.toml").exists()
    r = run("facts", "--user", "u1")  # the default database, in the (empty) home folder
    assert r.exit_code == 0 and "no facts" in r.output
    with Memory(tmp_path / "m.db") as m:
        assert m.facts(user_id="u1") == []


# ------------------------------------------------------------------ CHRONOMEM_LOG_LEVEL


@pytest.mark.parametrize("value", ["warn", "verbose", "10"])
def test_an_unknown_log_level_names_the_variable_and_the_choices(home: Path, tmp_path: Path, value: str,
                                                                 monkeypatch: pytest.MonkeyPatch,
                                                                 uvicorn_runs: list) -> None:
    monkeypatch.setenv("CHRONOMEM_LOG_LEVEL", value)
    with pytest.raises(ConfigError, match=rf"CHRONOMEM_LOG_LEVEL='{value}' .*critical, error, warning, info, debug"):
        run("serve", "--db", str(tmp_path / "m.db"), "--port", "18790")
    assert uvicorn_runs == [] and not (tmp_path / "m.db").exists()  # refused before the store is opened


@pytest.mark.parametrize(("value", "level"), [("DEBUG", "debug"), ("Warning", "warning"), ("", "info")])
def test_log_levels_are_taken_in_any_case(home: Path, tmp_path: Path, value: str, level: str,
                                          monkeypatch: pytest.MonkeyPatch, uvicorn_runs: list) -> None:
    monkeypatch.setenv("CHRONOMEM_LOG_LEVEL", value)
    assert run("serve", "--db", str(tmp_path / "m.db"), "--port", "18790").exit_code == 0
    assert uvicorn_runs == [level]
