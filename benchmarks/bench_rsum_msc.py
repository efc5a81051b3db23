"""Rsum memory quality and context() compaction on MSC; session-buffer latency.

Three measurements, each resumable (results are appended to a JSONL file and
an episode already there is not run again; model replies go through the
on-disk response cache):

``memory``  For each episode of ``msc_episodes_dev.json``: the Rsum memory
            after session 3 (``M_3``, built with
            :func:`chronomem.summarize.rsum.update_memory`, temperature 0, cap
            20 sentences), its recall of the gold persona facts
            ``personas_after_session_3`` per speaker, its length in sentences
            and tokens, and the LLM calls and tokens per session.
``compact`` For the same episodes: the whole episode (sessions 1-3 plus the
            next session up to its last Speaker 2 turn) as one running
            conversation, Speaker 2 = ``user``, Speaker 1 = ``assistant``, the
            memory ``M_3`` as stored memory; tokens sent by
            :func:`chronomem.summarize.compaction.compact` per strategy at
            equal budgets, against sending everything.
``latency`` Append/read latency of the in-process and the Redis session
            buffers (no model).

Recall matcher (lexical, documented so that figures can be reproduced): a gold
entry is split into sentences; each sentence is one gold fact.  Words are
lower-cased ``[a-z0-9]+`` tokens, stop words and first-person pronouns are
removed and the rest Porter-stemmed (nltk) — the fact's *content stems*.  A
fact is recalled when one memory sentence contains at least half of its
content stems (rounded up; facts without content stems are not counted).
``attributed`` additionally requires that memory sentence to name the
speaker ("Speaker 2"), so a fact credited to the wrong person does not count.

Examples::

    python benchmarks/bench_rsum_msc.py memory  --episodes 5 --llm local
    python benchmarks/bench_rsum_msc.py compact --episodes 5 --llm local --budgets 256,512,1024
    python benchmarks/bench_rsum_msc.py latency --redis redis://127.0.0.1:6379/0
    python benchmarks/bench_rsum_msc.py report
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import re
import statistics
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from chronomem.model import Message
from chronomem.summarize.compaction import Strategy, compact
from chronomem.summarize.rsum import (DEFAULT_MAX_SENTENCES, MEMORY_DECODING, MEMORY_DECODINGS, MEMORY_PROMPT, NO_MEMORY,
                                      update_memory)
from chronomem.summarize.text import split_sentences

log = logging.getLogger("bench_rsum_msc")

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "msc" / "msc_episodes_dev.json"
OUT = Path(__file__).resolve().parent / "results" / "rsum_msc.jsonl"
BASE_TIME = datetime(2024, 1, 1, tzinfo=timezone.utc)
SPEAKERS = ("Speaker 1", "Speaker 2")

_STOP = frozenset(
    """i me my mine myself we us our ours you your yours a an the and or but if of at by for with about
    to from in on into over under up down out off so than too very can will just do does did doing done
    be am is are was were been being have has had having this that these those there here it its it's
    im i'm ive i've id i'd dont don't not no as also all any some more most much many such what which
    who whom when where why how would could should may might must shall get got really like""".split()
)
_WORD = re.compile(r"[a-z0-9]+")


# --------------------------------------------------------------------------- data


@dataclass(slots=True)
class Episode:
    id: str
    sessions: list[list[dict[str, str]]]  # turns: {"speaker", "text"}
    session_times: list[datetime]
    next_session: list[dict[str, str]]
    personas: dict[str, list[str]]  # speaker -> gold persona entries after session 3


_GAP = re.compile(r"(\d+)\s*(minute|hour|day|week|month|year)s?", re.IGNORECASE)
_UNIT = {"minute": 60, "hour": 3600, "day": 86400, "week": 7 * 86400, "month": 30 * 86400, "year": 365 * 86400}


def load_episodes(path: Path, start: int, count: int) -> list[Episode]:
    """MSC episodes; absolute times are synthetic (session 1 at 2024-01-01, then each ``time_back`` gap)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    out = []
    for rec in data[start : start + count]:
        t = BASE_TIME
        times = []
        for n, s in enumerate(rec["sessions"]):
            if n:
                m = _GAP.search(s.get("time_back") or "")
                t = t + timedelta(seconds=int(m.group(1)) * _UNIT[m.group(2).lower()] if m else 86400)
            times.append(t)
        bot = {"bot_0": "Speaker 1", "bot_1": "Speaker 2"}
        out.append(
            Episode(
                id=str(rec["id"]),
                sessions=[[{"speaker": u["speaker"], "text": u["text"]} for u in s["turns"]] for s in rec["sessions"]],
                session_times=times,
                next_session=[{"speaker": bot.get(u["speaker"], u["speaker"]), "text": u["text"]}
                              for u in rec.get("next_session", [])],
                personas=dict(zip(SPEAKERS, rec["personas_after_session_3"])),
            )
        )
    return out


