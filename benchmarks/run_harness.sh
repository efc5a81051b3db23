#!/bin/sh
# The whole measurement plan of the evaluation harness (BENCHMARKS.md "Evaluation harness"), one command:
#
#   benchmarks/run_harness.sh                       # every stage, in order
#   benchmarks/run_harness.sh conv26-main msc       # some stages
#   nohup benchmarks/run_harness.sh > bench-out/harness.log 2>&1 &
#
# Stages (each one `chronomem bench …` command, local model, results in bench-out/<folder>):
#   conv30-main   LoCoMo conv-30, every category 1-4 question (81), the main methods   -> bench-out/conv30
#   conv26-main   LoCoMo conv-26, every category 1-4 question (152), the main methods  -> bench-out/conv26
#   samples       every method and ablation on a fixed stratified sample of 40 category 1-4 questions
#                 (--sample 40 --seed 0) of conv-30, conv-26 and conv-42, in the same folders as the
#                 whole-conversation runs, so answers already given there are not given again
#   msc           Rsum on the first 50 MSC episodes, then BM25 and full context over the past sessions on the
#                 same episodes for reference
#                 (no consistency judge: the local 1.5B model is none, benchmarks/bench_judge.py)
#                                                                                   -> bench-out/msc
#   final-bm25    #21's held-out conversations conv-41/43/44/47, every category 1-4 question, BM25 top-20
#                 (runs early: it needs no memory; never tune on these)                -> bench-out/final
#   final-answer  #21's held-out run of answer() itself (bench method `answer`: Memory.answer's ANSWER_CONFIG)
#                 on the same 603 questions, its memories written by extraction $FINAL_EXTRACTION (default
#                 v3 since session 14: on conv-30's tuning sample its memory answered 50.8 against v1's 46.1
#                 with the same ANSWER_CONFIG, and it writes a third fewer tokens per turn; BENCHMARKS.md
#                 "v3's memory under answer()"); ingestion first (resumable per session), then the
#                 answers                                                             -> bench-out/final-answer
#                 (its own folder: it may run while final-bm25 does; the report reads both)
#   tuning-v5     extraction v5 (rules 8) under answer()'s read path (real+fused as "v4" in BENCHMARKS.md) on
#                 conv-30's 40-question tuning sample; v4's answers are there already, and the extraction
#                 replies (v3's prompt) are in conv-30's cache, so only the 40 answers are new (≈ 30 min)
#                                                                                     -> bench-out/conv30
#   report        rewrite every folder's report.md and plots, and the samples' report of the three
#                 conversations together (bench-out/samples: each method on the same 3×40 questions)
#   save          copy every folder's journals, report, plots and response cache into benchmarks/results/
#                 (benchmarks/snapshot.py), to be committed: the next machine resumes from there
#
# Resumable at any point: re-run the same command.  Before a stage starts, a folder that has no
# results yet is restored from its saved copy in benchmarks/results/ (see benchmarks/snapshot.py), so
# a fresh machine continues where the last one stopped and replays cached model calls for free.
# One model process at a time; CHRONOMEM_THREADS (default 2) is its thread count.
#
# A session's machine and its bench-out/ go away with it.  SAVE_EVERY=SECONDS runs the `save` stage
# in the background every SECONDS while the stages run (and once more when they end), so what a
# long run has done is in benchmarks/results/ — commit it, or set SAVE_COMMIT=1 to have each save
# committed (only benchmarks/results/, nothing else):
#
#   SAVE_EVERY=1500 SAVE_COMMIT=1 nohup benchmarks/run_harness.sh final-answer > bench-out/final-answer.log 2>&1 &
set -eu
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
PY="${PY:-$ROOT/.venv/bin/python}"
export CHRONOMEM_THREADS="${CHRONOMEM_THREADS:-2}"
export HF_HUB_OFFLINE="${HF_HUB_OFFLINE:-1}"
# every stage was measured with one-call decoding: pin it, so a change of the library's default
# decoding (or a shell that exports CHRONOMEM_FAST_FORWARD) cannot change the model name and with it
# every cache and memory key of a resumed run
export CHRONOMEM_FAST_FORWARD="${HARNESS_FAST_FORWARD:-0}"

