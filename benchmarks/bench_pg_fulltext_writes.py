"""What PostgreSQL's full-text columns cost a write (session 46: migration 0010 folds the text as SQLite's
FTS5 does, in a PL/pgSQL function every inserted row's generated column calls).

One user: 20,000 facts in four ``add_facts`` batches of 5,000, then 5,000 turns stored without
extraction, each text holding an accented word, an e-mail address and a URL (the function's slow path);
then 20 full-text searches of facts and turns.  Prints the seconds per batch, for the turns, and the
median ms of a search pair.  Needs the machine's PostgreSQL; makes and drops a schema of its own.
Run against older code from a ``git archive`` copy (``PYTHONPATH=src``):

  python benchmarks/bench_pg_fulltext_writes.py
"""

import statistics
import time
import uuid

import psycopg

from chronomem import Memory

SERVER = "postgresql://postgres@127.0.0.1:5432/test"


def main() -> None:
    schema = "pgadd_" + uuid.uuid4().hex[:8]
    facts = [{"subject": f"Person {i % 97}", "relation": "likes", "object": f"song {i} café maya@example.com",
              "text": f"Person {i % 97} likes song {i} at https://example.com/x/{i}"} for i in range(20000)]
    turns = [{"speaker": "Maya", "text": f"I went to the café number {i} with Zoë, see notes/{i}.txt", "id": f"t{i}"}
             for i in range(5000)]
    try:
        with Memory(f"{SERVER}?schema={schema}", llm=False, embedder=False) as mem:
            batches = []
            for b in range(0, len(facts), 5000):
                t = time.perf_counter()
                mem.add_facts(facts[b:b + 5000], user_id="u")
                batches.append(time.perf_counter() - t)
            t = time.perf_counter()
            mem.pipeline.add(turns, user_id="u", session_id="s1", extract=False)
            stored = time.perf_counter() - t
            searches = []
            for word in ["café", "example", "song 123", "notes", "zoe"] * 4:
                t = time.perf_counter()
                mem.store.search_facts_text("u", word, 20)
                mem.store.search_messages_text("u", word, 20)
                searches.append(time.perf_counter() - t)
        print(f"add_facts s/5000: {[round(x, 2) for x in batches]} turns 5000: {stored:.2f}s "
              f"search pair median ms {statistics.median(searches) * 1000:.1f}")
    finally:
        with psycopg.connect(SERVER, autocommit=True) as c:
            c.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


if __name__ == "__main__":
    main()