# --------------------------------------------------------------------------- matcher


def _stemmer() -> Any:
    from nltk.stem.porter import PorterStemmer  # bench extra; pure Python, no data download

    return PorterStemmer()


def content_stems(text: str, stem: Any) -> set[str]:
    return {stem.stem(w) for w in _WORD.findall(text.lower().replace("'", "")) if w not in _STOP}


def gold_facts(entries: Iterable[str]) -> list[str]:
    return [s for e in entries for s in split_sentences(e)]


def recall(memory: str, facts: Sequence[str], speaker: str, stem: Any) -> dict[str, Any]:
    sentences = split_sentences(memory)
    sent_stems = [content_stems(s, stem) for s in sentences]
    names = [speaker.lower() in s.lower() for s in sentences]
    hit = attributed = counted = 0
    misses: list[str] = []
    for fact in facts:
        stems = content_stems(fact, stem)
        if not stems:
            continue
        counted += 1
        need = math.ceil(len(stems) / 2)
        ok = [len(stems & ss) >= need for ss in sent_stems]
        if any(ok):
            hit += 1
            attributed += any(o and n for o, n in zip(ok, names))
        else:
            misses.append(fact)
    return {
        "facts": counted,
        "recalled": hit,
        "attributed": attributed,
        "recall": hit / counted if counted else None,
        "recall_attributed": attributed / counted if counted else None,
        "missed": misses,
    }


# --------------------------------------------------------------------------- runs


def done_ids(path: Path, kind: str, key: dict[str, Any]) -> set[str]:
    if not path.exists():
        return set()
    ids = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        r = json.loads(line)
        if r.get("kind") == kind and all(r.get(k) == v for k, v in key.items()):
            ids.add(r["episode"])
    return ids


def append(path: Path, record: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(record, ensure_ascii=False) + "\n")


def build_memory(llm: Any, ep: Episode, max_sentences: int,
                 decoding: int = MEMORY_DECODING) -> tuple[str, list[dict[str, Any]]]:
    memory = NO_MEMORY
    per_session = []
    for n, (turns, when) in enumerate(zip(ep.sessions, ep.session_times), start=1):
        t = time.perf_counter()
        upd = update_memory(llm, turns, memory, max_sentences=max_sentences, session_time=when, decoding=decoding)
        memory = upd.memory
        per_session.append(
            {
                "session": n,
                "calls": upd.calls,
                "prompt_tokens": upd.prompt_tokens,
                "completion_tokens": upd.completion_tokens,
                "cached_calls": sum(u.cached for u in upd.usages),
                "latency_s": round(time.perf_counter() - t, 2),
                "dropped_sentences": upd.dropped_sentences,
                "echoed_lines": upd.echoed_lines,
                "memory_sentences": len(split_sentences(memory)),
                "memory_tokens": llm.count_tokens(memory),
            }
        )
        log.info("%s: session %d folded in %.1fs (%d sentences)", ep.id, n, per_session[-1]["latency_s"],
                 per_session[-1]["memory_sentences"])
    return memory, per_session


