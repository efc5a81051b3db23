"""The MCP server's tools, called in-process through the MCP server API."""

from __future__ import annotations

import asyncio
import json

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
        assert {"remember", "recall", "answer", "timeline", "end_session", "summary", "forget"} <= names
        out = call(server, "remember", {"text": "I live in Berlin and work at Acme.", "speaker": "Maya"})
        assert any("Berlin" in a for a in out["added"]) and any("Acme" in a for a in out["added"])
        tl = call(server, "timeline", {"subject": "Maya"})
        assert sorted(f["object"] for f in tl) == ["Acme", "Berlin"]  # not the other user's Porto
        rec = call(server, "recall", {"query": "Where does Maya live?"})
        assert "Berlin" in rec["context"] and "Porto" not in rec["context"]
