"""What the JSON-schema grammar costs the local model's decoding, one extraction chunk.

Extraction v3 spends most of its time writing (≈ 40–50 completion tokens per turn).
This script sends one chunk's v3 messages several ways and prints llama.cpp's own
timings (prompt and generation tokens per second), so the grammar's share is measured,
not guessed (BENCHMARKS.md "Extraction v3 under 3 s per turn?": it is small):

- ``schema``        the slot schema the extractor sends
- ``no-maxlength``  the same schema without ``maxLength`` (llama.cpp spells a length bound
                    out as nested optional characters in its grammar)
- ``free``          no schema at all (free text, the same cap)

    CHRONOMEM_THREADS=2 .venv/bin/python benchmarks/bench_grammar.py --sample conv-26 --session 1 --repeat 3

Each variant runs ``--repeat`` times on the same chunk (the prompt prefix is cached after the
first); the median is printed.  No response cache: every call decodes.
"""

from __future__ import annotations

import argparse
import copy
import statistics
import sys
from datetime import datetime, timezone
from typing import Any

from chronomem.bench.datasets import DEFAULT_LOCOMO_PATH
from chronomem.extract.chunking import chunk_turns
from chronomem.extract.formats import load_conversations
from chronomem.extract.line_observations import LineObservationExtractor, layout_for, schema_for_lines
from chronomem.model import Message
from chronomem.providers.local_llama import LocalLlamaLLM


def without_max_length(schema: Any) -> Any:
    """``schema`` with every ``maxLength`` removed (a deep copy)."""
    if isinstance(schema, dict):
        return {k: without_max_length(v) for k, v in schema.items() if k != "maxLength"}
    if isinstance(schema, list):
        return [without_max_length(v) for v in schema]
    return copy.deepcopy(schema)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=str(DEFAULT_LOCOMO_PATH))
    ap.add_argument("--sample", default="conv-26")
    ap.add_argument("--session", type=int, default=1)
    ap.add_argument("--chunk", type=int, default=1, help="which chunk of the session (0-based)")
    ap.add_argument("--prompt", default="observe_lines_v3")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--variants", default="schema,no-maxlength,free")
    args = ap.parse_args(argv)

    (conv,) = load_conversations(args.data, sample=args.sample)
    sess = conv.sessions[args.session - 1]
    ts = datetime(2023, 5, 8, tzinfo=timezone.utc)  # the speed does not depend on the date line
    msgs = [Message(id=m["id"], user_id="bench", session_id=sess.session_id, speaker=m["speaker"], text=m["text"],
                    timestamp=ts, recorded_at=ts, seq=i) for i, m in enumerate(sess.messages)]
    chunk = chunk_turns(msgs, size=8, context=2)[args.chunk]
    llm = LocalLlamaLLM()
    ex = LineObservationExtractor(llm, prompt_version=args.prompt)
    messages, numbered = ex.messages_for(chunk)
    schema = schema_for_lines(sorted(numbered), layout_for(args.prompt))
    shapes: dict[str, dict[str, Any] | None] = {
        "schema": schema, "no-maxlength": without_max_length(schema), "free": None,
    }
    sys.stdout.write(f"{args.sample} session {args.session} chunk {args.chunk}: {len(chunk.turns)} turns, "
                     f"prompt {args.prompt}, {llm.threads} threads\n")
    sys.stdout.write(f"{'variant':14} {'gen tok':>8} {'gen tok/s':>10} {'prompt tok':>10} {'prompt tok/s':>12} {'wall s':>7}\n")
    for name in args.variants.split(","):
        rows = []
        for _ in range(args.repeat):
            llm._complete(messages, json_schema=shapes[name], schema_name="line_observations",
                          max_tokens=ex.max_tokens, temperature=0.0, stop=None)
            t = llm.last_timings
            rows.append((t.get("predicted_n", 0), t.get("predicted_per_second", 0.0), t.get("prompt_n", 0),
                         t.get("prompt_per_second", 0.0), (t.get("predicted_ms", 0) + t.get("prompt_ms", 0)) / 1000))
        med = [statistics.median(c) for c in zip(*rows)]
        sys.stdout.write(f"{name:14} {med[0]:8.0f} {med[1]:10.1f} {med[2]:10.0f} {med[3]:12.1f} {med[4]:7.1f}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
