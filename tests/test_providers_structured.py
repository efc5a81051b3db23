"""Structured-output repair, capping and validation (no model needed)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field

from chronomem.errors import ValidationError
from chronomem.providers.structured import (
    NoJSONFound,
    OutputSchema,
    SchemaMismatch,
    cap_arrays,
    close_truncated,
    extract_json,
    validate_instance,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": 1}', {"a": 1}),
        ('```json\n{"a": [1, 2]}\n```', {"a": [1, 2]}),
        ("```\n[1, 2]\n```", [1, 2]),
        ('Sure! Here it is: {"a": "b"} Let me know if you need more.', {"a": "b"}),
        ('{"a": 1}\n{"a": 2}', {"a": 1}),  # a second object after the first: ignored
        ('{"a": 1,}', {"a": 1}),
        ('{"a": [1, 2,]}', {"a": [1, 2]}),
        ('{"a": "x", "b": "unfinished', {"a": "x"}),
        ('{"a": "x", "b', {"a": "x"}),
        ('{"a": "x", "b": ', {"a": "x"}),
        ('{"facts": [{"s": "A", "r": "r1"}, {"s": "B", "r": "r', {"facts": [{"s": "A", "r": "r1"}]}),
        ('["a", "b", "c', ["a", "b"]),
        ('```json\n{"items": ["a", "b"', {"items": ["a", "b"]}),
        ('{"s": "brace } and [bracket in a string", "t": "q\\"uote', {"s": "brace } and [bracket in a string"}),
    ],
)
def test_extract_json_repairs(text: str, expected: object) -> None:
    value, _ = extract_json(text)
    assert value == expected


def test_extract_json_reports_repair() -> None:
    assert extract_json('  {"a": 1}  ') == ({"a": 1}, False)
    assert extract_json('x {"a": 1}')[1] is True


@pytest.mark.parametrize("text", ["", "no json here", "{{{", "]"])
def test_extract_json_gives_up(text: str) -> None:
    with pytest.raises(NoJSONFound):
        extract_json(text)


def test_close_truncated_keep_partial() -> None:
    s = '[{"a": 1}, {"a": 2, "b": "x'
    assert json.loads(close_truncated(s)) == [{"a": 1}]
    assert json.loads(close_truncated(s, drop_partial=False)) == [{"a": 1}, {"a": 2}]


@settings(max_examples=150, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=8),
        lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=5), kids, max_size=4),
        max_leaves=20,
    ).filter(lambda v: isinstance(v, (list, dict))),
    st.data(),
)
def test_every_prefix_of_valid_json_repairs_to_json(value: object, data: st.DataObject) -> None:
    """Any cut of a serialised container is mended into *some* valid JSON of the same kind."""
    text = json.dumps(value)
    cut = data.draw(st.integers(min_value=1, max_value=len(text)))
    fixed = close_truncated(text[:cut])
    assert fixed is not None
    assert type(json.loads(fixed)) is type(value)


FACTS = {
    "type": "object",
    "properties": {
        "facts": {
            "type": "array",
            "maxItems": 2,
            "items": {
                "type": "object",
                "properties": {
                    "subject": {"type": "string"},
                    "certainty": {"enum": ["high", "low"]},
                    "year": {"type": ["integer", "null"]},
                },
                "required": ["subject", "certainty"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["facts"],
}


def test_validate_instance_ok_and_errors() -> None:
    ok = {"facts": [{"subject": "A", "certainty": "high", "year": 2019}, {"subject": "B", "certainty": "low", "year": None}]}
    assert validate_instance(ok, FACTS) == []
    bad = {"facts": [{"subject": 3, "certainty": "maybe", "extra": 1}]}
    errs = validate_instance(bad, FACTS)
    assert any("$.facts[0].subject: expected string" in e for e in errs)
    assert any("'maybe' is not one of" in e for e in errs)
    assert any("unexpected property 'extra'" in e for e in errs)
    assert validate_instance({}, FACTS) == ["$: missing required property 'facts'"]
    assert validate_instance(True, {"type": "integer"}) != []  # bool is not an integer
    assert validate_instance(3.0, {"type": "integer"}) == []


def test_prefix_items_validate_each_position() -> None:
    """Extraction v3+ replies are one slot per line (``prefixItems``): a remote model that the grammar
    does not hold must still answer each line in its place, with the line number it was given."""
    from chronomem.extract.line_observations import schema_for_lines

    schema = schema_for_lines([3, 4])
    ok = {"lines": [{"line": 3, "fact": None}, {"line": 4, "fact": None}]}
    assert validate_instance(ok, schema) == []
    swapped = {"lines": [{"line": 4, "fact": None}, {"line": 3, "fact": None}]}
    assert validate_instance(swapped, schema) == ["$.lines[0].line: must be 3", "$.lines[1].line: must be 4"]
    tuple_schema = {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}], "items": {"type": "null"}}
    assert validate_instance(["a", 1, None, None], tuple_schema) == []
    assert validate_instance([1, "a", 0], tuple_schema) == [
        "$[0]: expected string, got int", "$[1]: expected integer, got str", "$[2]: expected null, got int"]
    assert validate_instance(["a", 1, 2], {**tuple_schema, "items": False}) == ["$: more than 2 items"]


def test_refs_and_anyof() -> None:
    schema = {
        "$defs": {"P": {"type": "object", "properties": {"n": {"type": "string"}}, "required": ["n"]}},
        "type": "object",
        "properties": {"p": {"$ref": "#/$defs/P"}, "q": {"anyOf": [{"type": "string"}, {"type": "null"}]}},
    }
    assert validate_instance({"p": {"n": "x"}, "q": None}, schema) == []
    assert validate_instance({"p": {}}, schema) == ["$.p: missing required property 'n'"]
    assert validate_instance({"q": 1}, schema)[0].startswith("$.q: matches none of anyOf")


def test_cap_arrays_follows_schema() -> None:
    data = {"facts": [{"subject": str(i), "certainty": "high"} for i in range(5)]}
    cap_arrays(data, FACTS)
    assert [f["subject"] for f in data["facts"]] == ["0", "1"]


def test_output_schema_default_max_items_caps_unbounded_arrays() -> None:
    out = OutputSchema.of({"type": "array", "items": {"type": "integer"}}, default_max_items=3)
    assert out.json_schema["maxItems"] == 3
    assert out.parse("[1, 2, 3, 4, 5, 6]")[0] == [1, 2, 3]
    # an explicit maxItems is left alone
    assert OutputSchema.of({"type": "array", "maxItems": 9}, default_max_items=3).json_schema["maxItems"] == 9


class Fact(BaseModel):
    subject: str
    relation: str
    certainty: str = Field(pattern="^(high|low)$")


class Extraction(BaseModel):
    facts: list[Fact] = Field(default_factory=list, max_length=3)


def test_pydantic_schema_parse_and_errors() -> None:
    out = OutputSchema.of(Extraction, default_max_items=10)
    assert out.name == "Extraction"
    assert out.json_schema["properties"]["facts"]["maxItems"] == 3
    text = json.dumps({"facts": [{"subject": "A", "relation": "likes", "certainty": "high"}] * 5})
    data, _ = out.parse(text)
    assert isinstance(data, Extraction) and len(data.facts) == 3
    with pytest.raises(SchemaMismatch, match="certainty"):
        out.parse('{"facts": [{"subject": "A", "relation": "r", "certainty": "perhaps"}]}')


def test_pydantic_truncated_item_dropped_then_validates() -> None:
    out = OutputSchema.of(Extraction)
    text = '{"facts": [{"subject": "A", "relation": "likes", "certainty": "high"}, {"subject": "B", "rel'
    data, repaired = out.parse(text)
    assert repaired and [f.subject for f in data.facts] == ["A"]


def test_bad_schema_type() -> None:
    with pytest.raises(ValidationError):
        OutputSchema.of("not a schema")  # type: ignore[arg-type]
