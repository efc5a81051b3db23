"""Core commands: add-facts, facts, history, forget, export, import, demo."""

from __future__ import annotations

import importlib
import json
import os
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from ..errors import ValidationError
from ..memory import Memory
from .render import console, facts_table

DbOpt = Annotated[Optional[str], typer.Option("--db", help="Database path or URL (default: $CHRONOMEM_DB or the user data dir)")]
UserOpt = Annotated[str, typer.Option("--user", "-u", help="User id")]


def read_records(path: Path) -> list[Any]:
    """Read a JSON array (or object) or JSONL file."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise ValidationError("file", str(path), f"cannot be read: {e.strerror}") from None
    stripped = text.lstrip()
    try:
        if stripped.startswith("["):
            data = json.loads(text)
        elif path.suffix == ".jsonl" or "\n{" in stripped:
            data = [json.loads(line) for line in text.splitlines() if line.strip()]
        else:
            data = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValidationError("file", str(path), f"is not valid JSON/JSONL: {e}") from None
    except RecursionError:
        raise ValidationError("file", str(path), "is nested too deeply to be a chronomem file") from None
    return data if isinstance(data, list) else [data]


def add_facts_cmd(file: Path, user: UserOpt, db: DbOpt = None) -> None:
    """Add structured facts from a JSON or JSONL file."""
    records = read_records(file)
    if records and isinstance(records[0], dict) and "facts" in records[0] and len(records) == 1:
        records = records[0]["facts"]
    if not records:
        raise ValidationError("file", str(file), "holds no facts")
    with Memory(db) as mem:
        rep = mem.add_facts(records, user_id=user)
    console.print(f"added {len(rep.added)}, closed {len(rep.closed)}, reinforced {len(rep.reinforced)}")


def facts_cmd(user: UserOpt, subject: Annotated[Optional[str], typer.Option("--subject", "-s")] = None,
              relation: Annotated[Optional[str], typer.Option("--relation", "-r")] = None,
              as_of: Annotated[Optional[str], typer.Option("--as-of", help="ISO date or datetime")] = None,
              all_: Annotated[bool, typer.Option("--all", help="include unstable (low-confidence) facts")] = False,
              as_json: Annotated[bool, typer.Option("--json")] = False, db: DbOpt = None) -> None:
    """Show the facts valid now (or at --as-of)."""
    with Memory(db) as mem:
        facts = mem.facts(user_id=user, subject=subject, relation=relation, as_of=as_of, include_unstable=all_)
        if as_json:
            console.print_json(json.dumps([f.to_dict() for f in facts]))
        elif not facts:
            about = "".join(f" {k} {v!r}" for k, v in (("about", subject), ("with relation", relation)) if v)
            console.print(f"no facts{about} for user {user!r} valid {as_of or 'now'}"
                          + ("" if all_ else " (--all also shows unstable ones)"), markup=False)
        else:
            console.print(facts_table(facts, f"facts of {user} valid {as_of or 'now'}", mem.config.theta_stable))


def history_cmd(user: UserOpt, subject: str, relation: Annotated[Optional[str], typer.Argument()] = None,
                as_json: Annotated[bool, typer.Option("--json")] = False, db: DbOpt = None) -> None:
    """Show every version of SUBJECT's facts (optionally of one RELATION), oldest first."""
    with Memory(db) as mem:
        facts = mem.history(user_id=user, subject=subject, relation=relation)
        if as_json:
            console.print_json(json.dumps([f.to_dict() for f in facts]))
        elif not facts:
            console.print(f"no facts about {subject!r}" + (f" with relation {relation!r}" if relation else "")
                          + f" for user {user!r}, at any time", markup=False)  # ids are not rich markup
        else:
            console.print(facts_table(facts, f"history of {subject}", mem.config.theta_stable))


def forget_cmd(user: UserOpt, fact: Annotated[Optional[str], typer.Option("--fact")] = None,
               session: Annotated[Optional[str], typer.Option("--session")] = None,
               everything: Annotated[bool, typer.Option("--everything")] = False,
               yes: Annotated[bool, typer.Option("--yes", help="do not ask for confirmation")] = False,
               db: DbOpt = None) -> None:
    """Delete a fact, a session or everything of a user, for real."""
    if everything and not yes:
        typer.confirm(f"Delete everything stored for {user}?", abort=True)
    with Memory(db) as mem:
        if fact is not None:
            fact = full_fact_id(mem, user, fact)
        res = mem.forget(user_id=user, fact_id=fact, session_id=session, everything=everything)
    console.print(res)