# cheapest first after answer()'s default, so a run cut short still covers the baselines;
# real+floor (not adopted, BENCHMARKS.md) is measured on conv-30 and in the samples only
MAIN="bm25,real+turns,dense,full_context,rsum,real,real+rsum"
ALL="full_context,sliding_window,bm25,dense,rsum,bm25+rsum,flat_facts,vanilla_graph,real,real+rsum,real+sources,real+turns,real+fts,real+floor,real+replies"
ALL="$ALL,real-no-intervals,real-no-confidence,real-no-intents,real-no-evaluator,real-no-counterfactuals"

cm() { "$PY" -c "import sys; from chronomem.cli import main; sys.argv[0] = 'chronomem'; main()" "$@"; }
log() { echo "$(date -u '+%Y-%m-%dT%H:%M:%SZ') $*" >&2; }

restore() {  # restore <saved folder name> <run folder>
  if [ ! -s "$2/results.jsonl" ] && [ ! -s "$2/llm-cache.sqlite" ] && [ -d "benchmarks/results/$1" ]; then
    "$PY" benchmarks/snapshot.py restore "benchmarks/results/$1" "$2"
  fi
}

locomo() {  # locomo <conversation> <categories> <out> <ctx> <top-k> <methods> [extra args]
  conv=$1 cats=$2 out=$3 ctx=$4 k=$5 methods=$6
  shift 6
  log "locomo $conv: methods=$methods out=$out $*"
  cm bench locomo --conversations "$conv" --categories "$cats" --methods "$methods" --llm local \
    --top-k "$k" --ctx "$ctx" --cache "$out/llm-cache.sqlite" --out "$out" --verbose "$@"
}

