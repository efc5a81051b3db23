#!/bin/bash
# Ingestion speed of extraction v3, side by side in one run: one-call decoding (warm), fast-forward
# (warm) and fast-forward cold (the model's load and the system prompt inside the first call), in two
# rounds, the order reversed in the second (the machine's speed drifts).  Fresh response caches.
#
#   benchmarks/ingest_speed.sh                       # conv-26 sessions 1-2, 2 threads
#   SAMPLE=conv-30 SESSIONS=1,2,3 THREADS=2 PAUSE='bench locomo' benchmarks/ingest_speed.sh
#
# PAUSE: a pgrep -f pattern of processes to stop (SIGSTOP) while measuring and resume after (the
# long benchmark runs sharing the cores).  Figures go to $OUT/results.txt; see BENCHMARKS.md.
set -eu
cd "$(dirname "$0")/.."
SAMPLE=${SAMPLE:-conv-26} SESSIONS=${SESSIONS:-1,2} THREADS=${THREADS:-2} OUT=${OUT:-bench-out/speed}
PY=${PY:-.venv/bin/python}
mkdir -p "$OUT"
if [ -n "${PAUSE:-}" ]; then
  PIDS=$(pgrep -f "$PAUSE" | tr '\n' ' ' || true)
  if [ -n "$PIDS" ]; then
    echo "pausing: $PIDS"
    kill -STOP $PIDS
    trap 'kill -CONT $PIDS; echo "resumed: $PIDS"' EXIT
  fi
fi
one() {  # name, fast-forward 0/1, extra flags
  rm -f "$OUT/$1".sqlite* "$OUT/$1.jsonl"
  CHRONOMEM_THREADS=$THREADS CHRONOMEM_FAST_FORWARD=$2 "$PY" benchmarks/bench_extraction.py --sample "$SAMPLE" \
    --sessions "$SESSIONS" --method v3 $3 --cache "$OUT/$1.sqlite" --out "$OUT/$1.jsonl" > "$OUT/$1.log" 2>&1
  "$PY" - "$OUT/$1.jsonl" "$1" "$ROUND" <<'PYEOF' | tee -a "$OUT/results.txt"
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
turns = sum(r["turns"] for r in rows)
print(f"{sys.argv[2]:13s} round {sys.argv[3]}  s/turn {sum(r['wall_s'] for r in rows) / turns:.2f}  "
      f"decoded tokens/turn {sum(r['completion_tokens'] for r in rows) / turns:.1f}  facts {sum(r['facts'] for r in rows)}")
PYEOF
}
echo "$(date -u) $SAMPLE sessions $SESSIONS, $THREADS threads" | tee -a "$OUT/results.txt"
ROUND=1; one onecall_warm 0 --warm; one ff_warm 1 --warm; one ff_cold 1 ""
ROUND=2; one ff_cold 1 ""; one ff_warm 1 --warm; one onecall_warm 0 --warm
