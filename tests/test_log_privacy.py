"""No user text in WARNING+ logs: forgetting a user cannot reach a log file.

A model whose replies echo the turns (as real ones do) and are unusable drives the real write
path (``openai`` provider → ``ChatLLM`` → ``WritePipeline`` over real HTTP to
:class:`fake_openai.FakeModelServer`): through ``Memory.add``, ``end_session`` of a buffered
session, and a queued job.  Every record at WARNING or above (its message and any traceback)
must be free of the turn's words; the raw reply stays available in
``StructuredOutputError.raw`` and at DEBUG.
"""

from __future__ import annotations

import json
import logging
import pickle
from collections.abc import Callable
from typing import Any

import pytest
from fake_openai import FakeModelServer, Reply, fact, turns_of

from chronomem import Config, Memory
from chronomem.errors import StructuredOutputError, TruncatedOutputError, ValidationError, log_reason
from chronomem.jobs import JobStatus
from chronomem.providers.chat import schema_problem
from chronomem.providers.structured import SchemaMismatch

MARKER = "Zqxv7731Marker"  # in the user's turn, and echoed by every reply of the "model"
TURN = [{"speaker": "Maya", "text": f"My secret word is {MARKER} and I live in Porto."}]


def echo(text: str) -> str:
    return text if MARKER in text else text + " " + MARKER


#: unusable replies, each echoing the turn: prose, JSON failing the schema (an enum value: v1's
#: schema, whose items the validator reads; an unknown key), and JSON cut off at the token limit
REPLIES: dict[str, Callable[[dict[str, Any]], Reply]] = {
    "prose": lambda body: Reply(f"Sure! Maya said: {echo(turns_of(body)[0][2])}"),
    "bad enum": lambda body: Reply(json.dumps({"facts": [{**fact("Maya", "likes", MARKER), "certainty": MARKER}]})),
    "bad key": lambda body: Reply(json.dumps({MARKER: [1], "lines": MARKER})),
    "cut off": lambda body: Reply(json.dumps({"lines": [{"line": 0, "fact": {
        "statement": echo(turns_of(body)[0][2]), "subject": "Maya"}}]})[:-20], "length"),
}
METHOD = {"bad enum": "v1"}  # the extraction method each reply is shaped for (else the default)


def memory(server: FakeModelServer, kind: str = "prose", **kw: Any) -> Memory:
    reply = REPLIES[kind]
    server.inject = lambda body: reply(body) if structured(body) else None
    config = Config(extraction=METHOD[kind]) if kind in METHOD else None
    return Memory(":memory:", llm=server.spec, embedder=False, config=config, **kw)


def structured(body: dict[str, Any]) -> bool:
    return body.get("response_format") is not None


def leaks(caplog: pytest.LogCaptureFixture) -> list[str]:
    """WARNING+ records whose message or traceback holds the marker."""
    out = []
    for r in caplog.records:
        if r.levelno < logging.WARNING:
            continue
        text = r.getMessage() + (caplog.handler.format(r) if r.exc_info else "")
        if MARKER in text:
            out.append(f"{r.levelname} {r.name}: {text}")
    return out


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


@pytest.mark.parametrize("kind", sorted(REPLIES))
def test_a_failed_extraction_logs_no_user_text(server: FakeModelServer, caplog: pytest.LogCaptureFixture,
                                               kind: str) -> None:
    caplog.set_level(logging.DEBUG)
    with memory(server, kind) as mem:
        res = mem.add(TURN, user_id="u1", session_id="s1")
    assert res.failed_chunks and res.facts_added == 0
    assert any(MARKER in json.dumps(r["messages"]) for r in server.extraction_requests())  # the turn was sent
    assert leaks(caplog) == []
    said = warnings_of(caplog)
    assert any("invalid structured output" in w for w in said)  # what failed is still logged ...
    assert any("extraction of" in w and "failed" in w for w in said)
    # ... and the reply, at DEBUG only (documented in chronomem.providers.chat)
    assert any(MARKER in r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG)
    # the error a caller sees (AddResult, job records, REST bodies) does not quote the reply either
    assert all(MARKER not in c.error and MARKER not in c.reason for c in res.failed_chunks)
    assert res.failed_chunks[0].reason.startswith(("StructuredOutputError", "TruncatedOutputError"))


