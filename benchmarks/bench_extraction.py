"""Extraction quality and cost of the REAL write path against LoCoMo's gold observations.

For each chosen LoCoMo session the session's turns go through
``WritePipeline.add`` (one structured LLM call per chunk) into a fresh
in-memory graph, and the extracted facts are compared with the session's
gold ``observation`` facts (each cites its source ``dia_id``):

* **recall (source)**: a gold observation counts when some extracted fact
  cites one of its dia_ids;
* **recall (source + content)**: ... and that fact's object shares at least
  one content word (Porter-stemmed, stopwords and speaker names removed) with
  the observation, or the fact's subject+object cover ≥ 50% of the
  observation's content words;
* **precision (judge)**: an LLM judge (the same model unless ``--judge-llm``)
  answers whether the cited turn(s) support each sampled extracted fact —
  a 1.5B judge is noisy; pair it with the manual review recorded in
  BENCHMARKS.md.

Cost: LLM calls per 100 turns, prompt and completion tokens per turn, wall
seconds per turn (uncached calls only).

Resumable: per-session results are appended to ``--out`` (JSON lines) and
skipped on rerun; LLM responses are cached on disk (``--cache``), so an
interrupted session replays its finished chunks instantly.

    .venv/bin/python benchmarks/bench_extraction.py --sample conv-26 --sessions 1,2,3 \
        --llm local --cache bench-out/extract_cache.sqlite --out bench-out/extraction.jsonl --judge 40
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import re
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from chronomem import Memory
from chronomem.bench.datasets import DEFAULT_LOCOMO_PATH, normalize_dia_id
from chronomem.extract.formats import load_conversations
from chronomem.extract.extractor import PROMPT_VERSION
from chronomem.extract.pipeline import METHODS, WritePipeline, method_versions
from chronomem.providers import make_llm
from chronomem.providers.base import Penalties, UsageTracker

log = logging.getLogger("bench_extraction")

_STOP = set(
    "a an the and or but of in on at to for with from by is are was were be been being has have had do "
    "does did it its this that these those he she they them his her their i me my we our you your as "
    "about into over after before during also very really just so not no can could will would should "
    "currently recently".split()
)


def _stemmer():
    try:
        from nltk.stem import PorterStemmer

        return PorterStemmer().stem
    except Exception:  # nltk is a bench extra; fall back to a crude suffix strip
        return lambda w: re.sub(r"(ing|ed|es|s)$", "", w)


STEM = _stemmer()


def content_words(text: str, names: set[str]) -> set[str]:
    words = re.findall(r"[a-z0-9]+", text.lower())
    return {STEM(w) for w in words if w not in _STOP and w not in names and len(w) > 1}


def gold_observations(record: dict[str, Any], session: int) -> list[tuple[str, list[str]]]:
    obs = (record.get("observation") or {}).get(f"session_{session}_observation") or {}
    out = []
    for _speaker, items in obs.items():
        for item in items:
            text, ids = item[0], item[1]
            ids = ids if isinstance(ids, list) else re.split(r"[;,\s]+", str(ids))
            out.append((text, [normalize_dia_id(i) for i in ids if i]))
    return out


def gold_evidence(record: dict[str, Any], session: int) -> set[str]:
    """The session's turns that some category 1–4 question cites as evidence."""
    out: set[str] = set()
    for q in record.get("qa", []):
        if q.get("category") not in (1, 2, 3, 4):
            continue
        for e in q.get("evidence") or []:
            for part in re.split(r"[;,\s]+", str(e)):
                did = normalize_dia_id(part) if part else ""
                if did.startswith(f"D{session}:"):
                    out.add(did)
    return out


def lexically_supported(f: Any, turn_text: dict[str, str], names: set[str], use_text: bool) -> bool:
    """Automatic precision proxy: ≥ 60% of the fact's content words (its statement's for v2,
    else subject/relation/object; dates the code appended in parentheses excluded) occur in
    its source turns.  Says "the words are there", not "the reading is right"."""
    claim = re.sub(r"\s*\([^)]*\d{4}[^)]*\)", "", f.text) if use_text and f.text else f"{f.subject} {f.object}"
    words = content_words(claim, names)
    src = content_words(" ".join(turn_text.get(i, "") for i in f.source_ids), names)
    return bool(words) and len(words & src) / len(words) >= 0.6


