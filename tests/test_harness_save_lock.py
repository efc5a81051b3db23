"""benchmarks/run_harness.sh: periodic saves of two harness processes never run at once.

Two stages autosaving together once rewrote a cache .gz while the other's `git add` read it.
The script runs here against a stand-in python that logs when each snapshot save starts and ends.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_two_harness_processes_save_one_at_a_time(tmp_path: Path) -> None:
    if shutil.which("flock") is None:
        raise AssertionError("flock (util-linux) is needed by benchmarks/run_harness.sh")
    (tmp_path / "benchmarks").mkdir()
    shutil.copy(ROOT / "benchmarks" / "run_harness.sh", tmp_path / "benchmarks" / "run_harness.sh")
    (tmp_path / "bench-out" / "final-answer").mkdir(parents=True)
    (tmp_path / "bench-out" / "final-answer" / "results.jsonl").write_text("{}\n")
    log = tmp_path / "saves.log"
    stub = tmp_path / "python"
    stub.write_text(
        "#!/bin/sh\n"
        f'case "$*" in *"snapshot.py save"*) echo "start $(date +%s.%N)" >> {log}; sleep 0.6;'
        f' echo "end $(date +%s.%N)" >> {log};; *) sleep 2.5;; esac\n')
    stub.chmod(0o755)
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PY": str(stub), "SAVE_EVERY": "1"}
    procs = [subprocess.Popen(["sh", "benchmarks/run_harness.sh", "report"], cwd=tmp_path, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for _ in range(2)]
    for p in procs:
        assert p.wait(timeout=60) == 0
    events = [line.split() for line in log.read_text().splitlines()]
    assert len(events) >= 8  # each process saved at least twice (periodic + on exit)
    spans = [(float(a[1]), float(b[1])) for a, b in zip(events[::2], events[1::2])]
    assert all(a[0] == "start" and b[0] == "end" for a, b in zip(events[::2], events[1::2]))  # never interleaved
    assert all(end <= nxt for (_, end), (nxt, _) in zip(spans, spans[1:]))
