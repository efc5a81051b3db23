"""An MCP server: chronomem's memory as tools for agents (Claude Desktop, IDEs, agent frameworks).

Run ``chronomem mcp`` (stdio).  The user id is fixed per server process
(``--user``) so an agent cannot read another user's memory by naming them.
"""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import MCPServer

from ..memory import Memory


def build_mcp(mem: Memory, user_id: str) -> MCPServer:
    """An MCP server whose tools read and write ``user_id``'s memory in ``mem``."""
    server = MCPServer("chronomem", instructions=(
        "Long-term memory of the user. Call `remember` with what the user tells you about "
        "themselves, `recall` or `answer` before replying to questions about their past, "
        "and `timeline` to see how something changed."))

    @server.tool(description="Store conversation turns and extract facts from them.")
    def remember(text: str, speaker: str = "user", session_id: str | None = None) -> dict[str, Any]:
        res = mem.add([{"speaker": speaker, "text": text}], user_id=user_id, session_id=session_id)
        return {"session_id": res.session_id, "added": [f.render() for f in res.added],
                "closed": [f.render() for f in res.closed], "warnings": res.warnings}

    @server.tool(description="Facts relevant to a query, with validity intervals and sources.")
    def recall(query: str, as_of: str | None = None, top_k: int = 10) -> dict[str, Any]:
        res = mem.search(query, user_id=user_id, as_of=as_of, top_k=top_k)
        return {"context": res.context, "facts": [f.to_dict() for f in res.facts]}

    @server.tool(description="Answer a question from memory; says 'Not mentioned' when memory has nothing.")
    def answer(question: str, as_of: str | None = None) -> dict[str, Any]:
        ans = mem.answer(question, user_id=user_id, as_of=as_of)
        return {"answer": ans.text, "evidence": [f.render() for f in ans.evidence]}

    @server.tool(description="Every version of a subject's facts (optionally one relation), oldest first.")
    def timeline(subject: str, relation: str | None = None) -> list[dict[str, Any]]:
        return [f.to_dict() for f in mem.history(user_id=user_id, subject=subject, relation=relation)]

    @server.tool(description="Delete one fact for good (facts it had closed hold again).")
    def forget_fact(fact_id: str) -> dict[str, Any]:
        res = mem.forget(user_id=user_id, fact_id=fact_id)
        return {"facts_deleted": res.facts_deleted, "reopened": res.reopened}

    return server
