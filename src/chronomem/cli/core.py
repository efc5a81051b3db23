"""Core commands: add-facts, facts, history, forget, export, import, demo."""

from __future__ import annotations

import dataclasses
import importlib
import json
import os
import stat
import sys
import tempfile
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import IO, Annotated, Any, Optional

import typer
from rich.markup import escape
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeElapsedColumn

from ..config import Config, config_path, expand_db_location
from ..errors import NotFoundError, ValidationError
from ..forgetting import ForgetResult
from ..jobs.queue import queue_url
from ..keys import DEFAULT_TENANT, check_tenant
from ..memory import Memory
from ..validation import check_user
from .render import console, data_console, facts_table

ENV_TENANT = "CHRONOMEM_TENANT"

DB_HELP = "database path or URL (default: $CHRONOMEM_DB, the config file's db, or the user data dir)"
DbOpt = Annotated[Optional[str], typer.Option("--db", help=DB_HELP)]
UserOpt = Annotated[str, typer.Option("--user", "-u", help="User id")]
TenantOpt = Annotated[Optional[str], typer.Option(
    "--tenant", envvar=ENV_TENANT, show_default=False,
    help="the tenant the user lives in (default: the default tenant, 'default')")]
JsonOpt = Annotated[bool, typer.Option("--json", help="print JSON")]

status = data_console(stderr=True, highlight=False)  # status lines; stdout carries the data


# --------------------------------------------------------------------------- opening the memory


def sqlite_file(location: str) -> str | None:
    """The SQLite file a database location names; None for a server URL or an in-memory database."""
    if location.startswith("sqlite:///"):
        location = location[len("sqlite:///"):]
    elif "://" in location:  # postgresql://… (or a scheme open_store refuses with its own message)
        return None
    return None if location in ("", ":memory:") else location


def db_location(db: str | None) -> str:
    """The database ``--db`` names (a leading ``~`` expanded: a quoted ``'~/x.db'`` reaches us as typed),
    else the configured one (``$CHRONOMEM_DB``, the config file's ``db``, the user data dir)."""
    return expand_db_location(db) if db else Config.load().db_location


def require_existing_db(db: str | None, flag: str = "--db") -> None:
    """Refuse a SQLite file given by ``--db`` (or ``$CHRONOMEM_DB``, or ``db`` in the config file) that
    does not exist, before anything opens it: opening would create an empty database, and a command
    that only reads or deletes would then report "nothing there" for a mistyped path.  The default
    location (the user data dir) and server URLs are left to the store.  ``flag`` names the option
    or argument ``db`` came from (``SRC`` of ``chronomem copy``)."""
    if db is not None:
        where, location = flag, db
    else:
        location = Config.load().db  # $CHRONOMEM_DB over the config file; "" = the default location
        where = "CHRONOMEM_DB" if os.environ.get("CHRONOMEM_DB") else f"db in {config_path()}"
    path = sqlite_file(expand_db_location(location))  # "~/memory.db" is the file in the home folder
    if path is not None and not Path(path).exists():
        raise NotFoundError(f"{where} names no database: {path} does not exist (this command only reads or "
                            f"changes what is there, so it creates none; check the path)")


def open_memory(db: str | None, tenant: str | None = None, *, existing: bool = False, **kwargs: Any) -> Memory:
    """The CLI's one way to open a :class:`Memory`: at ``db`` (default: the configured location), bound
    to ``tenant`` (default: the default tenant).  ``existing``: for commands that only read or delete,
    refuse a database file that does not exist (:func:`require_existing_db`) instead of creating it."""
    if tenant is not None:
        check_tenant(tenant)
    if existing:
        require_existing_db(db)
    # "~" expanded here: the store would make the folder ~/… names but open the literal path "~/…"
    return Memory(expand_db_location(db) if db else db, tenant=tenant, **kwargs)


def in_tenant(mem: Memory) -> str:
    """`` in tenant 'acme'`` for a tenant other than the default, else nothing (for status lines)."""
    return "" if mem.tenant == DEFAULT_TENANT else f" in tenant {mem.tenant!r}"


