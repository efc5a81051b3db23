"""``chronomem ask``: answer a question from a user's memory, optionally showing the search trace."""

from __future__ import annotations

import json
from dataclasses import replace
from enum import Enum
from typing import Annotated, Any, Optional

import typer
from rich.panel import Panel
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from ..errors import ConfigError
from ..retrieve.beam import SearchConfig
from ..retrieve.search import ANSWER_CONFIG, SearchResult, Trace
from .core import DbOpt, TenantOpt, open_memory
from .render import console, facts_table, plain


class Method(str, Enum):
    """``Memory.answer``'s methods (:data:`chronomem.answering.METHODS`)."""

    real = "real"
    rsum = "rsum"
    real_rsum = "real+rsum"


def _line(*parts: str | tuple[str, str]) -> Text:
    """One line of the trace: strings are literal text (queries, names, spans, paths are data and may
    hold ``[...]``), ``(text, style)`` pairs are styled; nothing is read as rich markup."""
    return Text.assemble(*parts)


def trace_tree(trace: Trace) -> Tree:
    """The search trace as a rich tree: roots, intents, iterations with per-beam decisions, budget."""
    tree = Tree(_line(("search trace", "bold"), f" for {trace.query!r} (as of {trace.as_of})"))
    roots = tree.add(_line(("roots", "bold")))
    for r in trace.roots or [{"name": "(none)", "how": "", "score": 0, "span": ""}]:
        roots.add(_line(f"{r['name']}  ", (f"{r['how']} {r['score']} ‘{r['span']}’", "dim")))
    a = trace.analysis
    intents = tree.add(_line(("intents", "bold"), f" {', '.join(a.get('intents', []))} ",
                             (f"({a.get('source')}, confident={a.get('confident')})", "dim")))
    for label in ("cues", "wh", "yes_no", "types", "relation_groups", "window_text", "history"):
        if a.get(label) not in (None, {}, [], False):
            intents.add(_line(f"{label}: {a[label]}"))
    for sub in trace.sub_searches:
        intents.add(_line(f"sub-search {sub['intent']}: facts {sub['filter']}"))
    iters = tree.add(_line(("iterations", "bold")))
    for it in trace.iterations:
        node = iters.add(_line(f"{it['intent']} depth {it['depth']}: {len(it['beams'])} beams, "
                               f"kept {len(it.get('kept', []))}, pruned {it.get('pruned', 0)}"))
        for b in it["beams"]:
            style = {"expand": "green", "counterfactual": "magenta"}.get(b["decision"], "yellow")
            node.add(_line((str(b["decision"]), style), f" {b['path']}  ",
                           (f"score {b['score']:.3f}, {b['children']} children, {b['derived']} derived, "
                            f"kept {b['kept']}", "dim")))
        for ev in it.get("evaluator", []):
            node.add(_line(("evaluator", "cyan"), f" {ev}"))
        if it.get("kept"):
            kept = node.add(_line(("after global pruning", "dim")))
            for p in it["kept"]:
                kept.add(_line(f"{p['score']:.3f} {p['path']}  ",
                               (f"QR {p['s_qr']} LC {p['s_lc']} AS {p['s_as']}", "dim")))
    tree.add(_line(("budget", "bold"), f" {trace.budget}"))
    tree.add(_line(("stats", "bold"), f" {trace.stats}"))
    tree.add(_line(("time (ms)", "bold"), f" {trace.timings_ms}"))
    for n in trace.notes:
        tree.add(_line(("note:", "italic"), f" {n}"))
    return tree


def paths_table(res: SearchResult) -> Table:
    t = Table(title="chosen paths")
    for col in ("#", "score", "S_QR", "S_LC", "S_AS", "path"):
        t.add_column(col, overflow="fold")
    for i, p in enumerate(res.paths, 1):
        t.add_row(str(i), f"{p.score:.3f}", f"{p.s_qr:.2f}", f"{p.s_lc:.2f}", f"{p.s_as:.2f}", plain(p.render()))
    return t


def ask_cmd(question: Annotated[str, typer.Argument(help="The question")],
            user: Annotated[str, typer.Option("--user", "-u", help="User id")],
            as_of: Annotated[Optional[str], typer.Option("--as-of", help="ISO date or datetime to ask about")] = None,
            explain: Annotated[bool, typer.Option("--explain", help="print the search trace")] = False,
            search_only: Annotated[bool, typer.Option("--search-only", help="no answer model: show the evidence")] = False,
            speaker: Annotated[Optional[str], typer.Option("--speaker", help="entity that I/me/my refer to")] = None,
            top_k: Annotated[int, typer.Option("--top-k", help="paths to keep")] = 10,
            no_embeddings: Annotated[bool, typer.Option("--no-embeddings",
                                                        help="lexical relevance only (no embedding model)")] = False,
            method: Annotated[Method, typer.Option(
                "--method", help="real: graph evidence and stored turns; rsum: the session summary only; "
                                 "real+rsum: both (not used with --search-only)")] = Method.real_rsum,
            as_json: Annotated[bool, typer.Option("--json")] = False,
            db: DbOpt = None, tenant: TenantOpt = None) -> None:
    """Answer QUESTION from a user's memory (REAL retrieval + the configured model)."""
    with open_memory(db, tenant, existing=True) as mem:
        if not search_only and not mem.models.llm_enabled:  # Memory's own message names Python arguments
            raise ConfigError("no chat model to answer with (CHRONOMEM_LLM or the config file's [llm] spec is "
                              "'none'): configure one (`chronomem models` shows the settings), or pass "
                              "--search-only for the evidence alone")
        out: dict[str, Any]
        base = SearchConfig() if search_only else ANSWER_CONFIG
        cfg = replace(base, embeddings=False) if no_embeddings else base
        if search_only:
            res = mem.search(question, user_id=user, as_of=as_of, top_k=top_k, speaker=speaker, config=cfg)
            trace, evidence, context = res.trace, res.facts, res.context
            out = {"answer": None, "context_tokens": res.context_tokens}
        else:
            ans = mem.answer(question, user_id=user, as_of=as_of, method=method.value, top_k=top_k,
                             speaker=speaker, config=cfg)
            trace, evidence, context = ans.trace, ans.evidence, ans.context
            out = {"answer": ans.text, "context_tokens": ans.context_tokens, "usage": ans.usage}
        if as_json:
            out.update(evidence=[f.to_dict() for f in evidence], context=context)
            if explain:
                out["trace"] = trace.as_dict()
            console.print_json(json.dumps(out, default=str))
            return
        if out["answer"] is not None:
            console.print(Panel(plain(out["answer"]), title="answer", expand=False))  # the model's words
        if evidence:
            console.print(facts_table(evidence, "evidence", mem.config.theta_stable))
        else:
            console.print("[dim]no evidence in memory[/]")
        if explain:
            if search_only:
                console.print(paths_table(res))
            console.print(Panel(plain(context or "(empty)"), title=f"context ({out['context_tokens']} tokens)"))
            console.print(trace_tree(trace))


def register(app: typer.Typer) -> None:
    app.command("ask")(ask_cmd)
