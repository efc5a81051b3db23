"""``chronomem bench``: run the methods side by side on LoCoMo or MSC and write a report.

Examples::

    chronomem bench locomo --conversations conv-30 --categories 1,2,4 --methods bm25,full_context,dense
    chronomem bench locomo --sample 40 --seed 0 --methods full_context,sliding_window,bm25,dense,rsum
    chronomem bench msc --episodes 50 --methods rsum,bm25
    chronomem bench report --out bench-out/locomo
    chronomem bench report --out bench-out/samples --from bench-out/conv30 --from bench-out/conv26 --sample 40
    chronomem bench methods

Runs append to ``<out>/results.jsonl`` and resume: re-running the same command
skips every question already answered.
"""

from __future__ import annotations

import logging
import shlex
import sys
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape
from rich.table import Table

from ..bench.datasets import DEFAULT_LOCOMO_PATH, DEFAULT_MSC_PATH, check_categories, load_locomo, load_msc
from ..bench.methods import METHODS, MethodConfig, available_methods, parse_search_changes, unavailable_reason
from ..bench.report import write_report
from ..bench.runner import (DEFAULT_SPEAKER, RESULTS_FILE, RichProgress, RunSummary, read_jsonl, run_locomo, run_msc,
                            select_questions)
from ..config import Config
from ..summarize.rsum import MEMORY_DECODING, MEMORY_DECODINGS
from ..errors import ConfigError, ValidationError
from .render import data_console, plain

app = typer.Typer(help="Benchmarks: every method side by side under one model.", no_args_is_help=True)
console = data_console()


def _split(value: str | None) -> list[str]:
    return [v.strip() for v in (value or "").split(",") if v.strip()]


def _categories(value: str) -> list[int]:
    """``--categories`` as LoCoMo category numbers, or an error that names the bad part."""
    try:
        cats = [int(c) for c in _split(value)]
    except ValueError:
        raise typer.BadParameter(f"{value!r}: expected comma-separated numbers, e.g. 1,2,4", param_hint="--categories")
    try:
        check_categories(cats)  # before any model loads
    except ValidationError as exc:
        raise typer.BadParameter(f"{value!r}: {exc.reason}", param_hint="--categories")
    return cats


def _default_data(path: Path | None, default: Path) -> Path:
    if path is not None:
        return path
    if default.exists():
        return default
    raise typer.BadParameter(f"no --data given and {default} does not exist", param_hint="--data")


def _check_methods(names: list[str]) -> None:
    if not names:
        raise typer.BadParameter("give at least one method", param_hint="--methods")
    problems = [r for n in names if (r := unavailable_reason(n))]
    if problems:
        raise ConfigError("; ".join(problems))


def _models(llm_spec: str | None, embedder_spec: str | None, need_embedder: bool, ctx: int | None,
            cache: str) -> tuple[Any, Any]:
    from ..providers import make_embedder, make_llm

    overrides: dict[str, Any] = {}
    if ctx:
        overrides["n_ctx"] = ctx
        overrides["context_window"] = ctx
    cache_arg: bool | str = False if cache == "off" else (True if cache == "default" else cache)
    llm = make_llm(llm_spec, cache=cache_arg, **overrides)
    embedder = make_embedder(embedder_spec, cache=cache_arg) if need_embedder else None
    return llm, embedder


def _judge(judge_spec: str | None, llm_spec: str | None, model: Any, cache: str) -> Any:
    """The judge LLM: None without ``--judge``; the answer model itself when both specs resolve to the
    same model (``--judge local`` with no ``--llm`` included), so one local model is in memory, not two."""
    from ..providers.settings import resolve_llm_settings

    if not judge_spec:
        return None
    if resolve_llm_settings(judge_spec).spec == resolve_llm_settings(llm_spec).spec:
        return model
    return _models(judge_spec, None, False, None, cache)[0]


def _finish(summary: RunSummary, out: Path) -> None:
    console.print(f"answered {summary.answered}, already done {summary.skipped_done}, "
                  f"failed {summary.failed} of {summary.planned} in {summary.seconds:.0f}s")
    for f in summary.failures[:10]:
        console.print(f"[yellow]failed:[/] {escape(str(f))}")  # failures quote questions and model output
    if not (out / RESULTS_FILE).exists():  # nothing selected, or every answer failed on a first run
        console.print(f"[red]no results in {escape(str(out))}, so no report[/]")
        raise typer.Exit(1)
    report = write_report(out)
    console.print(f"report: {report}", markup=False)


