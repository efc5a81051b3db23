"""The MCP server's tools, called in-process through the MCP server API."""

from __future__ import annotations

import asyncio
import json

import pytest
from mcp.server.mcpserver.exceptions import ToolError
from test_extract_pipeline import ScriptedLLM

from chronomem import Memory
from chronomem.server.mcp import build_mcp


def call(server, name: str, args: dict) -> object:
    res = asyncio.run(server.call_tool(name, args))
    content = getattr(res, "structuredContent", None) or getattr(res, "structured_content", None)
    if content is None:
        content = json.loads(res.content[0].text)
    return content.get("result", content) if isinstance(content, dict) else content


def test_tools_are_listed_and_scoped_to_one_user(tmp_path) -> None:
    with Memory(tmp_path / "m.db", llm=ScriptedLLM(), embedder=False) as mem:
        mem.add_facts([{"subject": "Maya", "relation": "lives_in", "object": "Porto"}], user_id="other")
        server = build_mcp(mem, "u1")
        names = {t.name for t in asyncio.run(server.list_tools())}
        assert {"remember", "recall", "answer", "timeline", "sessions", "end_session", "summary", "forget"} <= names
        out = call(server, "remember", {"text": "I live in Berlin and work at Acme.", "speaker": "Maya"})
        assert sorted(f["object"] for f in out["added"]) == ["Acme", "Berlin"]
        tl = call(server, "timeline", {"subject": "Maya"})["items"]
        assert sorted(f["object"] for f in tl) == ["Acme", "Berlin"]  # not the other user's Porto
        rec = call(server, "recall", {"query": "Where does Maya live?"})
        assert "Berlin" in rec["context"] and "Porto" not in rec["context"]


def test_an_agent_merges_two_names_the_user_says_are_one(tmp_path) -> None:
    with Memory(tmp_path / "m.db", llm=ScriptedLLM(), embedder=False) as mem:
        mem.add_facts([{"subject": "Mom", "relation": "lives_in", "object": "Boston"},
                       {"subject": "Linda", "relation": "likes", "object": "tea"}], user_id="u1")
        mem.add_facts([{"subject": "Mom", "relation": "likes", "object": "jazz"}], user_id="other")
        server = build_mcp(mem, "u1")
        out = call(server, "merge_entities", {"name": "Mom", "into": "Linda"})
        assert (out["entity"]["name"], out["entity"]["aliases"], out["facts_moved"]) == ("Linda", ["Mom"], 1)
        assert sorted(f["object"] for f in call(server, "timeline", {"subject": "Mom"})["items"]) == ["Boston", "tea"]
        with pytest.raises(ToolError, match="no entity named 'Grandma'"):
            asyncio.run(server.call_tool("merge_entities", {"name": "Grandma", "into": "Linda"}))
        assert sorted(e.name for e in mem.entities(user_id="other")) == ["Mom", "jazz"]  # another user's Mom stays


def test_remember_and_answer_return_facts_with_ids_and_dates(tmp_path, monkeypatch) -> None:
    from test_memory_sessions import SessionLLM

    with Memory(tmp_path / "m.db", llm=SessionLLM(), embedder=False) as mem:
        server = build_mcp(mem, "u1")
        out = call(server, "remember", {"text": "I live in Berlin and work at Acme.", "speaker": "Maya",
                                        "timestamp": "2023-01-10T10:00:00Z"})
        added = out["added"]
        assert sorted(f["object"] for f in added) == ["Acme", "Berlin"] and len({f["id"] for f in added}) == 2
        assert all(f["valid_from"].startswith("2023-01-10") and f["valid_to"] is None and "confidence" in f
                   for f in added)
        berlin = next(f for f in added if f["object"] == "Berlin")
        moved = call(server, "remember", {"text": "I moved to Munich.", "speaker": "Maya",
                                          "timestamp": "2024-03-01T10:00:00Z"})
        assert [f["id"] for f in moved["closed"]] == [berlin["id"]] and moved["closed"][0]["valid_to"]
        seen: list[str] = []
        real_answer = Memory.answer

        def spy(self, question, **kw):  # type: ignore[no-untyped-def]
            seen.append(kw["method"])
            return real_answer(self, question, **kw)

        monkeypatch.setattr(Memory, "answer", spy)
        ans = call(server, "answer", {"question": "Where does Maya live now?", "method": "real"})
        assert ans["answer"] == "Munich" and any(f["object"] == "Munich" and f["id"] for f in ans["evidence"])
        call(server, "answer", {"question": "Where does Maya live?"})
        assert seen == ["real", "real+rsum"]
        with pytest.raises(ToolError, match="real\\+rsum"):  # the transport sends it as an error result
            asyncio.run(server.call_tool("answer", {"question": "x", "method": "best"}))
        gone = call(server, "forget", {"fact_id": next(f["id"] for f in added if f["object"] == "Acme")})
        assert gone["facts_deleted"] == 1


