"""Carry a benchmark run across machines: save its results and model cache into the repo, restore them.

A LoCoMo run with the local model takes hours of CPU and each working session
may start on a fresh machine, where ``bench-out/`` is empty.  ``save`` copies
what a run needs to resume — the JSONL journals (answers, ingestion, runs),
the report and plots, and a consistent gzip'd copy of the response cache
(SQLite online backup, safe while the run is still writing) — into a folder
that is committed.  ``restore`` puts them back so that re-running the same
``chronomem bench`` command skips every answered question and replays the
cached extraction and summary calls instead of recomputing them.

    python benchmarks/snapshot.py save bench-out/conv30 benchmarks/results/locomo-conv30
    python benchmarks/snapshot.py restore benchmarks/results/locomo-conv30 bench-out/conv30

The ingested memories (``memories/*.sqlite``) are not saved: replaying the
cached extraction calls rebuilds them in a minute or two.  A run still
ingesting (no answers yet, only its cache) is saved and restored too, so a
session that stops mid-ingestion hands its extraction calls to the next one.
"""

from __future__ import annotations

import argparse
import gzip
import shutil
import sqlite3
import sys
import tempfile
from pathlib import Path

JOURNALS = ("results.jsonl", "ingest.jsonl", "runs.jsonl")
REPORT_FILES = ("report.md", "summary.json")
CACHE = "llm-cache.sqlite"
CACHE_GZ = CACHE + ".gz"


def _lines(path: Path) -> int:
    if not path.exists():
        return 0
    with path.open("rb") as f:
        return sum(1 for _ in f)


def _is_run(folder: Path, cache: str) -> bool:
    """A bench --out folder, or a saved one: answers, or at least an ingestion under way (its cache)."""
    return any((folder / name).exists() for name in (*JOURNALS, cache))


def save(run: Path, dest: Path) -> list[str]:
    if not _is_run(run, CACHE):
        raise SystemExit(f"{run}: no journals or {CACHE} here; is this a bench --out folder?")
    dest.mkdir(parents=True, exist_ok=True)
    saved: list[str] = []
    for name in (*JOURNALS, *REPORT_FILES):
        if (run / name).exists():
            shutil.copy2(run / name, dest / name)
            saved.append(name)
    for png in sorted(run.glob("*.png")):
        shutil.copy2(png, dest / png.name)
        saved.append(png.name)
    if (run / CACHE).exists():
        with tempfile.TemporaryDirectory() as tmp:
            copy = Path(tmp) / CACHE
            src = sqlite3.connect(f"file:{run / CACHE}?mode=ro", uri=True)
            dst = sqlite3.connect(copy)
            try:
                src.backup(dst)  # a consistent copy even while the run writes to the cache
                dst.execute("VACUUM")
            finally:
                src.close()
                dst.close()
            # no name or time in the gzip header: an unchanged cache saves to the same bytes, so
            # periodic saves (run_harness.sh SAVE_EVERY) do not commit megabytes of churn
            with copy.open("rb") as fin, (dest / CACHE_GZ).open("wb") as raw, \
                    gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=9, mtime=0) as fout:
                shutil.copyfileobj(fin, fout)
        saved.append(CACHE_GZ)
    return saved


def restore(saved: Path, run: Path, force: bool = False) -> list[str]:
    if not _is_run(saved, CACHE_GZ):
        raise SystemExit(f"{saved}: no journals or {CACHE_GZ} here; nothing to restore")
    run.mkdir(parents=True, exist_ok=True)
    restored: list[str] = []
    for name in JOURNALS:
        src, dst = saved / name, run / name
        if not src.exists():
            continue
        if dst.exists() and _lines(dst) >= _lines(src) and not force:
            continue  # the run folder already holds at least as much; keep it
        shutil.copy2(src, dst)
        restored.append(name)
    if (saved / CACHE_GZ).exists() and (force or not (run / CACHE).exists()):
        for suffix in ("-wal", "-shm"):
            (run / (CACHE + suffix)).unlink(missing_ok=True)
        with gzip.open(saved / CACHE_GZ, "rb") as fin, (run / CACHE).open("wb") as fout:
            shutil.copyfileobj(fin, fout)
        restored.append(CACHE)
    return restored


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("save", help="copy a run's journals, report and cache into a committed folder")
    s.add_argument("run", type=Path)
    s.add_argument("dest", type=Path)
    r = sub.add_parser("restore", help="put a saved run back into a bench --out folder")
    r.add_argument("saved", type=Path)
    r.add_argument("run", type=Path)
    r.add_argument("--force", action="store_true", help="overwrite journals and cache already there")
    args = ap.parse_args(argv)
    if args.cmd == "save":
        names = save(args.run, args.dest)
        where = args.dest
    else:
        names = restore(args.saved, args.run, args.force)
        where = args.run
    sys.stdout.write(f"{args.cmd}: {', '.join(names) or 'nothing to do'} -> {where}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
