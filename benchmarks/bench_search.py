"""REAL search benchmark: latency at 10k / 100k / 1M facts, and LLM cost per query with the evaluator on.

Phases:

  load     build a SQLite store of N synthetic facts as U per-user graphs of realistic size
           (~1,000 facts each: a person with moves, job changes, siblings stored from the
           sibling's side, a spouse, friends with their own homes and employers, pets with
           is_a chains, places with located_in chains, likes).  Bulk insert through the store
           (entities + facts, full-text index maintained), so loading 1M facts takes minutes.
  latency  run the issue's question templates against random users, evaluator off, no LLM
           calls; embeddings off (lexical S_QR) unless --embeddings.  Prints p50/p95/mean ms.
  llm      the same questions on one user with the local model through ``answer()``:
           evaluator and intent fallback on (``ANSWER_CONFIG`` budget); reports LLM calls and
           tokens per query spent by the search (evaluator, intents) and in total (+ the answer).

  python benchmarks/bench_search.py --db /tmp/cm_bench/10k.db --facts 10000 --phase load
  python benchmarks/bench_search.py --db /tmp/cm_bench/10k.db --phase latency --queries 200
  python benchmarks/bench_search.py --db /tmp/cm_bench/10k.db --phase llm --queries 7
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import statistics
import sys
import time
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from chronomem import Memory  # noqa: E402
from chronomem.entities import normalize_name  # noqa: E402
from chronomem.model import Entity, Fact, Intent, Origin  # noqa: E402
from chronomem.retrieve import ANSWER_CONFIG, SearchConfig  # noqa: E402
from chronomem.store import open_store  # noqa: E402

log = logging.getLogger("bench_search")
UTC = timezone.utc
T0 = datetime(2015, 1, 1, tzinfo=UTC)
FACTS_PER_USER = 1000

CITIES = [("Porto", "Portugal"), ("Lisbon", "Portugal"), ("Braga", "Portugal"), ("Madrid", "Spain"),
          ("Berlin", "Germany"), ("Kyoto", "Japan"), ("Oslo", "Norway"), ("Paris", "France"),
          ("Lyon", "France"), ("Austin", "United States")]
ORGS = ["Farfetch", "Feedzai", "Unbabel", "Siemens", "Spotify", "Nintendo", "Equinor", "Airbus", "Dell", "Sonae"]
TITLES = ["junior designer", "designer", "senior designer", "product designer", "design lead", "engineer",
          "teacher", "nurse", "analyst", "manager"]
BREEDS = [("golden retriever", "dog"), ("tabby cat", "cat"), ("beagle", "dog"), ("parrot", "bird")]
LIKES = ["jazz", "tea", "hiking", "chess", "sushi", "running", "novels", "cycling", "pottery", "opera",
         "tennis", "coffee", "yoga", "painting", "surfing", "baking", "poetry", "climbing", "podcasts", "films"]
QUESTIONS = ["Where does Maya's brother live?", "Who is Rui's sibling?", "Does Maya have a dog?",
             "Where did Maya live in 2019?", "How has Maya's job changed?", "Where does Tiago's wife work?",
             "Where does Maya live?"]


class Graph:
    """Builds one user's facts and entities."""

    def __init__(self, user: str, rng: random.Random) -> None:
        self.user, self.rng = user, rng
        self.entities: dict[str, Entity] = {}
        self.facts: list[Fact] = []

    def ent(self, name: str, etype: str | None = None) -> Entity:
        norm = normalize_name(name)
        e = self.entities.get(norm)
        if e is None:
            e = self.entities[norm] = Entity(uuid.uuid4().hex, self.user, name, etype, created_at=T0)
        return e

    def fact(self, s: str, r: str, o: str, start: datetime | None, end: datetime | None = None,
             c: float = 1.0, st: str | None = None, ot: str | None = None) -> None:
        se, oe = self.ent(s, st), self.ent(o, ot)
        self.facts.append(Fact(uuid.uuid4().hex, self.user, se.name, r, oe.name, start, end, c, Intent.FACT,
                               Origin.IMPORTED, start or T0, [f"m{len(self.facts)}"], subject_id=se.id,
                               object_id=oe.id, stated_to=end))

    def build(self, n: int) -> None:
        rng = self.rng
        for city, country in CITIES:
            self.fact(city, "located_in", country, None, st="place", ot="place")
        # Maya: moves, jobs (single-valued versions), siblings stored from their side, spouse, pets
        years = sorted(rng.sample(range(0, 10), 4))
        homes = rng.sample(CITIES, 5)
        for i, y in enumerate(years):
            s, e = T0 + timedelta(days=365 * y), (T0 + timedelta(days=365 * years[i + 1]) if i + 1 < len(years) else None)
            self.fact("Maya", "lives_in", homes[i][0], s, e, st="person")
            self.fact("Maya", "works_at", ORGS[(i + len(self.facts)) % len(ORGS)], s, e)
            self.fact("Maya", "job_title", TITLES[i], s, e)
        self.fact("Maya", "lives_in", "Paris", T0 + timedelta(days=3650), None, c=0.3)  # hedged plan
        self.fact("Rui", "sibling_of", "Maya", None, st="person")
        self.fact("Rui", "lives_in", homes[4][0], T0)
        self.fact("Maya", "married_to", "Tiago", T0 + timedelta(days=2000), st="person", ot="person")
        self.fact("Tiago", "works_at", rng.choice(ORGS), T0)
        for p, (breed, kind) in enumerate(rng.sample(BREEDS, 2)):
            pet = f"pet{p}"
            self.fact("Maya", "has_pet", pet, T0 + timedelta(days=300 * p))
            self.fact(pet, "is_a", breed, None)
            self.fact(breed, "is_a", kind, None)
        # friends and friends of friends fill the rest
        i = 0
        while len(self.facts) < n:
            f = f"Friend {i}"
            self.fact("Maya", "friend_of", f, T0 + timedelta(days=rng.randrange(3650)), st="person", ot="person")
            self.fact(f, "lives_in", rng.choice(CITIES)[0], T0 + timedelta(days=rng.randrange(3650)))
            self.fact(f, "works_at", rng.choice(ORGS), T0 + timedelta(days=rng.randrange(3650)))
            for like in rng.sample(LIKES, 3):
                self.fact(f, "likes", like, T0 + timedelta(days=rng.randrange(3650)))
            if i % 4 == 0:
                self.fact("Maya", "likes", rng.choice(LIKES), T0 + timedelta(days=rng.randrange(3650)))
            i += 1
        del self.facts[n:]


