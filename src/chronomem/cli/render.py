"""Rich rendering helpers shared by the CLI commands."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.table import Table

from ..model import Fact

console = Console()


def interval(f: Fact) -> str:
    start = f.valid_from.date().isoformat() if f.valid_from else "?"
    if f.superseded:
        return f"{start}, superseded by {f.closed_by[:8]}"  # type: ignore[index]
    end = f.valid_to.date().isoformat() if f.valid_to else "now"
    return f"{start} → {end}"


def facts_table(facts: Sequence[Fact], title: str, theta: float) -> Table:
    t = Table(title=title, show_lines=False)
    for col in ("subject", "relation", "object", "valid", "conf", "origin", "id"):
        t.add_column(col, overflow="fold")
    for f in facts:
        style = "dim" if f.confidence < theta or f.superseded else ("" if f.valid_to is None else "yellow")
        t.add_row(f.subject, f.relation, f.object, interval(f), f"{f.confidence:.2f}",
                  f.origin.value, f"rule: {f.rule}" if f.rule else f.id[:8], style=style)
    return t
