"""Turn a run's ``results.jsonl`` into a markdown report and PNG plots.

LoCoMo: official F1 ×100 per method and category, overall over categories
1–4 (question-weighted, as the LoCoMo paper does) and category 5 apart;
Mem0-style F1, BLEU-1, optional judge, evidence recall, context tokens, LLM
calls and tokens, latency p50/p95, and a head-to-head of ``Memory.answer()``'s
read path against every other method on the questions both answered
(wins/ties/losses per category, sign test).  MSC: reply F1 / BLEU-1 and persona recall.
"""

from __future__ import annotations

import json
import logging
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .datasets import CATEGORY_NAMES
from .metrics import percentile, sign_test
from .runner import INGEST_FILE, RESULTS_FILE, RUNS_FILE, read_jsonl

log = logging.getLogger(__name__)

REPORT_FILE = "report.md"
PLOT_BY_CATEGORY = "score_by_category.png"
PLOT_VS_TOKENS = "score_vs_context_tokens.png"
HEADLINE = (1, 2, 3, 4)
REFERENCE_METHOD = "real+turns"  # Memory.answer()'s default read path: the method the head-to-head is about
TIE = 1e-9


def _mean(xs: Sequence[float | None]) -> float | None:
    vals = [x for x in xs if x is not None]
    return sum(vals) / len(vals) if vals else None


def _fmt(x: float | None, scale: float = 100.0, digits: int = 1) -> str:
    return "–" if x is None else f"{x * scale:.{digits}f}"


@dataclass
class MethodStats:
    label: str
    method: str
    config: dict[str, Any]
    rows: list[dict[str, Any]] = field(default_factory=list)

    def by_cat(self, cat: int) -> list[dict[str, Any]]:
        return [r for r in self.rows if r.get("category") == cat]

    def score(self, rows: Sequence[dict[str, Any]], metric: str = "locomo_f1") -> float | None:
        return _mean([r["scores"].get(metric) for r in rows])

    def headline_rows(self) -> list[dict[str, Any]]:
        return [r for r in self.rows if r.get("category") in HEADLINE]


def group_rows(rows: Sequence[dict[str, Any]], dataset: str) -> list[MethodStats]:
    """Rows of one dataset grouped by (method, configuration), in first-seen order."""
    groups: dict[str, MethodStats] = {}
    per_method: dict[str, set[str]] = defaultdict(set)
    for r in rows:
        if r.get("dataset") != dataset:
            continue
        key = r["config_key"]
        per_method[r["method"]].add(key)
        if key not in groups:
            groups[key] = MethodStats(label=r["method"], method=r["method"], config=r.get("config", {}))
        groups[key].rows.append(r)
    for g in groups.values():
        if len(per_method[g.method]) > 1:  # same method under several configurations: say how they differ
            siblings = [groups[k].config for k in per_method[g.method]]
            differ = sorted({k for c in siblings for k in c if k != "method"
                             and any(json.dumps(c.get(k), sort_keys=True) != json.dumps(g.config.get(k), sort_keys=True)
                                     for c in siblings)})
            g.label = f"{g.method} [{','.join(f'{k}={g.config.get(k)}' for k in differ)}]"
    return list(groups.values())


@dataclass(frozen=True)
class Pairing:
    """One method against another on the questions both answered, in one category (None: all of 1–4)."""

    category: int | None
    questions: int
    wins: int
    ties: int
    losses: int
    delta: float | None  # mean official F1 of the first minus the second, on these questions (0–1 scale)
    p: float | None  # two-sided sign test of wins against losses


def head_to_head(ref: MethodStats, other: MethodStats) -> list[Pairing]:
    """Per-question comparison of ``ref`` with ``other``: one pairing per category of 1–4 present, then overall."""
    theirs = {r["qid"]: r["scores"].get("locomo_f1") for r in other.headline_rows()}
    pairs: dict[int, list[tuple[float, float]]] = defaultdict(list)
    for r in ref.headline_rows():
        a, b = r["scores"].get("locomo_f1"), theirs.get(r["qid"])
        if a is not None and b is not None:
            pairs[r["category"]].append((a, b))

    def pairing(cat: int | None, ps: Sequence[tuple[float, float]]) -> Pairing:
        wins = sum(1 for a, b in ps if a - b > TIE)
        losses = sum(1 for a, b in ps if b - a > TIE)
        return Pairing(cat, len(ps), wins, len(ps) - wins - losses, losses,
                       sum(a - b for a, b in ps) / len(ps) if ps else None, sign_test(wins, losses))

    out = [pairing(c, pairs[c]) for c in sorted(pairs)]
    out.append(pairing(None, [p for c in sorted(pairs) for p in pairs[c]]))
    return out


