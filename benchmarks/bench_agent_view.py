"""What an agent reads of a fact: tokens of the MCP tools' replies, every field against the agent's view.

Reads memory files the evolving benchmark wrote (``bench_evolving.py --out DIR``: facts extracted from
real conversations by the local model, with their source turns, statements and confirmations) and calls
the MCP ``recall`` and ``timeline`` tools for each answer check of the set: ``recall`` with the check's
question, ``timeline`` with the conversation's user.  Each reply is counted three times in the local
model's tokens, as the text an agent's model reads: ``every_field``, every fact made ``Fact.to_dict()``
plus its rendering, in the SDK's indented blocks (the reply before session 41); ``agent_view_indented``,
the agent's view of a fact (``chronomem.server.mcp._fact``) in those blocks; ``sent``, as sent now (the
agent's view in one block of compact JSON).

  python benchmarks/bench_agent_view.py --set tune --dbs bench-out/evolving/tune

Prints one JSON line per tool: replies, median and total tokens of each form.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from chronomem import Fact, Memory  # noqa: E402
from chronomem.providers.local_llama import LocalLlamaLLM  # noqa: E402
from chronomem.server.mcp import build_mcp  # noqa: E402

HERE = Path(__file__).resolve().parent / "evolving"


def every_field(held: dict[str, Fact], user: str, reply: Any) -> Any:
    """``reply`` with each stored fact as all its fields and its rendering (a reading from the other side
    or a derived fact, not stored, keeps the agent view plus the fields it would have had)."""
    def full(f: dict[str, Any]) -> dict[str, Any]:
        fact = held.get(f["id"])
        if fact is None:
            return {**f, "user_id": user, "source_ids": [], "rule": None, "subject_id": None, "object_id": None}
        return {**json.loads(json.dumps(fact.to_dict(), default=str)), "rendered": fact.render()}

    if isinstance(reply, list):
        return [full(f) for f in reply]
    return {k: [full(f) for f in v] if k == "facts" else v for k, v in reply.items()}


def as_sdk_wrote(value: Any) -> list[str]:
    """The text blocks the MCP SDK wrote for a tool's return value before session 41's compact replies: one
    per item of a list, indented by two spaces."""
    return [json.dumps(v, indent=2, ensure_ascii=False) for v in (value if isinstance(value, list) else [value])]


def tokens(llm: LocalLlamaLLM, texts: list[str]) -> int:
    return sum(llm.count_tokens(t) for t in texts)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--set", default="tune")
    ap.add_argument("--dbs", required=True, help="the --out folder of bench_evolving.py for that set")
    args = ap.parse_args()
    llm = LocalLlamaLLM()
    data = json.loads((HERE / f"{args.set}.json").read_text())
    forms = ("every_field", "agent_view_indented", "sent")
    counts: dict[str, dict[str, list[int]]] = {tool: {f: [] for f in forms} for tool in ("recall", "timeline")}
    for conv in data["conversations"]:
        db = Path(args.dbs) / f"{args.set}-{conv['name']}.db"
        user = conv["user"]
        with Memory(str(db), embedder=False) as mem:
            server = build_mcp(mem, user)
            held = {f.id: f for f in mem.history(user_id=user)}
            calls = [("recall", {"query": c["question"]}) for c in conv["checks"] if c["kind"] == "answer"]
            calls.append(("timeline", {"subject": user}))
            for tool, arguments in calls:
                res = asyncio.run(server.call_tool(tool, arguments))
                sent = [c.text for c in res.content]
                reply = json.loads(sent[0])
                counts[tool]["sent"].append(tokens(llm, sent))
                counts[tool]["agent_view_indented"].append(tokens(llm, as_sdk_wrote(reply)))
                counts[tool]["every_field"].append(tokens(llm, as_sdk_wrote(every_field(held, user, reply))))
    for tool, c in counts.items():
        print(json.dumps({"set": args.set, "tool": tool, "replies": len(c["sent"]),
                          **{f"median_{f}": statistics.median(c[f]) for f in forms},
                          **{f"total_{f}": sum(c[f]) for f in forms}}))

if __name__ == "__main__":
    main()
