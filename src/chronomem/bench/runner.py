"""Run methods over benchmark questions, resumably.

Per-question results are appended to ``results.jsonl`` in the output folder
as they are produced; a re-run with the same configuration skips every
(method, configuration, question) already there, so a run interrupted at any
point resumes where it stopped.  Ingestion is done once per conversation and
method configuration, sharing artefacts across methods (:class:`SharedIngest`),
and only when the conversation still has pending questions.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import platform
import random
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Protocol

from ..errors import ChronomemError, ValidationError
from ..providers.base import LLM, Embedder
from . import metrics
from .datasets import QA, Conversation, MscEpisode, check_categories
from .methods import Method, MethodConfig, SharedIngest, load_prompt, make_method

log = logging.getLogger(__name__)

RESULTS_FILE = "results.jsonl"
INGEST_FILE = "ingest.jsonl"
RUNS_FILE = "runs.jsonl"
MEMORY_DIR = "memories"  # the memory-based methods' SQLite files (one per conversation and ingestion config)
DEFAULT_SPEAKER = "Speaker 2"  # whose MSC replies are generated and scored unless told otherwise


# --------------------------------------------------------------------------- sampling


def allocate(counts: dict[int, int], n: int) -> dict[int, int]:
    """Split ``n`` over strata proportionally to ``counts`` (largest remainder), at least one each when n allows."""
    total = sum(counts.values())
    if n >= total:
        return dict(counts)
    keys = sorted(counts)
    quota = {k: n * counts[k] / total for k in keys}
    floor_one = n >= len(keys)
    alloc = {k: min(counts[k], max(int(quota[k]), 1 if floor_one else 0)) for k in keys}
    while sum(alloc.values()) < n:
        k = max((k for k in keys if alloc[k] < counts[k]), key=lambda k: (quota[k] - alloc[k], -k))
        alloc[k] += 1
    while sum(alloc.values()) > n:
        k = min((k for k in keys if alloc[k] > (1 if floor_one else 0)), key=lambda k: (quota[k] - alloc[k], k))
        alloc[k] -= 1
    return alloc


def select_questions(
    conversation: Conversation,
    categories: Iterable[int] = (1, 2, 3, 4),
    sample: int | None = None,
    seed: int = 0,
) -> list[QA]:
    """The conversation's questions of ``categories``; with ``sample``, a stratified sample by category.

    The sample is a pure function of (conversation, categories, sample, seed):
    each category draws with its own seeded generator, and the result keeps
    the file's question order.
    """
    cats = check_categories(categories)
    if sample is not None and sample < 1:
        raise ValidationError("sample", sample, "a sample needs at least one question")
    qs = [q for q in conversation.qa if q.category in cats]
    if sample is None or sample >= len(qs):
        return qs
    by_cat: dict[int, list[QA]] = {}
    for q in qs:
        by_cat.setdefault(q.category, []).append(q)
    alloc = allocate({c: len(v) for c, v in by_cat.items()}, sample)
    chosen: set[str] = set()
    for cat, items in by_cat.items():
        rng = random.Random(f"{seed}:{conversation.sample_id}:{cat}")
        chosen.update(q.qid for q in rng.sample(items, alloc[cat]))
    return [q for q in qs if q.qid in chosen]


# --------------------------------------------------------------------------- result files


def config_key(method: Method, llm: LLM, prompt: str) -> str:
    """Short stable hash of what determines a method's answers."""
    ident = {"describe": method.describe(), "llm": llm.name, "prompt": prompt}
    return hashlib.sha1(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:10]