def match(gold: list[tuple[str, list[str]]], facts: list[Any], names: set[str]) -> dict[str, Any]:
    by_source = 0
    by_content = 0
    matched_facts: set[str] = set()
    for text, ids in gold:
        ow = content_words(text, names)
        cands = [f for f in facts if set(f.source_ids) & set(ids)]
        if cands:
            by_source += 1
        for f in cands:
            fo = content_words(f.object, names)
            fso = content_words(f"{f.subject} {f.relation.replace('_', ' ')} {f.object}", names)
            if (fo & ow) or (ow and len(fso & ow) / len(ow) >= 0.5):
                by_content += 1
                matched_facts.add(f.id)
                break
    n = len(gold)
    return {
        "gold": n,
        "recall_source": round(by_source / n, 3) if n else None,
        "recall_content": round(by_content / n, 3) if n else None,
        "matched_gold": by_content,
    }


JUDGE_SCHEMA = {
    "title": "judgement",
    "type": "object",
    "properties": {"supported": {"type": "boolean"}},
    "required": ["supported"],
    "additionalProperties": False,
}
JUDGE_SYSTEM = (
    "You check facts extracted from a conversation. Given the conversation turn(s) and one fact "
    "(subject, relation, object), answer supported=true only if the turns state or clearly imply the "
    "fact, with the right subject. Output JSON."
)


def judge(llm: Any, row: dict[str, Any], turns: dict[str, str], statement: bool = False) -> bool:
    src = "\n".join(turns.get(i, "") for i in row["src"])
    ended = " (this stopped being true)" if row["to"] is not None and row["from"] is None else ""
    user = f"Turns:\n{src}\n\nFact: {row['s']} | {row['r']} | {row['o']}{ended}"
    if statement:  # v2 facts keep the model's statement as their text: judge both together
        user += f"\nStatement: {row.get('text', '')}"
    res = llm.chat(
        [{"role": "system", "content": JUDGE_SYSTEM}, {"role": "user", "content": user}],
        schema=JUDGE_SCHEMA, max_tokens=16, temperature=0.0, purpose="judge",
    )
    return bool(res.data.get("supported"))


class CacheOnly:
    """The local model's name without the model: every call the cache cannot answer fails.

    With ``CHRONOMEM_FAST_FORWARD=1`` it answers as the fast-forward model (name + ``:ff``), whose
    replies are cached under their own keys."""

    context_window = 8192

    def __init__(self) -> None:
        from chronomem.providers import resolve_llm_settings

        ff = resolve_llm_settings().fast_forward
        self.name = "local:qwen2.5-coder-1.5b-instruct-q4_k_m" + (":ff" if ff else "")

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def chat(self, *a: Any, **kw: Any) -> Any:
        from chronomem.errors import ModelUnavailableError

        raise ModelUnavailableError("--cache-only: this call is not in the response cache")


def parse_penalties(text: str) -> Penalties:
    """``"frequency=0.3,presence=0.5"`` → :class:`Penalties` (out-of-range values: its ValidationError)."""
    fields: dict[str, float] = {}
    for part in text.split(","):
        name, _, value = part.partition("=")
        try:
            if name.strip() not in ("repeat", "frequency", "presence"):
                raise ValueError(name)
            fields[name.strip()] = float(value)
        except ValueError:
            raise SystemExit(f"--penalties: {part!r} is not repeat=, frequency= or presence= with a number") from None
    return Penalties(**fields)


