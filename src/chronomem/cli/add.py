"""``chronomem add FILE --user U``: ingest a conversation file through the REAL write path."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ..extract.formats import ConversationInput, load_conversations
from ..config import Config
from ..extract.pipeline import AddResult
from ..memory import Memory
from .core import TenantOpt, open_memory
from .render import data_console

console = data_console(stderr=True)


def progress_bar() -> Progress:
    """The bar of ``ingest``: its description names a conversation and session, ids the caller chose
    (``--session "[/x]"``), so the column shows it as plain text, never as rich markup."""
    return Progress(TextColumn("{task.description}", markup=False), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), console=console, transient=False)


def ingest(conv: ConversationInput, user: str, *, mem: Memory,
           progress: Progress | None = None) -> list[AddResult]:
    """Add every session of ``conv`` for ``user`` with ``Memory.add``, in order; one progress step per chunk."""
    results = []
    task = None
    if progress is not None:
        task = progress.add_task(f"{conv.conversation_id}", total=None)
    chunk_done = 0
    chunk_total = 0

    def on_chunk(done: int, total: int) -> None:
        if progress is not None and task is not None:
            progress.update(task, completed=chunk_done + done, total=chunk_total + total)

    for s in conv.sessions:
        res = mem.add(s.messages, user_id=user, session_id=s.session_id, timestamp=s.timestamp,
                      progress=on_chunk)
        chunk_done += res.chunks
        chunk_total += res.chunks
        if progress is not None and task is not None:
            progress.update(task, completed=chunk_done, total=max(chunk_total, 1),
                            description=f"{conv.conversation_id} · {res.session_id}")
        results.append(res)
    return results


def add_command(
    file: Annotated[Path, typer.Argument(help="JSON: a list of messages, {'sessions': [...]}, LoCoMo or MSC")],
    user: Annotated[str, typer.Option("--user", "-u", help="User id the memory belongs to")],
    session: Annotated[Optional[str], typer.Option("--session", help="Session id for a plain message list")] = None,
    timestamp: Annotated[Optional[str], typer.Option("--timestamp", help="ISO time for messages without one")] = None,
    sample: Annotated[Optional[str], typer.Option("--sample", help="LoCoMo sample_id / MSC episode id or index")] = None,
    chunk_size: Annotated[Optional[int], typer.Option("--chunk-size", help="Turns per extraction call "
                                                                         "(default 8, CHRONOMEM_CHUNK_SIZE)")] = None,
    llm: Annotated[Optional[str], typer.Option("--llm", help="Model spec (default: configured)")] = None,
    db: Annotated[Optional[str], typer.Option("--db", help="Database path or URL")] = None,
    no_extract: Annotated[bool, typer.Option("--no-extract", help="Store only; extract later with `chronomem session end` (or Memory.extract_pending)")] = False,
    tenant: TenantOpt = None,
) -> None:
    """Store a conversation verbatim and extract its facts (one LLM call per chunk of turns).

    Each session goes through ``Memory.add``, as from Python: with a session buffer configured
    (CHRONOMEM_REDIS_URL) the turns are buffered until ``chronomem session end``.
    """
    convs = load_conversations(file, sample=sample)
    with open_memory(db, tenant, llm=llm, config=Config.load(chunk_size=chunk_size)) as mem:
        totals = {"stored": 0, "skipped": 0, "chunks": 0, "added": 0, "closed": 0, "reinforced": 0,
                  "failed": 0}
        warnings: list[str] = []
        with progress_bar() as progress:
            for conv in convs:
                if session is not None and conv.kind == "messages":
                    conv.sessions[0].session_id = session
                if timestamp is not None:
                    for s in conv.sessions:
                        s.timestamp = s.timestamp or timestamp
                if no_extract:  # store only, straight to the long-term store: `extract_pending` later
                    pipe = mem.write_pipeline(chunk_size=mem.config.chunk_size)
                    for s in conv.sessions:
                        r = pipe.add(s.messages, user_id=user, session_id=s.session_id,
                                     timestamp=s.timestamp, extract=False)
                        totals["stored"] += r.messages_stored
                        totals["skipped"] += r.messages_skipped
                        warnings.extend(r.warnings)
                    continue
                for r in ingest(conv, user, mem=mem, progress=progress):
                    totals["stored"] += r.messages_stored
                    totals["skipped"] += r.messages_skipped
                    totals["chunks"] += r.chunks
                    totals["added"] += r.facts_added
                    totals["closed"] += r.facts_closed
                    totals["reinforced"] += r.facts_reinforced
                    totals["failed"] += len(r.failed_chunks)
                    warnings.extend(r.warnings)
        for w in dict.fromkeys(warnings):
            console.print(f"[yellow]warning:[/] {escape(w)}")  # warnings quote turns and facts
        console.print(
            f"stored {totals['stored']} message(s) ({totals['skipped']} already known); "
            f"{totals['chunks']} extraction call(s); facts +{totals['added']}, closed {totals['closed']}, "
            f"reinforced {totals['reinforced']}"
            + (f"; {totals['failed']} chunk(s) left for re-extraction" if totals["failed"] else "")
        )
        console.print(f"model usage: {mem.usage.snapshot()}", markup=False)  # model names may hold [...]


def register(app: typer.Typer) -> None:
    app.command("add")(add_command)


def run_demo(mem: Memory, user: str = "maya") -> None:
    """``make demo``: ingest the bundled three-session sample with the configured model and
    show the current facts, the earlier state, how things evolved, the tentative plan, and usage."""
    from ..extract.formats import sample_conversation_path
    from .render import facts_table

    (conv,) = load_conversations(sample_conversation_path())
    mem.forget(user_id=user, everything=True)
    with progress_bar() as progress:
        results = ingest(conv, user, mem=mem, progress=progress)
    out = data_console()
    for s, r in zip(conv.sessions, results):  # facts and warnings are the model's words: escaped
        out.print(f"[bold]session {escape(str(r.session_id))}[/] ({s.timestamp[:10] if s.timestamp else '?'}): "
                  f"{r.messages_stored} turns, {r.chunks} call(s) → +{r.facts_added} facts, "
                  f"closed {r.facts_closed}, reinforced {r.facts_reinforced}")
        for f in r.closed:
            out.print(f"   closed: {f.subject} {f.relation} {f.object} (until {f.valid_to and f.valid_to.date()})",
                      markup=False)
        for w in r.warnings:
            out.print(f"   [yellow]{escape(w)}[/]")
    theta = mem.config.theta_stable
    first = conv.sessions[0].timestamp
    out.print(facts_table(mem.facts(user_id=user), "What is true now", theta))
    if first:
        out.print(facts_table(mem.facts(user_id=user, as_of=first), f"…and at the first session ({first[:10]})",
                              theta))
    changed = [f for f in mem.history(user_id=user) if f.valid_to is not None]
    out.print(facts_table(changed, "What changed over time (closed versions)", theta))
    unstable = [f for f in mem.facts(user_id=user, include_unstable=True) if f.confidence < theta]
    if unstable:
        out.print(facts_table(unstable, f"Tentative (confidence < θ_stable = {theta}), kept but not used by default",
                              theta))
    else:  # an empty table reads like a fault; the model decides which statements it hedges
        out.print(f"Tentative (confidence < θ_stable = {theta}): none this run, the model hedged no statement",
                  markup=False)
    out.print(f"model usage: {mem.usage.snapshot()}", markup=False)
