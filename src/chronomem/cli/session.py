"""``chronomem session list|end|summary|context|end-idle``: the session lifecycle from the command line."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.table import Table

from ..errors import ConfigError, ValidationError
from ..keys import DEFAULT_TENANT
from ..memory import Memory
from ..summarize.idle import IdleSweep
from ..summarize.lifecycle import session_row
from .core import DbOpt, JsonOpt, TenantOpt, UserOpt, in_tenant, open_memory, read_records
from .render import data_console, plain

console = data_console(stderr=True)  # status lines; stdout carries only the data (summary text, JSON)

app = typer.Typer(help="List and end sessions, read the running summary, compact a conversation for the next "
                       "call.", no_args_is_help=True)


@app.command("list")
def list_cmd(user: UserOpt, as_json: JsonOpt = False, db: DbOpt = None, tenant: TenantOpt = None) -> None:
    """List the user's sessions, oldest first: id, started, ended (empty while open), agent."""
    with open_memory(db, tenant, existing=True) as mem:
        sessions = mem.sessions(user_id=user)
        where = in_tenant(mem)
    if as_json:
        typer.echo(json.dumps([session_row(s) for s in sessions]))
    elif not sessions:
        console.print(f"no sessions for user {user!r}{where}", markup=False, highlight=False)
    else:
        table = Table("session", "started", "ended", "agent",
                      title=plain(f"sessions of {user}{where}", "table.title"))
        for row in map(session_row, sessions):  # ids are whatever the caller chose: "[/x]" is no markup
            table.add_row(plain(row["id"]), row["started_at"] or "", row["ended_at"] or "",
                          plain(row["agent_id"] or ""))
        data_console(highlight=False).print(table)


@app.command("end")
def end_cmd(session: Annotated[str, typer.Option("--session", "-s", help="the session to end")],
            user: UserOpt,
            ended_at: Annotated[Optional[str], typer.Option("--ended-at", help="ISO time the session ended "
                                                                               "(default: now)")] = None,
            as_json: Annotated[bool, typer.Option("--json", help="print session_id, turns_flushed, turns_stored "
                                                                 "and summary as JSON")] = False,
            db: DbOpt = None, tenant: TenantOpt = None) -> None:
    """End a session: flush its buffered turns, extract what is left, update the summary."""
    with open_memory(db, tenant, existing=True) as mem:
        res = mem.end_session(user_id=user, session_id=session, ended_at=ended_at)
        where = in_tenant(mem)
    report = res.report(session)
    summary = report["summary"]
    if as_json:
        typer.echo(json.dumps(report))
        return
    console.print(f"session {session!r} of {user!r}{where} ended: {len(res.flushed)} buffered turn(s) written "
                  f"({len(res.stored)} new)", markup=False, highlight=False)
    if summary is None:
        console.print("the session has no turns: the summary is unchanged", markup=False)
    else:
        typer.echo(summary)


@app.command("summary")
def summary_cmd(user: UserOpt,
                as_of: Annotated[Optional[str], typer.Option("--as-of", help="ISO date or time (default: now)")]
                = None,
                db: DbOpt = None, tenant: TenantOpt = None) -> None:
    """Print the user's running summary as of a date (after the last session ended by then)."""
    with open_memory(db, tenant, existing=True) as mem:
        text = mem.summary(user_id=user, as_of=as_of)
        where = in_tenant(mem)
    if text:
        typer.echo(text)
    else:
        console.print(f"no summary for {user!r}{where}" + (f" as of {as_of}" if as_of else "") +
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
                budget: Annotated[int, typer.Option("--budget", help="token budget of the result", min=1)] = 2048,
                strategy: Annotated[str, typer.Option(help="token_budget, sliding_window or summary")]
                = "token_budget",
                keep_turns: Annotated[int, typer.Option("--keep-turns", help="newest turns kept verbatim "
                                                                             "(sliding_window, summary)")] = 6,
                db: DbOpt = None, tenant: TenantOpt = None) -> None:
    """Print (JSON) the message list for the next LLM call: the summary, then the compacted conversation."""
    messages = _chat_messages(file)
    with open_memory(db, tenant, existing=True) as mem:
        out = mem.context(messages, user_id=user, budget_tokens=budget, strategy=strategy, keep_turns=keep_turns)
    typer.echo(json.dumps(out, ensure_ascii=False, indent=2))


@app.command("end-idle")
def end_idle_cmd(idle: Annotated[Optional[float], typer.Option("--idle", help="seconds without a new turn "
                                                                              "(default: CHRONOMEM_SESSION_IDLE)")]
                 = None,
                 db: DbOpt = None,
                 tenant: Annotated[Optional[str], typer.Option(
                     "--tenant", help="sweep only this tenant (default: every tenant; $CHRONOMEM_TENANT is not "
                                      "read here)")] = None) -> None:
    """End every session (all users of every tenant) quiet for the idle timeout, once (e.g. from cron).

    Prints each ended session as USER/SESSION, followed by its tenant when that is not the default one."""
    failed = False
    with open_memory(db, tenant, existing=True) as mem:
        if idle is None and mem.config.session_idle is None:  # said with this command's option, not Python's
            raise ConfigError("no idle timeout: pass --idle SECONDS or set CHRONOMEM_SESSION_IDLE "
                              "(or session_idle in the config)")
        for view in tenant_views(mem, only=tenant is not None):
            try:
                sweep = view.end_idle_sessions(idle_seconds=idle)
            except ValidationError as e:
                if e.field != "idle_seconds":
                    raise
                raise ValidationError("--idle", e.value, e.reason) from None
            finally:
                if view is not mem:
                    view.close()  # a view leaves the shared store open
            failed |= print_sweep(sweep, view.tenant)
    if failed:
        raise typer.Exit(1)


def tenant_views(mem: Memory, *, only: bool) -> Iterator[Memory]:
    """``mem`` itself, then (unless ``only``) a view of every other tenant that holds a user or buffered
    turns.  ``mem`` is swept even when empty: its session buffer may hold turns, and a missing idle
    timeout is reported."""
    yield mem
    if not only:
        yield from (mem.for_tenant(t) for t in mem.tenants() if t != mem.tenant)


def print_sweep(sweep: IdleSweep, tenant: str) -> bool:
    """Print what one tenant's sweep ended (stdout) and could not end (stderr); True if any failed."""
    where = "" if tenant == DEFAULT_TENANT else f" in tenant {tenant}"
    for user_id, session_id in sweep.ended:
        typer.echo(f"ended {user_id}/{session_id}{where}")
    for (user_id, session_id), err in sweep.failed.items():
        console.print(f"not ended {user_id}/{session_id}{where}: {err}", markup=False, highlight=False)
    return bool(sweep.failed)


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="session")