def full_fact_id(mem: Memory, user: str, given: str) -> str:
    """The fact id ``given`` names: itself, or the one stored id it begins (``facts`` and ``history``
    show the first 8 characters); an ambiguous or unknown prefix is left for forget to refuse."""
    if len(given) < 4 or mem.store.facts(user, ids=[given]):
        return given
    matches = [f.id for f in mem.history(user_id=user, other_side=False) if f.id.startswith(given)]
    if len(matches) > 1:
        raise ValidationError("--fact", given, f"names {len(matches)} facts; give more of the id")
    return matches[0] if matches else given


def export_cmd(user: UserOpt, out: Annotated[Optional[Path], typer.Option("--out", "-o")] = None,
               db: DbOpt = None) -> None:
    """Export a user's memory as JSON (stdout or --out)."""
    if out is not None and out.is_dir():
        raise ValidationError("--out", str(out), "is a directory; give a file name")
    with Memory(db) as mem:
        text = json.dumps(mem.export(user_id=user), ensure_ascii=False, indent=1)
    if out:
        write_atomically(out, text)
    else:
        typer.echo(text)


def write_atomically(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same folder: whole or not at all."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise ValidationError("--out", str(path), f"cannot be written: {e.strerror or e}") from None


def import_cmd(file: Path, user: Annotated[Optional[str], typer.Option("--user", "-u")] = None,
               db: DbOpt = None) -> None:
    """Import a JSON export (optionally into another user id)."""
    records = read_records(file)
    if len(records) != 1 or not isinstance(records[0], dict):
        raise ValidationError("file", str(file), "is not a chronomem export (one JSON object, as written by "
                                                 "`chronomem export`)")
    with Memory(db) as mem:
        counts = mem.import_(records[0], user_id=user)
    console.print(counts)


def demo_graph(mem: Memory, user: str = "demo") -> None:
    """Show the temporal graph on the bundled structured sample."""
    sample = json.loads(resources.files("chronomem.data").joinpath("sample_facts.json").read_text("utf-8"))
    mem.forget(user_id=user, everything=True)
    for step in sample["steps"]:
        rep = mem.add_facts(step["facts"], user_id=user)
        console.print(f"[bold]{step['said']}[/]  → added {len(rep.added)}, closed "
                      f"{len(rep.closed)}, reinforced {len(rep.reinforced)}")
    theta = mem.config.theta_stable
    console.print(facts_table(mem.facts(user_id=user, subject="Maya"), "What is true about Maya now", theta))
    console.print(facts_table(mem.facts(user_id=user, subject="Maya", as_of="2019-06-01"),
                              "…and on 2019-06-01", theta))
    console.print(facts_table(mem.history(user_id=user, subject="Maya", relation="lives_in"),
                              "How Maya's residence evolved (history, unstable plans dimmed)", theta))
    console.print(facts_table(mem.history(user_id=user, subject="Maya", relation="works_at"),
                              "How Maya's employer evolved", theta))


DemoDbOpt = Annotated[Optional[str], typer.Option("--db", help="Database path or URL (default: ./.chronomem/demo.db)")]


def demo_cmd(db: DemoDbOpt = None) -> None:
    """Run the demo on the embedded default (SQLite, local model; no key, no server)."""
    path = db or str(Path(".chronomem") / "demo.db")
    with Memory(path) as mem:
        try:  # the model-backed demo, when the write path is present
            full_demo = importlib.import_module(f"{__package__}.demo")
        except ModuleNotFoundError as e:
            if e.name != f"{__package__}.demo":
                raise
            demo_graph(mem)
        else:
            full_demo.run(mem)


def register(app: typer.Typer) -> None:
    app.command("add-facts")(add_facts_cmd)
    app.command("facts")(facts_cmd)
    app.command("history")(history_cmd)
    app.command("forget")(forget_cmd)
    app.command("export")(export_cmd)
    app.command("import")(import_cmd)
    app.command("demo")(demo_cmd)
