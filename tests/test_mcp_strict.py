"""The MCP tools take arguments as given: a flag only as a JSON boolean, no argument a tool does not know
(``chronomem.server.mcp.strict_arguments``, applied by ``build_mcp``)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from mcp.server.mcpserver.exceptions import ToolError
from test_extract_pipeline import ScriptedLLM
from test_mcp import call
from test_mcp_transports import served, stdio_session  # noqa: F401 (the fixture)

from chronomem import Memory
from chronomem.server.mcp import build_mcp


def _seeded(mem: Memory) -> None:
    mem.add_facts([{"subject": "Maya", "relation": "lives_in", "object": "Porto"}], user_id="u1")


def _refused(server: Any, name: str, args: dict[str, Any]) -> str:
    with pytest.raises(ToolError) as err:
        asyncio.run(server.call_tool(name, args))
    return str(err.value)


@pytest.mark.parametrize("everything", ["yes", "true", "1", 1, "false"])
def test_forget_everything_takes_only_a_json_boolean(tmp_path, everything: Any) -> None:
    with Memory(tmp_path / "m.db", llm=ScriptedLLM(), embedder=False) as mem:
        _seeded(mem)
        server = build_mcp(mem, "u1")
        msg = _refused(server, "forget", {"everything": everything})
        assert "everything" in msg and "valid boolean" in msg
        assert [f.object for f in mem.facts(user_id="u1")] == ["Porto"]  # nothing deleted
        assert call(server, "forget", {"everything": True})["facts_deleted"] == 1
        assert mem.facts(user_id="u1") == []


@pytest.mark.parametrize(("name", "args", "unknown"), [
    ("remember", {"text": "I live in Berlin and work at Acme.", "bogus": 1}, "bogus"),
    ("recall", {"query": "Where does Maya live?", "asof": "2020-01-01"}, "asof"),
    ("forget", {"fact_id": "f1", "everything_": True}, "everything_"),
    ("timeline", {"subject": "Maya", "limit": 5, "page": 2}, "page"),
])
def test_an_argument_a_tool_does_not_take_is_refused_by_name(tmp_path, name: str, args: dict[str, Any],
                                                             unknown: str) -> None:
    with Memory(tmp_path / "m.db", llm=ScriptedLLM(), embedder=False) as mem:
        _seeded(mem)
        server = build_mcp(mem, "u1")
        msg = _refused(server, name, args)
        assert unknown in msg and "Extra inputs are not permitted" in msg
        assert [f.object for f in mem.facts(user_id="u1")] == ["Porto"] and mem.messages(user_id="u1") == []


def test_the_published_schemas_say_so_and_known_arguments_still_work(tmp_path) -> None:
    with Memory(tmp_path / "m.db", llm=ScriptedLLM(), embedder=False) as mem:
        server = build_mcp(mem, "u1")
        tools = {t.name: t for t in asyncio.run(server.list_tools())}
        assert all(t.input_schema.get("additionalProperties") is False for t in tools.values())
        flag = tools["forget"].input_schema["properties"]["everything"]
        assert flag["type"] == "boolean" and "for good" in flag["description"]  # the declared field, kept
        out = call(server, "remember", {"text": "I live in Berlin and work at Acme.", "speaker": "Maya"})
        assert sorted(f["object"] for f in out["added"]) == ["Acme", "Berlin"]
        assert len(call(server, "timeline", {"subject": "Maya", "limit": "1"})["items"]) == 1  # a number stays lax


def test_the_mcp_command_serves_strict_tools(served: tuple[str, dict[str, str]]) -> None:  # noqa: F811
    db, env = served

    async def main() -> tuple[Any, Any]:
        async with stdio_session(db, env) as session:
            return (await session.call_tool("forget", {"everything": "yes"}),
                    await session.call_tool("remember", {"text": "x", "bogus": 1}))

    forget, remember = asyncio.run(main())
    assert forget.is_error and "everything" in forget.content[0].text
    assert remember.is_error and "bogus" in remember.content[0].text
    with Memory(db, embedder=False) as mem:
        assert [f.object for f in mem.facts(user_id="u1")] == ["Acme"] and mem.messages(user_id="u1") == []
