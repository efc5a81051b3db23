"""Statements of one slot in every arrival order, and what keeping a fact's later dates costs.

Order: ``--sets`` random sets of dated statements for each of two slots (``lives_in`` with Porto and
Lisbon, ``has_pet`` with a cat): 2 to 4 distinct months, each a start of a value (at most two per value)
or an ending of a value started before it.  Each set is added in every order to a fresh in-memory
SQLite memory; a set counts as order-dependent when the facts valid at some probe instant (before, at and
just after each stated date, and long before all of them) differ between two orders.

Cost: one fact ("Maya lives_in Lisbon") said ``--repeats`` times, each time with a start three days
later and its own turn (a mention dated at its turn), then "Porto from June 2018" placed between them.
Prints the median ``add_facts`` of the second half of the repeats, the placing of Porto, a
``facts()`` read of Maya's facts (median of 50) and the rows written.  No model.

  python benchmarks/bench_later_dates.py --sets 150 --repeats 500

Prints one JSON line.
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import statistics
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from chronomem import Memory  # noqa: E402

Statement = tuple[str, str, str]  # value, "start" or "end", ISO date
BASE = datetime(2010, 1, 1, tzinfo=timezone.utc)


def month(n: int) -> str:
    return (BASE + timedelta(days=30 * n)).date().isoformat()


def statements(rng: random.Random, values: list[str]) -> list[Statement]:
    out: list[Statement] = []
    started: dict[str, int] = {}
    for m in sorted(rng.sample(range(150), rng.randint(2, 4))):
        obj = rng.choice(values)
        ends = list(started)
        if started.get(obj, 0) < 2 and (rng.random() < 0.5 or not ends):
            started[obj] = started.get(obj, 0) + 1
            out.append((obj, "start", month(m)))
        elif ends:
            out.append((rng.choice(ends), "end", month(m)))
    return out


def probes(said: list[Statement]) -> list[str]:
    days = sorted({datetime.fromisoformat(w).date() for _, _, w in said})
    out = {(days[0] - timedelta(days=400)).isoformat()}
    for d in days:
        out |= {(d - timedelta(days=1)).isoformat(), d.isoformat(), (d + timedelta(days=1)).isoformat()}
    return sorted(out)


def timeline(relation: str, said: list[Statement], at: list[str]) -> list[tuple[str, ...]]:
    with Memory(":memory:", llm=False, embedder=False) as mem:
        for obj, kind, when in said:
            mem.add_facts([{"subject": "Maya", "relation": relation, "object": obj,
                            ("valid_from" if kind == "start" else "valid_to"): when}], user_id="u")
        return [tuple(sorted(f.object for f in mem.facts(user_id="u", subject="Maya", relation=relation, as_of=p)))
                for p in at]


def order_dependent(sets: int, seed: int) -> dict[str, int]:
    rng = random.Random(seed)
    out: dict[str, int] = {}
    for relation, values in (("lives_in", ["Porto", "Lisbon"]), ("has_pet", ["cat"])):
        dependent = 0
        for _ in range(sets):
            said = statements(rng, values)
            at = probes(said)
            first = timeline(relation, said, at)
            dependent += any(timeline(relation, [said[i] for i in order], at) != first
                             for order in itertools.permutations(range(len(said))))
        out[relation] = dependent
    return out


def repeat_cost(repeats: int) -> dict[str, float]:
    start = datetime(2017, 1, 1, tzinfo=timezone.utc)
    with Memory(":memory:", llm=False, embedder=False) as mem:
        took = []
        for i in range(repeats):
            fact = {"subject": "Maya", "relation": "lives_in", "object": "Lisbon",
                    "valid_from": (start + timedelta(days=3 * i)).isoformat(), "source_ids": [f"m{i}"]}
            t = time.perf_counter()
            mem.add_facts([fact], user_id="u")
            took.append(time.perf_counter() - t)
        t = time.perf_counter()
        mem.add_facts([{"subject": "Maya", "relation": "lives_in", "object": "Porto", "valid_from": "2018-06-01"}],
                      user_id="u")
        placed = time.perf_counter() - t
        reads = []
        for _ in range(50):
            t = time.perf_counter()
            mem.facts(user_id="u", subject="Maya")
            reads.append(time.perf_counter() - t)
        rows = len(mem.history(user_id="u"))
    return {"add_ms": round(statistics.median(took[repeats // 2:]) * 1e3, 3), "place_ms": round(placed * 1e3, 2),
            "read_ms": round(statistics.median(reads) * 1e3, 3), "rows": rows}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sets", type=int, default=150, help="random statement sets per slot")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--repeats", type=int, default=500, help="times the one fact is said again")
    args = ap.parse_args()
    print(json.dumps({"sets_per_slot": args.sets, "order_dependent": order_dependent(args.sets, args.seed),
                      "repeats": args.repeats, **repeat_cost(args.repeats)}))


if __name__ == "__main__":
    main()