def test_the_warning_says_what_was_wrong(server: FakeModelServer, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    with memory(server, "prose") as mem:
        mem.add(TURN, user_id="u1", session_id="s1")
    said = "\n".join(warnings_of(caplog))
    assert "not valid JSON at char 0" in said and "attempt 3" in said
    assert "extraction of 1 turn(s) failed: StructuredOutputError" in said
    caplog.clear()
    with memory(server, "bad enum") as mem:
        mem.add(TURN, user_id="u1", session_id="s1")
    assert "does not match the schema at $.facts[0].certainty (1 error(s))" in "\n".join(warnings_of(caplog))


def test_ending_a_buffered_session_whose_extraction_fails_logs_no_user_text(
        server: FakeModelServer, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    with memory(server, "bad enum", buffer=True) as mem:
        mem.add(TURN, user_id="u1", session_id="s1")
        end = mem.end_session(user_id="u1", session_id="s1")
    assert not end.ended
    assert any("not marked ended" in w for w in warnings_of(caplog))
    assert leaks(caplog) == []


def test_a_failed_job_logs_and_records_no_user_text(server: FakeModelServer, caplog: pytest.LogCaptureFixture,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CHRONOMEM_QUEUE_URL", raising=False)
    monkeypatch.delenv("CHRONOMEM_REDIS_URL", raising=False)
    caplog.set_level(logging.DEBUG)
    with memory(server, "prose") as mem:
        job = mem.wait(mem.submit_messages(TURN, user_id="u1", session_id="s1"), timeout=120)
    assert job.status is JobStatus.FAILED and job.error and MARKER not in job.error
    assert leaks(caplog) == []


def test_the_raw_reply_stays_on_the_error_not_in_its_message(server: FakeModelServer) -> None:
    with memory(server, "prose") as mem:
        with pytest.raises(StructuredOutputError) as ei:
            mem.llm.chat([{"role": "user", "content": f"Turns:\n[0] Maya: {MARKER}"}],
                         schema={"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]})
    e = ei.value
    assert MARKER in e.raw and MARKER not in str(e) and MARKER not in repr(e)
    assert "no valid structured output after 3 attempts" in str(e) and "not valid JSON" in str(e)
    back = pickle.loads(pickle.dumps(e))
    assert type(back) is StructuredOutputError and back.raw == e.raw and str(back) == str(e)


def test_structured_output_errors_keep_raw_out_of_str() -> None:
    for cls in (StructuredOutputError, TruncatedOutputError):
        e = cls("model: no valid structured output after 3 attempts (it was cut off)", f'{{"a": "{MARKER}')
        assert e.raw.endswith(MARKER) and MARKER not in str(e) and MARKER not in repr(e)
        assert log_reason(e) == f"{cls.__name__}: {e}"


def test_log_reason_quotes_only_messages_known_to_hold_no_user_text() -> None:
    assert log_reason(ValidationError("messages[0].text", MARKER, f"{MARKER} is bad")) == \
        "ValidationError on messages[0].text"
    assert log_reason(KeyError(MARKER)) == "KeyError"
    assert log_reason(RuntimeError(MARKER)) == "RuntimeError"


def test_schema_problems_name_paths_not_values() -> None:
    schema = {"type": "object", "properties": {"facts": {"type": "array", "items": {
        "type": "object", "properties": {"relation": {"enum": ["lives_in"]}}}}}}
    err = SchemaMismatch([f"$.facts[0].relation: {MARKER!r} is not one of ['lives_in']",
                          f"$.facts.1.{MARKER}: Extra inputs are not permitted",  # pydantic's loc form
                          f"$.facts[2].relation: {MARKER!r} is not one of ['lives_in']",
                          "$: missing required property 'facts'"])
    said = schema_problem(err, schema)
    assert MARKER not in said
    assert said == ("it does not match the schema at $.facts[0].relation, $.facts[1].<key>, "
                    "$.facts[2].relation and 1 more (4 error(s))")


def test_a_provider_error_quoting_the_turn_is_logged_at_debug_only(server: FakeModelServer,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    """A provider's error body may quote the request ("invalid content: Maya said …"): the retry's
    WARNING quoted it, and logs outlive a forget."""
    caplog.set_level(logging.DEBUG)
    server.inject = lambda body: Reply(f"upstream rejected: {echo(turns_of(body)[0][2])}", status=500) \
        if structured(body) else None
    with Memory(":memory:", llm=server.spec, embedder=False) as mem:
        res = mem.add(TURN, user_id="u1", session_id="s1")
    assert res.failed_chunks
    assert leaks(caplog) == []
    assert any("retry" in w and "HTTP 500" in w for w in warnings_of(caplog))  # what failed is still said
