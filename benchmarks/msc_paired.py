"""Two configurations of one method in a ``chronomem bench msc`` results file, question by question:
the memory's persona recall (the next session's facts, and those after session 3) and the replies'
F1 / BLEU-1, with wins/ties/losses and a sign test, on the episodes both configurations have.

    python benchmarks/msc_paired.py bench-out/msc-append/results.jsonl 16f3ba25f3 25d999ef28

(config keys as ``chronomem bench report`` lists them; A is the baseline, B the candidate.)
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path
from typing import Any

from chronomem.bench.metrics import sign_test

MEASURES = (("memory", "persona_recall"), ("memory", "persona_recall_after_s3"), ("reply", "reply_f1"),
            ("reply", "bleu1"))


def rows_by_qid(path: Path, key: str) -> dict[str, dict[str, Any]]:
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            if row.get("config_key") == key:
                out[row["qid"]] = row  # a rerun's later row replaces the earlier one
    return out


def paired(a: dict[str, dict[str, Any]], b: dict[str, dict[str, Any]]) -> list[str]:
    lines = []
    for kind, measure in MEASURES:
        pairs = [(a[q]["scores"].get(measure), b[q]["scores"].get(measure)) for q in a
                 if q in b and a[q]["kind"] == kind]
        pairs = [(x, y) for x, y in pairs if x is not None and y is not None]
        if not pairs:
            continue
        wins = sum(y > x for x, y in pairs)
        losses = sum(y < x for x, y in pairs)
        p = sign_test(wins, losses)
        lines.append(f"{measure:<24} n={len(pairs):>3}  A {statistics.mean(x for x, _ in pairs):.3f}  "
                     f"B {statistics.mean(y for _, y in pairs):.3f}  W/T/L {wins}/{len(pairs) - wins - losses}/{losses}"
                     f"  p={'n/a' if p is None else f'{p:.3f}'}")
    ctx = [(a[q]["context_tokens"], b[q]["context_tokens"]) for q in a if q in b and a[q]["kind"] == "reply"]
    if ctx:
        lines.append(f"reply context tokens (median)  A {statistics.median(x for x, _ in ctx):.0f}  "
                     f"B {statistics.median(y for _, y in ctx):.0f}")
    return lines


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 3:
        raise SystemExit("usage: msc_paired.py RESULTS.jsonl CONFIG_KEY_A CONFIG_KEY_B")
    path = Path(args[0])
    a, b = rows_by_qid(path, args[1]), rows_by_qid(path, args[2])
    for name, rows in (("A", a), ("B", b)):
        if not rows:
            raise SystemExit(f"{path}: no rows of config key {args[1 if name == 'A' else 2]!r} ({name})")
    sys.stdout.write("\n".join(paired(a, b)) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
