"""Local model layer benchmark: load time, prompt/generation speed, peak RSS,
prefix caching on a repeated long system prompt, embeddings per second.

    .venv/bin/python benchmarks/bench_models.py [--model 1.5b|0.5b|PATH] [--threads N] [--json OUT]

Speeds come from llama.cpp's own timings (prompt_per_second,
predicted_per_second); wall times include Python overhead.  The machine's
load average is printed at start and end because the CPUs may be shared.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import sys
import time
from typing import Any

from chronomem.providers.embeddings import LocalEmbedder
from chronomem.providers.local_llama import LocalLlamaLLM

FILLER = (
    "Rule {i}: when the user mentions a place they live in, record it as lives_in with the date of the "
    "message; when they mention a job, record works_at; never invent facts that were not stated. "
)


def rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def chat(llm: LocalLlamaLLM, messages: list[dict[str, str]], max_tokens: int, cache_prompt: bool = True) -> dict[str, Any]:
    req = {"messages": messages, "max_tokens": max_tokens, "temperature": 0.0, "cache_prompt": cache_prompt}
    t0 = time.perf_counter()
    res = llm.engine.server.handle_chat_completions(req)
    wall = time.perf_counter() - t0
    if "error" in res:
        raise SystemExit(f"engine error: {res['error']}")
    t = res["timings"]
    return {
        "wall_s": round(wall, 2),
        "prompt_tokens": res["usage"]["prompt_tokens"],
        "prompt_evaluated": t["prompt_n"],
        "prompt_reused": t.get("cache_n", 0),
        "prompt_tok_s": round(t["prompt_per_second"], 1),
        "generated": t["predicted_n"],
        "gen_tok_s": round(t["predicted_per_second"], 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="1.5b")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--ctx", type=int, default=8192)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    out: dict[str, Any] = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, python {platform.python_version()}",
        "loadavg_start": os.getloadavg(),
    }
    print(f"machine: {out['machine']}; load average {out['loadavg_start']}", flush=True)

    rss0 = rss_mib()
    llm = LocalLlamaLLM(args.model, n_ctx=args.ctx, n_threads=args.threads)
    out["model"] = str(llm.path)
    t0 = time.perf_counter()
    llm.load()
    out["load_s"] = round(time.perf_counter() - t0, 2)
    out["rss_after_load_mib"] = round(rss_mib(), 0)
    print(f"model {llm.path.name}: load {out['load_s']} s, peak RSS {out['rss_after_load_mib']:.0f} MiB "
          f"(python+imports before load {rss0:.0f} MiB)", flush=True)

    # prompt processing + generation on an uncached prompt (~500 tokens in, up to 128 out)
    doc = " ".join(FILLER.format(i=i) for i in range(12))
    r = chat(
        llm,
        [{"role": "user", "content": doc + "\nNow list the numbers from 1 to 60, separated by commas."}],
        max_tokens=128,
    )
    out["speed"] = r
    print(f"speed: {r}", flush=True)

    # prefix caching: a long shared system prompt, three different questions
    system = "You are a careful memory assistant.\n" + " ".join(FILLER.format(i=i) for i in range(100, 124))
    questions = ["Where does Ann live?", "What is Bob's job?", "Summarise the rules in one line."]
    llm.count_tokens(system)  # warm the tokenizer route
    out["system_prompt_tokens"] = llm.count_tokens(system)
    runs = []
    for q in questions:
        runs.append(chat(llm, [{"role": "system", "content": system}, {"role": "user", "content": q}], max_tokens=16))
    nocache = chat(
        llm, [{"role": "system", "content": system}, {"role": "user", "content": "What is Carl's job?"}],
        max_tokens=16, cache_prompt=False,
    )
    out["prefix_cache"] = {"cached_calls": runs, "cache_prompt_false": nocache}
    print(f"prefix cache: system prompt {out['system_prompt_tokens']} tokens", flush=True)
    for q, rr in zip(questions, runs):
        print(f"  {q!r}: {rr}", flush=True)
    print(f"  cache_prompt=False: {nocache}", flush=True)

    # token counting throughput (model tokenizer over the engine's /tokenize route)
    t0 = time.perf_counter()
    for i in range(200):
        llm.count_tokens(f"sentence number {i} about memory and time")
    out["count_tokens_per_s"] = round(200 / (time.perf_counter() - t0), 0)
    out["rss_peak_llm_mib"] = round(rss_mib(), 0)
    print(f"count_tokens: {out['count_tokens_per_s']:.0f} calls/s; peak RSS {out['rss_peak_llm_mib']:.0f} MiB", flush=True)

    # embeddings
    emb = LocalEmbedder()
    t0 = time.perf_counter()
    emb.load()
    out["embedder_load_s"] = round(time.perf_counter() - t0, 2)
    sentences = [f"On day {i} the user said they {'like' if i % 2 else 'visited'} place number {i * 7 % 101}." for i in range(1000)]
    emb.embed(sentences[:64])  # warm-up
    t0 = time.perf_counter()
    emb.embed(sentences)
    dt = time.perf_counter() - t0
    out["embeddings_per_s"] = round(len(sentences) / dt, 0)
    out["rss_peak_total_mib"] = round(rss_mib(), 0)
    out["loadavg_end"] = os.getloadavg()
    print(f"embeddings: load {out['embedder_load_s']} s, {out['embeddings_per_s']:.0f} sentences/s (batch 64); "
          f"peak RSS {out['rss_peak_total_mib']:.0f} MiB; load average {out['loadavg_end']}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=2)


if __name__ == "__main__":
    sys.exit(main())