class JsonlLog:
    """Append-only JSONL file; each row is flushed as soon as it is written."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)

    def rows(self) -> list[dict[str, Any]]:
        return read_jsonl(self.path)

    def append(self, row: dict[str, Any]) -> None:
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
            fh.flush()

    def rewrite(self, rows: Sequence[dict[str, Any]]) -> None:
        """Replace the whole file with ``rows``, atomically (a crash leaves the old file or the new one)."""
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
        os.replace(tmp, self.path)


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Rows of a JSONL file; a torn last line (interrupted write) is ignored."""
    if not path.exists():
        return []
    out: list[dict[str, Any]] = []
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, start=1):
            line = line.strip()
            if not line:
                continue
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                log.warning("%s:%d: skipping unreadable line", path, n)
    return out


# --------------------------------------------------------------------------- progress


class ProgressSink(Protocol):
    def start(self, total: int, done: int) -> None: ...
    def advance(self, description: str) -> None: ...
    def note(self, message: str) -> None: ...
    def close(self) -> None: ...


class NullProgress:
    def start(self, total: int, done: int) -> None:
        pass

    def advance(self, description: str) -> None:
        pass

    def note(self, message: str) -> None:
        log.info("%s", message)

    def close(self) -> None:
        pass


class RichProgress:
    """A rich progress bar with elapsed time and ETA (used by the CLI)."""

    def __init__(self, console: Any = None) -> None:
        from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                                   TimeElapsedColumn, TimeRemainingColumn)

        self._progress = Progress(
            TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
            TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(), console=console,
        )
        self._task: Any = None
        self._live = self._progress.console.is_terminal
        self._count = 0
        self._total = 0
        self._t0 = 0.0

    def start(self, total: int, done: int) -> None:
        self._progress.start()
        # already-done questions are not counted in the ETA: the bar covers pending work only
        self._total = max(total - done, 0)
        self._t0 = time.perf_counter()
        self._task = self._progress.add_task(f"{done} done earlier", total=self._total)

    def advance(self, description: str) -> None:
        self._progress.update(self._task, advance=1, description=description)
        self._count += 1
        if not self._live:  # a log file (nohup): one line per item with the ETA
            elapsed = time.perf_counter() - self._t0
            eta = elapsed / self._count * (self._total - self._count)
            self._progress.console.log(f"{description}: {self._count}/{self._total}, "
                                       f"elapsed {elapsed / 60:.1f} min, ETA {eta / 60:.1f} min")

    def note(self, message: str) -> None:
        self._progress.console.log(message)

    def close(self) -> None:
        self._progress.stop()


# --------------------------------------------------------------------------- LoCoMo


@dataclass
class RunSummary:
    out_dir: Path
    planned: int = 0
    skipped_done: int = 0
    answered: int = 0
    failed: int = 0
    seconds: float = 0.0
    failures: list[str] = field(default_factory=list)


def run_environment(llm: LLM) -> dict[str, Any]:
    """Where and with what model settings a run happened, for its record in ``runs.jsonl``.

    Greedy output of llama.cpp depends on its thread count, so the threads are
    part of what a reader needs to reproduce a row.
    """
    env: dict[str, Any] = {
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(terse=True),
                    "processor": platform.machine(), "python": platform.python_version()},
        "context_window": getattr(llm, "context_window", None),
    }
    threads = getattr(llm, "threads", None)
    if threads is not None:
        env["threads"] = threads
    return env


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def judge_answer(judge: LLM, qa: QA, prediction: str) -> float:
    """LLM judge: 1.0 for CORRECT, 0.0 for WRONG (generous matching, as in the Mem0 paper)."""
    prompt = load_prompt("judge_v1")
    res = judge.chat(
        prompt.messages(question=qa.question, gold=qa.answer, prediction=prediction),
        max_tokens=4, temperature=0.0, purpose="judge",
    )
    return 1.0 if "correct" in res.text.lower() and "incorrect" not in res.text.lower() else 0.0


CONSISTENCY_LABELS = ("CONTRADICTS", "USES", "NEUTRAL")
JUDGE_BATCH = 20  # LoCoMo answers judged together (a crash before the judge loses none: the model cache has them)


