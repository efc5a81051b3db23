"""What users store, name and are told by a model prints as it is: never read as rich markup or emoji codes.

A fact object ``[/INST]`` made ``chronomem facts`` fail (rich's MarkupError), ``[red]wine`` printed as a
red "wine", ``:smile:`` as an emoji; a key named ``[/bold]``, a session ``[/x]``, a question or a model
answer holding ``[/b]`` broke ``keys list``, ``session list``, ``add`` (after it had stored everything)
and ``ask``.  The commands run in-process with exceptions not caught, so a MarkupError fails the test.
"""

from __future__ import annotations

import os
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_openai import FakeModelServer, Reply
from typer.testing import CliRunner

from chronomem import Memory
from chronomem.cli import app

runner = CliRunner()

HOSTILE = ["[/INST]", "[red]wine", ":smile:", ":thumbs_up:", "[b]tea[/b]", "back\\"]
EMOJI = ("😄", "👍")


def run(*args: str, stdin: str | None = None):  # type: ignore[no-untyped-def]
    return runner.invoke(app, list(args), input=stdin, catch_exceptions=False, terminal_width=200)


def shown_as_typed(output: str, *texts: str) -> None:
    for text in texts:
        assert text in output, (text, output)
    assert not any(e in output for e in EMOJI), output


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A store where u1 and the user "[/u]" hold a fact for each hostile object."""
    monkeypatch.setenv("CHRONOMEM_LLM", "none")
    monkeypatch.setenv("CHRONOMEM_EMBEDDER", "none")
    monkeypatch.setenv("CHRONOMEM_CONFIG", os.devnull)
    path = str(tmp_path / "m.db")
    facts = [{"subject": "Bob", "relation": "likes", "object": o} for o in HOSTILE]
    with Memory(path, embedder=False) as mem:
        mem.add_facts(facts, user_id="u1")
        mem.add_facts(facts[:1], user_id="[/u]")
    return path


def test_facts_and_history_show_stored_objects_as_typed(db: str) -> None:
    for args in (("facts", "--user", "u1"), ("history", "--user", "u1", "Bob"), ("facts", "--user", "[/u]")):
        r = run(*args, "--db", db)
        assert r.exit_code == 0, r.output
        shown_as_typed(r.output, *(HOSTILE if args[2] == "u1" else HOSTILE[:1]))
    assert "[/u]" in run("facts", "--user", "[/u]", "--db", db).output  # the title names the user as typed


def test_keys_list_shows_a_name_as_typed(db: str) -> None:
    for name in ("[/bold]", ":smile:"):
        assert run("keys", "create", "--tenant", "acme", "--name", name, "--db", db).exit_code == 0
    r = run("keys", "list", "--db", db)
    assert r.exit_code == 0
    shown_as_typed(r.output, "[/bold]", ":smile:")


def test_a_status_line_shows_a_name_as_typed(db: str) -> None:
    r = run("alias", "--user", "u1", "Bob", ":wink:", "--db", db)
    assert r.exit_code == 0
    shown_as_typed(r.output, "'Bob' is also ':wink:'")


def test_ask_explain_shows_the_question_and_context_as_typed(db: str) -> None:
    r = run("ask", "What does Bob like [/b]?", "--user", "u1", "--search-only", "--no-embeddings", "--explain",
            "--db", db)
    assert r.exit_code == 0
    shown_as_typed(r.output, "[/b]", "Bob -likes-> [/INST]", "Bob likes [b]tea[/b]", ":smile:")


@pytest.fixture
def model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeModelServer]:
    """The fake model server as the configured LLM; its answers (not extractions) hold markup."""
    def hostile_answer(body: dict[str, Any]) -> Reply | None:
        return None if "response_format" in body else Reply("Bob likes [/b] :smile: [red]wine")

    server = FakeModelServer(inject=hostile_answer)
    monkeypatch.setenv("CHRONOMEM_LLM", server.spec)
    monkeypatch.setenv("CHRONOMEM_LLM_API_KEY", "k")
    monkeypatch.setenv("CHRONOMEM_EMBEDDER", "none")
    monkeypatch.setenv("CHRONOMEM_CONFIG", os.devnull)
    monkeypatch.delenv("CHRONOMEM_REDIS_URL", raising=False)
    yield server
    server.close()


def test_ask_shows_the_models_answer_as_typed(db: str, model: FakeModelServer) -> None:
    r = run("ask", "What does Bob like?", "--user", "u1", "--method", "real", "--no-embeddings", "--db", db)
    assert r.exit_code == 0
    shown_as_typed(r.output, "Bob likes [/b] :smile: [red]wine")


def test_add_and_session_list_with_a_markup_session_id(tmp_path: Path, model: FakeModelServer) -> None:
    conv = tmp_path / "conv.json"
    conv.write_text(json.dumps([{"speaker": "Ann", "text": "I live in Paris.", "timestamp": "2021-03-01T10:00:00Z"}]))
    db = str(tmp_path / "m.db")
    r = run("add", str(conv), "--user", "u1", "--session", "[/x]", "--db", db)
    assert r.exit_code == 0 and "stored 1 message(s)" in r.output  # the progress line named "[/x]" too
    r = run("session", "list", "--user", "u1", "--db", db)
    assert r.exit_code == 0
    shown_as_typed(r.output, "[/x]")


def test_an_import_bar_names_the_file_as_typed(db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    from rich.console import Console

    from chronomem.cli import core

    export = tmp_path / "[red]x.json"
    assert run("export", "--user", "u1", "-o", str(export), "--db", db).exit_code == 0
    screen = io.StringIO()
    monkeypatch.setattr(core, "status", Console(file=screen, force_terminal=True, width=100))
    assert run("import", str(export), "--user", "u2", "--db", db).exit_code == 0
    assert "importing [red]x.json" in screen.getvalue()