def test_sessions_end_session_and_forget_everything(tmp_path) -> None:
    from test_memory_sessions import SessionLLM

    with Memory(tmp_path / "m.db", llm=SessionLLM(), embedder=False) as mem:
        server = build_mcp(mem, "u1")
        assert {"sessions", "forget"} <= {t.name for t in asyncio.run(server.list_tools())}
        assert call(server, "sessions", {}) == {"items": [], "next_cursor": None}
        call(server, "remember", {"text": "I live in Berlin.", "speaker": "Maya", "session_id": "s1",
                                  "timestamp": "2023-01-10T10:00:00Z"})
        assert call(server, "sessions", {})["items"] == [{"id": "s1", "started_at": "2023-01-10T10:00:00+00:00",
                                                          "ended_at": None, "agent_id": None}]
        end = call(server, "end_session", {"session_id": "s1", "ended_at": "2023-01-10T11:00:00Z"})
        assert set(end) == {"session_id", "turns_flushed", "turns_stored", "summary"} and end["summary"]
        assert call(server, "sessions", {})["items"][0]["ended_at"] == "2023-01-10T11:00:00+00:00"
        mem.add_facts([{"subject": "Maya", "relation": "lives_in", "object": "Porto"}], user_id="other")
        gone = call(server, "forget", {"everything": True})
        assert gone["facts_deleted"] == 1 and gone["sessions_deleted"] == 1 and gone["messages_deleted"] == 1
        assert call(server, "sessions", {})["items"] == []
        assert call(server, "timeline", {"subject": "Maya"})["items"] == []
        assert [f.object for f in mem.facts(user_id="other")] == ["Porto"]  # only this server's user


def test_the_server_serves_the_tenant_of_its_memory(tmp_path) -> None:
    with Memory(tmp_path / "m.db", llm=ScriptedLLM(), embedder=False) as mem:
        mem.add_facts([{"subject": "Maya", "relation": "lives_in", "object": "Porto"}], user_id="u1")
        acme = mem.for_tenant("acme")
        acme.add_facts([{"subject": "Maya", "relation": "lives_in", "object": "Oslo"}], user_id="u1")
        tl = call(build_mcp(acme, "u1"), "timeline", {"subject": "Maya"})["items"]
        assert [f["object"] for f in tl] == ["Oslo"]
        acme.close()


def test_an_agent_reads_what_a_fact_says_and_the_ids_to_forget_not_its_bookkeeping(tmp_path) -> None:
    from test_memory_sessions import SessionLLM

    with Memory(tmp_path / "m.db", llm=SessionLLM(), embedder=False) as mem:
        server = build_mcp(mem, "u1")
        added = call(server, "remember", {"text": "I live in Berlin and work at Acme.", "speaker": "Maya",
                                          "timestamp": "2023-01-10T10:00:00Z"})["added"]
        berlin = next(f for f in added if f["object"] == "Berlin")
        assert set(berlin) == {"id", "subject", "relation", "object", "valid_from", "valid_to", "confidence",
                               "origin", "text", "session_id"}
        stored = mem.store.facts("u1", ids=[berlin["id"]])[0]
        assert stored.source_ids and berlin["text"] == stored.render() and berlin["session_id"] == stored.session_id
        mem.add_facts([{"subject": "Rui", "relation": "sibling_of", "object": "Maya"}], user_id="u1")
        timeline = call(server, "timeline", {"subject": "Maya"})["items"]
        reading = next(f for f in timeline if f["relation"] == "sibling_of")
        assert reading["origin"] == "derived" and reading["object"] == "Rui"
        assert call(server, "forget", {"fact_id": reading["support_ids"][0]})["facts_deleted"] == 1
        assert not [f for f in call(server, "timeline", {"subject": "Maya"})["items"] if f["relation"] == "sibling_of"]