def judge_consistency(judge: LLM, persona: Sequence[str], speaker: str, other: str, message: str,
                      reply: str) -> dict[str, float | None]:
    """LLM judge of an MSC reply against the speaker's persona from earlier sessions.

    Returns ``judge_contradicts`` (1.0 when the reply contradicts an earlier statement) and
    ``judge_uses`` (1.0 when it relies on one without contradicting it); both None when the
    judge's reply holds no label or the speaker has no persona to check against.
    """
    if not persona:
        return {"judge_contradicts": None, "judge_uses": None}
    prompt = load_prompt("consistency_v1")
    res = judge.chat(
        prompt.messages(speaker=speaker, other=other, persona="\n".join(f"- {p}" for p in persona),
                        message=message, reply=reply),
        max_tokens=6, temperature=0.0, purpose="judge",
    )
    text = res.text.upper()
    found = [(text.find(label), label) for label in CONSISTENCY_LABELS if label in text]
    if not found:
        log.warning("consistency judge gave no label: %r", res.text[:80])
        return {"judge_contradicts": None, "judge_uses": None}
    label = min(found)[1]  # the first label the judge wrote
    return {"judge_contradicts": float(label == "CONTRADICTS"), "judge_uses": float(label == "USES")}


def score_row(qa: QA, prediction: str, retrieved_ids: Sequence[str], top_k: int | None) -> dict[str, Any]:
    """Scores of one answer; ``top_k`` None when the method's context is not a ranked selection."""
    gold = qa.answer if qa.category != 5 else (qa.adversarial_answer or qa.answer)
    return {
        "locomo_f1": metrics.locomo_f1(prediction, qa.answer, qa.category),
        "mem0_f1": metrics.mem0_f1(prediction, gold) if qa.category != 5 else None,
        "bleu1": metrics.bleu1(prediction, gold) if qa.category != 5 else None,
        "recall_at_k": metrics.evidence_recall(qa.evidence, retrieved_ids, top_k) if top_k else None,
        "recall_context": metrics.evidence_recall(qa.evidence, retrieved_ids, None),
    }


