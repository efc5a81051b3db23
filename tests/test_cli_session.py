"""``chronomem session end|summary|context|end-idle``, with the fake OpenAI-compatible model server
as the configured LLM; errors are one line on stderr and exit status 2."""

from __future__ import annotations

import os
import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_extract_pipeline import conv
from test_mcp_transports import SUMMARY, FakeOpenAI
from test_memory_sessions import SessionLLM
from typer.testing import CliRunner

from chronomem import Memory
from chronomem.cli import app, main

runner = CliRunner()


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A store where u1 said two things in session s1 (stored and extracted, not ended)."""
    llm = FakeOpenAI()
    monkeypatch.setenv("CHRONOMEM_LLM", f"openai:fake@{llm.url}")
    monkeypatch.setenv("CHRONOMEM_LLM_API_KEY", "k")
    monkeypatch.setenv("CHRONOMEM_EMBEDDER", "none")
    monkeypatch.setenv("CHRONOMEM_CONFIG", os.devnull)
    monkeypatch.delenv("CHRONOMEM_REDIS_URL", raising=False)
    path = str(tmp_path / "m.db")
    with Memory(path, llm=SessionLLM(), embedder=False) as mem:
        mem.add(conv("I live in Berlin and work at Acme.", "Nice!", ts="2023-01-10T10:00:00Z"), user_id="u1",
                session_id="s1")
    yield path
    llm.close()


def run(*args: str):  # type: ignore[no-untyped-def]
    return runner.invoke(app, list(args), catch_exceptions=False)


def run_main(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, *args: str) -> tuple[int, str, str]:
    """The installed entry point (error handling included)."""
    monkeypatch.setattr(sys, "argv", ["chronomem", *args])
    with pytest.raises(SystemExit) as ex:
        main()
    out = capsys.readouterr()
    return int(ex.value.code or 0), out.out, out.err


def test_end_then_summary(db: str) -> None:
    r = run("session", "summary", "--user", "u1", "--db", db)
    assert r.exit_code == 0 and "no session has ended yet" in r.output
    r = run("session", "end", "--user", "u1", "--session", "s1", "--ended-at", "2023-01-10T11:00:00Z", "--db", db)
    assert r.exit_code == 0 and SUMMARY in r.output
    r = run("session", "summary", "--user", "u1", "--db", db)
    assert r.exit_code == 0 and r.output.strip() == SUMMARY
    r = run("session", "summary", "--user", "u1", "--as-of", "2023-01-01", "--db", db)
    assert SUMMARY not in r.output and "as of 2023-01-01" in r.output
    with Memory(db, embedder=False) as mem:
        (s1,) = mem.store.sessions("u1")
        assert s1.ended_at is not None and s1.ended_at.isoformat().startswith("2023-01-10T11:00")
    r = run("session", "end", "--user", "u1", "--session", "s1", "--json", "--db", db)
    assert json.loads(r.output) == {"session_id": "s1", "turns_flushed": 0, "turns_stored": 0, "summary": SUMMARY}


def test_context_prints_the_compacted_messages(db: str, tmp_path: Path) -> None:
    run("session", "end", "--user", "u1", "--session", "s1", "--db", db)
    chat = [{"role": "user", "content": "hello " * 50}, {"role": "assistant", "content": "hi " * 50},
            {"role": "user", "content": "Where do I live?"}]
    f = tmp_path / "chat.json"
    f.write_text(json.dumps({"messages": chat}))
    r = run("session", "context", str(f), "--user", "u1", "--budget", "80", "--db", db)
    assert r.exit_code == 0
    out = json.loads(r.output)
    assert out[0]["role"] == "system" and SUMMARY in out[0]["content"]
    assert out[-1] == {"role": "user", "content": "Where do I live?"}
    assert len(out) < len(chat) + 1  # something was compacted away to fit 80 tokens


def test_end_idle(db: str) -> None:
    r = run("session", "end-idle", "--idle", "0.000001", "--db", db)
    assert r.exit_code == 0 and "ended u1/s1" in r.output
    assert run("session", "end-idle", "--idle", "0.000001", "--db", db).output == ""


def test_errors_are_one_line_and_exit_2(db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    bad = [
        (("session", "summary", "--user", "u1", "--as-of", "next [bold]tuesday[/]", "--db", db), "as_of"),
        (("session", "end", "--user", "u1", "--session", " ", "--db", db), "session_id"),
        (("session", "context", str(tmp_path / "missing.json"), "--user", "u1", "--db", db), "cannot be read"),
        (("session", "context", str(tmp_path / "chat.json"), "--user", "u1", "--budget", "0", "--db", db),
         "--budget"),  # the option, not Memory.context's budget_tokens
        (("session", "end-idle", "--db", db), "CHRONOMEM_SESSION_IDLE"),
        (("session", "end-idle", "--db", db), "--idle"),  # not "pass idle_seconds"
        (("session", "end-idle", "--idle", "-5", "--db", db), "--idle"),
    ]
    (tmp_path / "chat.json").write_text(json.dumps([{"role": "user", "content": "hi"}]))
    for args, named in bad:
        code, out, err = run_main(capsys, monkeypatch, *args)
        assert code == 2, (args, err)
        assert err.startswith("error: ") and named in err and err.count("\n") == 1, (args, err)
    # the markup-looking input came back verbatim, not styled away
    code, out, err = run_main(capsys, monkeypatch, *bad[0][0])
    assert "[bold]tuesday[/]" in err
    # nothing was ended by the failed calls
    with Memory(db, embedder=False) as mem:
        assert [s.ended_at for s in mem.store.sessions("u1")] == [None]


def test_cli_add_goes_through_memory_add(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from chronomem.extract.chunking import chunk_turns
    from chronomem.extract.formats import load_conversations, sample_conversation_path

    llm = FakeOpenAI()
    monkeypatch.setenv("CHRONOMEM_LLM", f"openai:fake@{llm.url}")
    monkeypatch.setenv("CHRONOMEM_LLM_API_KEY", "k")
    monkeypatch.setenv("CHRONOMEM_EMBEDDER", "none")
    monkeypatch.setenv("CHRONOMEM_CONFIG", os.devnull)
    monkeypatch.delenv("CHRONOMEM_REDIS_URL", raising=False)
    calls: list[str | None] = []
    real_add = Memory.add

    def spy(self, messages, **kw):  # type: ignore[no-untyped-def]
        calls.append(kw.get("session_id"))
        return real_add(self, messages, **kw)

    monkeypatch.setattr(Memory, "add", spy)
    db = str(tmp_path / "m.db")
    try:
        r = run("add", str(sample_conversation_path()), "--user", "maya", "--chunk-size", "2", "--db", db)
        assert r.exit_code == 0, r.output
    finally:
        llm.close()
    (conv,) = load_conversations(sample_conversation_path())
    assert calls == [s.session_id for s in conv.sessions]  # one Memory.add per session
    extraction_calls = [q for q in llm.requests if "response_format" in q]
    expected = sum(len(chunk_turns(s.messages, size=2)) for s in conv.sessions)
    assert len(extraction_calls) == expected > sum(len(chunk_turns(s.messages)) for s in conv.sessions)
    with Memory(db, embedder=False) as mem:
        assert len(mem.store.messages("maya")) == 17 and mem.store.messages("maya", pending_only=True) == []


def _acme_session(db: str) -> None:
    """Tenant acme's user u1 (not the default tenant's u1) with an open session s2."""
    with Memory(db, tenant="acme", llm=SessionLLM(), embedder=False) as mem:
        mem.add(conv("I moved to Munich.", "Wow!", prefix="a", ts="2023-02-01T10:00:00Z"), user_id="u1",
                session_id="s2")


def test_end_idle_sweeps_every_tenant_unless_given_one(db: str) -> None:
    _acme_session(db)
    r = run("session", "end-idle", "--idle", "0.000001", "--tenant", "acme", "--db", db)
    assert r.exit_code == 0 and r.output == "ended u1/s2 in tenant acme\n"
    with Memory(db, tenant="acme", embedder=False) as mem:
        mem.add(conv("Still in Munich.", prefix="b"), user_id="u1", session_id="s3")
    r = run("session", "end-idle", "--idle", "0.000001", "--db", db)
    assert r.exit_code == 0 and r.output.splitlines() == ["ended u1/s1", "ended u1/s3 in tenant acme"]
    for tenant in ("default", "acme"):
        with Memory(db, tenant=tenant, embedder=False) as mem:
            assert all(s.ended_at is not None for s in mem.sessions(user_id="u1"))


def test_session_list(db: str) -> None:
    _acme_session(db)
    r = run("session", "list", "--user", "u1", "--json", "--db", db)
    assert r.exit_code == 0
    assert json.loads(r.stdout) == [{"id": "s1", "started_at": "2023-01-10T10:00:00+00:00", "ended_at": None,
                                     "agent_id": None}]
    run("session", "end", "--user", "u1", "--session", "s2", "--tenant", "acme", "--ended-at", "2023-02-01T12:00:00Z",
        "--db", db)
    (s2,) = json.loads(run("session", "list", "--user", "u1", "--json", "--tenant", "acme", "--db", db).stdout)
    assert s2["id"] == "s2" and s2["ended_at"] == "2023-02-01T12:00:00+00:00"
    r = run("session", "list", "--user", "u1", "--tenant", "acme", "--db", db)
    assert r.exit_code == 0 and "s2" in r.stdout and "2023-02-01T12:00:00" in r.stdout
    r = run("session", "list", "--user", "nobody", "--db", db)
    assert r.exit_code == 0 and r.stdout == "" and "no sessions for user 'nobody'" in r.output


def test_session_commands_take_a_tenant(db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _acme_session(db)
    r = run("session", "end", "--user", "u1", "--session", "s2", "--db", db)  # the default tenant has no s2
    assert r.exit_code == 0 and "the summary is unchanged" in r.output
    r = run("session", "end", "--user", "u1", "--session", "s2", "--tenant", "acme", "--json", "--db", db)
    assert json.loads(r.stdout) == {"session_id": "s2", "turns_flushed": 0, "turns_stored": 0, "summary": SUMMARY}
    assert run("session", "summary", "--user", "u1", "--db", db).stdout == ""
    assert run("session", "summary", "--user", "u1", "--tenant", "acme", "--db", db).stdout.strip() == SUMMARY
    monkeypatch.setenv("CHRONOMEM_TENANT", "acme")
    f = tmp_path / "chat.json"
    f.write_text(json.dumps([{"role": "user", "content": "Where do I live?"}]))
    out = json.loads(run("session", "context", str(f), "--user", "u1", "--db", db).stdout)
    assert out[0]["role"] == "system" and SUMMARY in out[0]["content"]


def test_session_end_reports_the_keys_of_the_mcp_tool(db: str) -> None:
    from test_mcp import call

    from chronomem.server.mcp import build_mcp

    cli_keys = set(json.loads(run("session", "end", "--user", "u1", "--session", "s1", "--json", "--db", db).stdout))
    with Memory(db, llm=SessionLLM(), embedder=False) as mem:
        mem.add(conv("I moved to Munich.", prefix="m"), user_id="u1", session_id="s9")
        out = call(build_mcp(mem, "u1"), "end_session", {"session_id": "s9"})
    assert isinstance(out, dict) and set(out) == cli_keys == {"session_id", "turns_flushed", "turns_stored", "summary"}


def test_ask_takes_the_answer_method_and_a_tenant(db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[str, str]] = []
    real_answer = Memory.answer

    def spy(self, question, **kw):  # type: ignore[no-untyped-def]
        seen.append((self.tenant, kw["method"]))
        return real_answer(self, question, **kw)

    monkeypatch.setattr(Memory, "answer", spy)
    for args in ((), ("--method", "rsum"), ("--method", "real", "--tenant", "acme")):
        r = run("ask", "Where does Maya live?", "--user", "u1", "--json", "--no-embeddings", *args, "--db", db)
        assert r.exit_code == 0, r.output
        assert json.loads(r.stdout)["answer"] in (SUMMARY, "Not mentioned")  # rsum: no summary yet
    assert seen == [("default", "real+rsum"), ("default", "rsum"), ("acme", "real")]
