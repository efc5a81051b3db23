"""Entity resolution as a user's entities grow: new names added to a user who holds N entities.

One user with ``--entities`` people ("Abcd Smith", names without digits, so every new name is compared
with all of them), then: ``add_facts`` of one fact naming a new person, nine times (median seconds; the
resolver holds the user's spellings between writes, and the write before these reads them all again: a
batch of 5,000 is more than the store's change log keeps), ``add_facts`` of 10 facts naming new people,
five times (median seconds), and one ``add_facts`` of ``--bulk`` facts naming new people (seconds).  No
model; SQLite in a temporary file, or ``--db`` (a PostgreSQL URL with a fresh ``?schema=``; the schema is
dropped afterwards).

  python benchmarks/bench_resolver.py --entities 5000 --bulk 2000
  python benchmarks/bench_resolver.py --entities 2000 --db "postgresql://postgres@127.0.0.1:5432/db?schema=bench_r"

Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from chronomem import Memory  # noqa: E402


def person(i: int, family: str) -> str:
    letters = ""
    for _ in range(4):
        i, r = divmod(i, 26)
        letters += chr(97 + r)
    return f"{letters.title()} {family}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--entities", type=int, default=5000)
    ap.add_argument("--bulk", type=int, default=2000)
    ap.add_argument("--db", help="a store URL (default: SQLite in a temporary file)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp, Memory(args.db or str(Path(tmp) / "r.db"), llm=False,
                                                      embedder=False) as mem:
        try:
            print(json.dumps(measure(mem, args.entities, args.bulk)))
        finally:
            if args.db:
                mem.store.inner.drop_schema()  # type: ignore[attr-defined]


def measure(mem: Memory, entities: int, bulk: int) -> dict[str, object]:
    for start in range(0, entities, 5000):
        mem.add_facts([{"subject": person(i, "Smith"), "relation": "lives_in", "object": "Porto"}
                       for i in range(start, min(start + 5000, entities))], user_id="u")
    mem.add_facts([{"subject": "Maya Brown", "relation": "lives_in", "object": "Aveiro"}], user_id="u")
    one = []
    for k in range(9):  # not in Porto: the update rules would read its facts, everyone's
        t = time.perf_counter()
        mem.add_facts([{"subject": person(k, "Moreira"), "relation": "lives_in", "object": "Aveiro"}], user_id="u")
        one.append(time.perf_counter() - t)
    small = []
    for k in range(5):
        batch = [{"subject": person(k * 10 + i, "Jones"), "relation": "lives_in", "object": "Braga"}
                 for i in range(10)]
        t = time.perf_counter()
        mem.add_facts(batch, user_id="u")
        small.append(time.perf_counter() - t)
    t = time.perf_counter()
    mem.add_facts([{"subject": person(i, "Silva"), "relation": "lives_in", "object": "Faro"}
                   for i in range(bulk)], user_id="u")
    took = time.perf_counter() - t
    return {"entities": entities, "one_new_name_median_s": round(statistics.median(one), 4),
            "ten_new_names_median_s": round(statistics.median(small), 4), "bulk": bulk,
            "bulk_s": round(took, 2), "entities_after": len(mem.entities(user_id="u"))}


if __name__ == "__main__":
    main()
