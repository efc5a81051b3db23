"""Rsum's memory updates in the harness's ``msc`` stage, one row per update: did the model loop, how long.

The harness (``chronomem bench msc``) records the memory after session 3 and
its scores, not the single updates.  This script replays those updates from a
run's response cache: the same episodes, turns and session times as
``chronomem.bench.methods.build_rsum``, so the same prompts and cache keys.
With ``--cache-only`` (the default) nothing is generated: an update the cache
cannot answer is an error, and the seconds reported are those of the original
call, as the cache stored them.  ``--live`` generates what the cache lacks.

Per update: the token cap the call had, the tokens generated, the repeated
sentences Rsum dropped (``MemoryUpdate.repeated_sentences``) and the seconds.
An update **looped** when Rsum dropped at least one repeated sentence from what
the model wrote (the count behind BENCHMARKS' "looped on 66 of the 150
updates"); **at the cap** when the generation stopped at its token limit.

    # the revision in the code (MEMORY_DECODING), e.g. after `chronomem bench msc --out bench-out/msc-new`
    python benchmarks/bench_rsum_loops.py --cache bench-out/msc-new/llm-cache.sqlite --episodes 8
    # the previous revision (MEMORY_DECODING 1): no penalty, no stop, 32 tokens per sentence + 64
    python benchmarks/bench_rsum_loops.py --cache bench-out/msc-old/llm-cache.sqlite --episodes 8 --decoding 1
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import sys
from pathlib import Path
from typing import Any

from chronomem.bench.datasets import DEFAULT_MSC_PATH, load_msc
from chronomem.bench.methods import rsum_turn
from chronomem.errors import ModelUnavailableError
from chronomem.providers.base import LLM, CallUsage, ChatResult, LLMWrapper, Messages, Penalties
from chronomem.providers.cache import CachedResponse, ResponseCache, response_key
from chronomem.summarize.rsum import DEFAULT_MAX_SENTENCES, MEMORY_DECODING, MEMORY_DECODINGS, NO_MEMORY, update_memory

log = logging.getLogger("bench_rsum_loops")


class CacheReplay(LLMWrapper):
    """Chat calls answered from a response cache, each recorded with the usage the cache stored.

    ``inner`` counts tokens (the chunking needs the model's tokenizer) and, with
    ``live``, answers what the cache lacks (that reply is then stored too).
    """

    def __init__(self, inner: LLM, cache: ResponseCache, *, live: bool = False) -> None:
        super().__init__(inner)
        self.cache = cache
        self.live = live
        self.calls: list[dict[str, Any]] = []

    def chat(self, messages: Messages, *, schema: Any = None, max_tokens: int = 512, temperature: float = 0.0,
             stop: list[str] | None = None, purpose: str = "", penalties: Penalties | None = None) -> ChatResult:
        if schema is not None:
            raise ValueError("CacheReplay replays plain-text calls only")
        key = response_key(self.name, messages, schema=None, max_tokens=max_tokens, temperature=temperature,
                           stop=stop, penalties=penalties)
        hit = self.cache.get(key)
        if hit is not None:
            usage = CallUsage(prompt_tokens=hit.prompt_tokens, completion_tokens=hit.completion_tokens,
                              latency_s=hit.latency_s, cached=True, purpose=purpose)
            text = hit.text
        elif self.live:
            res = self.inner.chat(messages, max_tokens=max_tokens, temperature=temperature, stop=stop,
                                  purpose=purpose, penalties=penalties)
            self.cache.put(key, self.name, CachedResponse(res.text, None, res.usage.prompt_tokens,
                                                          res.usage.completion_tokens, res.usage.latency_s))
            usage, text = res.usage, res.text
        else:
            raise ModelUnavailableError(f"no cached reply for this {purpose or 'chat'} call in {self.cache.path} "
                                        "(different revision or episodes? --live generates it)")
        self.calls.append({"max_tokens": max_tokens, "completion_tokens": usage.completion_tokens,
                           "prompt_tokens": usage.prompt_tokens, "latency_s": usage.latency_s,
                           "cached": usage.cached})
        return ChatResult(text=text, usage=usage)


def replay(llm: CacheReplay, episodes: int, max_sentences: int, decoding: int, data: Path,
           start: int = 0) -> list[dict[str, Any]]:
    rows = []
    for ep in load_msc(data, start + episodes)[start:]:
        memory = NO_MEMORY
        for n, session in enumerate(ep.conversation.sessions, start=1):
            if not session.turns:
                continue
            first = len(llm.calls)
            before = 0 if memory == NO_MEMORY else llm.count_tokens(memory)
            upd = update_memory(llm, [rsum_turn(t) for t in session.turns], memory, max_sentences=max_sentences,
                                session_time=session.date_time, decoding=decoding)
            calls = llm.calls[first:]
            at_cap = any(c["completion_tokens"] >= c["max_tokens"] for c in calls)
            rows.append({
                "episode": ep.episode_id, "session": n, "calls": len(calls), "memory_tokens_before": before,
                "max_tokens": [c["max_tokens"] for c in calls],
                "completion_tokens": sum(c["completion_tokens"] for c in calls),
                "prompt_tokens": sum(c["prompt_tokens"] for c in calls),
                "seconds": round(sum(c["latency_s"] for c in calls), 2),
                "at_cap": at_cap, "repeated_sentences": upd.repeated_sentences,
                "looped": upd.repeated_sentences > 0,
                "dropped_sentences": upd.dropped_sentences, "echoed_lines": upd.echoed_lines,
                "memory_tokens_after": 0 if upd.memory == NO_MEMORY else llm.count_tokens(upd.memory), "generated": sum(not c["cached"] for c in calls),
            })
            memory = upd.memory
    return rows


def summary(rows: list[dict[str, Any]]) -> str:
    n = len(rows)
    looped = [r for r in rows if r["looped"]]
    secs = [r["seconds"] for r in rows]
    at_cap = sum(r["at_cap"] for r in rows)
    return (f"{n} updates: looped (repeated sentences dropped) {len(looped)} ({100 * len(looped) / n:.0f} %), "
            f"at the token cap {at_cap} ({100 * at_cap / n:.0f} %), "
            f"{sum(r['repeated_sentences'] for r in rows)} repeated sentences dropped in all; "
            f"seconds per update median {statistics.median(secs):.1f}, mean {statistics.mean(secs):.1f}, "
            f"total {sum(secs):.0f}; generated tokens median {statistics.median(r['completion_tokens'] for r in rows):.0f}, "
            f"total {sum(r['completion_tokens'] for r in rows)}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cache", type=Path, required=True, help="the run's response cache (llm-cache.sqlite)")
    ap.add_argument("--episodes", type=int, default=8, help="the first N episodes, as `chronomem bench msc --episodes N`")
    ap.add_argument("--start", type=int, default=0, help="skip the first N episodes (tuning outside the harness's)")
    ap.add_argument("--data", type=Path, default=Path(DEFAULT_MSC_PATH))
    ap.add_argument("--llm", default="local", help="the run's model (its name is part of the cache key)")
    ap.add_argument("--max-sentences", type=int, default=DEFAULT_MAX_SENTENCES)
    ap.add_argument("--decoding", type=int, choices=MEMORY_DECODINGS, default=MEMORY_DECODING,
                    help="the Rsum decoding revision the run was made with (MEMORY_DECODING)")
    ap.add_argument("--live", action="store_true", help="generate the replies the cache lacks")
    ap.add_argument("--rows", type=Path, default=None, help="also write one JSON line per update here")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(message)s")
    if args.start < 0 or args.episodes < 1:
        raise SystemExit(f"--start must be >= 0 and --episodes >= 1, got {args.start} and {args.episodes}")
    if not args.cache.exists() and not args.live:  # --live writes what it generates into a new cache
        raise SystemExit(f"{args.cache}: no such cache file (--live generates the replies into a new one)")
    from chronomem.providers import build_llm, resolve_llm_settings

    inner = build_llm(resolve_llm_settings(args.llm))
    llm = CacheReplay(inner, ResponseCache(args.cache), live=args.live)
    rows = replay(llm, args.episodes, args.max_sentences, args.decoding, args.data, args.start)
    if args.rows:
        args.rows.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    for r in rows:
        sys.stdout.write(f"{r['episode']} s{r['session']}: cap {r['max_tokens']} generated {r['completion_tokens']} "
                         f"repeated {r['repeated_sentences']} {r['seconds']} s{'  CAP' if r['at_cap'] else ''}\n")
    sys.stdout.write(summary(rows) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