@app.command("locomo")
def locomo(
    methods: str = typer.Option(..., "--methods", help="comma-separated: " + ", ".join(METHODS)),
    data: Path | None = typer.Option(None, "--data", help=f"LoCoMo JSON (default {DEFAULT_LOCOMO_PATH})"),
    conversations: str | None = typer.Option(None, "--conversations", help="e.g. conv-26,conv-30 (default: all)"),
    categories: str = typer.Option("1,2,3,4", "--categories", help="QA categories (5 = adversarial)"),
    sample: int | None = typer.Option(None, "--sample", min=1, help="stratified sample of N questions per conversation"),
    seed: int = typer.Option(0, "--seed"),
    llm: str | None = typer.Option(None, "--llm", help="LLM spec (local, local:0.5b, openai:MODEL@URL …)"),
    embedder: str | None = typer.Option(None, "--embedder", help="embedder spec for dense (default local MiniLM)"),
    ctx: int | None = typer.Option(None, "--ctx", min=512, help="context window of the model (full_context needs ~16k–32k)"),
    top_k: int = typer.Option(10, "--top-k", min=1, help="turns retrieved by bm25/dense"),
    window_tokens: int = typer.Option(2000, "--window-tokens", min=1, help="sliding_window budget"),
    judge: str | None = typer.Option(None, "--judge", help="LLM spec of an optional judge"),
    cache: str = typer.Option("default", "--cache", help="model cache file (LLM responses and embeddings): default, off, or a path"),
    out: Path = typer.Option(Path("bench-out/locomo"), "--out", help="output folder (results, report, plots)"),
    search: list[str] = typer.Option([], "--search", metavar="FIELD=VALUE",
                                     help="SearchConfig change for the REAL methods, e.g. fused_weights=0,1,0 "
                                          "(repeatable; part of their result keys)"),
    extraction: str = typer.Option("v1", "--extraction",
                                   help="extraction method of the memory methods' write path: v1 … v13 "
                                        "(default v1, as BENCHMARKS.md's commands ran; the library's default is v10)"),
    verbose: bool = typer.Option(False, "--verbose", "-v"),
) -> None:
    """Answer LoCoMo questions with each method and score them (official F1, Mem0 F1, BLEU-1, recall@k)."""
    if verbose:
        logging.getLogger("chronomem").setLevel(logging.INFO)
    names = _split(methods)
    _check_methods(names)
    search_changes = parse_search_changes(search)
    Config(extraction=extraction)  # names an unknown method before any model loads
    if search_changes and not any(n.startswith("real") for n in names):
        raise ValidationError("search", " ".join(search), "changes only the REAL methods (real…), and none is selected")
    convs = load_locomo(_default_data(data, DEFAULT_LOCOMO_PATH), _split(conversations) or None)
    cats = _categories(categories)
    need_emb = any(METHODS[n].needs_embedder for n in names)
    model, emb = _models(llm, embedder, need_emb, ctx, cache)
    judge_llm = _judge(judge, llm, model, cache)
    config = MethodConfig(top_k=top_k, window_tokens=window_tokens, search=search_changes, extraction=extraction)
    console.print(f"model [bold]{escape(model.name)}[/] (window {model.context_window}); methods {', '.join(names)}; "
                  f"{len(convs)} conversation(s); out {out}")
    summary = run_locomo(convs, names, model, out, embedder=emb, config=config, categories=cats, sample=sample,
                         seed=seed, judge=judge_llm, progress=RichProgress(console),
                         command=shlex.join(["chronomem", *sys.argv[1:]]))
    _finish(summary, out)