def run_locomo(
    conversations: Sequence[Conversation],
    method_names: Sequence[str],
    llm: LLM,
    out_dir: str | Path,
    *,
    embedder: Embedder | None = None,
    config: MethodConfig | None = None,
    categories: Iterable[int] = (1, 2, 3, 4),
    sample: int | None = None,
    seed: int = 0,
    judge: LLM | None = None,
    progress: ProgressSink | None = None,
    command: str = "",
) -> RunSummary:
    """Answer the selected questions of every conversation with every method; append rows; resume."""
    cats = tuple(sorted(set(categories)))
    plan = {c.sample_id: select_questions(c, cats, sample, seed) for c in conversations}  # bad input fails here
    out = Path(out_dir)
    config = config or MethodConfig()
    if config.memory_dir is None:  # memories live with the results, so a re-run resumes their ingestion too
        config = replace(config, memory_dir=str(out / MEMORY_DIR))
    progress = progress or NullProgress()
    results = JsonlLog(out / RESULTS_FILE)
    ingest_log = JsonlLog(out / INGEST_FILE)
    methods = [make_method(n, llm, config, embedder) for n in method_names]  # fails fast on unavailable ones
    keys = {m.name: config_key(m, llm, config.answer_prompt) for m in methods}
    done = {(r.get("config_key"), r.get("qid")) for r in results.rows() if r.get("dataset") == "locomo"}
    summary = RunSummary(out_dir=out)
    summary.planned = sum(len(v) for v in plan.values()) * len(methods)
    summary.skipped_done = sum(1 for c in conversations for m in methods for q in plan[c.sample_id]
                               if (keys[m.name], q.qid) in done)
    JsonlLog(out / RUNS_FILE).append({
        "started": _now(), "dataset": "locomo", "command": command, "llm": llm.name, **run_environment(llm),
        "embedder": embedder.name if embedder else None, "methods": list(method_names),
        "conversations": [c.sample_id for c in conversations], "categories": list(cats),
        "sample": sample, "seed": seed, "top_k": config.top_k, "window_tokens": config.window_tokens,
        "prompt": config.answer_prompt, "planned": summary.planned, "already_done": summary.skipped_done,
    })
    t_start = time.perf_counter()
    progress.start(summary.planned, summary.skipped_done)
    try:
        for conv in conversations:
            shared = SharedIngest(conv)
            for method in methods:
                key = keys[method.name]
                pending = [q for q in plan[conv.sample_id] if (key, q.qid) not in done]
                if not pending:
                    continue
                stats = method.ingest(conv, shared)
                ingest_log.append({
                    "time": _now(), "dataset": "locomo", "method": method.name, "config_key": key,
                    "sample_id": conv.sample_id, "seconds": round(stats.seconds, 3), "built": stats.built,
                    "usage": stats.usage.as_dict(), **({"info": stats.info} if stats.info else {}),
                })
                judged: list[tuple[QA, dict[str, Any]]] = []  # answered, waiting for the judge

                def flush() -> None:
                    # the judge runs after a batch of answers, so that the answers share their cached prompt
                    # prefix (the whole conversation, for full_context) instead of re-reading it every time
                    for qa, row in judged:
                        if judge is not None:
                            row["scores"]["judge"] = judge_answer(judge, qa, row["prediction"]) if qa.category != 5 else None
                        results.append(row)
                        done.add((key, qa.qid))
                        summary.answered += 1
                    judged.clear()

                for q in pending:
                    try:
                        ans = method.answer(q)
                    except ChronomemError as exc:  # a failed model call: leave the question pending
                        summary.failed += 1
                        summary.failures.append(f"{method.name} {q.qid}: {exc}")
                        log.error("%s %s failed: %s", method.name, q.qid, exc)
                        progress.advance(f"{method.name} {conv.sample_id} (failed {q.qid})")
                        continue
                    row = {
                        "time": _now(), "dataset": "locomo", "method": method.name, "config_key": key,
                        "config": method.describe(), "llm": llm.name, "prompt": config.answer_prompt,
                        "sample_id": conv.sample_id, "qid": q.qid, "category": q.category,
                        "question": q.question, "gold": q.answer, "adversarial_answer": q.adversarial_answer,
                        "evidence": list(q.evidence), "prediction": ans.text,
                        "scores": score_row(q, ans.text, ans.retrieved_ids, config.top_k if method.ranked else None),
                        "context_tokens": ans.context_tokens, "retrieved_ids": ans.retrieved_ids[: max(config.top_k, 50)],
                        "truncated": ans.truncated, "usage": ans.usage.as_dict(),
                        "retrieval_latency_s": round(ans.retrieval_latency_s, 4),
                        "answer_latency_s": round(ans.answer_latency_s, 4),
                    }
                    if ans.truncated:
                        row["truncation"] = ans.info
                    judged.append((q, row))
                    if judge is None or len(judged) >= JUDGE_BATCH:
                        flush()
                    progress.advance(f"{method.name} {conv.sample_id}")
                flush()
    finally:
        progress.close()
        summary.seconds = time.perf_counter() - t_start
    return summary


# --------------------------------------------------------------------------- MSC


def row_speaker(row: dict[str, Any]) -> str:
    """Whose replies and memory an MSC row scores; rows from before it was recorded used the default."""
    return str(row.get("speaker", DEFAULT_SPEAKER))


def memory_scores(memory: str | None, ep: MscEpisode, speaker: str) -> dict[str, float | None]:
    """Persona recall of a standing memory (None for methods without one, or a speaker without gold facts).

    Two gold lists, two questions: ``persona_*`` against ``persona_facts_session_4``
    (what the speaker goes on to say about themselves in the session the memory
    is used for) and ``persona_*_after_s3`` against ``personas_after_session_3``
    (what the three sessions the memory was built from established).
    """
    out: dict[str, float | None] = {}
    for suffix, facts in (("", ep.persona_facts_session_4.get(speaker, [])),
                          ("_after_s3", ep.personas_after_session_3.get(speaker, []))):
        rec = metrics.persona_recall(memory, facts) if memory is not None else None
        out[f"persona_coverage{suffix}"] = rec[0] if rec else None
        out[f"persona_recall{suffix}"] = rec[1] if rec else None
    return out