stage() {
  case "$1" in
    conv30-main)
      restore locomo-conv30 bench-out/conv30
      locomo conv-30 1,2,4 bench-out/conv30 16384 10 "$MAIN,real+floor,real+sources,real+replies"
      # BM25 with as many context tokens as real+turns (~1,100): is REAL's gain more than context size?
      locomo conv-30 1,2,4 bench-out/conv30 16384 20 bm25 ;;
    conv26-main)
      restore locomo-conv26 bench-out/conv26
      locomo conv-26 1,2,3,4 bench-out/conv26 32768 10 "$MAIN"
      locomo conv-26 1,2,3,4 bench-out/conv26 32768 20 bm25 ;;
    samples)
      restore locomo-conv30 bench-out/conv30
      restore locomo-conv26 bench-out/conv26
      restore locomo-conv42 bench-out/conv42
      locomo conv-30 1,2,4 bench-out/conv30 16384 10 "$ALL" --sample 40 --seed 0
      locomo conv-26 1,2,3,4 bench-out/conv26 32768 10 "$ALL" --sample 40 --seed 0
      locomo conv-42 1,2,3,4 bench-out/conv42 32768 10 "$ALL" --sample 40 --seed 0
      # BM25 with as many context tokens as real+turns, as conv-30 and conv-26 have it from their main stages
      locomo conv-42 1,2,3,4 bench-out/conv42 32768 20 bm25 --sample 40 --seed 0 ;;
    msc)
      restore msc bench-out/msc
      # Rsum on all 50 episodes first (the measurement the plan asks for: a run cut short still has it),
      # then BM25 and full context on the same episodes; the second command skips what the first did
      for methods in rsum rsum,bm25,full_context; do
        log "msc: 50 episodes, methods=$methods"
        cm bench msc --episodes 50 --max-replies 3 --methods "$methods" --llm local --ctx 8192 \
          --cache bench-out/msc/llm-cache.sqlite --out bench-out/msc --verbose
      done ;;
    final-bm25)
      # #21's held-out run: every category 1-4 question of conv-41, -43, -44 and -47 (603), nothing tuned on
      # them.  BM25 top-20 (as many context tokens as answer()) first: it depends on no memory, so it can run
      # in the background while the write path is still being improved; answer() follows in stage final.
      restore locomo-final bench-out/final
      locomo conv-41,conv-43,conv-44,conv-47 1,2,3,4 bench-out/final 8192 20 bm25 ;;
    final-answer)
      restore locomo-final-answer bench-out/final-answer
      locomo conv-41,conv-43,conv-44,conv-47 1,2,3,4 bench-out/final-answer 8192 20 answer \
        --extraction "${FINAL_EXTRACTION:-v3}" ;;
    tuning-v5)
      restore locomo-conv30 bench-out/conv30
      locomo conv-30 1,2,4 bench-out/conv30 16384 10 real+fused --search fused_weights=0,1,0 \
        --search context_tokens=850 --sample 40 --seed 0 --extraction v5 ;;
    report)
      for d in bench-out/conv30 bench-out/conv26 bench-out/conv42 bench-out/msc bench-out/final bench-out/final-answer; do
        if [ -s "$d/results.jsonl" ]; then  # a folder with no results yet is skipped; a failing report stops the run
          cm bench report --out "$d" > /dev/null
          log "report: $d/report.md"
        fi
      done
      if [ -s bench-out/conv30/results.jsonl ] && [ -s bench-out/conv26/results.jsonl ] && [ -s bench-out/conv42/results.jsonl ]; then
        cm bench report --out bench-out/samples --from bench-out/conv30 --from bench-out/conv26 --from bench-out/conv42 \
          --sample 40 --seed 0 > /dev/null
        log "report: bench-out/samples/report.md"
      fi
      if [ -s bench-out/final/results.jsonl ] && [ -s bench-out/final-answer/results.jsonl ]; then
        cm bench report --out bench-out/final-both --from bench-out/final --from bench-out/final-answer > /dev/null
        log "report: bench-out/final-both/report.md"
      fi ;;
    save)
      for pair in conv30:locomo-conv30 conv26:locomo-conv26 conv42:locomo-conv42 msc:msc final:locomo-final \
                  final-answer:locomo-final-answer; do
        d="bench-out/${pair%%:*}"
        if [ -s "$d/results.jsonl" ] || [ -s "$d/llm-cache.sqlite" ]; then  # answers, or an ingestion under way
          "$PY" benchmarks/snapshot.py save "$d" "benchmarks/results/${pair#*:}"
        fi
      done
      if [ -s bench-out/samples/report.md ]; then
        mkdir -p benchmarks/results/locomo-samples
        cp bench-out/samples/report.md bench-out/samples/summary.json bench-out/samples/*.png benchmarks/results/locomo-samples/
      fi ;;
    *) echo "unknown stage: $1 (conv30-main, conv26-main, samples, msc, final-bm25, final-answer, tuning-v5, report, save)" >&2
       exit 2 ;;
  esac
}

save_now() {  # the save stage, then (SAVE_COMMIT=1) a commit of benchmarks/results/ alone
  # One save at a time across harness processes: two stages saving at once rewrote a cache .gz
  # while the other's `git add` read it ("confused by unstable object source data").
  mkdir -p bench-out
  (
    flock 9 || { log "save: could not lock bench-out/.save.lock"; exit 1; }
    stage save
    if [ "${SAVE_COMMIT:-0}" = 1 ] && [ -n "$(git status --porcelain -- benchmarks/results)" ]; then
      git add -- benchmarks/results
      git commit -q -m "bench results: checkpoint of the running harness stages ($*)" -- benchmarks/results \
        || log "save: commit failed (another git command running?); the next save retries"
    fi
  ) 9> bench-out/.save.lock
}

[ $# -eq 0 ] && set -- conv30-main conv26-main samples msc report save
if [ -n "${SAVE_EVERY:-}" ]; then
  case "$SAVE_EVERY" in *[!0-9]*|"") echo "SAVE_EVERY must be a number of seconds, not '$SAVE_EVERY'" >&2; exit 2 ;; esac
  ( while sleep "$SAVE_EVERY"; do save_now "$@" || log "save failed; the next one retries"; done ) &
  saver=$!
  trap 'kill "$saver" 2>/dev/null; save_now "$@"' EXIT
fi
for s in "$@"; do stage "$s"; done
