#!/bin/sh
# Main comparison on LoCoMo conv-30 (categories 1, 2, 4): REAL against BM25 under the local model.
#
#   benchmarks/run_locomo_main.sh                      # results in bench-out/locomo-main
#   OUT=/some/dir benchmarks/run_locomo_main.sh        # anywhere else
#   METHODS=real,real+rsum,bm25,rsum benchmarks/run_locomo_main.sh   # more methods, same ingestion
#   nohup benchmarks/run_locomo_main.sh > bench-out/locomo-main.log 2>&1 &
#
# Resumable: re-run the same command after an interruption.  Answered questions are skipped
# (results.jsonl), the conversation's ingestion into $OUT/memories/*.sqlite continues where it
# stopped (finished sessions cost no model call), and repeated model calls come from the response
# cache $OUT/llm-cache.sqlite.  One model thread (CHRONOMEM_THREADS=1): the 2 cores are shared.
# Ends by writing $OUT/report.md and the plots.
set -eu
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
OUT="${OUT:-bench-out/locomo-main}"
METHODS="${METHODS:-real,bm25}"
CONVERSATIONS="${CONVERSATIONS:-conv-30}"
CATEGORIES="${CATEGORIES:-1,2,4}"
PY="${PY:-$ROOT/.venv/bin/python}"
mkdir -p "$OUT"
export CHRONOMEM_THREADS="${CHRONOMEM_THREADS:-1}"
export HF_HUB_OFFLINE="${HF_HUB_OFFLINE:-1}"
echo "$(date -u '+%Y-%m-%dT%H:%M:%SZ') start: methods=$METHODS conversations=$CONVERSATIONS out=$OUT pid=$$" >&2
exec "$PY" -c "import sys; from chronomem.cli import main; sys.argv[0] = 'chronomem'; main()" \
  bench locomo --conversations "$CONVERSATIONS" --categories "$CATEGORIES" --methods "$METHODS" \
  --llm local --top-k 10 --cache "$OUT/llm-cache.sqlite" --out "$OUT" --verbose "$@"
