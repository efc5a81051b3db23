"""The examples in the package's docstrings run as tests (``make test`` would otherwise never check them)."""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

import chronomem

PKG = Path(chronomem.__file__).parent
#: every module whose source holds an example
MODULES = sorted(
    ".".join(("chronomem", *p.relative_to(PKG).with_suffix("").parts)).removesuffix(".__init__")
    for p in PKG.rglob("*.py") if ">>> " in p.read_text(encoding="utf-8"))


def test_the_examples_are_found() -> None:
    assert "chronomem.retrieve.fusion" in MODULES and "chronomem.extract.states" in MODULES


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0, f"{name}: {result.failed} of {result.attempted} failed"