def load(db: str, n_facts: int, seed: int) -> dict[str, Any]:
    store = open_store(db)
    rng = random.Random(seed)
    users = max(1, n_facts // FACTS_PER_USER)
    done = set(store.users())
    t = time.perf_counter()
    written = 0
    for u in range(users):
        uid = f"user{u:07d}"
        if uid in done:
            continue
        g = Graph(uid, rng)
        g.build(min(FACTS_PER_USER, n_facts - u * FACTS_PER_USER))
        with store.transaction(uid):
            store.insert_entities(uid, [(e, norm) for norm, e in g.entities.items()])
            store.insert_facts(uid, g.facts)
        written += len(g.facts)
        if u % 50 == 0:
            log.info("user %d/%d, %.0f facts/s", u, users, written / (time.perf_counter() - t + 1e-9))
    store.close()
    return {"phase": "load", "facts": n_facts, "users": users, "seconds": round(time.perf_counter() - t, 1)}


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def latency(db: str, queries: int, seed: int, embeddings: bool) -> dict[str, Any]:
    mem = Memory(db, embedder=None if embeddings else False)
    users = mem.store.users()
    n = sum(1 for _ in users)
    rng = random.Random(seed)
    cfg = SearchConfig(embeddings=None if embeddings else False, evaluator=False)
    # warm-up (and, with embeddings, the one-time lazy embedding of the sampled users)
    sample_users = [rng.choice(users) for _ in range(min(queries, 20 if embeddings else queries))]
    for u in set(sample_users[:5]):
        mem.search(QUESTIONS[0], user_id=u, config=cfg)
    times: list[float] = []
    ok = 0
    for i in range(queries):
        u = sample_users[i % len(sample_users)]
        q = QUESTIONS[i % len(QUESTIONS)]
        t = time.perf_counter()
        res = mem.search(q, user_id=u, config=cfg)
        times.append((time.perf_counter() - t) * 1000)
        ok += bool(res.paths)
    facts = mem.store.count_facts(users[0]) if users else 0
    mem.close()
    return {"phase": "latency", "db": db, "users": n, "facts_per_user": facts, "queries": queries,
            "embeddings": embeddings, "p50_ms": round(statistics.median(times), 2),
            "p95_ms": round(pct(times, 0.95), 2), "mean_ms": round(statistics.fmean(times), 2),
            "answered": ok}


def llm_cost(db: str, queries: int, llm: str) -> dict[str, Any]:
    mem = Memory(db, llm=llm, embedder=False)
    user = mem.store.users()[0]
    from dataclasses import replace

    cfg = replace(ANSWER_CONFIG, embeddings=False)
    rows = []
    for q in QUESTIONS[:queries]:
        t = time.perf_counter()
        a = mem.answer(q, user_id=user, config=cfg)
        ta = time.perf_counter() - t
        rows.append({"q": q, "search_calls": a.usage["search_llm_calls"], "search_tokens": a.usage["search_llm_tokens"],
                     "search_ms": a.trace.timings_ms["total"], "answer_calls": a.usage["llm_calls"],
                     "answer_tokens": a.usage["tokens"], "answer_s": round(ta, 2),
                     "context_tokens": a.context_tokens, "text": a.text})
        log.info("%s", rows[-1])
    mem.close()
    med = lambda k: statistics.median(r[k] for r in rows)  # noqa: E731
    return {"phase": "llm", "llm": llm, "queries": len(rows), "rows": rows,
            "median_search_calls": med("search_calls"), "median_search_tokens": med("search_tokens"),
            "median_answer_calls": med("answer_calls"), "median_answer_tokens": med("answer_tokens"),
            "median_answer_s": med("answer_s"), "median_context_tokens": med("context_tokens")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--db", required=True)
    ap.add_argument("--phase", choices=("load", "latency", "llm"), required=True)
    ap.add_argument("--facts", type=int, default=10_000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--embeddings", action="store_true", help="latency with the local embedder (lazy vectors)")
    ap.add_argument("--llm", default="local")
    a = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    for noisy in ("chronomem", "httpx"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    if a.phase == "load":
        out = load(a.db, a.facts, a.seed)
    elif a.phase == "latency":
        out = latency(a.db, a.queries, a.seed, a.embeddings)
    else:
        out = llm_cost(a.db, a.queries, a.llm)
    print(json.dumps(out, ensure_ascii=False))


if __name__ == "__main__":
    main()
