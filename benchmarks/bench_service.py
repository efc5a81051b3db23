"""Service figures (BENCHMARKS.md "Service"): queued-ingestion throughput with 1, 2 and 4
workers, and the latency of acknowledging ``POST /v1/users/{u}/messages``.

Real PostgreSQL, real RabbitMQ, real ``chronomem worker`` and ``chronomem serve`` processes;
the model is the deterministic OpenAI-compatible server of ``tests/fake_openai.py`` answering
each call after a fixed ``--llm-delay`` (stated in the output), so the figures measure the
service, not a model.

    PYTHONPATH=src python benchmarks/bench_service.py --workers 1 2 4 --jobs 60 --acks 300

Each worker-count run uses a fresh PostgreSQL schema and RabbitMQ queue.  Throughput counts
turns from the first submit until every job is done (workers are started and warm before).
The ack run posts ``--acks`` requests one after another over HTTP keep-alive to a running
``chronomem serve`` (PostgreSQL + RabbitMQ, API key auth) and reports median and p95.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "src"))

from fake_openai import FakeModelServer  # noqa: E402

PG = os.environ.get("CHRONOMEM_BENCH_PG", "postgresql://postgres@127.0.0.1:5432/test")
AMQP = os.environ.get("CHRONOMEM_BENCH_AMQP", "amqp://guest:guest@127.0.0.1:5672/%2F")
TURNS_PER_JOB = 4


def fresh_db() -> str:
    return f"{PG}?schema=bench_svc_{uuid.uuid4().hex[:8]}"


def drop(db: str) -> None:
    import psycopg

    schema = db.split("schema=")[1]
    with psycopg.connect(PG, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def delete_queue(name: str) -> None:
    import pika

    conn = pika.BlockingConnection(pika.URLParameters(AMQP))
    ch = conn.channel()
    for q in (name, f"{name}.DQ", f"{name}.XQ"):
        ch.queue_delete(q)
    conn.close()


def env_for(db: str, llm: FakeModelServer, queue: str) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "CHRONOMEM_DB": db, "CHRONOMEM_LLM": llm.spec,
           "CHRONOMEM_LLM_API_KEY": "bench", "CHRONOMEM_EMBEDDER": "none", "CHRONOMEM_QUEUE_URL": AMQP,
           "CHRONOMEM_QUEUE_NAME": queue}
    env.pop("CHRONOMEM_REDIS_URL", None)
    return env


def cli(*args: str) -> list[str]:
    return [sys.executable, "-c", "from chronomem.cli import main; main()", *args]


def stop(procs: list[subprocess.Popen[bytes]]) -> None:
    for p in procs:
        p.send_signal(signal.SIGTERM)
    for p in procs:
        try:
            p.wait(30)
        except subprocess.TimeoutExpired:
            p.kill()


def job_turns(j: int) -> list[dict[str, str]]:
    return [{"id": f"j{j}t{i}", "speaker": "Maya", "text": f"I like item{j}x{i} a lot.",
             "timestamp": "2024-03-01T10:00:00Z"} for i in range(TURNS_PER_JOB)]


def throughput(workers: int, jobs: int, llm: FakeModelServer) -> float:
    from chronomem import Memory
    from chronomem.jobs.queue import BrokerQueue

    db, queue = fresh_db(), f"bench_svc_{uuid.uuid4().hex[:8]}"
    os.environ["CHRONOMEM_QUEUE_NAME"] = queue
    env = env_for(db, llm, queue)
    procs: list[subprocess.Popen[bytes]] = []
    q = BrokerQueue(AMQP)
    try:
        with Memory(db, embedder=False, queue=q) as mem:
            procs = [subprocess.Popen(cli("worker", "--threads", "1"), env=env, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL) for _ in range(workers)]
            warm = [mem.submit_messages(job_turns(-1 - w), user_id=f"warm{w}") for w in range(workers)]
            for w in warm:
                mem.wait(w, timeout=300)
            t0 = time.perf_counter()
            submitted = [mem.submit_messages(job_turns(j), user_id=f"u{j % 8}", session_id=f"s{j}") for j in range(jobs)]
            for job in submitted:
                done = mem.wait(job, timeout=900)
                assert done.status.value == "done", done.error
            elapsed = time.perf_counter() - t0
            extracted = sum(len(mem.messages(user_id=f"u{u}")) for u in range(8))
            assert extracted == jobs * TURNS_PER_JOB
    finally:
        q.close()
        stop(procs)
        delete_queue(queue)
        drop(db)
    return jobs * TURNS_PER_JOB / elapsed * 60


def ack_latency(n: int, llm: FakeModelServer, port: int = 8799) -> list[float]:
    import httpx

    db, queue = fresh_db(), f"bench_svc_{uuid.uuid4().hex[:8]}"
    env = env_for(db, llm, queue)
    key = subprocess.run(cli("keys", "create", "--tenant", "bench", "--db", db), env=env, check=True,
                         capture_output=True, text=True).stdout.strip().splitlines()[0]
    env["CHRONOMEM_LOG_LEVEL"] = "warning"
    server = subprocess.Popen(cli("serve", "--port", str(port), "--db", db), env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    lat: list[float] = []
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", headers={"Authorization": f"Bearer {key}"},
                          timeout=30) as c:
            for _ in range(300):
                try:
                    if c.get("/health").status_code == 200:
                        break
                except httpx.TransportError:
                    time.sleep(0.1)
            for i in range(n + 20):  # the first 20 warm the connection pools
                body = {"session_id": f"s{i // 10}", "messages": [
                    {"id": f"a{i}", "speaker": "Maya", "text": f"I like thing{i}.", "timestamp": "2024-03-01T10:00:00Z"}]}
                t0 = time.perf_counter()
                r = c.post(f"/v1/users/u{i % 5}/messages", json=body)
                dt = time.perf_counter() - t0
                assert r.status_code == 202, r.text
                if i >= 20:
                    lat.append(dt * 1000)
    finally:
        stop([server])
        delete_queue(queue)
        drop(db)
    return lat


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, nargs="*", default=[1, 2, 4])
    ap.add_argument("--jobs", type=int, default=60)
    ap.add_argument("--acks", type=int, default=300)
    ap.add_argument("--llm-delay", type=float, default=0.2, help="seconds the test LLM waits per call")
    ap.add_argument("--repeat", type=int, default=1, help="runs per worker count (the median is reported)")
    args = ap.parse_args()
    llm = FakeModelServer(delay=args.llm_delay)
    print(f"test LLM: fixed {args.llm_delay:.3f} s per call; {TURNS_PER_JOB} turns per job (one extraction "
          f"call each); PostgreSQL {PG.split('@')[-1]}, RabbitMQ; cpus={os.cpu_count()}", flush=True)
    try:
        for w in args.workers:
            runs = [throughput(w, args.jobs, llm) for _ in range(args.repeat)]
            print(f"workers={w}: {statistics.median(runs):.0f} turns/min (runs: "
                  f"{', '.join(f'{r:.0f}' for r in runs)}; {args.jobs} jobs, {args.jobs * TURNS_PER_JOB} turns)",
                  flush=True)
        if args.acks:
            lat = sorted(ack_latency(args.acks, llm))
            p95 = lat[max(0, int(round(0.95 * len(lat))) - 1)]
            print(f"POST /v1/users/{{u}}/messages ack over HTTP: n={len(lat)} median {statistics.median(lat):.1f} ms, "
                  f"p95 {p95:.1f} ms, max {lat[-1]:.1f} ms", flush=True)
    finally:
        llm.close()


if __name__ == "__main__":
    main()
