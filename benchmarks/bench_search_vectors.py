"""Search with embeddings on for a user with many entities and facts, every one already embedded.

Before a search compares a question's names with the user's entity names by vector, it embeds the
entities that have no vector yet; and the relevance of each fact it reaches reads the fact's vector.  This
script builds one user of ``--facts`` facts (three quarters of them name a new entity), embeds every
entity and every stored fact once with a deterministic stand-in embedder (word hashes, 384 dimensions,
no model: the figures are the store's and the search's own work), then times ``--queries`` searches
whose question holds a name no entity has (so the embedding anchoring runs), evaluator off.  Prints the
median and p95 ms and the vectors the searches had to write (0: everything was embedded).

The same script runs against older code (``git archive REV src | tar -x -C DIR``; copy this file to
``DIR/benchmarks``):

  python benchmarks/bench_search_vectors.py --facts 20000
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from chronomem import Entity, Fact, Memory, SearchConfig  # noqa: E402

DIM = 384
QUESTIONS = ["Where does Maya's friend Dorotea live?", "Which songs does Maya like from Kalimba?",
             "Who did Maya meet in Trondheim?", "Does Person 12 know Zanzibar Jones?"]


class HashEmbedder:
    """Unit vectors from hashed words: deterministic, no model."""

    name = "bench-hash-384"
    dim = DIM

    def embed(self, texts: list[str]) -> list[list[float]]:
        out = []
        for text in texts:
            v = [0.0] * DIM
            for word in text.lower().split():
                h = hashlib.blake2b(word.encode(), digest_size=4).digest()
                v[int.from_bytes(h, "little") % DIM] += 1.0
            n = math.sqrt(sum(x * x for x in v)) or 1.0
            out.append([x / n for x in v])
        return out


def user_facts(n: int) -> list[dict[str, Any]]:
    """``n`` facts of one user: a quarter "Person N friend_of Maya", the rest songs Maya likes (new entities)."""
    out = []
    for i in range(n):
        if i % 4 == 0:
            out.append({"subject": f"Person {i % 97}", "relation": "friend_of", "object": "Maya"})
        else:
            out.append({"subject": "Maya", "relation": "likes", "object": f"song {i}",
                        "valid_from": f"20{10 + i % 15:02d}-{1 + i % 12:02d}-{1 + i % 28:02d}"})
    return out


def add_in_batches(mem: Memory, user: str, facts: list[dict[str, Any]], size: int = 5000) -> None:
    """``Memory.add_facts`` of many facts, ``size`` at a time (each call is one write transaction)."""
    for start in range(0, len(facts), size):
        mem.add_facts(facts[start:start + size], user_id=user)


def add_embedded_user(mem: Memory, user: str, n: int, emb: HashEmbedder) -> tuple[list[Entity], list[Fact]]:
    """Add :func:`user_facts` to ``user``, then a vector of every entity and held fact, as a search would
    have left them; returns the entities and the held facts."""
    add_in_batches(mem, user, user_facts(n))
    ents = mem.store.entities(user, with_aliases=False)
    mem.store.put_vectors(user, "entity", list(zip([e.id for e in ents], emb.embed([e.name for e in ents]))),
                          emb.name)
    held = mem.store.facts(user)
    mem.store.put_vectors(user, "fact", list(zip([f.id for f in held], emb.embed([f.render() for f in held]))),
                          emb.name)
    return ents, held


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--facts", type=int, default=20000)
    ap.add_argument("--queries", type=int, default=40)
    args = ap.parse_args()
    emb = HashEmbedder()
    with tempfile.TemporaryDirectory() as tmp:
        mem = Memory(str(Path(tmp) / "vectors.db"), llm=False, embedder=emb)
        ents, held = add_embedded_user(mem, "u", args.facts, emb)
        cfg = SearchConfig(evaluator=False)
        seconds, written = [], 0
        for i in range(args.queries + 2):
            t = time.perf_counter()
            res = mem.search(QUESTIONS[i % len(QUESTIONS)], user_id="u", config=cfg)
            if i >= 2:  # the first two warm the caches
                seconds.append(time.perf_counter() - t)
                written += res.trace.stats.get("embedded_entities", 0) + res.trace.stats.get("embedded_facts", 0)
        seconds.sort()
        print(json.dumps({"facts": len(held), "entities": len(ents), "queries": len(seconds),
                          "p50_ms": round(statistics.median(seconds) * 1000, 1),
                          "p95_ms": round(seconds[int(0.95 * (len(seconds) - 1))] * 1000, 1),
                          "vectors_written": written}))
        mem.close()


if __name__ == "__main__":
    main()
