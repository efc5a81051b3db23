"""Importing a large export into a user who already holds its entity: the facts join her history.

User ``a`` gets ``--facts`` facts "Maya likes thing N" (no model calls, ``add_facts`` in batches); her
export is imported into user ``b``, who already holds one fact about Maya.  Every imported fact then
joins Maya's slots, which ``import_`` places in time order again (``GraphWriter.rebuild``).  A rebuild
that compared every fact of the slot with every other grew with the square of the import.

  python benchmarks/bench_import_joining.py --facts 70000
  python benchmarks/bench_import_joining.py --facts 70000 --store postgresql://postgres@127.0.0.1:5432/test

A PostgreSQL store runs in a fresh schema, dropped at the end.  Prints one JSON line: seconds to add,
to export and to import, and the rows the import stored.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from chronomem import Memory  # noqa: E402


def run(url: str | Path, facts: int, batch: int) -> dict[str, object]:
    with Memory(url, llm=False, embedder=False) as mem:
        t = time.perf_counter()
        for start in range(0, facts, batch):
            mem.add_facts([{"subject": "Maya", "relation": "likes", "object": f"thing {start + i}"}
                           for i in range(min(batch, facts - start))], user_id="a")
        added = time.perf_counter() - t
        t = time.perf_counter()
        dump = mem.export(user_id="a")
        exported = time.perf_counter() - t
        mem.add_facts([{"subject": "Maya", "relation": "lives_in", "object": "Porto"}], user_id="b")
        t = time.perf_counter()
        stored = mem.import_(dump, user_id="b")
        imported = time.perf_counter() - t
        held = len(mem.store.facts("b"))
    return {"facts": facts, "add_s": round(added, 2), "export_s": round(exported, 2),
            "import_s": round(imported, 2), "stored": stored, "facts_held_by_b": held}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--facts", type=int, default=20000)
    ap.add_argument("--batch", type=int, default=5000)
    ap.add_argument("--store", default=None, help="a postgresql:// URL (default: SQLite in a temporary folder)")
    args = ap.parse_args()
    if args.store:
        import psycopg

        schema = f"bench_import_{uuid.uuid4().hex[:8]}"
        sep = "&" if "?" in args.store else "?"
        try:
            result = run(f"{args.store}{sep}schema={schema}", args.facts, args.batch)
        finally:
            with psycopg.connect(args.store.split("?")[0], autocommit=True) as conn:
                conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        result["store"] = "postgresql"
    else:
        with tempfile.TemporaryDirectory() as tmp:
            result = run(Path(tmp) / "m.db", args.facts, args.batch)
        result["store"] = "sqlite"
    print(json.dumps(result))


if __name__ == "__main__":
    main()