def read_records(path: Path) -> list[Any]:
    """Read a JSON array (or object) or JSONL file (a UTF-8 byte order mark is skipped, as ``import``
    does: editors on Windows write one)."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as e:
        raise ValidationError("file", str(path), f"cannot be read: {e.strerror}") from None
    except UnicodeDecodeError as e:
        raise ValidationError("file", str(path), f"is not UTF-8 text ({e.reason} at byte {e.start})") from None
    stripped = text.lstrip()
    line_no = 0
    try:
        if stripped.startswith("["):
            data = json.loads(text)
        elif path.suffix == ".jsonl" or "\n{" in stripped:
            data = []
            for line_no, line in enumerate(text.splitlines(), 1):  # a record's error names its own line
                if line.strip():
                    data.append(json.loads(line))
        else:
            data = json.loads(text)
    except json.JSONDecodeError as e:
        where = f"line {line_no} column {e.colno}" if line_no else f"line {e.lineno} column {e.colno}"
        raise ValidationError("file", str(path), f"is not valid JSON/JSONL: {e.msg} at {where}") from None
    except RecursionError:
        raise ValidationError("file", str(path), "is nested too deeply to be a chronomem file") from None
    return data if isinstance(data, list) else [data]


def add_facts_cmd(file: Path, user: UserOpt, db: DbOpt = None, tenant: TenantOpt = None) -> None:
    """Add structured facts from a JSON or JSONL file."""
    records = read_records(file)
    if records and isinstance(records[0], dict) and "facts" in records[0] and len(records) == 1:
        records = records[0]["facts"]
    if not records:
        raise ValidationError("file", str(file), "holds no facts")
    with open_memory(db, tenant) as mem:
        rep = mem.add_facts(records, user_id=user)
    console.print(f"added {len(rep.added)}, closed {len(rep.closed)}, reinforced {len(rep.reinforced)}")


def facts_cmd(user: UserOpt, subject: Annotated[Optional[str], typer.Option("--subject", "-s")] = None,
              relation: Annotated[Optional[str], typer.Option("--relation", "-r")] = None,
              as_of: Annotated[Optional[str], typer.Option("--as-of", help="ISO date or datetime")] = None,
              all_: Annotated[bool, typer.Option("--all", help="include unstable (low-confidence) facts")] = False,
              as_json: JsonOpt = False, db: DbOpt = None, tenant: TenantOpt = None) -> None:
    """Show the facts valid now (or at --as-of)."""
    with open_memory(db, tenant, existing=True) as mem:
        facts = mem.facts(user_id=user, subject=subject, relation=relation, as_of=as_of, include_unstable=all_)
        if as_json:
            console.print_json(json.dumps([f.to_dict() for f in facts]))
        elif not facts:
            about = "".join(f" {k} {v!r}" for k, v in (("about", subject), ("with relation", relation)) if v)
            console.print(f"no facts{about} for user {user!r}{in_tenant(mem)} valid {as_of or 'now'}"
                          + ("" if all_ else " (--all also shows unstable ones)"), markup=False)
        else:
            console.print(facts_table(facts, f"facts of {user} valid {as_of or 'now'}", mem.config.theta_stable))


def history_cmd(user: UserOpt, subject: str, relation: Annotated[Optional[str], typer.Argument()] = None,
                as_json: JsonOpt = False, db: DbOpt = None, tenant: TenantOpt = None) -> None:
    """Show every version of SUBJECT's facts (optionally of one RELATION), oldest first."""
    with open_memory(db, tenant, existing=True) as mem:
        facts = mem.history(user_id=user, subject=subject, relation=relation)
        if as_json:
            console.print_json(json.dumps([f.to_dict() for f in facts]))
        elif not facts:
            console.print(f"no facts about {subject!r}" + (f" with relation {relation!r}" if relation else "")
                          + f" for user {user!r}{in_tenant(mem)}, at any time", markup=False)  # ids are not rich markup
        else:
            console.print(facts_table(facts, f"history of {subject}", mem.config.theta_stable))


def alias_cmd(user: UserOpt, name: Annotated[str, typer.Argument(help="a name or alias of the entity")],
              alias: Annotated[str, typer.Argument(help="one more name for it (given by hand: forgetting "
                                                        "turns never takes it)")],
              db: DbOpt = None, tenant: TenantOpt = None) -> None:
    """Record ALIAS as one more name of the entity NAME ("NYC" for "New York City")."""
    with open_memory(db, tenant) as mem:
        try:
            e = mem.alias(name, alias, user_id=user)
        except ValidationError as err:  # Memory's hint names its Python method; here it is a command
            if "merge_entities" not in err.reason:
                raise
            raise ValidationError(err.field, err.value, err.reason.replace(
                "merge_entities", "`chronomem merge`")) from None
    names = f"is also {', '.join(repr(a) for a in e.aliases)}" if e.aliases else "has no other name"
    status.print(f"{e.name!r} {names}", markup=False, soft_wrap=True)  # "alias Maya Maya" adds none


