"""Search when the user's own entity is a hub: more facts touch it than ``max_neighbours`` (300).

One user: Maya's home, employer, brother (with his home), spouse and pet, said years ago, then
``--likes`` facts "Maya likes song N" told since.  Each question is searched five times (no model, no
embeddings, evaluator off); the median time and the answer the top fact gives are printed.  Before
session 40 a hub kept its most recent facts only, and the questions about her older facts were
answered with songs.

  python benchmarks/bench_hub.py --likes 0
  python benchmarks/bench_hub.py --likes 20000

Prints one JSON line per question: the question, the expected top fact, the top fact found, and the
median seconds.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from chronomem import Memory  # noqa: E402
from chronomem.retrieve import SearchConfig  # noqa: E402

FACTS = [
    {"subject": "Maya", "relation": "lives_in", "object": "Porto", "valid_from": "2015-01-01"},
    {"subject": "Maya", "relation": "lives_in", "object": "Lisbon", "valid_from": "2020-03-01"},
    {"subject": "Maya", "relation": "works_at", "object": "Acme", "valid_from": "2019-01-01"},
    {"subject": "Rui", "relation": "sibling_of", "object": "Maya", "valid_from": "1990-01-01"},
    {"subject": "Rui", "relation": "lives_in", "object": "Braga", "valid_from": "2012-01-01"},
    {"subject": "Maya", "relation": "married_to", "object": "Tiago", "valid_from": "2021-06-01"},
    {"subject": "Maya", "relation": "has_pet", "object": "Sunny", "valid_from": "2023-01-01"},
]
QUESTIONS = [
    ("Where does Maya live?", "lives_in Lisbon"),
    ("Where did Maya live in 2017?", "lives_in Porto"),
    ("Where does Maya's brother live?", "sibling_of Rui"),
    ("Who is Maya married to?", "married_to Tiago"),
    ("Does Maya have a pet?", "has_pet Sunny"),
    ("Where does Maya work?", "works_at Acme"),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--likes", type=int, default=20000)
    args = ap.parse_args()
    cfg = SearchConfig(embeddings=False, evaluator=False)
    with Memory(":memory:", llm=False, embedder=False) as mem:
        mem.add_facts(FACTS, user_id="u")
        for start in range(0, args.likes, 5000):
            mem.add_facts([{"subject": "Maya", "relation": "likes", "object": f"song {start + i}",
                            "valid_from": "2024-01-01"} for i in range(min(5000, args.likes - start))], user_id="u")
        for question, expected in QUESTIONS:
            seconds, top = [], None
            for _ in range(5):
                t = time.perf_counter()
                res = mem.search(question, user_id="u", config=cfg)
                seconds.append(time.perf_counter() - t)
                top = f"{res.facts[0].relation} {res.facts[0].object}" if res.facts else None
            print(json.dumps({"likes": args.likes, "question": question, "expected": expected, "top": top,
                              "median_s": round(statistics.median(seconds), 4)}))


if __name__ == "__main__":
    main()