def run_memory(args: argparse.Namespace, llm: Any) -> None:
    key = {"llm": llm.name, "max_sentences": args.max_sentences, "prompt": MEMORY_PROMPT}
    if args.decoding != MEMORY_DECODING:  # records of the default decoding predate this field
        key["decoding"] = args.decoding
    skip = done_ids(args.out, "memory", key)
    stem = _stemmer()
    for ep in load_episodes(args.data, args.start, args.episodes):
        if ep.id in skip:
            log.info("%s: already measured, skipped", ep.id)
            continue
        memory, per_session = build_memory(llm, ep, args.max_sentences, args.decoding)
        rec = {
            "kind": "memory",
            "episode": ep.id,
            **key,
            "memory": memory,
            "memory_sentences": len(split_sentences(memory)),
            "memory_tokens": llm.count_tokens(memory),
            "sessions": per_session,
            "recall": {sp: recall(memory, gold_facts(ep.personas[sp]), sp, stem) for sp in SPEAKERS},
            "at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        }
        append(args.out, rec)
        log.info("%s: recall %s", ep.id, {sp: r["recall"] for sp, r in rec["recall"].items()})


def episode_conversation(ep: Episode) -> list[dict[str, str]]:
    turns = [t for s in ep.sessions for t in s] + ep.next_session
    while turns and turns[-1]["speaker"] != "Speaker 2":
        turns.pop()
    return [
        {"role": "user" if t["speaker"] == "Speaker 2" else "assistant", "content": t["text"]} for t in turns
    ]


def run_compact(args: argparse.Namespace, llm: Any) -> None:
    budgets = [int(b) for b in args.budgets.split(",")]
    key = {"llm": llm.name, "budgets": budgets, "keep_turns": args.keep_turns, "max_sentences": args.max_sentences}
    skip = done_ids(args.out, "compact", key)
    for ep in load_episodes(args.data, args.start, args.episodes):
        if ep.id in skip:
            log.info("%s: already measured, skipped", ep.id)
            continue
        memory, _ = build_memory(llm, ep, args.max_sentences)  # cached when `memory` ran first
        msgs = episode_conversation(ep)
        rows = []
        for budget in budgets:
            for strategy in Strategy:
                t = time.perf_counter()
                res = compact(msgs, memory, budget, strategy, llm, llm.count_tokens, keep_turns=args.keep_turns)
                rows.append(
                    {
                        "budget": budget,
                        "strategy": strategy.value,
                        "tokens": res.tokens,
                        "original_tokens": res.original_tokens,
                        "saved_tokens": res.saved_tokens,
                        "kept_turns": res.kept_turns,
                        "summarized_turns": res.summarized_turns,
                        "dropped_turns": res.dropped_turns,
                        "memory_sentences": res.memory_sentences,
                        "memory_sentences_dropped": res.memory_sentences_dropped,
                        "llm_calls": len(res.usage),
                        "llm_tokens": sum(u.prompt_tokens + u.completion_tokens for u in res.usage),
                        "latency_s": round(time.perf_counter() - t, 2),
                    }
                )
        append(args.out, {"kind": "compact", "episode": ep.id, **key, "turns": len(msgs), "rows": rows,
                          "at": datetime.now(timezone.utc).isoformat(timespec="seconds")})
        log.info("%s: compaction measured at budgets %s", ep.id, budgets)


def run_latency(args: argparse.Namespace) -> None:
    from chronomem.summarize.buffer import InMemorySessionBuffer, RedisSessionBuffer

    buffers: list[tuple[str, Any]] = [("in-process", InMemorySessionBuffer())]
    prefix = f"chronomem-bench:{time.time_ns()}:"
    client = None
    if args.redis:
        import redis

        client = redis.Redis.from_url(args.redis)
        buffers.append(("redis", RedisSessionBuffer(client, prefix=prefix)))
    t0 = BASE_TIME
    for name, buf in buffers:
        appends, reads = [], []
        for i in range(args.n):
            m = Message(id=f"m{i}", user_id="bench", session_id=f"s{i // 50}", speaker="user",
                        text=f"turn {i} " + "lorem ipsum " * 10, timestamp=t0, recorded_at=t0, seq=i % 50)
            t = time.perf_counter()
            buf.append(m)
            appends.append(time.perf_counter() - t)
            if i % 50 == 49:
                t = time.perf_counter()
                buf.read("bench", m.session_id)
                reads.append(time.perf_counter() - t)
        rec = {
            "kind": "latency",
            "episode": name,
            "n": args.n,
            "append_p50_ms": round(statistics.median(appends) * 1000, 3),
            "append_p99_ms": round(sorted(appends)[int(0.99 * len(appends))] * 1000, 3),
            "read50_p50_ms": round(statistics.median(reads) * 1000, 3),
            "read50_p99_ms": round(sorted(reads)[int(0.99 * len(reads))] * 1000, 3),
        }
        append(args.out, rec)
        sys.stdout.write(json.dumps(rec) + "\n")
    if client is not None:
        keys = list(client.scan_iter(match=prefix + "*", count=1000))
        if keys:
            client.delete(*keys)


# --------------------------------------------------------------------------- report


def report(path: Path) -> str:
    recs = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
    lines: list[str] = []
    mem = [r for r in recs if r["kind"] == "memory"]
    if mem:
        by_llm: dict[str, list[dict[str, Any]]] = {}
        for r in mem:
            by_llm.setdefault(f"{r['llm']} cap={r['max_sentences']} decoding={r.get('decoding', MEMORY_DECODING)}", []).append(r)
        for label, rs in by_llm.items():
            lines.append(f"Memory after session 3 — {label}, {len(rs)} episodes ({', '.join(r['episode'] for r in rs)})")
            lines.append("")
            lines.append("| speaker | gold facts | recall | recall (attributed) |")
            lines.append("|---|---|---|---|")
            for sp in (*SPEAKERS, "both"):
                sps = SPEAKERS if sp == "both" else (sp,)
                facts = sum(r["recall"][s]["facts"] for r in rs for s in sps)
                hit = sum(r["recall"][s]["recalled"] for r in rs for s in sps)
                att = sum(r["recall"][s]["attributed"] for r in rs for s in sps)
                lines.append(f"| {sp} | {facts} | {hit / facts:.3f} | {att / facts:.3f} |")
            lines.append("")
            sess = [s for r in rs for s in r["sessions"]]
            lines.append(
                f"Memory M_3: {statistics.mean(r['memory_sentences'] for r in rs):.1f} sentences, "
                f"{statistics.mean(r['memory_tokens'] for r in rs):.0f} tokens on average "
                f"(max {max(r['memory_sentences'] for r in rs)} sentences). Per session: "
                f"{statistics.mean(s['calls'] for s in sess):.2f} LLM calls, "
                f"{statistics.mean(s['prompt_tokens'] for s in sess):.0f} prompt + "
                f"{statistics.mean(s['completion_tokens'] for s in sess):.0f} completion tokens, "
                f"{statistics.mean(s['latency_s'] for s in sess):.1f} s wall "
                f"({sum(s['cached_calls'] for s in sess)} of {sum(s['calls'] for s in sess)} calls from cache); "
                f"sentences cut by the cap: {sum(s['dropped_sentences'] for s in sess)}; "
                f"copied dialogue lines removed: {sum(s.get('echoed_lines', 0) for s in sess)}."
            )
            lines.append("")
    comp = [r for r in recs if r["kind"] == "compact"]
    if comp:
        lines.append(f"context() at equal budgets — {comp[0]['llm']}, {len(comp)} episodes, keep_turns={comp[0]['keep_turns']}, "
                     f"{statistics.mean(r['turns'] for r in comp):.0f} turns per conversation")
        lines.append("")
        lines.append("| budget | strategy | full tokens | sent tokens | saved | verbatim turns | summarised | dropped | memory sentences | LLM calls |")
        lines.append("|---|---|---|---|---|---|---|---|---|---|")
        rows = [row for r in comp for row in r["rows"]]
        for budget in sorted({row["budget"] for row in rows}):
            for strategy in Strategy:
                sel = [row for row in rows if row["budget"] == budget and row["strategy"] == strategy.value]
                if not sel:
                    continue
                full = statistics.mean(x["original_tokens"] for x in sel)
                sent = statistics.mean(x["tokens"] for x in sel)
                lines.append(
                    f"| {budget} | {strategy.value} | {full:.0f} | {sent:.0f} | {100 * (1 - sent / full):.1f} % | "
                    f"{statistics.mean(x['kept_turns'] for x in sel):.1f} | "
                    f"{statistics.mean(x['summarized_turns'] for x in sel):.1f} | "
                    f"{statistics.mean(x['dropped_turns'] for x in sel):.1f} | "
                    f"{statistics.mean(x['memory_sentences'] for x in sel):.1f} | "
                    f"{statistics.mean(x['llm_calls'] for x in sel):.1f} |"
                )
        lines.append("")
    for r in recs:
        if r["kind"] == "latency":
            lines.append(
                f"Buffer {r['episode']}: append p50 {r['append_p50_ms']} ms / p99 {r['append_p99_ms']} ms; "
                f"read of 50 turns p50 {r['read50_p50_ms']} ms / p99 {r['read50_p99_ms']} ms (n={r['n']})"
            )
    return "\n".join(lines) + "\n"


def make_model(spec: str, cache: str | None) -> Any:
    from chronomem.providers import make_llm

    return make_llm(spec, cache=cache if cache else True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("mode", choices=["memory", "compact", "latency", "report"])
    p.add_argument("--data", type=Path, default=DATA)
    p.add_argument("--out", type=Path, default=OUT)
    p.add_argument("--start", type=int, default=0, help="first episode index")
    p.add_argument("--episodes", type=int, default=3)
    p.add_argument("--llm", default="local", help="chronomem.providers spec (local, local:0.5b, openai:MODEL@URL)")
    p.add_argument("--cache", default=None, help="response cache file (default: the providers' default file)")
    p.add_argument("--max-sentences", type=int, default=DEFAULT_MAX_SENTENCES)
    p.add_argument("--decoding", type=int, choices=MEMORY_DECODINGS, default=MEMORY_DECODING,
                   help="the memory update's revision (memory mode; 3 appends what a session adds)")
    p.add_argument("--budgets", default="256,512,1024")
    p.add_argument("--keep-turns", type=int, default=6)
    p.add_argument("--redis", default=None, help="Redis URL for the latency mode")
    p.add_argument("--n", type=int, default=2000, help="appends in the latency mode")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per tokenize call otherwise
    if args.mode == "report":
        sys.stdout.write(report(args.out))
    elif args.mode == "latency":
        run_latency(args)
    else:
        llm = make_model(args.llm, args.cache)
        (run_memory if args.mode == "memory" else run_compact)(args, llm)
        log.info("usage: %s", json.dumps(llm.usage.snapshot()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
