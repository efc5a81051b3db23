"""Statements of one slot in every arrival order, forgetting one of them, and what keeping a fact's later dates costs.

Order: ``--sets`` random sets of dated statements for each of two slots (``lives_in`` with Porto and
Lisbon, ``has_pet`` with a cat): 2 to 4 distinct months, each a start of a value (at most two per value)
or an ending of a value started before it.  Each set is added in every order to a fresh in-memory
SQLite memory; a set counts as order-dependent when the facts valid at some probe instant (before, at and
just after each stated date, and long before all of them) differ between two orders.

Forget: ``--forget-sets`` such sets per slot, each statement said in a session of its own with its own
turn; in every order, each session in turn is forgotten.  A set counts when the facts valid at some probe
differ from those of the same statements, less the forgotten one, said in the same order (forgetting must
leave the timeline of never having said it), or when the forgotten turn's id is left in the user's rows;
counted apart where the forget leaves an ending before any start of its value (outside the order rules).
Also counted: sets where some forget leaves more history rows than never having said the statement.

Cost: one fact ("Maya lives_in Lisbon") said ``--repeats`` times, each time with a start three days
later and its own turn (a mention dated at its turn), then "Porto from June 2018" placed between them.
Prints the median ``add_facts`` of the second half of the repeats, the placing of Porto, a
``facts()`` read of Maya's facts (median of 50) and the rows written.  No model.

  python benchmarks/bench_later_dates.py --sets 150 --forget-sets 60 --repeats 500

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

from chronomem import Memory, Message  # noqa: E402

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


def said_in_sessions(mem: Memory, relation: str, said: list[Statement], turns: list[str]) -> None:
    t0 = datetime(2030, 1, 1, tzinfo=timezone.utc)
    for i, ((obj, kind, when), turn) in enumerate(zip(said, turns, strict=True)):
        t = t0 + timedelta(days=i)
        mem.store.ensure_session("u", f"s-{turn}", started_at=t)
        mem.store.add_messages("u", [Message(id=turn, user_id="u", session_id=f"s-{turn}", speaker="Maya",
                                             text=f"{obj}: {kind} {when}", timestamp=t, recorded_at=t, seq=i)])
        mem.add_facts([{"subject": "Maya", "relation": relation, "object": obj,
                        ("valid_from" if kind == "start" else "valid_to"): when, "source_ids": [turn],
                        "session_id": f"s-{turn}"}], user_id="u")


def at_probes(mem: Memory, relation: str, at: list[str]) -> list[tuple[str, ...]]:
    return [tuple(sorted(f.object for f in mem.facts(user_id="u", subject="Maya", relation=relation, as_of=p)))
            for p in at]


def started_before_ending(said: list[Statement]) -> bool:
    """Does every ending follow a start of its value (the order test's domain)?"""
    return all(any(o == obj and k == "start" and w < when for o, k, w in said)
               for obj, kind, when in said if kind == "end")


def forget_differs(sets: int, seed: int) -> dict[str, dict[str, int]]:
    """Sets per slot where forgetting a statement differs from never having said it: ``inside`` counts
    forgets that leave every ending after a start of its value, ``outside`` the others (an ending left
    with no start of its value before it, whose stint is inferred: a known limit of the order rules);
    ``more_rows``: sets where some forget leaves more history rows than never having said it."""
    rng = random.Random(seed)
    out: dict[str, dict[str, int]] = {"inside": {}, "outside": {}, "more_rows": {}}
    for relation, values in (("lives_in", ["Porto", "Lisbon"]), ("has_pet", ["cat"])):
        differs = {"inside": 0, "outside": 0, "more_rows": 0}
        for _ in range(sets):
            said = statements(rng, values)
            at = probes(said)
            turns = [f"turn{i:02d}" for i in range(len(said))]
            bad: set[str] = set()
            for order in itertools.permutations(range(len(said))):
                seq = [said[i] for i in order]
                for k in range(len(seq)):
                    where = "inside" if started_before_ending(seq[:k] + seq[k + 1:]) else "outside"
                    if {where, "more_rows"} <= bad:
                        continue
                    with Memory(":memory:", llm=False, embedder=False) as mem:
                        said_in_sessions(mem, relation, seq, turns)
                        mem.forget(user_id="u", session_id=f"s-{turns[k]}")
                        got = at_probes(mem, relation, at)
                        traced = turns[k] in repr(mem.store.dump_user("u"))
                        rows = len(mem.history(user_id="u"))
                    with Memory(":memory:", llm=False, embedder=False) as mem:
                        said_in_sessions(mem, relation, seq[:k] + seq[k + 1:], turns[:k] + turns[k + 1:])
                        if traced or got != at_probes(mem, relation, at):
                            bad.add(where)
                        if rows > len(mem.history(user_id="u")):
                            bad.add("more_rows")
            for where in bad:
                differs[where] += 1
        for where, n in differs.items():
            out[where][relation] = n
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
    ap.add_argument("--forget-sets", type=int, default=60, help="random statement sets per slot to forget from")
    ap.add_argument("--repeats", type=int, default=500, help="times the one fact is said again")
    args = ap.parse_args()
    print(json.dumps({"sets_per_slot": args.sets, "order_dependent": order_dependent(args.sets, args.seed),
                      "forget_sets_per_slot": args.forget_sets,
                      "forget_differs_from_never_said": forget_differs(args.forget_sets, args.seed),
                      "repeats": args.repeats, **repeat_cost(args.repeats)}))


if __name__ == "__main__":
    main()
