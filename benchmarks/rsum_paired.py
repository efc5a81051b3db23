"""Two runs of ``bench_rsum_msc.py memory`` on the same episodes, paired: recall of the gold
persona facts after session 3, per speaker wins/ties/losses with a sign test, and the cost of
sessions 2–3 (where an update has a memory to keep).

    python benchmarks/rsum_paired.py bench-out/rsumx/msc_check_d2.jsonl bench-out/rsumx/msc_check_d3.jsonl
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path
from typing import Any

from chronomem.bench.metrics import sign_test


def load(path: Path) -> dict[str, dict[str, Any]]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return {r["episode"]: r for r in rows if r.get("kind", "memory") == "memory"}


def compare(a: dict[str, dict[str, Any]], b: dict[str, dict[str, Any]]) -> str:
    episodes = [e for e in a if e in b]
    if not episodes:
        raise SystemExit("the two runs share no episode")
    facts = hit_a = hit_b = att_a = att_b = wins = losses = ties = 0
    for e in episodes:
        for speaker, ra in a[e]["recall"].items():
            rb = b[e]["recall"][speaker]
            if not ra["facts"]:
                continue
            facts += ra["facts"]
            hit_a, hit_b = hit_a + ra["recalled"], hit_b + rb["recalled"]
            att_a, att_b = att_a + ra["attributed"], att_b + rb["attributed"]
            wins += rb["recall"] > ra["recall"]
            losses += rb["recall"] < ra["recall"]
            ties += rb["recall"] == ra["recall"]

    def later(run: dict[str, dict[str, Any]], field: str) -> int:
        return sum(s[field] for e in episodes for s in run[e]["sessions"] if s["session"] > 1)

    def flat(run: dict[str, dict[str, Any]]) -> int:  # memories that did not grow after session 1
        return sum(run[e]["sessions"][-1]["memory_sentences"] <= run[e]["sessions"][0]["memory_sentences"]
                   for e in episodes)

    p = sign_test(wins, losses)
    return (f"{len(episodes)} episodes, {facts} gold facts\n"
            f"recall {hit_a / facts:.3f} -> {hit_b / facts:.3f}; attributed {att_a / facts:.3f} -> {att_b / facts:.3f}\n"
            f"per speaker W/T/L {wins}/{ties}/{losses}, sign test p = {p if p is None else round(p, 3)}\n"
            f"sessions 2-3: completion tokens {later(a, 'completion_tokens')} -> {later(b, 'completion_tokens')}, "
            f"calls {later(a, 'calls')} -> {later(b, 'calls')}\n"
            f"M_3 sentences (mean) {statistics.mean(a[e]['memory_sentences'] for e in episodes):.1f} -> "
            f"{statistics.mean(b[e]['memory_sentences'] for e in episodes):.1f}; "
            f"memories with no sentence added after session 1: {flat(a)} -> {flat(b)}")


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        raise SystemExit("usage: rsum_paired.py A.jsonl B.jsonl")
    sys.stdout.write(compare(load(Path(args[0])), load(Path(args[1]))) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
