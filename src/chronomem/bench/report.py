"""Turn a run's ``results.jsonl`` into a markdown report and PNG plots.

LoCoMo: official F1 ×100 per method and category, overall over categories
1–4 (question-weighted, as the LoCoMo paper does) and category 5 apart;
Mem0-style F1, BLEU-1, optional judge, evidence recall, context tokens, LLM
calls and tokens, latency p50/p95, and a head-to-head of ``Memory.answer()``'s
read path against every other method on the questions both answered
(wins/ties/losses per category, sign test).  MSC: reply F1 / BLEU-1 and persona recall.

A folder that has been run through several revisions of chronomem holds rows of
older configurations of the same method (an older memory, evidence format or
full-text query: :data:`REVISION_FIELDS`).  The tables and plots show each
method's newest configuration; the older ones are listed apart, with what
superseded them, unless ``include_superseded`` asks for everything.

Several folders (one per conversation, say) can be reported together, and the
rows narrowed to a set of questions, such as the stratified sample a
``--sample N --seed S`` run drew: :func:`write_report`'s ``sources`` and ``qids``.
"""

from __future__ import annotations

import json
import logging
from collections import defaultdict
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .datasets import CATEGORY_NAMES
from .metrics import evidence_recall, percentile, sign_test
from .runner import DEFAULT_SPEAKER, INGEST_FILE, RESULTS_FILE, RUNS_FILE, read_jsonl, row_speaker

log = logging.getLogger(__name__)

REPORT_FILE = "report.md"
PLOT_BY_CATEGORY = "score_by_category.png"
PLOT_VS_TOKENS = "score_vs_context_tokens.png"
HEADLINE = (1, 2, 3, 4)
#: The method the head-to-head is about, in order of preference: ``answer`` (exactly what
#: Memory.answer() retrieves), then ``real+turns`` (answer()'s read path before the fused one).
REFERENCE_METHODS = ("answer", "real+turns")
REFERENCE_METHOD = "real+turns"  # answer()'s read path when the earlier runs were recorded (plot colour)
TIE = 1e-9
#: Configuration fields that record a revision of chronomem (the memory's ingestion, the evidence's
#: serialisation, the full-text query, the Rsum memory's prompt, post-processing and decoding), not a
#: parameter of the method: a configuration that differs from a newer one of the same method in these
#: fields only is superseded by it.
REVISION_FIELDS = frozenset({"ingest", "context_format", "full_text", "memory_prompt", "memory_postprocess",
                             "memory_decoding"})
#: Fields that may differ between the folders of one merged report without making two methods of one:
#: the model window is sized to each conversation (truncation is reported per row).
PER_RUN_FIELDS = frozenset({"context_window"})


#: Evidence recall is also reported at this fixed depth for every ranked method: #21 compares
#: answer()'s recall@10 with BM25's, and BM25 top-20's own recall@k is at 20
EVIDENCE_K = 10


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
    config_keys: set[str] = field(default_factory=set)  # the rows' config_key values (several when merged)

    def by_cat(self, cat: int) -> list[dict[str, Any]]:
        return [r for r in self.rows if r.get("category") == cat]

    def score(self, rows: Sequence[dict[str, Any]], metric: str = "locomo_f1") -> float | None:
        return _mean([r["scores"].get(metric) for r in rows])

    def recall_at(self, rows: Sequence[dict[str, Any]], k: int = EVIDENCE_K) -> float | None:
        """Mean evidence recall within the first ``k`` retrieved ids, for a ranked method (one whose
        rows have ``recall_at_k``), whatever ``k`` it ran with; None for the others."""
        return _mean([evidence_recall(r.get("evidence") or [], r.get("retrieved_ids") or [], k)
                      for r in rows if r["scores"].get("recall_at_k") is not None])

    def headline_rows(self) -> list[dict[str, Any]]:
        return [r for r in self.rows if r.get("category") in HEADLINE]

    def introduced(self) -> str:
        """When this configuration first answered (ISO time of its first row; '' if unknown)."""
        return min((str(r.get("time", "")) for r in self.rows), default="")


def _same(a: Any, b: Any) -> bool:
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def label_groups(groups: Sequence[MethodStats]) -> None:
    """Label each group by its method, plus the fields in which it differs from its siblings of the same method."""
    per_method: dict[str, list[MethodStats]] = defaultdict(list)
    for g in groups:
        per_method[g.method].append(g)
    for siblings in per_method.values():
        for g in siblings:
            if len(siblings) == 1:
                g.label = g.method
                continue
            differ = sorted({k for c in siblings for k in c.config if k != "method"
                             and any(not _same(o.config.get(k), g.config.get(k)) for o in siblings)})
            g.label = f"{g.method} [{','.join(f'{k}={g.config.get(k)}' for k in differ)}]"


