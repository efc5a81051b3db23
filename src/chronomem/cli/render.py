"""Rich rendering helpers shared by the CLI commands.

Stored data, names and model output are never rich markup: a fact object ``[/INST]`` or ``[red]wine``
and a key named ``:smile:`` must print as they are, not fail or turn into colours and emoji.  Data goes
to rich as :class:`~rich.text.Text` (:func:`plain`), or through :func:`rich.markup.escape` inside a
string that holds markup of our own, and every console of the CLI has emoji codes off (:func:`data_console`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..model import Fact


def data_console(**kwargs: Any) -> Console:
    """A console for text that holds data: ``:name:`` codes in a name or a model's reply stay as typed."""
    return Console(emoji=False, **kwargs)


console = data_console()


def plain(value: object, style: str = "") -> Text:
    """``value`` as literal text: rich reads neither markup nor emoji codes in a :class:`Text`."""
    return Text(str(value), style=style)


def interval(f: Fact) -> str:
    start = f.valid_from.date().isoformat() if f.valid_from else "?"
    if f.start_guessed:  # not said: the stint began no earlier than the stints before it ended
        start = f"after {start}"
    if f.superseded:
        return f"{start}, superseded by {f.closed_by[:8]}"  # type: ignore[index]
    end = f.valid_to.date().isoformat() if f.valid_to else "now"
    return f"{start} → {end}"


def facts_table(facts: Sequence[Fact], title: str, theta: float) -> Table:
    t = Table(title=plain(title, "table.title"), show_lines=False)  # it names a user or subject: data too
    for col in ("subject", "relation", "object", "valid", "conf", "origin", "id"):
        t.add_column(col, overflow="fold")
    for f in facts:
        style = "dim" if f.confidence < theta or f.superseded else ("" if f.valid_to is None else "yellow")
        t.add_row(plain(f.subject), plain(f.relation), plain(f.object), interval(f), f"{f.confidence:.2f}",
                  f.origin.value, plain(f"rule: {f.rule}" if f.rule else f.id[:8]), style=style)
    return t
