"""Store scale benchmark: PostgreSQL (with and without pgvector) against SQLite.

Phases (run one at a time; every phase appends one JSON line per figure to --out):

  load        bulk-load N synthetic facts over U users (COPY on Postgres, executemany on
              SQLite; all schema indexes, including full-text, maintained).  Resumable: rows
              go in committed chunks and a restart continues after the last one.
  query       point query ``store.facts(user, subject_ids=[s], relations=[r], as_of=t)`` —
              the temporal point query — from one client: p50/p95/p99 in ms.
  concurrent  the same query from C client processes for D seconds: total queries/s and
              p50/p95 under load; then C writer processes doing ``Memory.add_facts`` of a
              single-valued fact for random users (the full update path): writes/s.
  vectors     load V synthetic 384-d vectors over VU users (resumable), then per-user
              ``store.knn`` k=10 p50/p95 (exact per user: the planner filters by user first);
              with --heavy-user H also one user holding H vectors, measured the same way.
  hnsw        (pgvector only) build the partial HNSW index, time it, re-measure k-NN and
              recall@10 against exact (typical and heavy user), and record the plans picked.

Examples (the commands used for BENCHMARKS.md are listed there):

  python benchmarks/bench_store_scale.py --db postgresql://postgres@127.0.0.1:5432/chronomem_bench \\
      --facts 1000000 --users 100000 --phase load
  python benchmarks/bench_store_scale.py --db /tmp/chronomem_bench/1m.db --facts 1000000 --phase query
  python benchmarks/bench_store_scale.py --pgserver /tmp/chronomem_bench/pgv --phase vectors
"""

from __future__ import annotations

import argparse
import json
import logging
import multiprocessing as mp
import os
import random
import re
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from chronomem.store import open_store  # noqa: E402
from chronomem.store.base import Store  # noqa: E402
from chronomem.store.sql import FACT_COLS, VEC_COLS  # noqa: E402
from chronomem.timeutil import from_micros  # noqa: E402

log = logging.getLogger("bench_store_scale")

DAY_US = 86_400 * 1_000_000
BASE_US = 1_500_000_000 * 1_000_000  # 2017-07-14
SUBJECTS = 4
RELS = ("lives_in", "works_at", "job_title", "likes", "has_pet", "friend_of", "plays", "studies")
CHUNK = 50_000