def group_rows(rows: Sequence[dict[str, Any]], dataset: str, merge: bool = False) -> list[MethodStats]:
    """Rows of one dataset grouped by (method, configuration), in first-seen order.

    ``merge``: the rows come from several folders, and configurations that differ only in
    :data:`PER_RUN_FIELDS` (or in their keys' hashing of those) are one group.
    """
    groups: dict[str, MethodStats] = {}
    for r in rows:
        if r.get("dataset") != dataset:
            continue
        config = r.get("config", {})
        if merge:
            key = json.dumps([r["method"], r.get("llm"), r.get("prompt"),
                              {k: v for k, v in config.items() if k not in PER_RUN_FIELDS}], sort_keys=True)
        else:
            key = r["config_key"]
        if key not in groups:
            groups[key] = MethodStats(label=r["method"], method=r["method"], config=config)
        groups[key].rows.append(r)
        groups[key].config_keys.add(r["config_key"])
    out = list(groups.values())
    label_groups(out)
    return out


def shared_subset(id_sets: Sequence[set[str]]) -> set[str] | None:
    """What every set holds, when the sets differ (methods that answered different questions); else None."""
    if len(id_sets) > 1 and any(ids != id_sets[0] for ids in id_sets):
        return set.intersection(*id_sets)
    return None


def best_first(groups: Sequence[MethodStats]) -> list[MethodStats]:
    """``groups`` by official F1 on categories 1–4, best first; those with no such question last, in order."""
    def key(g: MethodStats) -> float:
        score = g.score(g.headline_rows()) if g.headline_rows() else None
        return -(score if score is not None else -1.0)

    return sorted(groups, key=key)


def split_superseded(groups: Sequence[MethodStats]) -> tuple[list[MethodStats], list[tuple[MethodStats, MethodStats]]]:
    """The current configurations, and each superseded one with the newest configuration that replaced it.

    A configuration is superseded when a configuration of the same method that first answered later
    differs from it in :data:`REVISION_FIELDS` only.  The current ones are relabelled among themselves.
    """
    def params(g: MethodStats) -> tuple[str, str]:
        return g.method, json.dumps({k: v for k, v in g.config.items() if k not in REVISION_FIELDS}, sort_keys=True)

    newest: dict[tuple[str, str], MethodStats] = {}
    for g in groups:
        if params(g) not in newest or g.introduced() > newest[params(g)].introduced():
            newest[params(g)] = g
    current = [g for g in groups if newest[params(g)] is g]
    superseded = [(g, newest[params(g)]) for g in groups if newest[params(g)] is not g]
    label_groups(current)  # the superseded keep the labels that tell every configuration apart
    return current, superseded


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


def reference_group(groups: Sequence[MethodStats], reference: str | None = None) -> MethodStats | None:
    """The newest configuration of ``reference`` (a method name, or a group's whole label), else of the
    first of :data:`REFERENCE_METHODS` present; else the first REAL-family group; else None.  Raises
    :class:`~chronomem.errors.ValidationError` when a named ``reference`` matches no group."""
    from ..errors import ValidationError

    answered = [g for g in groups if g.headline_rows()]

    def newest(names: Sequence[str]) -> MethodStats | None:
        ours = [g for g in answered if g.method in names or g.label in names]
        return max(ours, key=lambda g: max(str(r.get("time", "")) for r in g.rows)) if ours else None

    if reference is not None:
        ref = newest([reference])
        if ref is None:
            raise ValidationError("reference", reference, "no results of it to compare against; methods here: "
                                  + ", ".join(sorted({g.method for g in answered})))
        return ref
    for method in REFERENCE_METHODS:
        ref = newest([method])
        if ref is not None:
            return ref
    return next((g for g in answered if g.method.startswith("real")), None)


