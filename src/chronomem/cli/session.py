"""``chronomem session end|summary|context|end-idle``: the session lifecycle from the command line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.console import Console

from ..errors import ValidationError
from ..memory import Memory
from .core import DbOpt, UserOpt, read_records

console = Console(stderr=True)  # status lines; stdout carries only the data (summary text, JSON)

app = typer.Typer(help="End sessions, read the running summary, compact a conversation for the next call.",
                  no_args_is_help=True)


@app.command("end")
def end_cmd(session: Annotated[str, typer.Option("--session", "-s", help="the session to end")],
            user: UserOpt,
            ended_at: Annotated[Optional[str], typer.Option("--ended-at", help="ISO time the session ended "
                                                                               "(default: now)")] = None,
            as_json: Annotated[bool, typer.Option("--json")] = False,
            db: DbOpt = None) -> None:
    """End a session: flush its buffered turns, extract what is left, update the summary."""
    with Memory(db) as mem:
        res = mem.end_session(user_id=user, session_id=session, ended_at=ended_at)
    summary = res.checkpoint.memory if res.checkpoint is not None else None
    if as_json:
        typer.echo(json.dumps({"session_id": session, "turns_flushed": len(res.flushed),
                               "turns_stored": len(res.stored), "summary": summary}))
        return
    console.print(f"session {session!r} of {user!r} ended: {len(res.flushed)} buffered turn(s) written "
                  f"({len(res.stored)} new)", markup=False, highlight=False)
    if summary is None:
        console.print("the session has no turns: the summary is unchanged", markup=False)
    else:
        typer.echo(summary)


@app.command("summary")
def summary_cmd(user: UserOpt,
                as_of: Annotated[Optional[str], typer.Option("--as-of", help="ISO date or time (default: now)")]
                = None,
                db: DbOpt = None) -> None:
    """Print the user's running summary as of a date (after the last session ended by then)."""
    with Memory(db) as mem:
        text = mem.summary(user_id=user, as_of=as_of)
    if text:
        typer.echo(text)
    else:
        console.print(f"no summary for {user!r}" + (f" as of {as_of}" if as_of else "") +
                      ": no session has ended yet", markup=False, highlight=False)


def _chat_messages(path: Path) -> list[dict[str, Any]]:
    rows = read_records(path)
    if len(rows) == 1 and isinstance(rows[0], dict) and isinstance(rows[0].get("messages"), list):
        rows = rows[0]["messages"]  # {"messages": [...]} as well as a bare list
    for i, m in enumerate(rows):
        if not isinstance(m, dict):
            raise ValidationError(f"{path.name}[{i}]", type(m).__name__, "each message must be an object "
                                  "with role and content")
    return rows


@app.command("context")
def context_cmd(file: Annotated[Path, typer.Argument(help="JSON/JSONL chat messages ({role, content}), "
                                                         "or {'messages': [...]}")],
                user: UserOpt,
                budget: Annotated[int, typer.Option("--budget", help="token budget of the result")] = 2048,
                strategy: Annotated[str, typer.Option(help="token_budget, sliding_window or summary")]
                = "token_budget",
                keep_turns: Annotated[int, typer.Option("--keep-turns", help="newest turns kept verbatim "
                                                                             "(sliding_window, summary)")] = 6,
                db: DbOpt = None) -> None:
    """Print (JSON) the message list for the next LLM call: the summary, then the compacted conversation."""
    messages = _chat_messages(file)
    with Memory(db) as mem:
        out = mem.context(messages, user_id=user, budget_tokens=budget, strategy=strategy, keep_turns=keep_turns)
    typer.echo(json.dumps(out, ensure_ascii=False, indent=2))


@app.command("end-idle")
def end_idle_cmd(idle: Annotated[Optional[float], typer.Option("--idle", help="seconds without a new turn "
                                                                              "(default: CHRONOMEM_SESSION_IDLE)")]
                 = None,
                 db: DbOpt = None) -> None:
    """End every session (all users) quiet for the idle timeout, once (e.g. from cron)."""
    with Memory(db) as mem:
        sweep = mem.end_idle_sessions(idle_seconds=idle)
    for user_id, session_id in sweep.ended:
        typer.echo(f"ended {user_id}/{session_id}")
    for (user_id, session_id), err in sweep.failed.items():
        console.print(f"not ended {user_id}/{session_id}: {err}", markup=False, highlight=False)
    if sweep.failed:
        raise typer.Exit(1)


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="session")