def _fmt_p(p: float | None) -> str:
    if p is None:
        return "–"
    return "<0.001" if p < 0.001 else f"{p:.3f}" if p < 0.01 else f"{p:.2f}"


def reference_group(groups: Sequence[MethodStats]) -> MethodStats | None:
    """The newest configuration of ``real+turns``; else the first REAL-family group; else None."""
    ours = [g for g in groups if g.method == REFERENCE_METHOD and g.headline_rows()]
    if ours:
        return max(ours, key=lambda g: max(str(r.get("time", "")) for r in g.rows))
    return next((g for g in groups if g.method.startswith("real") and g.headline_rows()), None)


def head_to_head_table(groups: Sequence[MethodStats]) -> str:
    """Markdown: the reference method against each other method, wins/ties/losses per category; '' if none."""
    ref = reference_group(groups)
    if ref is None or len(groups) < 2:
        return ""
    cats = sorted({r["category"] for g in groups for r in g.headline_rows()})
    lines = [f"### Head to head: `{ref.label}` against each method, question by question", "",
             "W/T/L: questions where its official F1 is higher / equal / lower, on the questions both "
             "answered. Δ: its mean F1 minus the other's there (×100). p: two-sided sign test of wins "
             "against losses (ties left out); below 0.05, a lead unlikely to be chance.", ""]
    cols = ["against", "n"] + [f"{c} {CATEGORY_NAMES[c]}" for c in cats] + ["**all 1–4 W/T/L**", "Δ", "p"]
    lines += ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for g in groups:
        if g is ref:
            continue
        pairings = head_to_head(ref, g)
        overall = pairings[-1]
        if not overall.questions:
            continue
        by_cat = {p.category: p for p in pairings[:-1]}
        cells = [g.label, str(overall.questions)]
        cells += [f"{p.wins}/{p.ties}/{p.losses}" if (p := by_cat.get(c)) else "–" for c in cats]
        cells += [f"**{overall.wins}/{overall.ties}/{overall.losses}**",
                  f"{overall.delta * 100:+.1f}" if overall.delta is not None else "–",
                  _fmt_p(overall.p)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _setup_line(run: dict[str, Any]) -> str:
    """'Machine: 2 CPUs (x86_64, Linux-…), Python 3.11.2; model context window 16384, 2 threads.' or ''."""
    m = run.get("machine") or {}
    bits = []
    if m:
        bits.append(f"Machine: {m.get('cpus')} CPUs ({m.get('processor')}, {m.get('platform')}), Python {m.get('python')}")
    model = [f"context window {run['context_window']}" if run.get("context_window") else "",
             f"{run['threads']} threads" if run.get("threads") else ""]
    model = [b for b in model if b]
    if model:
        bits.append("model " + ", ".join(model))
    return "; ".join(bits) + "." if bits else ""


def _latency(rows: Sequence[dict[str, Any]], key: str) -> tuple[float | None, float | None]:
    vals = [float(r[key]) for r in rows if r.get(key) is not None]
    return percentile(vals, 50), percentile(vals, 95)


def locomo_tables(groups: Sequence[MethodStats], ingest: Sequence[dict[str, Any]]) -> str:
    cats_present = sorted({r["category"] for g in groups for r in g.rows})
    head_cats = [c for c in cats_present if c in HEADLINE]
    lines = ["### LoCoMo — official F1 ×100", ""]
    cols = ["method", "n"] + [f"{c} {CATEGORY_NAMES[c]}" for c in head_cats] + ["**overall 1–4**"]
    if 5 in cats_present:
        cols.append("5 adversarial")
    lines += ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for g in groups:
        cells = [g.label, str(len(g.headline_rows()))]
        cells += [f"{_fmt(g.score(g.by_cat(c)))} ({len(g.by_cat(c))})" for c in head_cats]
        cells.append(f"**{_fmt(g.score(g.headline_rows()))}**")
        if 5 in cats_present:
            cells.append(f"{_fmt(g.score(g.by_cat(5)))} ({len(g.by_cat(5))})")
        lines.append("| " + " | ".join(cells) + " |")

    # the same questions for everyone, when the methods did not all answer the same set
    qsets = [{r["qid"] for r in g.headline_rows()} for g in groups]
    if len(groups) > 1 and any(s != qsets[0] for s in qsets):
        common = set.intersection(*qsets)
        lines += ["", f"On the {len(common)} category 1–4 questions every method answered:", ""]
        lines += ["| method | overall 1–4 |", "|---|---|"]
        for g in groups:
            lines.append(f"| {g.label} | {_fmt(g.score([r for r in g.headline_rows() if r['qid'] in common]))} |")

    has_judge = any("judge" in r["scores"] for g in groups for r in g.rows)
    lines += ["", "### LoCoMo — other metrics (categories 1–4) and cost", ""]
    cols = ["method", "Mem0 F1", "BLEU-1"] + (["judge"] if has_judge else []) + [
        "recall@k", "recall (context)", "ctx tokens", "calls/q", "prompt tok/q",
        "retrieval p50/p95 ms", "answer p50/p95 s", "truncated", "ingest calls / tokens / s"]
    lines += ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for g in groups:
        rows = g.headline_rows() or g.rows
        n = max(len(rows), 1)
        r50, r95 = _latency(rows, "retrieval_latency_s")
        a50, a95 = _latency(rows, "answer_latency_s")
        ing = [i for i in ingest if i.get("config_key") == g.rows[0]["config_key"]]
        latest: dict[str, dict[str, Any]] = {}
        for i in ing:
            latest[i["sample_id"]] = i
        ing_calls = sum(i["usage"]["calls"] for i in latest.values())
        ing_tok = sum(i["usage"]["prompt_tokens"] + i["usage"]["completion_tokens"] for i in latest.values())
        ing_s = sum(i["seconds"] for i in latest.values())
        cells = [g.label, _fmt(g.score(rows, "mem0_f1")), _fmt(g.score(rows, "bleu1"))]
        if has_judge:
            cells.append(_fmt(g.score(rows, "judge")))
        cells += [
            _fmt(g.score(rows, "recall_at_k"), 1, 3),
            _fmt(g.score(rows, "recall_context"), 1, 3),
            f"{sum(r.get('context_tokens', 0) for r in rows) / n:.0f}",
            f"{sum(r['usage']['calls'] for r in rows) / n:.2f}",
            f"{sum(r['usage']['prompt_tokens'] for r in rows) / n:.0f}",
            f"{_fmt(r50, 1000, 1)} / {_fmt(r95, 1000, 1)}",
            f"{_fmt(a50, 1, 2)} / {_fmt(a95, 1, 2)}",
            f"{sum(1 for r in rows if r.get('truncated'))}/{len(rows)}",
            f"{ing_calls} / {ing_tok} / {ing_s:.1f}",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "Cached LLM calls report the latency of the cache lookup; `calls/q` counts them too."]
    return "\n".join(lines)


def msc_table(groups: Sequence[MethodStats]) -> str:
    lines = ["### MSC — next-session replies and persona memory", "",
             "| method | episodes | replies | reply F1 ×100 | BLEU-1 ×100 | ctx tokens | persona coverage | "
             "persona recall | answer p50/p95 s |", "|---|---|---|---|---|---|---|---|---|"]
    for g in groups:
        replies = [r for r in g.rows if r.get("kind") == "reply"]
        mem = [r for r in g.rows if r.get("kind") == "memory"]
        a50, a95 = _latency(replies, "answer_latency_s")
        n = max(len(replies), 1)
        lines.append(" | ".join([
            f"| {g.label}", str(len({r['sample_id'] for r in g.rows})), str(len(replies)),
            _fmt(g.score(replies, "reply_f1")), _fmt(g.score(replies, "bleu1")),
            f"{sum(r.get('context_tokens', 0) for r in replies) / n:.0f}",
            _fmt(g.score(mem, "persona_coverage")), _fmt(g.score(mem, "persona_recall")),
            f"{_fmt(a50, 1, 2)} / {_fmt(a95, 1, 2)} |",
        ]))
    lines += ["", "Persona coverage/recall are given only for methods that keep a standing memory (Rsum)."]
    return "\n".join(lines)


def plot_locomo(groups: Sequence[MethodStats], out_dir: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths: list[Path] = []
    cats = sorted({r["category"] for g in groups for r in g.rows})
    labels = [f"{c} {CATEGORY_NAMES[c]}" for c in cats] + ["overall 1–4"]
    width = 0.8 / max(len(groups), 1)
    fig, ax = plt.subplots(figsize=(max(6, 1.6 * len(labels)), 4))
    for j, g in enumerate(groups):
        vals = [(g.score(g.by_cat(c)) or 0.0) * 100 for c in cats] + [(g.score(g.headline_rows()) or 0.0) * 100]
        ax.bar([i + j * width for i in range(len(labels))], vals, width, label=g.label)
    ax.set_xticks([i + width * (len(groups) - 1) / 2 for i in range(len(labels))], labels)
    ax.set_ylabel("LoCoMo official F1 ×100")
    ax.set_title("Score by category")
    ax.legend(fontsize=8)
    fig.tight_layout()
    p = out_dir / PLOT_BY_CATEGORY
    fig.savefig(p, dpi=120)
    plt.close(fig)
    paths.append(p)

    fig, ax = plt.subplots(figsize=(6, 4))
    for g in groups:
        rows = g.headline_rows()
        if not rows:
            continue
        tokens = sum(r.get("context_tokens", 0) for r in rows) / len(rows)
        score = (g.score(rows) or 0.0) * 100
        ax.scatter([max(tokens, 1)], [score], s=60)
        ax.annotate(g.label, (max(tokens, 1), score), textcoords="offset points", xytext=(5, 5), fontsize=8)
    ax.set_xscale("log")
    ax.set_xlabel("mean context tokens per question (log)")
    ax.set_ylabel("official F1 ×100, categories 1–4")
    ax.set_title("Score vs context tokens")
    fig.tight_layout()
    p = out_dir / PLOT_VS_TOKENS
    fig.savefig(p, dpi=120)
    plt.close(fig)
    paths.append(p)
    return paths


def write_report(out_dir: str | Path, plots: bool = True) -> Path:
    """Write ``report.md`` (and the plots) for everything in ``out_dir/results.jsonl``."""
    out = Path(out_dir)
    rows = read_jsonl(out / RESULTS_FILE)
    ingest = read_jsonl(out / INGEST_FILE)
    runs = read_jsonl(out / RUNS_FILE)
    parts = ["# chronomem benchmark report", ""]
    if runs:
        last = runs[-1]
        parts += [f"Model: `{last.get('llm')}`; prompt `{last.get('prompt')}`; last run started {last.get('started')}."]
        setup = _setup_line(last)
        if setup:
            parts += ["", setup]
        parts += ["", "Commands run into this folder:", ""]
        commands = list(dict.fromkeys(r["command"] for r in runs if r.get("command")))
        parts += [f"- `{c}` ({sum(1 for r in runs if r.get('command') == c)} run(s))" for c in commands] \
            or ["- (library calls)"]
        parts.append("")
    locomo = group_rows(rows, "locomo")
    if locomo:
        parts += [locomo_tables(locomo, ingest), ""]
        versus = head_to_head_table(locomo)
        if versus:
            parts += [versus, ""]
        if plots:
            for p in plot_locomo(locomo, out):
                parts.append(f"![{p.stem}]({p.name})")
            parts.append("")
    msc = group_rows(rows, "msc")
    if msc:
        parts += [msc_table(msc), ""]
    if not locomo and not msc:
        parts.append("No results yet.")
    path = out / REPORT_FILE
    path.write_text("\n".join(parts) + "\n", encoding="utf-8")
    (out / "summary.json").write_text(json.dumps(summary_dict(locomo), indent=2) + "\n", encoding="utf-8")
    return path


def summary_dict(groups: Sequence[MethodStats]) -> dict[str, Any]:
    """Machine-readable headline numbers (official F1 ×100) per method label."""
    out: dict[str, Any] = {}
    for g in groups:
        out[g.label] = {
            "n": len(g.headline_rows()),
            "overall_1_4": None if (s := g.score(g.headline_rows())) is None else round(s * 100, 2),
            **{f"cat{c}": None if (s := g.score(g.by_cat(c))) is None else round(s * 100, 2) for c in range(1, 6)},
        }
    return out