def head_to_head_table(groups: Sequence[MethodStats], reference: str | None = None) -> str:
    """Markdown: the reference method against each other method, wins/ties/losses per category; '' if none."""
    ref = reference_group(groups, reference)
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
    common = shared_subset([{r["qid"] for r in g.headline_rows()} for g in groups])
    if common is not None:
        lines += ["", f"On the {len(common)} category 1–4 questions every method answered:", ""]
        lines += ["| method | overall 1–4 |", "|---|---|"]
        for g in groups:
            lines.append(f"| {g.label} | {_fmt(g.score([r for r in g.headline_rows() if r['qid'] in common]))} |")

    has_judge = any("judge" in r["scores"] for g in groups for r in g.rows)
    lines += ["", "### LoCoMo — other metrics (categories 1–4) and cost", ""]
    cols = ["method", "Mem0 F1", "BLEU-1"] + (["judge"] if has_judge else []) + [
        "recall@k", f"recall@{EVIDENCE_K}", "recall (context)", "ctx tokens", "calls/q", "prompt tok/q",
        "retrieval p50/p95 ms", "answer p50/p95 s", "truncated", "ingest calls / tokens / s"]
    lines += ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for g in groups:
        rows = g.headline_rows() or g.rows
        n = max(len(rows), 1)
        r50, r95 = _latency(rows, "retrieval_latency_s")
        a50, a95 = _latency(rows, "answer_latency_s")
        ing = [i for i in ingest if i.get("config_key") in g.config_keys]
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
            _fmt(g.recall_at(rows), 1, 3),
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


def superseded_table(superseded: Sequence[tuple[MethodStats, MethodStats]]) -> str:
    """Markdown: each superseded configuration, its score, and what replaced it; '' if none."""
    if not superseded:
        return ""
    lines = ["### Superseded configurations", "",
             "Rows of older revisions of a method (another memory, evidence format or full-text query) kept "
             "in this folder; the tables above use the newest. Official F1 ×100, categories 1–4.", "",
             "| configuration | n | **overall 1–4** | first answered | superseded by | its overall |",
             "|---|---|---|---|---|---|"]
    for old, new in superseded:
        lines.append(f"| {old.label} | {len(old.headline_rows())} | **{_fmt(old.score(old.headline_rows()))}** | "
                     f"{old.introduced()[:16]} | {new.label} | {_fmt(new.score(new.headline_rows()))} |")
    return "\n".join(lines)


def _recall(g: MethodStats, memory_rows: Sequence[dict[str, Any]], suffix: str) -> str:
    """'recall (coverage)' of a group's memory rows against one gold list, to 3 decimals; '–' without."""
    rec = g.score(memory_rows, "persona_recall" + suffix)
    if rec is None:
        return "–"
    return f"{rec:.3f} ({_fmt(g.score(memory_rows, 'persona_coverage' + suffix), 1, 3)})"


