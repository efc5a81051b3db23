"""Precision of an extraction run by census: every fact judged, by two raters, blind to the method.

A 30-fact sample has a 95 % interval of about ±0.18, the size of every rule change we want to see.
A census judges each distinct fact of one or more ``bench_extraction.py`` replays once per rater, and
a fact two methods share is judged once, so methods are compared on the same verdicts.

``build`` writes the facts not judged yet (in the folder's earlier batches) as shuffled JSON batches —
statement, typed triple, validity, the cited turns with their date and speaker, the two lines before
— without saying which method wrote them; raters (people, or agents reading STANDARD.md in the same
folder) write ``verdicts_<batch>_<rater>.json``: ``[{"id", "verdict": "correct"|"wrong"|"call",
"category", "reason"}]``.  ``score`` reads every verdict file in the folder and prints, per replay,
precision strict (``correct``) and lenient (``call`` counted right), per rater and averaged, with the
raters' agreement and the categories of what is not correct.

    .venv/bin/python benchmarks/precision_census.py build --folder bench-out/census --sample conv-30 \\
        --batch-size 48 bench-out/v8/one_v4.jsonl bench-out/v8/one_v8.jsonl
    .venv/bin/python benchmarks/precision_census.py score --folder bench-out/census \\
        bench-out/v8/one_v4.jsonl bench-out/v8/one_v8.jsonl
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from chronomem.bench.datasets import DEFAULT_LOCOMO_PATH

VERDICTS = ("correct", "wrong", "call")


def fact_id(session: int, row: dict[str, Any]) -> str:
    """The same fact in two replays gets the same id: session, triple, statement, validity, sources."""
    key = json.dumps([session, row["s"], row["r"], row["o"], row["text"], row["from"], row["to"], sorted(row["src"])])
    return hashlib.sha1(key.encode()).hexdigest()[:8]


def replay_facts(path: Path) -> list[tuple[str, int, dict[str, Any]]]:
    """``(id, session, fact row)`` of every fact of a ``bench_extraction.py --out`` file."""
    out: list[tuple[str, int, dict[str, Any]]] = []
    for line in path.read_text().splitlines():
        if line.strip():
            r = json.loads(line)
            out.extend((fact_id(r["session"], f), r["session"], f) for f in r["fact_rows"])
    return out


def load_turns(data: Path, sample: str) -> tuple[dict[str, tuple[str, str, str]], list[str]]:
    """dia_id → (session date, speaker, text with the shared image's caption), and the turns in order."""
    conv = next(c for c in json.loads(data.read_text()) if c["sample_id"] == sample)["conversation"]
    turns: dict[str, tuple[str, str, str]] = {}
    order: list[str] = []
    n = 1
    while f"session_{n}" in conv:
        for t in conv[f"session_{n}"]:
            text = t["text"] + (f" [shares an image: {t['blip_caption']}]" if t.get("blip_caption") else "")
            turns[t["dia_id"]] = (conv.get(f"session_{n}_date_time", ""), t["speaker"], text)
            order.append(t["dia_id"])
        n += 1
    return turns, order


def item(fid: str, row: dict[str, Any], turns: dict[str, tuple[str, str, str]], order: list[str]) -> dict[str, Any]:
    src = [s for s in row["src"] if s in turns]
    first = min((order.index(s) for s in src), default=0)
    before = [order[i] for i in range(max(0, first - 2), first) if order[i] not in src]
    return {"id": fid, "statement": row["text"],
            "fact": {"subject": row["s"], "relation": row["r"], "object": row["o"], "valid_from": row["from"],
                     "valid_to (set = the fact ended then)": row["to"]},
            "cited_turns": [{"id": s, "date": turns[s][0], "speaker": turns[s][1], "text": turns[s][2]} for s in src],
            "context_before": [{"id": s, "speaker": turns[s][1], "text": turns[s][2]} for s in before]}


def judged_ids(folder: Path) -> set[str]:
    return {x["id"] for p in folder.glob("batch*.json") for x in json.loads(p.read_text())}


def build(folder: Path, replays: list[Path], data: Path, sample: str, batch_size: int, seed: int) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    turns, order = load_turns(data, sample)
    known = judged_ids(folder)
    new: dict[str, dict[str, Any]] = {}
    for path in replays:
        for fid, _, row in replay_facts(path):
            if fid not in known and fid not in new:
                new[fid] = item(fid, row, turns, order)
    items = list(new.values())
    random.Random(seed).shuffle(items)
    start = 1 + len(list(folder.glob("batch*.json")))
    written = []
    for k in range(0, len(items), batch_size):
        p = folder / f"batch{start + k // batch_size}.json"
        p.write_text(json.dumps(items[k:k + batch_size], indent=1, ensure_ascii=False))
        written.append(p)
    return written


def load_verdicts(folder: Path) -> dict[str, dict[str, dict[str, Any]]]:
    """fact id → rater → verdict, from ``verdicts_<batch>_<rater>.json``; refuses a malformed file."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for p in sorted(folder.glob("verdicts_*_*.json")):
        rater = p.stem.rsplit("_", 1)[1]
        for v in json.loads(p.read_text()):
            if v.get("verdict") not in VERDICTS:
                raise ValueError(f"{p}: verdict for {v.get('id')!r} must be one of {VERDICTS}, got {v.get('verdict')!r}")
            out.setdefault(v["id"], {})[rater] = v
    return out


def score(folder: Path, replays: list[Path]) -> list[dict[str, Any]]:
    verdicts = load_verdicts(folder)
    raters = sorted({r for v in verdicts.values() for r in v})
    both = [v for v in verdicts.values() if len(v) == len(raters)]
    agree = sum(len({x["verdict"] for x in v.values()}) == 1 for v in both)
    rows = []
    for path in replays:
        ids = [fid for fid, _, _ in replay_facts(path)]
        judged = [fid for fid in ids if len(verdicts.get(fid, {})) == len(raters)]
        row: dict[str, Any] = {"replay": str(path), "facts": len(ids), "unjudged": len(ids) - len(judged),
                               "raters": raters, "agreement": f"{agree}/{len(both)}"}
        cats: Counter[str] = Counter()
        for r in raters:
            vs = [verdicts[fid][r] for fid in judged]
            row[f"strict_{r}"] = round(sum(v["verdict"] == "correct" for v in vs) / max(1, len(vs)), 3)
            row[f"lenient_{r}"] = round(sum(v["verdict"] != "wrong" for v in vs) / max(1, len(vs)), 3)
            cats.update(f"{v['verdict']}:{v.get('category') or '-'}" for v in vs if v["verdict"] != "correct")
        row["strict"] = round(sum(row[f"strict_{r}"] for r in raters) / max(1, len(raters)), 3)
        row["lenient"] = round(sum(row[f"lenient_{r}"] for r in raters) / max(1, len(raters)), 3)
        row["not_correct"] = {k: v / max(1, len(raters)) for k, v in cats.most_common()}
        rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", choices=("build", "score"))
    ap.add_argument("replays", nargs="+", type=Path, help="bench_extraction.py --out files")
    ap.add_argument("--folder", type=Path, required=True, help="batches, STANDARD.md and verdicts")
    ap.add_argument("--data", type=Path, default=DEFAULT_LOCOMO_PATH)
    ap.add_argument("--sample", default="conv-30")
    ap.add_argument("--batch-size", type=int, default=48)
    ap.add_argument("--seed", type=int, default=1204)
    args = ap.parse_args(argv)
    if args.command == "build":
        for p in build(args.folder, args.replays, args.data, args.sample, args.batch_size, args.seed):
            print(f"{p}: {len(json.loads(p.read_text()))} facts")
    else:
        for row in score(args.folder, args.replays):
            print(json.dumps(row))
    return 0


if __name__ == "__main__":
    sys.exit(main())