@app.command("msc")
def msc(
    methods: str = typer.Option(..., "--methods", help="comma-separated: " + ", ".join(METHODS)),
    data: Path | None = typer.Option(None, "--data", help=f"MSC JSON (default {DEFAULT_MSC_PATH})"),
    episodes: int | None = typer.Option(None, "--episodes", min=1, help="first N episodes (default: all)"),
    speaker: str = typer.Option(DEFAULT_SPEAKER, "--speaker", help="whose replies are generated and scored"),
    max_replies: int | None = typer.Option(None, "--max-replies", min=0, help="replies per episode (0: the memory only)"),
    llm: str | None = typer.Option(None, "--llm"),
    embedder: str | None = typer.Option(None, "--embedder"),
    ctx: int | None = typer.Option(None, "--ctx", min=512),
    top_k: int = typer.Option(10, "--top-k", min=1),
    window_tokens: int = typer.Option(2000, "--window-tokens", min=1),
    rsum_decoding: int = typer.Option(MEMORY_DECODING, "--rsum-decoding",
                                      help=f"Rsum's memory update revision, one of {MEMORY_DECODINGS} "
                                      "(3: append what a session adds)"),
    judge: str | None = typer.Option(None, "--judge", help="LLM spec of an optional judge of the replies' "
                                     "consistency with the speaker's persona"),
    cache: str = typer.Option("default", "--cache"),
    out: Path = typer.Option(Path("bench-out/msc"), "--out"),
    verbose: bool = typer.Option(False, "--verbose", "-v"),
) -> None:
    """Continue MSC dialogues with each method: reply F1/BLEU-1 and persona-fact recall of the memory."""
    if verbose:
        logging.getLogger("chronomem").setLevel(logging.INFO)
    if rsum_decoding not in MEMORY_DECODINGS:
        raise typer.BadParameter(f"must be one of {MEMORY_DECODINGS}, got {rsum_decoding}", param_hint="--rsum-decoding")
    names = _split(methods)
    _check_methods(names)
    eps = load_msc(_default_data(data, DEFAULT_MSC_PATH), episodes)
    need_emb = any(METHODS[n].needs_embedder for n in names)
    model, emb = _models(llm, embedder, need_emb, ctx, cache)
    judge_llm = _judge(judge, llm, model, cache)
    summary = run_msc(eps, names, model, out, embedder=emb, config=MethodConfig(top_k=top_k, window_tokens=window_tokens,
                                                                      rsum_decoding=rsum_decoding),
                      speaker=speaker, max_replies=max_replies, judge=judge_llm, progress=RichProgress(console),
                      command=shlex.join(["chronomem", *sys.argv[1:]]))
    _finish(summary, out)


@app.command("report")
def report(
    out: Path = typer.Option(Path("bench-out/locomo"), "--out", help="folder holding results.jsonl; the report goes here"),
    sources: list[Path] = typer.Option([], "--from", help="report these run folders together instead (repeatable)"),
    sample: int | None = typer.Option(None, "--sample", min=1, help="only the stratified sample of N questions per "
                                      "conversation that `bench locomo --sample N --seed S` draws"),
    seed: int = typer.Option(0, "--seed"),
    categories: str = typer.Option("1,2,3,4", "--categories", help="QA categories the sample was drawn from"),
    data: Path | None = typer.Option(None, "--data", help=f"LoCoMo JSON, to draw --sample (default {DEFAULT_LOCOMO_PATH})"),
    all_configs: bool = typer.Option(False, "--all-configs", help="show superseded configurations in the tables "
                                     "and plots too, not apart"),
    plots: bool = typer.Option(True, "--plots/--no-plots"),
    reference: str | None = typer.Option(None, "--reference", help="method (or full label) the head-to-head "
                                         "table compares with every other (default: answer, else real+turns)"),
) -> None:
    """(Re)write report.md and the plots from the results of one folder, or of several together (--from)."""
    folders = sources or [out]
    for f in folders:
        if not (f / "results.jsonl").exists():
            raise typer.BadParameter(f"{f}/results.jsonl does not exist", param_hint="--from" if sources else "--out")
    qids: set[str] | None = None
    scope = ""
    if sample is not None:
        ids = {r["sample_id"] for f in folders for r in read_jsonl(f / RESULTS_FILE) if r.get("dataset") == "locomo"}
        convs = load_locomo(_default_data(data, DEFAULT_LOCOMO_PATH), sorted(ids))
        cats = _categories(categories)
        qids = {q.qid for c in convs for q in select_questions(c, cats, sample, seed)}
        scope = (f"the stratified sample of {sample} per conversation (categories {categories}, seed {seed}) "
                 f"of {', '.join(c.sample_id for c in convs)}: {len(qids)} questions")
    path = write_report(out, plots=plots, sources=sources, qids=qids, scope=scope,
                        include_superseded=all_configs, reference=reference)
    console.print(path.read_text(), markup=False, highlight=False)  # labels hold [..] that are not rich markup


@app.command("methods")
def list_methods() -> None:
    """List the methods and whether this build can run them."""
    table = Table("method", "available", "description / reason")
    avail = set(available_methods())
    for name, info in METHODS.items():
        table.add_row(name, "yes" if name in avail else "no",  # a reason may say "pip install 'chronomem[x]'"
                      plain(info.description if name in avail else (unavailable_reason(name) or "")))
    console.print(table)
