"""SearchConfig / SearchOptions refuse values of the wrong type, naming the field."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import fields
from typing import Any

import pytest

from chronomem import SearchConfig, SearchOptions, ValidationError
from chronomem.retrieve import counterfactual as cf
from chronomem.retrieve.scoring import Weights

RULE = next(iter(sorted(cf.ALL_RULES)))


def wrong_config_values(name: str, default: Any) -> list[Any]:
    """Values of the wrong type (or shape) for a SearchConfig field, judged by its default."""
    if name == "embeddings":  # bool | None
        return ["no", 1, 0]
    if isinstance(default, bool):
        return ["no", "yes", 1, 0, None]
    if isinstance(default, int):
        return [True, False, 1.5, "3", None]
    if isinstance(default, float):
        return [True, False, "0.5", None, math.nan]
    if isinstance(default, Weights):
        return [None, (0.4, 0.2, 0.4), Weights(qr=True, lc=0.2, as_=0.4), Weights(qr=-0.1), Weights(qr=math.nan)]
    if isinstance(default, tuple):
        return [None, list(default), (True, *default[1:]), (*default, 0.5), ("0.5", *default[1:])]
    if isinstance(default, frozenset):
        return [None, RULE, [1], frozenset({"telepathy"})]
    if isinstance(default, Mapping):
        return [None, {RULE: True}, {RULE: "0.9"}, {RULE: 2.0}, {"telepathy": 0.5}]
    raise AssertionError(f"SearchConfig.{name}: no wrong values for its type; add them (and a check)")


CONFIG_CASES = [
    (f.name, bad)
    for f in fields(SearchConfig)
    for bad in wrong_config_values(f.name, getattr(SearchConfig(), f.name))
]


@pytest.mark.parametrize(("name", "bad"), CONFIG_CASES, ids=[f"{n}={b!r}" for n, b in CONFIG_CASES])
def test_search_config_refuses_a_wrong_type_naming_the_field(name: str, bad: Any) -> None:
    with pytest.raises(ValidationError) as e:
        SearchConfig(**{name: bad})
    assert e.value.field == f"config.{name}"


def test_every_search_config_field_is_covered_and_its_default_is_valid() -> None:
    covered = {name for name, _ in CONFIG_CASES}
    assert covered == {f.name for f in fields(SearchConfig)}
    SearchConfig(**{f.name: getattr(SearchConfig(), f.name) for f in fields(SearchConfig)})
    # the right types still pass: an int where a float is asked, a plain set of rules, None for embeddings
    cfg = SearchConfig(alpha=1, rules={RULE}, embeddings=None, evaluator_band=(0, 1), weights=Weights(1, 0, 0))
    assert cfg.alpha == 1 and cfg.rules == {RULE}


OPTION_CASES = [
    (f.name, bad)
    for f in fields(SearchOptions)
    for bad in (["no", 1, 0] if f.type.startswith("bool") else [True, False, 1.5, "3"])
]


@pytest.mark.parametrize(("name", "bad"), OPTION_CASES, ids=[f"{n}={b!r}" for n, b in OPTION_CASES])
def test_search_options_refuse_a_wrong_type_naming_the_field(name: str, bad: Any) -> None:
    with pytest.raises(ValidationError) as e:
        SearchOptions(**{name: bad})
    assert e.value.field == f"options.{name}"


def test_search_options_accept_none_and_the_right_types() -> None:
    for f in fields(SearchOptions):
        SearchOptions(**{f.name: None})
        SearchOptions(**{f.name: False if f.type.startswith("bool") else 2})
    cfg = SearchOptions(llm_assist=False, embeddings=False, context_tokens=300).apply(SearchConfig(evaluator=True))
    assert (cfg.evaluator, cfg.intent_llm, cfg.embeddings, cfg.context_tokens) == (False, False, False, 300)