def run_session(args: argparse.Namespace, record: dict[str, Any], conv: Any, n: int, llm: Any,
                tracker: UsageTracker) -> dict[str, Any]:
    sess = conv.sessions[n - 1]
    mem = Memory(":memory:", llm=llm)
    pipe = mem.write_pipeline(chunk_size=args.chunk_size, context=args.context, prompt_version=args.prompt,
                              method=args.method)
    if args.penalties:
        ex = pipe.extractor()
        if not hasattr(ex, "penalties"):
            raise SystemExit(f"--penalties: extraction method {args.method} takes none (v2 and v3 do)")
        ex.penalties = parse_penalties(args.penalties)
    if args.warm:
        pipe.warm()  # the shared system prompt evaluated before the clock starts (steady state)
    before = tracker.snapshot()
    t0 = time.perf_counter()
    res = pipe.add(sess.messages, user_id="bench", session_id=sess.session_id, timestamp=sess.timestamp)
    wall = time.perf_counter() - t0
    after = tracker.snapshot()
    ex_b = before["by_purpose"].get("extract", {})
    ex_a = after["by_purpose"].get("extract", {})
    d = {k: ex_a.get(k, 0) - ex_b.get(k, 0) for k in ("calls", "cached_calls", "prompt_tokens",
                                                       "completion_tokens", "latency_s")}
    facts = mem.history(user_id="bench")
    names = {w.lower() for m in sess.messages for w in m["speaker"].split()}
    q = match(gold_observations(record, n), facts, names)
    evidence = gold_evidence(record, n)
    cited = {i for f in facts for i in f.source_ids}
    turn_text = {m["id"]: m["text"] for m in sess.messages}
    supported = [lexically_supported(f, turn_text, names, args.method != "v1") for f in facts]
    out: dict[str, Any] = {
        "sample": conv.conversation_id, "session": n, "turns": len(sess.messages),
        "chunk_size": args.chunk_size, "prompt": args.prompt, "facts": len(facts),
        "stable_facts": sum(f.confidence >= mem.config.theta_stable for f in facts),
        "failed_chunks": len(res.failed_chunks), **q,
        "evidence_turns": len(evidence), "evidence_cited": len(evidence & cited), "turns_cited": len(cited),
        "lexically_supported": sum(supported),
        "llm_calls": d["calls"], "cached_calls": d["cached_calls"],
        "prompt_tokens": d["prompt_tokens"], "completion_tokens": d["completion_tokens"],
        "llm_latency_s": round(d["latency_s"], 2), "wall_s": round(wall, 2),
        "fact_rows": [
            {"id": f.id, "s": f.subject, "r": f.relation, "o": f.object, "from": f.valid_from and f.valid_from.isoformat(),
             "to": f.valid_to and f.valid_to.isoformat(), "c": f.confidence, "intent": f.intent.value,
             "src": f.source_ids, "text": f.text} for f in facts
        ],
    }
    mem.close()
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(DEFAULT_LOCOMO_PATH))
    ap.add_argument("--sample", default="conv-26")
    ap.add_argument("--sessions", default="1,2,3")
    ap.add_argument("--llm", default="local")
    ap.add_argument("--judge-llm", default=None)
    ap.add_argument("--cache", default="bench-out/extract_cache.sqlite")
    ap.add_argument("--out", default="bench-out/extraction.jsonl")
    ap.add_argument("--chunk-size", type=int, default=8)
    ap.add_argument("--warm", action="store_true",
                    help="prefill the extraction prompt's shared start before timing each session (Memory.warm): "
                         "s/turn then measures steady-state ingestion, not the first call's ≈ 740-token system prompt")
    ap.add_argument("--context", type=int, default=2)
    ap.add_argument("--judge", type=int, default=0, help="facts per session to judge (0 = no judge)")
    ap.add_argument("--cache-only", action="store_true",
                    help="replay cached responses only; an uncached call fails its chunk (rescoring without a model)")
    ap.add_argument("--method", default="v1", choices=METHODS, help="extraction method (default v1)")
    ap.add_argument("--penalties", default=None,
                    help="repetition penalties for the v2/v3 extraction calls, e.g. frequency=0.3,presence=0.5")
    ap.add_argument("--prompt", default=None,
                    help="extraction prompt version (default: the method's, "
                         + ", ".join(f"{method_versions(m)[0]} for {m}" for m in METHODS) + ")")
    args = ap.parse_args(argv)
    if args.prompt is None:
        args.prompt = method_versions(args.method)[0]
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s",
                        stream=sys.stderr)
    for noisy in ("httpx", "chronomem.providers"):
        logging.getLogger(noisy).setLevel(logging.WARNING)

    data = json.loads(Path(args.data).read_text(encoding="utf-8"))
    record = next(r for r in data if r["sample_id"] == args.sample)
    (conv,) = load_conversations(args.data, sample=args.sample)
    out_path = Path(args.out)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    done = set()
    if out_path.exists():
        for line in out_path.read_text().splitlines():
            if line.strip():
                r = json.loads(line)
                done.add((r["sample"], r["session"], r["chunk_size"], r.get("prompt", "extract_v3")))
    tracker = UsageTracker()
    Path(args.cache).parent.mkdir(parents=True, exist_ok=True)
    if args.cache_only:
        from chronomem.providers import ResponseCache, TrackedLLM

        llm = TrackedLLM(CacheOnly(), usage=tracker, cache=ResponseCache(args.cache))
    else:
        llm = make_llm(args.llm, usage=tracker, cache=args.cache)
    judge_llm = llm if not args.judge_llm else make_llm(args.judge_llm, usage=tracker, cache=args.cache)
    for n in [int(x) for x in args.sessions.split(",") if x.strip()]:
        if (args.sample, n, args.chunk_size, args.prompt) in done:
            log.info("%s session %d already done; skipping", args.sample, n)
            continue
        log.info("%s session %d: %d turns", args.sample, n, len(conv.sessions[n - 1].messages))
        r = run_session(args, record, conv, n, llm, tracker)
        with out_path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(r) + "\n")
        log.info("%s", {k: v for k, v in r.items() if k != "fact_rows"})
    if args.judge:
        judge_rows(out_path, args, conv, judge_llm)
    summarize(out_path, args.sample, args.chunk_size, args.prompt)
    return 0


