"""What PostgreSQL migration 0011 (Chinese, Japanese and Korean text indexed as character pairs) costs a
schema written before it.

One user: ``--rows`` facts and as many turns stored without extraction, one in ``--every`` of them in
Japanese, the rest English; the schema is then put back to version 10 (0010's function and columns made
again, 0011's functions dropped), and opening it runs 0011.  Prints the seconds the open took, how many
rows 0011 wrote again, and that a Japanese word is found afterwards.  Needs the machine's PostgreSQL; makes
and drops a schema of its own.

  python benchmarks/bench_cjk_migration.py --rows 100000

(SQLite's migration 0016 is timed by ``bench_shared_fulltext.py``: load a file with an older tree, open a
copy with this one; see BENCHMARKS.md "Chinese, Japanese and Korean text".)
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from chronomem import Memory  # noqa: E402
from chronomem.model import Message  # noqa: E402
from chronomem.store.sql import migrations  # noqa: E402

SERVER = "postgresql://postgres@127.0.0.1:5432/test"
T = datetime(2024, 5, 1, tzinfo=timezone.utc)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--every", type=int, default=100, help="one row in this many is Japanese")
    args = ap.parse_args()
    schema = "cjkmig_" + uuid.uuid4().hex[:8]
    url = f"{SERVER}?schema={schema}"

    def text(i: int) -> str:
        return f"私は{i}年にリスボンに引っ越しました" if i % args.every == 0 else f"I moved to Lisbon in year {i}"

    try:
        with Memory(url, llm=False, embedder=False) as mem:
            for b in range(0, args.rows, 5000):
                n = range(b, min(b + 5000, args.rows))
                mem.add_facts([{"subject": "Maya", "relation": "said", "object": f"k{i}", "text": text(i)}
                               for i in n], user_id="u")
                mem.store.add_messages("u", [Message(f"m{i}", "u", "s", "Maya", text(i), T, T, seq=i) for i in n])
        with psycopg.connect(SERVER, autocommit=True) as conn:  # back to version 10
            conn.execute(f'SET search_path TO "{schema}"')
            conn.execute(dict(migrations("postgres"))[10])
            conn.execute("DROP FUNCTION chronomem_fts_fold(text), chronomem_cjk_bigrams(text)")
            conn.execute("UPDATE chronomem_meta SET value = '10' WHERE key = 'schema_version'")
            before = conn.execute("SELECT count(*) FROM messages WHERE tsv @@ 'リス'::tsquery").fetchone()
        t = time.perf_counter()
        with Memory(url, llm=False, embedder=False) as mem:
            opened = time.perf_counter() - t
            found = len(mem.store.search_messages_text("u", "リスボン", 10_000))
        print(json.dumps({"rows": args.rows, "japanese_rows": len(range(0, args.rows, args.every)),
                          "open_s": round(opened, 2), "turns_found_before": before[0] if before else None,
                          "turns_found_after": found}))
    finally:
        with psycopg.connect(SERVER, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


if __name__ == "__main__":
    main()
