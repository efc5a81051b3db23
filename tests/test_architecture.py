"""Layering rules, checked on the source with ``ast`` so they stay true.

- the building blocks (extract/, retrieve/, summarize/, store/, providers/) never import the
  ``Memory`` facade: they are built from explicit dependencies and ``Memory`` wires them;
- only the benchmark harness itself and the CLI import ``chronomem.bench``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import chronomem

PKG = Path(chronomem.__file__).parent
COMPONENTS = ("extract", "retrieve", "summarize", "store", "providers")


def imported_modules(path: Path) -> set[str]:
    """Absolute names of the chronomem modules ``path`` imports (also under TYPE_CHECKING or in functions)."""
    rel = path.relative_to(PKG.parent).with_suffix("")
    package = list(rel.parts[:-1]) if rel.name != "__init__" else list(rel.parts[:-1])
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            out.add(mod)
            out.update(f"{mod}.{a.name}" for a in node.names)  # "from . import memory"
    return {m for m in out if m == "chronomem" or m.startswith("chronomem.")}


def sources() -> list[Path]:
    return sorted(PKG.rglob("*.py"))


def test_the_rules_see_imports() -> None:
    """The checker itself: it finds relative, absolute and nested imports."""
    found = imported_modules(PKG / "memory.py")
    assert "chronomem.forgetting" in found and "chronomem.extract.pipeline" in found
    assert "chronomem.memory" in imported_modules(PKG / "__init__.py")


def test_components_do_not_import_the_facade() -> None:
    offenders = [f"{p.relative_to(PKG)} imports {m}" for p in sources()
                 if p.relative_to(PKG).parts[0] in COMPONENTS
                 for m in imported_modules(p) if m == "chronomem.memory" or m.startswith("chronomem.memory.")]
    assert offenders == []


def test_only_bench_and_cli_import_bench() -> None:
    offenders = [f"{p.relative_to(PKG)} imports {m}" for p in sources()
                 if p.relative_to(PKG).parts[0] not in ("bench", "cli")
                 for m in imported_modules(p) if m == "chronomem.bench" or m.startswith("chronomem.bench.")]
    assert offenders == []
