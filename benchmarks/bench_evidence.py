"""Evidence recall of the harness's retrievers on LoCoMo, with no model call.

For every category 1–4 question of the chosen conversations, each method's
``retrieve`` (what it would put in the answer prompt, ranked) is compared with
the question's gold ``evidence`` dia_ids: recall@k of the first k turn ids, the
recall of the whole context, and its size in approximate tokens.  No answer
is generated, so a retriever can be tuned in minutes instead of hours.

The memory methods (``real…``) need their ingested memory: it is rebuilt by
replaying the extraction calls from the conversation's response cache (the
harness's saved ``llm-cache.sqlite``, e.g. ``benchmarks/results/locomo-conv30``
restored with ``benchmarks/snapshot.py``).  A call the cache does not hold is
an error here, never a model run: this script loads no language model, unless
``--llm`` names one for a read-path step that calls it (``--set expand_query=true``:
one call per question; its replies are kept in the caches, so a rerun is free).
The read path runs without the LLM evaluator and intent fallback (model calls);
everything else is ``Memory.answer``'s configuration.

    python benchmarks/bench_evidence.py --conversations conv-30 --cache bench-out/conv30/llm-cache.sqlite \
        --methods bm25,real+turns,real+fused --memory-dir bench-out/evidence
    python benchmarks/bench_evidence.py ... --methods real+fused --set fused_weights=0,1,0 --set context_tokens=850 \
        --set expand_query=true --llm local      # a guessed reply searches the turns too

Tune on conv-26, conv-30 and conv-42 only (#21 holds conv-41/43/44/47 out).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from chronomem.bench.datasets import load_locomo  # noqa: E402
from chronomem.bench.metrics import evidence_recall  # noqa: E402
from chronomem.bench.methods import MethodConfig, make_method, parse_search_changes  # noqa: E402
from chronomem.errors import ModelError  # noqa: E402
from chronomem.providers.base import ChatResult, Messages  # noqa: E402
from chronomem.providers.cache import ResponseCache  # noqa: E402
from chronomem.providers.tracked import TrackedLLM  # noqa: E402
from chronomem.retrieve.serialize import approx_tokens  # noqa: E402

HELD_OUT = {"conv-41", "conv-43", "conv-44", "conv-47"}
LOCAL_MODEL = "local:qwen2.5-coder-1.5b-instruct-q4_k_m"


class CacheOnlyModel:
    """A chat model that never runs: behind a response cache, a miss is an error, not a model load."""

    def __init__(self, name: str) -> None:
        self._name = name

    @property
    def name(self) -> str:
        return self._name

    @property
    def context_window(self) -> int:
        return 32768

    def chat(self, messages: Messages, **kw: Any) -> ChatResult:
        raise ModelError(f"bench_evidence: no cached reply for a {kw.get('purpose') or 'chat'} call "
                         "(this script runs no model; restore the conversation's response cache)")

    def count_tokens(self, text: str) -> int:
        return approx_tokens(text)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(Path(__file__).resolve().parents[2] / "shared/data/locomo/locomo_dev.json"))
    ap.add_argument("--conversations", required=True, help="e.g. conv-26,conv-30")
    ap.add_argument("--methods", default="bm25,real+turns,real+fused")
    ap.add_argument("--cache", action="append", default=[],
                    help="response cache(s) holding the conversations' extraction calls (repeatable)")
    ap.add_argument("--memory-dir", default="bench-out/evidence")
    ap.add_argument("--top-k", type=int, default=10, help="k of recall@k")
    ap.add_argument("--retrieve-k", type=int, default=None, help="turns bm25/dense retrieve (default: --top-k)")
    ap.add_argument("--model-name", default=LOCAL_MODEL, help="the model the cached replies came from")
    ap.add_argument("--llm", default=None,
                    help="a model to run where the caches hold no reply (e.g. local): only for read-path steps "
                         "that call one, such as --set expand_query=true; default: none, a miss is an error")
    ap.add_argument("--out", help="JSON lines: one row per question and method")
    ap.add_argument("--extraction", default="v1", help="extraction method the memories were written with (v1, v2, v3)")
    ap.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                    help="SearchConfig change for the REAL methods, e.g. fused_weights=0.5,1,0.5 (repeatable)")
    args = ap.parse_args()

    wanted = [c.strip() for c in args.conversations.split(",") if c.strip()]
    if HELD_OUT & set(wanted):
        ap.error(f"{sorted(HELD_OUT & set(wanted))} are #21's held-out conversations: not for tuning")
    convs = [c for c in load_locomo(args.data) if c.sample_id in wanted]
    if len(convs) != len(wanted):
        ap.error(f"unknown conversation in {wanted}")
    from chronomem.providers import make_embedder, make_llm

    embedder = make_embedder("local")
    # Memory.answer's search configuration without the model-assisted steps, plus --set's changes
    changes = {**dict(parse_search_changes(args.set)), "evaluator": False, "intent_llm": False}
    config = MethodConfig(top_k=args.retrieve_k or args.top_k, memory_dir=args.memory_dir,
                          search=tuple(sorted(changes.items())), extraction=args.extraction)
    out = open(args.out, "a", encoding="utf-8") if args.out else None
    table: dict[str, dict[str, list[float]]] = {}
    for conv in convs:
        caches = [ResponseCache(p) for p in args.cache]
        llm: Any = make_llm(args.llm, cache=False) if args.llm else CacheOnlyModel(args.model_name)
        for cache in caches:  # the first cache that holds a reply answers
            llm = TrackedLLM(llm, cache=cache)
        for name in [m.strip() for m in args.methods.split(",") if m.strip()]:
            method = make_method(name, llm, config, embedder)
            method.ingest(conv)
            rows = table.setdefault(name, {"recall": [], "context_recall": [], "tokens": []})
            before = len(rows["recall"])
            for qa in conv.qa:
                if qa.category not in (1, 2, 3, 4) or not qa.evidence:
                    continue
                ret = method.retrieve(qa.question)
                r_k = evidence_recall(qa.evidence, ret.ids, args.top_k)
                r_all = evidence_recall(qa.evidence, ret.ids, None)
                tokens = approx_tokens(ret.context)
                rows["recall"].append(r_k or 0.0)
                rows["context_recall"].append(r_all or 0.0)
                rows["tokens"].append(tokens)
                if out:
                    out.write(json.dumps({"conversation": conv.sample_id, "qid": qa.qid, "method": name,
                                          "category": qa.category, "recall_at_k": r_k, "recall_context": r_all,
                                          "tokens": tokens, "ids": ret.ids[:20],
                                          # two runs' contexts compared without storing them
                                          "context_sha": hashlib.sha256(ret.context.encode()).hexdigest()[:16]})
                              + "\n")
            mine = rows["recall"][before:]
            print(f"{conv.sample_id} {name}: recall@{args.top_k} {statistics.mean(mine):.3f} ({len(mine)} questions)",
                  file=sys.stderr)
    print(f"| method | questions | recall@{args.top_k} | context recall | context tokens (median) |")
    print("|---|---|---|---|---|")
    for name, rows in table.items():
        print(f"| {name} | {len(rows['recall'])} | {statistics.mean(rows['recall']):.3f} | "
              f"{statistics.mean(rows['context_recall']):.3f} | {statistics.median(rows['tokens']):.0f} |")
    if out:
        out.close()


if __name__ == "__main__":
    main()
