"""``make demo`` / ``chronomem demo``: the main job on the embedded default (SQLite + local model).

Ingests the bundled three-session conversation through the REAL write path,
shows the graph (now, then, what changed, what is only tentative), then
answers questions about the present and the past from it.
"""

from __future__ import annotations

from rich.markup import escape

from ..memory import Memory
from .add import run_demo
from .render import data_console

QUESTIONS = (
    ("Where does Maya live?", None),
    ("Where did Maya live in March 2023?", None),
    ("Where does Maya work?", "2023-03-01"),
)


def run(mem: Memory, user: str = "maya") -> None:
    run_demo(mem, user)
    out = data_console()
    out.print("[bold]Answers from the memory (REAL search + one model call each)[/]")
    for question, as_of in QUESTIONS:
        ans = mem.answer(question, user_id=user, as_of=as_of, method="real")
        when = f" (as of {as_of})" if as_of else ""
        # two facts read from one statement ("lives in Berlin and works at Acme") render alike: show it once
        shown = list(dict.fromkeys(f.render() for f in ans.evidence))[:3]
        out.print(f"  Q: {question}{when}\n  A: [green]{escape(ans.text)}[/]   evidence: "
                  + escape("; ".join(shown)))  # the model's reply and the facts are no markup
    out.print(f"model usage: {mem.usage.snapshot()}", markup=False)