def merge_cmd(user: UserOpt, name: Annotated[str, typer.Argument(help="a name, alias or entity id: the entity "
                                                                     "that becomes part of INTO")],
              into: Annotated[str, typer.Argument(help="a name, alias or entity id: the entity that stays")],
              as_json: JsonOpt = False, db: DbOpt = None, tenant: TenantOpt = None) -> None:
    """Make NAME and INTO one entity ("Mom" and "Linda"): NAME's facts and names move to INTO, its history
    is placed in time order with INTO's, and facts both said become one."""
    with open_memory(db, tenant, existing=True) as mem:
        res = mem.merge_entities(name, into, user_id=user)
    if as_json:
        typer.echo(json.dumps(res.to_dict()))
        return
    e = res.entity
    aka = f" (also {', '.join(repr(a) for a in e.aliases)})" if e.aliases else ""
    status.print(f"merged {name!r} into {e.name!r}{aka}: "
                 f"{counted(res.facts_moved, 'fact', 'facts')} moved, {res.facts_folded} of them said again "
                 f"what {e.name!r} already held", markup=False, soft_wrap=True)


def forget_cmd(user: UserOpt, fact: Annotated[Optional[str], typer.Option("--fact", help="a fact id (or its start, as "
                                                                                "the tables show it)")] = None,
               session: Annotated[Optional[str], typer.Option("--session", help="a session id: its turns, facts "
                                                                                "and summary")] = None,
               everything: Annotated[bool, typer.Option("--everything", help="everything stored about the "
                                                                             "user")] = False,
               yes: Annotated[bool, typer.Option("--yes", help="with --everything: do not ask for confirmation")] = False,
               wait: Annotated[bool, typer.Option("--wait", help="with --session: rewrite the later summaries "
                                                                 "here, before returning")] = False,
               as_json: JsonOpt = False, db: DbOpt = None, tenant: TenantOpt = None) -> None:
    """Delete a fact, a session or everything of a user, for real (give exactly one of --fact, --session,
    --everything).  Forgetting everything of a user who has nothing stored is an error (exit 2): it
    usually means a wrong --user, --tenant or --db.

    The summaries written after a forgotten session are erased at once and a job rewrites them without
    it: this command returns without a model call and names the job.  Without a broker
    ($CHRONOMEM_QUEUE_URL) it is left in the database for `chronomem serve` (or any process running this
    memory's jobs) to run, and the user's next session end rewrites them first; --wait does it now."""
    if sum((fact is not None, session is not None, everything)) != 1:
        raise typer.BadParameter("give exactly one of --fact ID, --session ID or --everything")
    with open_memory(db, tenant, existing=True) as mem:
        if everything:
            confirm_forget_everything(mem, user, yes)
        if fact is not None:
            fact = full_fact_id(mem, user, fact)
        # a broker's workers run the job now; an in-process queue would run it in this process, which exits
        res = mem.forget(user_id=user, fact_id=fact, session_id=session, everything=everything, wait=wait,
                         deliver=queue_url() is not None)
    if everything and not (res.facts_deleted or res.messages_deleted or res.sessions_deleted
                           or res.entities_deleted):
        raise nothing_stored(user, mem.tenant)  # a session buffer was checked: it held nothing either
    for w in res.warnings:
        status.print(f"warning: {w}", markup=False, soft_wrap=True)
    if as_json:
        typer.echo(json.dumps(dataclasses.asdict(res)))
    else:
        status.print(forget_report(res, user, mem.tenant), markup=False, soft_wrap=True)


def nothing_stored(user: str, tenant: str, outcome: str = "nothing was deleted") -> NotFoundError:
    return NotFoundError(f"user {user!r} has nothing stored in tenant {tenant!r} (check --user, --tenant "
                         f"and --db); {outcome}")