@dataclass(frozen=True)
class Shape:
    facts: int
    users: int

    @property
    def per_user(self) -> int:
        return max(1, self.facts // self.users)


def fact_row(i: int, shape: Shape) -> tuple[Any, ...]:
    """Deterministic synthetic fact number ``i`` (same data on every backend)."""
    u, j = i % shape.users, i // shape.users
    subj, rel = j % SUBJECTS, RELS[(j // SUBJECTS) % len(RELS)]
    vf = BASE_US + j * 30 * DAY_US
    vt = None if j >= shape.per_user - len(RELS) * SUBJECTS else vf + 400 * DAY_US
    return (f"u{u:06d}", f"f{i:09d}", f"e{u:06d}_{subj}", f"Person{subj}", rel, f"o{u:06d}_{j}",
            f"Thing {j}", vf, vt, vt, 0.9 if j % 10 else 0.4, "FACT", "imported", vf, f"s{j // 20}",
            None, "[]", f"Person{subj} {rel.replace('_', ' ')} thing number {j}", None)


def emit(out: Path, record: dict[str, Any]) -> None:
    record = {"at": time.strftime("%Y-%m-%dT%H:%M:%S"), **record}
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("a") as f:
        f.write(json.dumps(record) + "\n")
    log.info("%s", json.dumps(record))


def pct(xs: list[float], p: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))]


def backend(store: Store) -> str:
    return "sqlite" if store.url.startswith("sqlite") else f"postgres/{getattr(store, 'vector_backend', '?')}"


# -- load -----------------------------------------------------------------------------------
def count(store: Store, table: str) -> int:
    return int(store._all(f"SELECT COUNT(*) FROM {table}")[0][0])  # type: ignore[attr-defined]


def load_facts(store: Store, shape: Shape, out: Path) -> None:
    done = count(store, "facts")
    if done >= shape.facts:
        log.info("facts already loaded (%d)", done)
        return
    start = done  # chunks commit atomically, so the count is where the last run stopped
    log.info("loading facts %d..%d", start, shape.facts)
    t0, loaded = time.perf_counter(), 0
    for lo in range(start, shape.facts, CHUNK):
        hi = min(shape.facts, lo + CHUNK)
        rows = (fact_row(i, shape) for i in range(lo, hi))
        if backend(store) == "sqlite":
            db = store._db  # type: ignore[attr-defined]
            db.execute("BEGIN IMMEDIATE")
            db.executemany(f"INSERT INTO facts ({', '.join(FACT_COLS)}) VALUES "
                           f"({', '.join('?' * len(FACT_COLS))})", rows)
            db.execute("COMMIT")
        else:
            with store._connection() as raw, raw.transaction():  # type: ignore[attr-defined]
                with raw.cursor().copy(f"COPY facts ({', '.join(FACT_COLS)}) FROM STDIN") as cp:
                    for r in rows:
                        cp.write_row(r)
        loaded += hi - lo
        el = time.perf_counter() - t0
        log.info("%d/%d facts, %.0f rows/s", hi, shape.facts, loaded / el)
    el = time.perf_counter() - t0
    if backend(store) != "sqlite":
        with store._connection() as raw:  # type: ignore[attr-defined]
            raw.execute("ANALYZE facts")
    emit(out, {"phase": "load", "backend": backend(store), "facts": shape.facts, "users": shape.users,
               "rows_loaded": loaded, "seconds": round(el, 1), "rows_per_s": round(loaded / el),
               "resumed_from": start})


# -- point queries -----------------------------------------------------------------------------
def point_query_args(rng: random.Random, shape: Shape) -> tuple[str, str, str, int]:
    """A stored slot (user, subject, relation) and an instant in or just after one of its facts."""
    u, j = rng.randrange(shape.users), rng.randrange(shape.per_user)
    t = BASE_US + j * 30 * DAY_US + rng.randrange(500) * DAY_US
    return f"u{u:06d}", f"e{u:06d}_{j % SUBJECTS}", RELS[(j // SUBJECTS) % len(RELS)], t


def run_point_queries(store: Store, shape: Shape, n: int, seed: int,
                      until: float | None = None) -> tuple[int, list[float], int]:
    rng = random.Random(seed)
    lat: list[float] = []
    hits = 0
    i = 0
    while (until is None and i < n) or (until is not None and time.perf_counter() < until):
        user, sid, rel, t = point_query_args(rng, shape)
        t0 = time.perf_counter()
        res = store.facts(user, subject_ids=[sid], relations=[rel], as_of=from_micros(t))
        lat.append((time.perf_counter() - t0) * 1000)
        hits += len(res)
        i += 1
    return i, lat, hits


def phase_query(store: Store, shape: Shape, out: Path, n: int) -> None:
    run_point_queries(store, shape, 200, seed=1)  # warm-up
    done, lat, hits = run_point_queries(store, shape, n, seed=2)
    emit(out, {"phase": "query", "backend": backend(store), "facts": shape.facts, "queries": done,
               "rows_returned": hits, "p50_ms": round(pct(lat, 50), 3), "p95_ms": round(pct(lat, 95), 3),
               "p99_ms": round(pct(lat, 99), 3), "mean_ms": round(statistics.fmean(lat), 3)})


def _reader(url: str, shape: Shape, seed: int, start: float, seconds: float,
            q: mp.Queue[Any]) -> None:
    store = open_store(url) if not url.startswith("postgres") else _pg(url, 1)
    run_point_queries(store, shape, 50, seed=seed + 1000)  # warm-up
    while time.time() < start:
        time.sleep(0.01)
    until = time.perf_counter() + seconds
    done, lat, _ = run_point_queries(store, shape, 0, seed=seed, until=until)
    store.close()
    q.put((done, lat))


def _writer(url: str, shape: Shape, seed: int, start: float, seconds: float, q: mp.Queue[Any]) -> None:
    from chronomem import Memory

    mem = Memory(url)
    rng = random.Random(seed)
    lat: list[float] = []
    while time.time() < start:
        time.sleep(0.01)
    end = time.perf_counter() + seconds
    n = 0
    while time.perf_counter() < end:
        user = f"u{rng.randrange(shape.users):06d}"
        t0 = time.perf_counter()
        mem.add_facts([{"subject": "Writer", "relation": "lives_in", "object": f"City{rng.randrange(50)}",
                        "valid_from": from_micros(BASE_US + rng.randrange(3000) * DAY_US)}], user_id=user)
        lat.append((time.perf_counter() - t0) * 1000)
        n += 1
    mem.close()
    q.put((n, lat))


def _pg(url: str, pool: int) -> Store:
    from chronomem.store.postgres import PostgresStore

    return PostgresStore(url, pool_size=pool)


def phase_concurrent(url: str, store: Store, shape: Shape, out: Path, clients: int, seconds: float) -> None:
    ctx = mp.get_context("spawn")
    for role, target in (("read", _reader), ("write", _writer)):
        q: mp.Queue[Any] = ctx.Queue()
        start = time.time() + 8  # let every process import and connect first
        procs = [ctx.Process(target=target, args=(url, shape, 100 + k, start, seconds, q)) for k in range(clients)]
        for p in procs:
            p.start()
        results = [q.get(timeout=seconds + 300) for _ in procs]
        for p in procs:
            p.join()
        total = sum(r[0] for r in results)
        lat = [x for r in results for x in r[1]]
        emit(out, {"phase": f"concurrent_{role}", "backend": backend(store), "facts": shape.facts,
                   "clients": clients, "seconds": seconds, "ops": total, "ops_per_s": round(total / seconds, 1),
                   "p50_ms": round(pct(lat, 50), 2), "p95_ms": round(pct(lat, 95), 2)})


# -- vectors -------------------------------------------------------------------------------------
def vec_chunk(lo: int, hi: int, dim: int) -> np.ndarray:
    return np.random.default_rng(lo).standard_normal((hi - lo, dim), dtype=np.float32)


HEAVY = "vheavy"  # one user with many vectors: where an ANN index can beat the per-user scan


def load_vectors(store: Store, n: int, users: int, dim: int, out: Path, *, heavy: bool = False) -> None:
    """``n`` vectors over ``users`` users (``v00000``…), or, with ``heavy``, ``n`` vectors of one user."""
    where = "user_id = ?" if heavy else "user_id <> ?"
    done = int(store._all(f"SELECT COUNT(*) FROM vectors WHERE {where}", (HEAVY,))[0][0])  # type: ignore[attr-defined]
    if done >= n:
        log.info("vectors already loaded (%d)", done)
        return
    chunk = 20_000
    start = done  # chunks commit atomically
    t0, loaded = time.perf_counter(), 0
    pgvec = getattr(store, "vector_backend", "") == "pgvector"
    for lo in range(start, n, chunk):
        hi = min(n, lo + chunk)
        mat = vec_chunk(lo + (10**9 if heavy else 0), hi + (10**9 if heavy else 0), dim)
        ids = [(HEAVY, f"h{i:09d}") if heavy else (f"v{i % users:05d}", f"x{i:09d}") for i in range(lo, hi)]
        if backend(store) == "sqlite":
            db = store._db  # type: ignore[attr-defined]
            db.execute("BEGIN IMMEDIATE")
            db.executemany(f"INSERT OR REPLACE INTO vectors ({', '.join(VEC_COLS)}) VALUES (?, ?, ?, ?, ?, ?)",
                           ((u, "fact", i, "synthetic", dim, mat[k].tobytes()) for k, (u, i) in enumerate(ids)))
            db.execute("COMMIT")
        else:
            with store._connection() as raw, raw.transaction():  # type: ignore[attr-defined]
                with raw.cursor().copy(f"COPY vectors ({', '.join(VEC_COLS)}) FROM STDIN") as cp:
                    for k, (u, i) in enumerate(ids):
                        v = ("[" + ",".join(f"{x:.7g}" for x in mat[k].tolist()) + "]") if pgvec \
                            else mat[k].astype("<f4").tobytes()
                        cp.write_row((u, "fact", i, "synthetic", dim, v))
        loaded += hi - lo
        log.info("%d/%d vectors, %.0f rows/s", hi, n, loaded / (time.perf_counter() - t0))
    el = time.perf_counter() - t0
    if backend(store) != "sqlite":
        with store._connection() as raw:  # type: ignore[attr-defined]
            raw.execute("ANALYZE vectors")
    emit(out, {"phase": "vector_load_heavy_user" if heavy else "vector_load", "backend": backend(store),
               "vectors": n, "users": 1 if heavy else users, "dim": dim, "rows_loaded": loaded,
               "seconds": round(el, 1), "rows_per_s": round(loaded / max(el, 1e-9))})


def measure_knn(store: Store, users: int, dim: int, n: int, label: str, out: Path,
                recall: bool = False, heavy: bool = False) -> None:
    rng = np.random.default_rng(7)
    lat: list[float] = []
    recalls: list[float] = []
    exact_cache: dict[str, tuple[list[str], np.ndarray]] = {}
    for k in range(n + 20):
        user = HEAVY if heavy else f"v{int(rng.integers(users)):05d}"
        q = rng.standard_normal(dim, dtype=np.float32)
        t0 = time.perf_counter()
        got = store.knn(user, "fact", q.tolist(), k=10)
        if k >= 20:
            lat.append((time.perf_counter() - t0) * 1000)
        if recall and k >= 20:
            if user not in exact_cache:
                rows = store._all("SELECT item_id, vec FROM vectors WHERE user_id = ?", (user,))  # type: ignore[attr-defined]
                exact_cache[user] = ([r[0] for r in rows], np.array(
                    [store._vec_from_db(r[1]) for r in rows], dtype=np.float32))  # type: ignore[attr-defined]
            ids, mat = exact_cache[user]
            sims = mat @ q / (np.linalg.norm(mat, axis=1) * np.linalg.norm(q))
            exact = {ids[i] for i in np.argsort(-sims)[:10]}
            recalls.append(len(exact & {g[0] for g in got}) / 10)
            if not heavy:
                exact_cache.clear()
    rec: dict[str, Any] = {"phase": label, "backend": backend(store), "queries": n, "k": 10,
                           "user_vectors": int(store._all("SELECT COUNT(*) FROM vectors WHERE user_id = ?",  # type: ignore[attr-defined]
                                                          (HEAVY if heavy else "v00001",))[0][0]),
                           "p50_ms": round(pct(lat, 50), 2), "p95_ms": round(pct(lat, 95), 2)}
    if recalls:
        rec["recall_at_10"] = round(statistics.fmean(recalls), 4)
    emit(out, rec)


def phase_hnsw(store: Store, users: int, dim: int, n: int, out: Path) -> None:
    if getattr(store, "vector_backend", "") != "pgvector":
        raise SystemExit("the hnsw phase needs a pgvector database")
    name = f"vectors_hnsw_d{dim}"
    with store._connection() as raw:  # type: ignore[attr-defined]
        exists = raw.execute("SELECT to_regclass(%s)", (name,)).fetchone()[0]
        if exists is None:
            raw.execute("SET maintenance_work_mem = '3GB'")
            raw.execute("SET max_parallel_maintenance_workers = 1")
            t0 = time.perf_counter()
            raw.execute(f"CREATE INDEX {name} ON vectors USING hnsw ((vec::vector({dim})) vector_cosine_ops) "
                        f"WHERE dim = {dim}")
            emit(out, {"phase": "hnsw_build", "backend": backend(store), "vectors": count(store, "vectors"),
                       "dim": dim, "seconds": round(time.perf_counter() - t0, 1)})
        plan = raw.execute(
            f"EXPLAIN SELECT item_id, vec::vector({dim}) <=> %s::vector({dim}) AS d FROM vectors "
            f"WHERE user_id = %s AND kind = 'fact' AND dim = {dim} ORDER BY d LIMIT 10",
            (store._vec_param([0.1] * dim), "v00001")).fetchall()  # type: ignore[attr-defined]
        nodes = [re.sub(r"'\[[^']*\]'", "'[…]'", r[0]) for r in plan]
        emit(out, {"phase": "hnsw_plan_per_user", "plan": nodes[:6]})
        plan = raw.execute(
            f"EXPLAIN SELECT item_id, vec::vector({dim}) <=> %s::vector({dim}) AS d FROM vectors "
            f"WHERE user_id = %s AND kind = 'fact' AND dim = {dim} ORDER BY d LIMIT 10",
            (store._vec_param([0.1] * dim), HEAVY)).fetchall()  # type: ignore[attr-defined]
        emit(out, {"phase": "hnsw_plan_heavy_user", "plan": [re.sub(r"'\[[^']*\]'", "'[…]'", r[0])
                                                             for r in plan][:6]})
    measure_knn(store, users, dim, n, "knn_with_hnsw_present", out, recall=True)
    measure_knn(store, users, dim, n, "knn_heavy_user_with_hnsw", out, recall=True, heavy=True)


# -- main ------------------------------------------------------------------------------------------
def start_pgserver(path: str) -> str:
    import pgserver

    p = Path(path)
    p.mkdir(parents=True, exist_ok=True)
    srv = pgserver.get_server(p, cleanup_mode=None)  # keep running and keep data: resumable
    return srv.get_uri()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--db", help="store URL or SQLite path")
    ap.add_argument("--pgserver", help="start/reuse a bundled PostgreSQL+pgvector with data in this folder")
    ap.add_argument("--phase", required=True,
                    choices=["load", "query", "concurrent", "vectors", "hnsw"])
    ap.add_argument("--facts", type=int, default=1_000_000)
    ap.add_argument("--users", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=2000)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--vectors", type=int, default=1_000_000)
    ap.add_argument("--vec-users", type=int, default=1000)
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--heavy-user", type=int, default=0,
                    help="also load one user with this many vectors (vectors phase)")
    ap.add_argument("--out", default="/tmp/chronomem_bench/results.jsonl")
    a = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    url = a.db
    if a.pgserver:
        url = start_pgserver(a.pgserver) + "&schema=chronomem"
    if not url:
        ap.error("give --db or --pgserver")
    out = Path(a.out)
    shape = Shape(a.facts, a.users)
    store = open_store(url)
    emit(out, {"phase": "start", "what": a.phase, "backend": backend(store), "url": getattr(store, "url", url),
               "argv": sys.argv[1:], "cpus": os.cpu_count()})
    try:
        if a.phase == "load":
            load_facts(store, shape, out)
        elif a.phase == "query":
            phase_query(store, shape, out, a.queries)
        elif a.phase == "concurrent":
            phase_concurrent(url, store, shape, out, a.clients, a.seconds)
        elif a.phase == "vectors":
            load_vectors(store, a.vectors, a.vec_users, a.dim, out)
            measure_knn(store, a.vec_users, a.dim, 500, "knn_exact_per_user", out, recall=False)
            if a.heavy_user:
                load_vectors(store, a.heavy_user, 1, a.dim, out, heavy=True)
                measure_knn(store, 1, a.dim, 100, "knn_heavy_user_exact", out, heavy=True)
        elif a.phase == "hnsw":
            phase_hnsw(store, a.vec_users, a.dim, 300, out)
    finally:
        store.close()


if __name__ == "__main__":
    main()