def judge_rows(path: Path, args: argparse.Namespace, conv: Any, llm: Any) -> None:
    """Judge a sample of each session's facts, after all extraction (keeps the extraction
    prompt's KV cache warm while extracting); results are written back to the file."""
    rows = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    turns = {m["id"]: f"{m['speaker']}: {m['text']}" for s in conv.sessions for m in s.messages}
    for r in rows:
        if (r["sample"] != args.sample or r["chunk_size"] != args.chunk_size
                or r.get("prompt", "extract_v3") != args.prompt or "judged" in r):
            continue
        facts = r["fact_rows"]
        rng = random.Random(f"{r['sample']}-{r['session']}")
        sample = facts if len(facts) <= args.judge else rng.sample(facts, args.judge)
        verdicts = []
        for f in sample:
            try:
                ok = judge(llm, f, turns, statement=args.method != "v1")
            except Exception as e:  # a judge failure is not a fact failure
                log.warning("judge failed on %s: %s", f["id"], e)
                continue
            f["judge"] = ok
            verdicts.append(ok)
        r["judged"] = len(verdicts)
        r["precision_judge"] = round(sum(verdicts) / len(verdicts), 3) if verdicts else None
        log.info("judged %s session %d: %s", r["sample"], r["session"], r["precision_judge"])
        path.write_text("".join(json.dumps(x) + "\n" for x in rows), encoding="utf-8")


def summarize(path: Path, sample: str, chunk_size: int, prompt: str = PROMPT_VERSION) -> dict[str, Any]:
    rows = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    rows = [r for r in rows if r["sample"] == sample and r["chunk_size"] == chunk_size
            and r.get("prompt", "extract_v3") == prompt]
    if not rows:
        return {}
    turns = sum(r["turns"] for r in rows)
    gold = sum(r["gold"] for r in rows)
    uncached = [r for r in rows if r["cached_calls"] < r["llm_calls"]] or rows
    ut = sum(r["turns"] for r in uncached)
    s = {
        "sessions": [r["session"] for r in rows], "turns": turns, "gold": gold,
        "facts": sum(r["facts"] for r in rows),
        "recall_source": round(sum(r["recall_source"] * r["gold"] for r in rows) / gold, 3),
        "recall_content": round(sum(r["matched_gold"] for r in rows) / gold, 3),
        "calls_per_100_turns": round(100 * sum(r["llm_calls"] for r in rows) / turns, 1),
        "prompt_tokens_per_turn": round(sum(r["prompt_tokens"] for r in rows) / turns, 1),
        "completion_tokens_per_turn": round(sum(r["completion_tokens"] for r in rows) / turns, 1),
        "wall_s_per_turn": round(sum(r["wall_s"] for r in uncached) / ut, 2),
        "failed_chunks": sum(r["failed_chunks"] for r in rows),
        "prompt": prompt,
        "turns_cited": sum(r.get("turns_cited", 0) for r in rows),
        "lexically_supported_share": round(sum(r.get("lexically_supported", 0) for r in rows)
                                           / max(1, sum(r["facts"] for r in rows)), 3),
        "evidence_turns": sum(r.get("evidence_turns", 0) for r in rows),
        "evidence_cited_share": round(sum(r.get("evidence_cited", 0) for r in rows)
                                      / max(1, sum(r.get("evidence_turns", 0) for r in rows)), 3),
        # a relation the model over-uses (copied from the prompt's examples) shows up here
        "top_relations": Counter(f["r"] for r in rows for f in r["fact_rows"]).most_common(8),
    }
    judged = [r for r in rows if r.get("judged")]
    if judged:
        s["precision_judge"] = round(
            sum(r["precision_judge"] * r["judged"] for r in judged) / sum(r["judged"] for r in judged), 3)
        s["judged"] = sum(r["judged"] for r in judged)
    print(json.dumps(s, indent=2))
    return s


if __name__ == "__main__":
    raise SystemExit(main())
