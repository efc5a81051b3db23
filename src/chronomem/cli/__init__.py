"""The ``chronomem`` command line.  Each group of commands lives in its own module."""

from __future__ import annotations

import importlib
import logging
import os
import sys
from typing import NoReturn

import typer

from ..errors import ChronomemError
from . import core

app = typer.Typer(name="chronomem", help="Long-term memory for LLM applications.",
                  no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)

core.register(app)

# sub-applications contributed by other modules: (module, attribute, command name)
_SUBAPPS = (("models", "app", "models"), ("bench", "app", "bench"), ("keys", "app", "keys"))
_COMMANDS = (("add", "register"), ("ask", "register"), ("session", "register"), ("serve", "register"), ("worker", "register"), ("mcp", "register"),
             ("store_admin", "register"))

for mod_name, attr, name in _SUBAPPS:
    try:
        mod = importlib.import_module(f"{__name__}.{mod_name}")
    except ModuleNotFoundError as e:  # the module itself is optional; a missing dependency is not
        if e.name != f"{__name__}.{mod_name}":
            raise
        continue
    app.add_typer(getattr(mod, attr), name=name)

for mod_name, fn in _COMMANDS:
    try:
        mod = importlib.import_module(f"{__name__}.{mod_name}")
    except ModuleNotFoundError as e:
        if e.name != f"{__name__}.{mod_name}":
            raise
        continue
    getattr(mod, fn)(app)


INTERRUPTED = 130  # the exit status of a command stopped by Ctrl-C (128 + SIGINT), as shells report it


def fail(message: str, code: int = 2) -> NoReturn:
    """Print one line ``error: …`` on stderr and exit with ``code``: never wrapped, whatever the
    terminal width, and the message is text, never rich markup."""
    from rich.console import Console
    from rich.markup import escape

    Console(stderr=True, soft_wrap=True, emoji=False, highlight=False).print(f"[bold red]error:[/] {escape(' '.join(message.split()))}")
    sys.exit(code)


def main(argv: list[str] | None = None) -> None:
    """The ``chronomem`` entry point: every error is one line on stderr and exit status 2.

    ``CHRONOMEM_DEBUG=1`` re-raises unexpected errors with their traceback.
    """
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        code = app(args=argv, standalone_mode=False)
    except ChronomemError as e:
        fail(str(e))
    except OSError as e:
        where = f" {e.filename}" if e.filename else ""
        fail(f"cannot access{where}: {e.strerror or e}")
    except KeyboardInterrupt:
        fail("interrupted", INTERRUPTED)
    except Exception as e:  # noqa: BLE001 - one line, unless CHRONOMEM_DEBUG asks for the traceback
        if type(e).__name__ == "Abort":  # a declined confirmation
            fail("aborted", 1)
        usage = getattr(e, "format_message", None)  # a usage error (Typer's vendored click)
        if callable(usage):
            if not usage():  # no arguments at all: the help was shown
                sys.exit(2)
            fail(f"{usage()} (chronomem --help lists the commands and options)")
        if os.environ.get("CHRONOMEM_DEBUG"):
            raise
        fail(f"unexpected {type(e).__name__}: {e} (set CHRONOMEM_DEBUG=1 for the traceback)")
    if code == INTERRUPTED:  # Typer turns Ctrl-C inside a command into Exit(130) itself: say so too
        fail("interrupted", INTERRUPTED)
    sys.exit(code if isinstance(code, int) else 0)
