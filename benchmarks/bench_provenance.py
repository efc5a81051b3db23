"""The explorer's provenance of a fact (``GET /v1/users/{u}/facts/{id}/provenance``) in a large user.

The user of ``bench_search_vectors.py`` (``--facts`` facts: 15,000 of them "Maya likes ...", the rest
friendships among people, each naming Maya's hub or a new person), no vectors.  Prints, for a fact of
the hub's many-valued relation and for a fact of another relation whose other end is the hub, the median
milliseconds of ``--repeat`` requests, the reply's bytes and the versions it lists.

The same script runs against older code (``git archive REV src | tar -x -C DIR``; copy this file and
``bench_search_vectors.py`` to ``DIR/benchmarks``):

  python benchmarks/bench_provenance.py --facts 20000
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_search_vectors import add_in_batches, user_facts  # noqa: E402
from fastapi.testclient import TestClient  # noqa: E402

from chronomem import Memory  # noqa: E402
from chronomem.server import create_app  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--facts", type=int, default=20000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        mem = Memory(str(Path(tmp) / "p.db"), llm=False, embedder=False)
        add_in_batches(mem, "u", user_facts(args.facts))
        held = mem.store.facts("u")
        (hub, relation), _ = Counter((f.subject, f.relation) for f in held).most_common(1)[0]
        cases = {f"{hub} {relation} (one of many)": next(f for f in held if (f.subject, f.relation) == (hub, relation)),
                 f"a fact of another relation ending at {hub}": next(f for f in held if f.relation != relation
                                                                      and hub in (f.subject, f.object))}
        with TestClient(create_app(mem, owns_memory=True)) as client:
            for name, fact in cases.items():
                seconds = []
                for _ in range(args.repeat):
                    t = time.perf_counter()
                    r = client.get(f"/v1/users/u/facts/{fact.id}/provenance")
                    seconds.append(time.perf_counter() - t)
                    r.raise_for_status()
                print(json.dumps({"fact": name, "median_ms": round(statistics.median(seconds) * 1000, 1),
                                  "reply_bytes": len(r.content), "versions": len(r.json()["versions"])}))


if __name__ == "__main__":
    main()
