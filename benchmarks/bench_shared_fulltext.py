"""Full-text search for one user of a store that many other users share.

Every user (``target`` and ``--others`` more) gets ``--facts`` synthetic facts (``bench_search.Graph``:
the same names, Maya, Rui, Tiago, in every user's graph) and the turns of a LoCoMo conversation (the
target conv-30's, the others cycling through all seven).  The search phase then times, for the target
only: the store's full-text search over facts (``bench_search.QUESTIONS``) and over turns (conv-30's
first 40 category 1-4 questions), each asked for 80 hits as the fused read path does, and
``Memory.search`` with ``answer()``'s read path and no model (evaluator, intent model and embeddings
off).  No model calls.

    python benchmarks/bench_shared_fulltext.py --db bench-out/shared/s.db --others 300 --phase load
    python benchmarks/bench_shared_fulltext.py --db bench-out/shared/s.db --phase search
    python benchmarks/bench_shared_fulltext.py --phase load --others 300 \
        --db 'postgresql://127.0.0.1/test?schema=shared'

The search phase prints one JSON line: where chronomem was imported from, the seconds the store took
to open (a migration included), and each kind of search's median and p95 in ms.  For an A/B with an
older chronomem, run this script from an old tree (``git archive REV src benchmarks | tar -x -C DIR``,
then copy this script and ``bench_fulltext.py`` into ``DIR/benchmarks``): it imports the ``src`` beside it.  An SQLite file written by a newer chronomem does not open in an
older one: load with the old tree, copy the file, and search the copy with the new tree.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import chronomem  # noqa: E402
from chronomem import Memory  # noqa: E402
from chronomem.bench.datasets import DEFAULT_LOCOMO_PATH, load_locomo  # noqa: E402
from chronomem.retrieve.search import ANSWER_CONFIG  # noqa: E402

import bench_search  # noqa: E402
from bench_fulltext import load_turns  # noqa: E402

TARGET = "target"
TARGET_CONVERSATION = "conv-30"


def load(mem: Memory, others: int, facts: int, seed: int) -> dict[str, Any]:
    convs = load_locomo(DEFAULT_LOCOMO_PATH)
    order = [c for c in convs if c.sample_id == TARGET_CONVERSATION] + convs
    store, rng = mem.store, random.Random(seed)
    done = set(store.users())
    t = time.perf_counter()
    for n, user in enumerate([TARGET] + [f"u{i:05d}" for i in range(others)]):
        if user in done:
            continue
        g = bench_search.Graph(user, rng)
        g.build(facts)
        conv = order[n % len(order)]
        with store.transaction(user):
            store.insert_entities(user, [(e, norm) for norm, e in g.entities.items()])
            store.insert_facts(user, g.facts)
            load_turns(store, conv, user)
    return {"phase": "load", "users": others + 1, "seconds": round(time.perf_counter() - t, 1)}


def timed(fn: Any, questions: list[str], rounds: int) -> dict[str, float]:
    times = []
    for _ in range(rounds):
        for q in questions:
            t = time.perf_counter()
            fn(q)
            times.append(1000 * (time.perf_counter() - t))
    return {"median_ms": round(statistics.median(times), 2), "p95_ms": round(bench_search.pct(times, 0.95), 2)}


def search(mem: Memory, rounds: int) -> dict[str, Any]:
    conv = load_locomo(DEFAULT_LOCOMO_PATH, [TARGET_CONVERSATION])[0]
    turn_questions = [q.question for q in conv.qa if q.category in (1, 2, 3, 4)][:40]
    cfg = dataclasses.replace(ANSWER_CONFIG, evaluator=False, intent_llm=False, embeddings=False)
    store = mem.store
    for q in turn_questions[:5]:  # warm the caches
        mem.search(q, user_id=TARGET, config=cfg)
    return {"facts_fts": timed(lambda q: store.search_facts_text(TARGET, q, 80), bench_search.QUESTIONS, rounds * 6),
            "turns_fts": timed(lambda q: store.search_messages_text(TARGET, q, 80), turn_questions, rounds),
            "answer_search": timed(lambda q: mem.search(q, user_id=TARGET, config=cfg), turn_questions, rounds)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--db", required=True, help="an SQLite path or a PostgreSQL URL")
    ap.add_argument("--phase", choices=["load", "search"], required=True)
    ap.add_argument("--others", type=int, default=300, help="users besides the target (load)")
    ap.add_argument("--facts", type=int, default=1000, help="facts per user (load)")
    ap.add_argument("--rounds", type=int, default=3, help="times each question is asked (search)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    t = time.perf_counter()
    with Memory(args.db, llm=False, embedder=False) as mem:
        opened = round(time.perf_counter() - t, 2)
        out = load(mem, args.others, args.facts, args.seed) if args.phase == "load" else search(mem, args.rounds)
        out.update(chronomem=str(Path(chronomem.__file__).parents[1]), open_s=opened,
                   users=len(mem.store.users()))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