def require_stored(mem: Memory, user: str, outcome: str = "nothing was deleted") -> None:
    """Refuse a user with nothing stored (unless a session buffer may hold their only turns): it usually
    means a wrong --user, --tenant or --db."""
    if check_user(user) not in mem.users() and not mem.buffered:
        raise nothing_stored(user, mem.tenant, outcome)


def confirm_forget_everything(mem: Memory, user: str, yes: bool) -> None:
    """Refuse a user with nothing stored (:func:`require_stored`), then ask."""
    require_stored(mem, user)
    if not yes:
        confirm(f"Delete everything stored for user {user!r} in tenant {mem.tenant!r}?")


def confirm(question: str) -> None:
    """Ask ``question`` on stderr and abort unless the answer is yes.  With --json, stdout must hold
    the JSON and nothing else, and ``typer.confirm(err=True)`` still writes its prompt's last
    character (a space) to stdout: it goes through ``input()``."""
    typer.echo(f"{question} [y/N]: ", nl=False, err=True)
    answer = sys.stdin.readline()
    if not sys.stdin.isatty():  # a terminal echoed the answer's newline; piped input did not
        typer.echo(err=True)
    if answer.strip().lower() not in ("y", "yes"):  # "" at end of input: no
        raise typer.Abort()


def counted(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def forget_report(res: ForgetResult, user: str, tenant: str) -> str:
    """One readable line: what ``forget`` deleted and repaired."""
    line = (f"forgot {counted(res.facts_deleted, 'fact', 'facts')}, "
            f"{counted(res.messages_deleted, 'turn', 'turns')}, "
            f"{counted(res.sessions_deleted, 'session', 'sessions')} and "
            f"{counted(res.entities_deleted, 'entity', 'entities')} of user {user!r} in tenant {tenant!r}")
    extras = [counted(res.entities_renamed, "entity renamed to a spelling still said",
                      "entities renamed to spellings still said"),
              counted(res.reopened, "fact it had closed holds again", "facts it had closed hold again"),
              counted(res.rejoined, "stint it kept apart joined to its fact",
                      "stints it kept apart joined to their facts"),
              counted(res.summaries_rebuilt, "later summary rebuilt", "later summaries rebuilt"),
              counted(res.cache_entries_deleted, "cached model entry purged", "cached model entries purged")]
    line += "".join(f"; {e}" for e in extras if not e.startswith("0 "))
    if res.summaries_pending and res.job_id is not None:
        line += (f"; {counted(res.summaries_pending, 'later summary', 'later summaries')} erased, to be rewritten "
                 f"without it by job {res.job_id} (until then the summary is the one from before it)")
    return line


def full_fact_id(mem: Memory, user: str, given: str) -> str:
    """The fact id ``given`` names: itself, or the one stored id it begins (``facts`` and ``history``
    show the first 8 characters); an ambiguous or unknown prefix is left for forget to refuse."""
    if len(given) < 4 or mem.store.facts(user, ids=[given]):
        return given
    matches = [f.id for f in mem.history(user_id=user, other_side=False) if f.id.startswith(given)]
    if len(matches) > 1:
        raise ValidationError("--fact", given, f"names {len(matches)} facts; give more of the id")
    return matches[0] if matches else given


OUT_HELP = ("write the export to this file: it is replaced whole or not at all, keeping its permissions "
            "(a new file is readable by you only); a symlink's target is written")


def export_cmd(user: UserOpt, out: Annotated[Optional[Path], typer.Option("--out", "-o", help=OUT_HELP)] = None,
               db: DbOpt = None, tenant: TenantOpt = None) -> None:
    """Export a user's memory as JSON (stdout or --out).  Exporting a user with nothing stored is an
    error (exit 2), as forgetting them is: it usually means a wrong --user, --tenant or --db."""
    if out is not None and out.is_dir():
        raise ValidationError("--out", str(out), "is a directory; give a file name")
    with open_memory(db, tenant, existing=True) as mem:  # a batch of rows in memory at a time, not the user
        require_stored(mem, user, "nothing was exported")
        if out:
            write_atomically(out, lambda fp: mem.export_to(fp, user_id=user))
        else:
            mem.export_to(sys.stdout.buffer, user_id=user)
            sys.stdout.buffer.write(b"\n")
            sys.stdout.buffer.flush()


def write_atomically(path: Path, write: Callable[[IO[bytes]], object]) -> None:
    """Call ``write`` with a file in the same folder as the file ``path`` names and move it there: whole
    or not at all, and still the file it was.

    A symlink is followed (its target is replaced; the link stays a link).  The replacement keeps an
    existing file's permission bits (and owner, where allowed): a private 0600 export stays private.
    A new file is created 0600: an export is a dump of someone's memory, not for every local user to
    read.  A target that is neither a regular file nor missing (a FIFO, ``/dev/stdout``, a shell's
    ``>(…)``) cannot be replaced by a file: it is written directly, as a shell redirection would."""
    def refuse(e: OSError) -> ValidationError:
        return ValidationError("--out", str(path), f"cannot be written: {e.strerror or e}")

    try:
        st: os.stat_result | None = os.stat(path)  # follows links, /dev/stdout's to a pipe included
    except FileNotFoundError:
        st = None
    except OSError as e:
        raise refuse(e) from None
    if st is not None and not stat.S_ISREG(st.st_mode):
        try:
            with open(path, "wb") as direct:
                write(direct)
        except OSError as e:
            raise refuse(e) from None
        return
    target = Path(os.path.realpath(path))  # a (dangling) symlink: write where it points
    try:
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")  # mode 0600
    except OSError as e:
        raise refuse(e) from None
    try:
        with os.fdopen(fd, "wb") as fp:
            if st is not None:
                keep_owner_and_mode(fp.fileno(), st)
            write(fp)
        os.replace(tmp, target)
    except OSError as e:
        Path(tmp).unlink(missing_ok=True)
        raise refuse(e) from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def keep_owner_and_mode(fd: int, st: os.stat_result) -> None:
    """Give the file open at ``fd`` the owner (where allowed) and permission bits ``st`` describes."""
    if (st.st_uid, st.st_gid) != (os.geteuid(), os.getegid()):
        try:  # root exporting over a user's file leaves it theirs; others may not chown: that is fine
            os.fchown(fd, st.st_uid, st.st_gid)
        except OSError:
            pass
    os.fchmod(fd, stat.S_IMODE(st.st_mode))  # after chown, which may clear set-id bits


def import_cmd(file: Path, user: Annotated[Optional[str], typer.Option(
                   "--user", "-u", help="User id to import into (default: the export's own)")] = None,
               db: DbOpt = None, tenant: TenantOpt = None) -> None:
    """Import a JSON export (optionally into another user id), a batch of rows at a time."""
    try:
        fp = open(file, "rb")
    except OSError as e:
        raise ValidationError("file", str(file), f"cannot be read: {e.strerror}") from None
    with fp, open_memory(db, tenant) as mem, Progress(
            TextColumn("{task.description}", markup=False), BarColumn(), DownloadColumn(), TimeElapsedColumn(),
            console=status, transient=True, disable=not status.is_terminal) as progress:
        try:  # the bar follows the bytes read: a large export takes a while
            read = progress.wrap_file(fp, total=os.fstat(fp.fileno()).st_size, description=f"importing {file.name}")
            counts = mem.import_from(read, user_id=user)
        except ValidationError as e:  # the file's contents: name the file
            if e.field != "data" and not e.field.startswith("data."):
                raise
            raise ValidationError(e.field, e.value, f"{e.reason} (in {file})") from None
    added = ", ".join(f"{n} {table}" for table, n in counts.items() if n and table != "already_present")
    console.print(f"imported {added or 'nothing new'}"
                  + (f"; {counts['already_present']} row(s) were there already" if counts["already_present"]
                     else ""), markup=False)


def demo_graph(mem: Memory, user: str = "demo") -> None:
    """Show the temporal graph on the bundled structured sample."""
    sample = json.loads(resources.files("chronomem.data").joinpath("sample_facts.json").read_text("utf-8"))
    mem.forget(user_id=user, everything=True)
    for step in sample["steps"]:
        rep = mem.add_facts(step["facts"], user_id=user)
        console.print(f"[bold]{escape(step['said'])}[/]  → added {len(rep.added)}, closed "
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
    with open_memory(path) as mem:
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
    app.command("alias")(alias_cmd)
    app.command("merge")(merge_cmd)
    app.command("forget")(forget_cmd)
    app.command("export")(export_cmd)
    app.command("import")(import_cmd)
    app.command("demo")(demo_cmd)
