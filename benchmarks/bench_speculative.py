"""Run another benchmark script with llama.cpp's draftless speculative decoding switched on.

llama.cpp can draft tokens without a second model, from n-grams of the text already in the
context (``--spec-type ngram-simple | ngram-map-k | ngram-mod``), and verify a draft in one
batch.  Extraction statements and Rsum's rewritten memory copy much of their prompt, so the
question is whether that pays on a CPU.  The library does not expose it (measured slower on
these 2 cores: BENCHMARKS.md, "Draftless speculative decoding"); this wrapper sets the engine's
speculative parameters when the wrapped script loads the local model, and runs that script as is:

    python benchmarks/bench_speculative.py --spec ngram-simple --draft-max 16 -- \\
        benchmarks/bench_extraction.py --sample conv-26 --sessions 1,2 --method v4 --warm \\
        --cache bench-out/spec/simple.sqlite --out bench-out/spec/simple.jsonl

``--spec none`` runs the script unchanged (the baseline of the same run).  The wrapper changes the
engine only: the response-cache keys stay those of the plain model, so give every variant its own
``--cache``.
"""

from __future__ import annotations

import argparse
import runpy
import sys
from typing import Any

SPEC_TYPES = ("none", "ngram-simple", "ngram-map-k", "ngram-mod")


def configure(params: Any, spec: str, draft_max: int, ngram_n: int, ngram_m: int) -> None:
    """Set ``params.speculative`` (an ``xllamacpp.CommonParams``) for one draftless type."""
    import xllamacpp

    if spec == "none":
        return
    kinds = xllamacpp.common_speculative_type
    kind = {"ngram-simple": kinds.COMMON_SPECULATIVE_TYPE_NGRAM_SIMPLE,
            "ngram-map-k": kinds.COMMON_SPECULATIVE_TYPE_NGRAM_MAP_K,
            "ngram-mod": kinds.COMMON_SPECULATIVE_TYPE_NGRAM_MOD}[spec]
    sp = params.speculative
    sp.types = [kind]
    sp.draft.n_max = draft_max
    for ngram in (sp.ngram_simple, sp.ngram_map_k):
        if ngram_n:
            ngram.size_n = ngram_n
        if ngram_m:
            ngram.size_m = ngram_m


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--spec", choices=SPEC_TYPES, required=True)
    ap.add_argument("--draft-max", type=int, default=16, help="most tokens drafted at once (llama.cpp --draft-max)")
    ap.add_argument("--ngram-n", type=int, default=0, help="n-gram key length (ngram-simple/map-k; 0 = llama.cpp's)")
    ap.add_argument("--ngram-m", type=int, default=0, help="draft length (ngram-simple/map-k; 0 = llama.cpp's)")
    ap.add_argument("script", help="the benchmark script to run")
    ap.add_argument("args", nargs=argparse.REMAINDER, help="its arguments (after --)")
    args = ap.parse_args(argv)
    if args.draft_max < 1:
        ap.error(f"--draft-max must be >= 1, got {args.draft_max}")
    import xllamacpp

    plain = xllamacpp.Server

    def server(params: Any, *a: Any, **kw: Any) -> Any:
        configure(params, args.spec, args.draft_max, args.ngram_n, args.ngram_m)
        return plain(params, *a, **kw)

    xllamacpp.Server = server  # the library builds its engine through this name on first use
    rest = args.args[1:] if args.args[:1] == ["--"] else args.args
    sys.argv = [args.script, *rest]
    runpy.run_path(args.script, run_name="__main__")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