def test_a_reply_is_one_block_of_compact_json_with_the_same_structured_content(tmp_path) -> None:
    with Memory(tmp_path / "m.db", llm=ScriptedLLM(), embedder=False) as mem:
        mem.add_facts([{"subject": "Maya", "relation": "lives_in", "object": "Zürich"},
                       {"subject": "Maya", "relation": "works_at", "object": "Acme"}], user_id="u1")
        server = build_mcp(mem, "u1")
        for tool, args in (("timeline", {"subject": "Maya"}), ("recall", {"query": "Where does Maya live?"}),
                           ("sessions", {})):
            res = asyncio.run(server.call_tool(tool, args))
            structured = getattr(res, "structuredContent", None) or getattr(res, "structured_content", None)
            assert len(res.content) == 1 and "\n" not in res.content[0].text
            assert ("Zürich" in res.content[0].text) == (tool != "sessions")  # not escaped as \u00fc
            value = json.loads(res.content[0].text)
            assert value == (structured["result"] if isinstance(value, list) else structured)
        tools = {t.name: t for t in asyncio.run(server.list_tools())}
        schema = getattr(tools["timeline"], "outputSchema", None) or getattr(tools["timeline"], "output_schema", None)
        assert schema is not None  # the output schema is still advertised


def test_long_lists_reach_an_agent_a_page_at_a_time(tmp_path) -> None:
    with Memory(tmp_path / "m.db", llm=ScriptedLLM(), embedder=False) as mem:
        mem.add_facts([{"subject": "Maya", "relation": "likes", "object": f"song {i}",
                        "valid_from": f"{2000 + i}-01-01"} for i in range(120)], user_id="u1")
        for i in range(7):
            mem.store.ensure_session("u1", f"s{i}", started_at=mem.history(user_id="u1")[i].valid_from)
        server = build_mcp(mem, "u1")
        first = call(server, "timeline", {"subject": "Maya"})
        assert len(first["items"]) == 50 and first["next_cursor"]  # not 120 facts into the agent's context
        walked, cursor = [], None
        while True:
            page = call(server, "timeline", {"subject": "Maya", "limit": 45, **({"cursor": cursor} if cursor else {})})
            walked += [f["object"] for f in page["items"]]
            if not (cursor := page["next_cursor"]):
                break
        assert walked == [f"song {i}" for i in range(120)]
        page = call(server, "sessions", {"limit": 3})
        rest = call(server, "sessions", {"limit": 5, "cursor": page["next_cursor"]})
        assert [s["id"] for s in page["items"] + rest["items"]] == [f"s{i}" for i in range(7)]
        assert rest["next_cursor"] is None
        for bad in ({"limit": 0}, {"limit": 501}, {"cursor": "nope"}):
            with pytest.raises(ToolError, match="cursor|limit"):
                asyncio.run(server.call_tool("timeline", {"subject": "Maya", **bad}))
        with pytest.raises(ToolError, match="another list"):
            asyncio.run(server.call_tool("sessions", {"cursor": first["next_cursor"]}))


def test_making_the_server_leaves_the_apps_logging_as_it_was(tmp_path) -> None:
    import logging

    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    root.handlers[:] = []  # an app that configured nothing: the SDK's basicConfig would take the root logger
    root.setLevel(logging.WARNING)
    try:
        with Memory(tmp_path / "m.db", llm=ScriptedLLM(), embedder=False) as mem:
            build_mcp(mem, "u1")
            assert root.handlers == [] and root.level == logging.WARNING
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)


def test_a_model_failure_reaches_the_agent_as_its_kind_and_a_bad_call_as_its_reason(tmp_path) -> None:
    """An agent (over HTTP, anywhere) read the model's endpoint and a password in its URL; it needs to know
    the model failed, and what was wrong with a call of its own."""
    with Memory(tmp_path / "m.db", llm="openai:m@http://svc:hunter2@127.0.0.1:9/v1", embedder=False) as mem:
        server = build_mcp(mem, "u1")
        mem.add_facts([{"subject": "Maya", "relation": "lives_in", "object": "Porto"}], user_id="u1")
        with pytest.raises(ToolError) as e:
            call(server, "answer", {"question": "Where does Maya live?"})
        assert "ModelUnavailableError: the model is unavailable" in str(e.value)
        assert "127.0.0.1" not in str(e.value) and "hunter2" not in str(e.value)
        with pytest.raises(ToolError, match="as_of"):
            call(server, "recall", {"query": "Maya", "as_of": "last tuesday"})
