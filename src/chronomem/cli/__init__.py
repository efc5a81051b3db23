"""The ``chronomem`` command line.  Each group of commands lives in its own module."""

from __future__ import annotations

import importlib
import logging
import sys

import typer

from ..errors import ChronomemError
from . import core

app = typer.Typer(name="chronomem", help="Long-term memory for LLM applications.",
                  no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)

core.register(app)

# sub-applications contributed by other modules: (module, attribute, command name)
_SUBAPPS = (("models", "app", "models"), ("bench", "app", "bench"))
_COMMANDS = (("add", "register"), ("ask", "register"), ("session", "register"), ("serve", "register"), ("mcp", "register"),
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


def main() -> None:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        app()
    except ChronomemError as e:
        from rich.console import Console
        from rich.markup import escape

        # one line, whatever the terminal width; the message is text, never markup
        message = " ".join(str(e).split())
        Console(stderr=True, soft_wrap=True).print(f"[bold red]error:[/] {escape(message)}")
        sys.exit(2)