def msc_table(groups: Sequence[MethodStats], speaker: str = DEFAULT_SPEAKER) -> str:
    judged = any(r["scores"].get("judge_uses") is not None for g in groups for r in g.rows)
    cols = ["method", "episodes", "replies", "reply F1 ×100", "BLEU-1 ×100"]
    cols += ["judge: uses persona %", "judge: contradicts %"] if judged else []
    cols += ["ctx tokens", "persona recall (coverage): next-session facts",
             "persona recall (coverage): after session 3", "answer p50/p95 s"]
    lines = [f"### MSC — {speaker}'s next-session replies and persona memory", "",
             "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    replies_of = [[r for r in g.rows if r.get("kind") == "reply"] for g in groups]
    for g, replies in zip(groups, replies_of):
        mem = [r for r in g.rows if r.get("kind") == "memory"]
        a50, a95 = _latency(replies, "answer_latency_s")
        n = max(len(replies), 1)
        cells = [g.label, str(len({r['sample_id'] for r in g.rows})), str(len(replies)),
                 _fmt(g.score(replies, "reply_f1")), _fmt(g.score(replies, "bleu1"))]
        if judged:
            cells += [_fmt(g.score(replies, "judge_uses")), _fmt(g.score(replies, "judge_contradicts"))]
        cells += [f"{sum(r.get('context_tokens', 0) for r in replies) / n:.0f}",
                  _recall(g, mem, ""), _recall(g, mem, "_after_s3"),
                  f"{_fmt(a50, 1, 2)} / {_fmt(a95, 1, 2)}"]
        lines.append("| " + " | ".join(cells) + " |")
    # the same episodes for everyone, when a run cut short left the methods on different sets
    common = shared_subset([{r["sample_id"] for r in replies} for replies in replies_of])
    if common is not None:
        lines += ["", f"On the {len(common)} episode{'' if len(common) == 1 else 's'} every method replied in:", "",
                  "| method | replies | reply F1 ×100 | BLEU-1 ×100 |", "|---|---|---|---|"]
        for g, all_replies in zip(groups, replies_of):
            replies = [r for r in all_replies if r["sample_id"] in common]
            lines.append(f"| {g.label} | {len(replies)} | {_fmt(g.score(replies, 'reply_f1'))} | "
                         f"{_fmt(g.score(replies, 'bleu1'))} |")
    lines += ["", "Persona recall is given only for methods that keep a standing memory (Rsum): the share of "
              f"{speaker}'s gold persona facts whose content words the memory covers at least half of (coverage: the "
              "mean covered share), against the facts gathered in the next session and against the personas "
              "established by the three sessions the memory was built from."]
    if judged:
        lines += ["The judge labels each reply against the speaker's persona after session 3: it relies on an "
                  "earlier statement (uses), says something incompatible with one (contradicts), or neither; "
                  "replies the judge gave no label are left out."]
    return "\n".join(lines)


FAMILIES = {  # kind of method -> colour in the plots
    "Memory.answer() (real+turns)": "#d62728",
    "REAL variants and ablations": "#ff9896",
    "flat facts (Mem0-style)": "#9467bd",
    "Rsum": "#2ca02c",
    "whole / recent conversation": "#7f7f7f",
    "turn retrieval (BM25, dense)": "#1f77b4",
}


def family(method: str) -> str:
    """The kind of method, one colour each in the plots so that they read at a glance."""
    if method == REFERENCE_METHOD:
        return "Memory.answer() (real+turns)"
    if method.startswith("real") or method == "vanilla_graph":
        return "REAL variants and ablations"
    if method == "flat_facts":
        return "flat facts (Mem0-style)"
    if method in ("full_context", "sliding_window"):
        return "whole / recent conversation"
    if method == "rsum":
        return "Rsum"
    return "turn retrieval (BM25, dense)"  # bm25, dense, bm25+rsum


def _family_colour(method: str) -> str:
    return FAMILIES[family(method)]


def plot_locomo(groups: Sequence[MethodStats], out_dir: Path) -> list[Path]:
    """Two PNGs: official F1 per category (one panel each, methods best first) and score vs context tokens."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.lines
    import matplotlib.pyplot as plt

    paths: list[Path] = []
    shown = best_first([g for g in groups if g.headline_rows()])
    if not shown:
        return paths
    cats = sorted({r["category"] for g in shown for r in g.headline_rows()})
    panels = [("overall 1–4", lambda g: g.headline_rows())] + [
        (f"{c} {CATEGORY_NAMES[c]}", lambda g, c=c: g.by_cat(c)) for c in cats]
    height = max(2.5, 0.32 * len(shown) + 1.2)
    fig, axes = plt.subplots(1, len(panels), figsize=(2.3 * len(panels) + 2.2, height), sharey=True)
    axes = list(axes) if len(panels) > 1 else [axes]
    ys = list(range(len(shown)))
    colours = [_family_colour(g.method) for g in shown]
    for ax, (title, rows_of) in zip(axes, panels):
        vals = [(g.score(rows_of(g)) or 0.0) * 100 for g in shown]
        counts = [len(rows_of(g)) for g in shown]
        ax.barh(ys, vals, color=colours)
        for y, v, n in zip(ys, vals, counts):
            ax.text(v + 0.8, y, f"{v:.1f}" if n else "–", va="center", fontsize=7)
        ax.set_title(title, fontsize=9)
        ax.set_xlim(0, max(max(vals, default=0.0) * 1.25, 10))
        ax.tick_params(axis="x", labelsize=7)
        ax.grid(axis="x", alpha=0.3)
    axes[0].set_yticks(ys, [g.label for g in shown], fontsize=7)
    axes[0].invert_yaxis()
    fig.suptitle("LoCoMo official F1 ×100 by category (best overall first)", fontsize=10)
    fig.tight_layout()
    p = out_dir / PLOT_BY_CATEGORY
    fig.savefig(p, dpi=120)
    plt.close(fig)
    paths.append(p)

    fig, (ax, key) = plt.subplots(1, 2, figsize=(10, max(4.0, 0.22 * len(shown) + 1.0)),
                                  gridspec_kw={"width_ratios": [3, 2]})
    entries = []
    for n, g in enumerate(shown, start=1):
        rows = g.headline_rows()
        tokens = max(sum(r.get("context_tokens", 0) for r in rows) / len(rows), 1)
        score = (g.score(rows) or 0.0) * 100
        ax.scatter([tokens], [score], s=45, color=_family_colour(g.method), edgecolors="black", linewidths=0.4)
        ax.annotate(str(n), (tokens, score), textcoords="offset points", xytext=(4, 3), fontsize=7)
        entries.append(f"{n:>2}  {g.label}  ({score:.1f}, {tokens:,.0f} tok)")
    present = list(dict.fromkeys(family(g.method) for g in shown))
    ax.legend(handles=[matplotlib.lines.Line2D([], [], marker="o", linestyle="", color=FAMILIES[f],
                                                markeredgecolor="black", markeredgewidth=0.4, label=f)
                       for f in present], fontsize=7, loc="lower right")
    ax.set_xscale("log")
    ax.set_xlabel("mean context tokens per question (log)")
    ax.set_ylabel("official F1 ×100, categories 1–4")
    ax.set_title("Score vs context tokens", fontsize=10)
    ax.grid(alpha=0.3)
    key.axis("off")
    key.text(0.0, 1.0, "\n".join(entries), va="top", ha="left", fontsize=7, family="monospace",
             transform=key.transAxes)
    fig.tight_layout()
    p = out_dir / PLOT_VS_TOKENS
    fig.savefig(p, dpi=120)
    plt.close(fig)
    paths.append(p)
    return paths


def write_report(out_dir: str | Path, plots: bool = True, *, sources: Sequence[str | Path] = (),
                 qids: Collection[str] | None = None, scope: str = "", include_superseded: bool = False,
                 reference: str | None = None) -> Path:
    """Write ``report.md``, ``summary.json`` (and the plots) into ``out_dir``.

    The results are ``out_dir``'s own, or with ``sources`` those of each of these folders, reported
    together (configurations that differ only in :data:`PER_RUN_FIELDS` merged).  ``qids`` keeps only
    those LoCoMo questions (described by ``scope`` in the report, e.g. "the stratified sample of 40
    per conversation").  Each method's superseded configurations are listed apart unless
    ``include_superseded``.  ``reference``: the method (or label) the head-to-head table compares
    with every other (default: :func:`reference_group`'s choice).
    """
    out = Path(out_dir)
    folders = [Path(f) for f in sources] or [out]
    missing = [str(f) for f in folders if not (f / RESULTS_FILE).exists()]
    if missing:
        raise FileNotFoundError(f"no {RESULTS_FILE} in {', '.join(missing)}")
    out.mkdir(parents=True, exist_ok=True)
    rows = [r for f in folders for r in read_jsonl(f / RESULTS_FILE)]
    ingest = [i for f in folders for i in read_jsonl(f / INGEST_FILE)]
    runs = sorted((r for f in folders for r in read_jsonl(f / RUNS_FILE)), key=lambda r: str(r.get("started", "")))
    if qids is not None:
        wanted = set(qids)
        rows = [r for r in rows if r.get("dataset") != "locomo" or r.get("qid") in wanted]
    parts = ["# chronomem benchmark report", ""]
    if sources:
        parts += [f"Results of {', '.join(f'`{f}`' for f in folders)}, reported together.", ""]
    if scope:
        parts += [f"Questions: {scope}.", ""]
    if runs:
        last = runs[-1]
        parts += [f"Model: `{last.get('llm')}`; prompt `{last.get('prompt')}`; last run started {last.get('started')}."]
        setup = _setup_line(last)
        if setup:
            parts += ["", setup]
        parts += ["", "Commands run into " + ("these folders:" if sources else "this folder:"), ""]
        commands = list(dict.fromkeys(r["command"] for r in runs if r.get("command")))
        parts += [f"- `{c}` ({sum(1 for r in runs if r.get('command') == c)} run(s))" for c in commands] \
            or ["- (library calls)"]
        parts.append("")
    locomo = group_rows(rows, "locomo", merge=bool(sources))
    superseded: list[tuple[MethodStats, MethodStats]] = []
    if not include_superseded:
        locomo, superseded = split_superseded(locomo)
    locomo = best_first(locomo)
    if locomo:
        parts += [locomo_tables(locomo, ingest), ""]
        versus = head_to_head_table(locomo, reference)
        if versus:
            parts += [versus, ""]
        if plots:
            for p in plot_locomo(locomo, out):
                parts.append(f"![{p.stem}]({p.name})")
            parts.append("")
        old = superseded_table(superseded)
        if old:
            parts += [old, ""]
    msc_rows = [r for r in rows if r.get("dataset") == "msc"]
    for speaker in dict.fromkeys(row_speaker(r) for r in msc_rows):  # one table per speaker scored
        groups = group_rows([r for r in msc_rows if row_speaker(r) == speaker], "msc", merge=bool(sources))
        parts += [msc_table(groups, speaker), ""]
    if not locomo and not msc_rows:
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
            f"evidence_recall_at_{EVIDENCE_K}": None if (r := g.recall_at(g.headline_rows())) is None else round(r, 4),
        }
    return out