def rescore_memory_rows(rows: Sequence[dict[str, Any]], episodes: Sequence[MscEpisode], speaker: str) -> int:
    """Give MSC memory rows written before a persona score existed every score :func:`memory_scores` computes.

    The scores are pure functions of the stored memory text and the gold
    facts, so nothing is re-generated.  ``rows`` are completed in place;
    returns how many were.
    """
    by_id = {ep.episode_id: ep for ep in episodes}
    completed = 0
    for row in rows:
        sample_id = row.get("sample_id")
        ep = by_id.get(sample_id) if sample_id is not None else None
        if row.get("dataset") != "msc" or row.get("kind") != "memory" or ep is None or row_speaker(row) != speaker:
            continue
        scores = memory_scores(row.get("memory"), ep, speaker)
        if set(scores) <= set(row.get("scores", {})):
            continue
        row["scores"] = {**scores, **row.get("scores", {})}  # scores already there stay as they were
        row.setdefault("persona_after_session_3", ep.personas_after_session_3.get(speaker, []))
        completed += 1
    return completed


def run_msc(
    episodes: Sequence[MscEpisode],
    method_names: Sequence[str],
    llm: LLM,
    out_dir: str | Path,
    *,
    embedder: Embedder | None = None,
    config: MethodConfig | None = None,
    speaker: str = DEFAULT_SPEAKER,
    max_replies: int | None = None,
    judge: LLM | None = None,
    progress: ProgressSink | None = None,
    command: str = "",
) -> RunSummary:
    """Generate ``speaker``'s next-session replies with every method and score them against the gold replies.

    Per reply: token F1 (LoCoMo normalisation) and BLEU-1 against the gold
    utterance; with ``judge``, its consistency with the speaker's persona after
    session 3 (:func:`judge_consistency`).  Per (method, episode), for methods
    that keep a standing memory (Rsum): recall of the speaker's gold persona
    facts in that memory.
    """
    if max_replies is not None and max_replies < 0:
        raise ValidationError("max_replies", max_replies, "must be 0 (the memory only) or more")
    speakers = sorted({name for ep in episodes for name in (ep.conversation.speaker_a, ep.conversation.speaker_b)})
    if episodes and speaker not in speakers:
        raise ValidationError("speaker", speaker, "the episodes' speakers are " + ", ".join(map(repr, speakers)))
    out = Path(out_dir)
    config = config or MethodConfig()
    if config.memory_dir is None:  # memories live with the results, so a re-run resumes their ingestion too
        config = replace(config, memory_dir=str(out / MEMORY_DIR))
    progress = progress or NullProgress()
    results = JsonlLog(out / RESULTS_FILE)
    rows = results.rows()
    rescored = rescore_memory_rows(rows, episodes, speaker)
    if rescored:
        results.rewrite(rows)
        log.info("%s: added persona scores to %d memory rows written before they existed", results.path, rescored)
    methods = [make_method(n, llm, config, embedder) for n in method_names]
    keys = {m.name: config_key(m, llm, config.reply_prompt) for m in methods}
    done = {(r.get("config_key"), r.get("qid")) for r in rows
            if r.get("dataset") == "msc" and row_speaker(r) == speaker}
    other = "Speaker 1" if speaker == "Speaker 2" else "Speaker 2"

    def targets(ep: MscEpisode) -> list[int]:
        idx = [i for i, t in enumerate(ep.next_session) if t.speaker == speaker and i > 0]
        return idx[:max_replies] if max_replies is not None else idx

    summary = RunSummary(out_dir=out)
    summary.planned = sum(len(targets(e)) + 1 for e in episodes) * len(methods)
    summary.skipped_done = sum(1 for e in episodes for m in methods
                               for qid in [f"{e.episode_id}:memory"] + [f"{e.episode_id}:r{i}" for i in targets(e)]
                               if (keys[m.name], qid) in done)
    JsonlLog(out / RUNS_FILE).append({
        "started": _now(), "dataset": "msc", "command": command, "llm": llm.name, **run_environment(llm),
        "methods": list(method_names),
        "episodes": len(episodes), "speaker": speaker, "max_replies": max_replies, "prompt": config.reply_prompt,
        "judge": judge.name if judge is not None else None,
        "planned": summary.planned, "already_done": summary.skipped_done,
    })
    t_start = time.perf_counter()
    progress.start(summary.planned, summary.skipped_done)
    try:
        for ep in episodes:
            conv = ep.conversation
            shared = SharedIngest(conv)
            for method in methods:
                key = keys[method.name]
                mem_qid = f"{ep.episode_id}:memory"
                pending = [i for i in targets(ep) if (key, f"{ep.episode_id}:r{i}") not in done]
                if not pending and (key, mem_qid) in done:
                    continue
                method.ingest(conv, shared)
                base = {"dataset": "msc", "method": method.name, "config_key": key, "config": method.describe(),
                        "llm": llm.name, "prompt": config.reply_prompt, "sample_id": ep.episode_id,
                        "speaker": speaker}
                if (key, mem_qid) not in done:
                    memory = method.memory_text()
                    results.append({**base, "time": _now(), "qid": mem_qid, "kind": "memory", "memory": memory,
                                    "persona_facts": ep.persona_facts_session_4.get(speaker, []),
                                    "persona_after_session_3": ep.personas_after_session_3.get(speaker, []),
                                    "scores": memory_scores(memory, ep, speaker)})
                    done.add((key, mem_qid))
                    summary.answered += 1
                    progress.advance(f"{method.name} {ep.episode_id} memory")
                answered: list[tuple[int, dict[str, Any]]] = []  # (turn index in the next session, row)
                for i in pending:
                    gold = ep.next_session[i]
                    try:
                        ans = method.reply(ep.next_session[:i], speaker, other)
                    except ChronomemError as exc:
                        summary.failed += 1
                        summary.failures.append(f"{method.name} {ep.episode_id}:r{i}: {exc}")
                        progress.advance(f"{method.name} {ep.episode_id} (failed)")
                        continue
                    answered.append((i, {
                        **base, "time": _now(), "qid": f"{ep.episode_id}:r{i}", "kind": "reply",
                        "gold": gold.text, "prediction": ans.text,
                        "scores": {"reply_f1": metrics.token_f1(ans.text, gold.text),
                                   "bleu1": metrics.bleu1(ans.text, gold.text)},
                        "context_tokens": ans.context_tokens, "truncated": ans.truncated,
                        "usage": ans.usage.as_dict(),
                        "retrieval_latency_s": round(ans.retrieval_latency_s, 4),
                        "answer_latency_s": round(ans.answer_latency_s, 4),
                    }))
                    progress.advance(f"{method.name} {ep.episode_id}")
                # judged after the episode's replies, so that the replies share their cached prompt prefix
                # (the conversation so far) and the judge calls theirs (the persona)
                for i, row in answered:
                    if judge is not None:
                        prev = ep.next_session[i - 1]
                        row["scores"].update(judge_consistency(judge, ep.personas_after_session_3.get(speaker, []),
                                                               speaker, prev.speaker, prev.text, row["prediction"]))
                    results.append(row)
                    done.add((key, row["qid"]))
                    summary.answered += 1
    finally:
        progress.close()
        summary.seconds = time.perf_counter() - t_start
    return summary


def category_counts(qs: Iterable[QA]) -> dict[int, int]:
    return dict(sorted(Counter(q.category for q in qs).items()))
