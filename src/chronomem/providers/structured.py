"""Structured output: schemas, JSON repair, array caps and validation.

Models — small local ones especially — break JSON in a few typical ways:
code fences around it, prose before or after it, an object cut off by the
token limit, or a list that never ends.  This module turns a raw completion
into validated data:

1. :func:`extract_json` strips fences, skips leading prose, ignores trailing
   text, and closes a truncated value by dropping its incomplete tail
   (:func:`close_truncated`);
2. :meth:`OutputSchema.parse` caps arrays at their ``maxItems`` and validates,
   with pydantic for a pydantic class or with :func:`validate_instance` (a
   small JSON-schema subset) for a dict schema.

The retry-with-feedback loop around it lives in :mod:`.chat`.
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass, field
from typing import Any

from ..errors import ValidationError

SchemaLike = dict[str, Any] | type


class SchemaMismatch(ValueError):
    """Parsed JSON does not satisfy the schema (``errors`` lists why)."""

    def __init__(self, errors: list[str]) -> None:
        self.errors = errors
        super().__init__("; ".join(errors[:8]))


class NoJSONFound(ValueError):
    """No JSON value could be recovered from the text."""


# --------------------------------------------------------------------------- repair

_FENCE_RE = re.compile(r"```(?:json|JSON)?[ \t]*\n?(.*?)(?:```|\Z)", re.S)


def strip_code_fences(text: str) -> str:
    """Return the inside of the first fenced block, or the text unchanged."""
    m = _FENCE_RE.search(text)
    return m.group(1) if m else text


def close_truncated(s: str, *, drop_partial: bool = True) -> str | None:
    """Close a JSON value cut off mid-way, dropping its incomplete last element.

    ``s`` must start with ``{`` or ``[``.  With ``drop_partial`` an unfinished
    object or array that is an element of an array is dropped whole (a
    half-written list item is usually missing required fields); otherwise
    only its unfinished member is.  Returns ``None`` when the text is not a
    truncated prefix of JSON this function can mend.
    """
    stack: list[str] = []  # open containers: "{" or "["
    starts: list[int] = []  # where each open container began
    obj_state: list[str] = []  # per open container: "key" | "colon" | "value" | "after" ("-" for arrays)
    in_str = False
    esc = False
    str_is_key = False
    best: tuple[int, list[str], list[int]] | None = None  # cut position and the stack there

    def mark(pos: int) -> None:
        nonlocal best
        best = (pos, list(stack), list(starts))

    i = 0
    n = len(s)
    while i < n:
        c = s[i]
        if in_str:
            if esc:
                esc = False
            elif c == "\\":
                esc = True
            elif c == '"':
                in_str = False
                if stack and stack[-1] == "{" and str_is_key:
                    obj_state[-1] = "colon"
                else:
                    if stack and stack[-1] == "{":
                        obj_state[-1] = "after"
                    mark(i + 1)
            i += 1
            continue
        if c == '"':
            in_str = True
            str_is_key = bool(stack) and stack[-1] == "{" and obj_state[-1] == "key"
        elif c in "{[":
            stack.append(c)
            starts.append(i)
            obj_state.append("key" if c == "{" else "-")
            mark(i + 1)
        elif c in "}]":
            if not stack or (c == "}") != (stack[-1] == "{"):
                return None
            stack.pop()
            starts.pop()
            obj_state.pop()
            if stack and stack[-1] == "{":
                obj_state[-1] = "after"
            mark(i + 1)
            if not stack:
                return s[: i + 1]
        elif c == ",":
            if not stack:
                return None
            mark(i)
            if stack[-1] == "{":
                obj_state[-1] = "key"
        elif c == ":":
            if stack and stack[-1] == "{":
                obj_state[-1] = "value"
        i += 1
    if best is None:
        return None
    pos, open_stack, open_starts = best
    if drop_partial:
        for j in range(1, len(open_stack)):
            if open_stack[j - 1] == "[":
                pos, open_stack = open_starts[j], open_stack[:j]
                break
    head = s[:pos].rstrip()
    if head.endswith(","):
        head = head[:-1]
    return head + "".join("}" if o == "{" else "]" for o in reversed(open_stack))


def _first_json_start(text: str) -> int:
    positions = [p for p in (text.find("{"), text.find("[")) if p >= 0]
    return min(positions) if positions else -1


def extract_json(text: str, *, drop_partial: bool = True) -> tuple[Any, bool]:
    """Recover the JSON value in ``text``.

    Returns ``(value, repaired)``: ``repaired`` is True when anything beyond
    whitespace had to be removed or added.  Raises :class:`NoJSONFound`.
    """
    stripped = text.strip()
    try:
        return json.loads(stripped), False
    except ValueError:
        pass
    body = strip_code_fences(stripped).strip()
    start = _first_json_start(body)
    candidates = [body[start:]] if start >= 0 else []
    # a fenced block may itself be cut off; also try the unfenced text
    if body is not stripped:
        s2 = _first_json_start(stripped)
        if s2 >= 0:
            candidates.append(stripped[s2:])
    decoder = json.JSONDecoder()
    for cand in candidates:
        try:
            value, _end = decoder.raw_decode(cand)  # ignores trailing prose
            return value, True
        except ValueError:
            pass
        for fixed in (_drop_trailing_commas(cand), close_truncated(cand, drop_partial=drop_partial)):
            if fixed is None:
                continue
            try:
                value, _end = decoder.raw_decode(fixed)
                return value, True
            except ValueError:
                closed = close_truncated(fixed, drop_partial=drop_partial)
                if closed is not None and closed != fixed:
                    try:
                        return decoder.raw_decode(closed)[0], True
                    except ValueError:
                        pass
    raise NoJSONFound(f"no JSON value found in model output ({len(text)} chars)")


def is_cut_off(text: str) -> bool:
    """True when the reply's JSON value stops before its end (it can only be read by closing it).

    A reply whose JSON is complete is not cut off, whatever follows it; nor is one that
    only needs code fences or a trailing comma removed.
    """
    body = strip_code_fences(text.strip()).strip()
    start = _first_json_start(body)
    if start < 0:
        return False
    cand = body[start:]
    decoder = json.JSONDecoder()
    for attempt in (cand, _drop_trailing_commas(cand)):
        if attempt is None:
            continue
        try:
            decoder.raw_decode(attempt)
            return False
        except ValueError:
            pass
    return close_truncated(cand) is not None


def reaches_cap(data: Any, schema: dict[str, Any], root: dict[str, Any] | None = None) -> bool:
    """Does some array in ``data`` already hold its schema's ``maxItems`` (or more)?

    When a cut-off reply's arrays are full, :func:`cap_arrays` would drop whatever
    followed the cut anyway, so closing the reply loses nothing.
    """
    root = root if root is not None else schema
    node = _resolve(schema, root) if isinstance(schema, dict) else {}
    if isinstance(data, list):
        limit = node.get("maxItems")
        if isinstance(limit, int) and len(data) >= limit:
            return True
        items = node.get("items")
        return isinstance(items, dict) and any(reaches_cap(x, items, root) for x in data)
    if isinstance(data, dict):
        props = node.get("properties") or {}
        if any(isinstance(props.get(k), dict) and reaches_cap(v, props[k], root) for k, v in data.items()):
            return True
    return any(isinstance(alt, dict) and reaches_cap(data, alt, root)
               for key in ("anyOf", "oneOf", "allOf") for alt in node.get(key, []) or [])


def loses_data_to_truncation(text: str, schema: dict[str, Any]) -> bool:
    """True when ``text`` was cut off before its arrays were full: closing it would silently
    drop what the model was still writing (a half-written fact, the facts after it)."""
    if not is_cut_off(text):
        return False
    try:
        value, _ = extract_json(text)
    except NoJSONFound:
        return False
    return not reaches_cap(value, schema)


_TRAILING_COMMA_RE = re.compile(r",(\s*[}\]])")


def _drop_trailing_commas(s: str) -> str | None:
    fixed = _TRAILING_COMMA_RE.sub(r"\1", s)
    return fixed if fixed != s else None


# --------------------------------------------------------------------------- schemas


def _resolve(node: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    seen = 0
    while isinstance(node, dict) and "$ref" in node and seen < 32:
        ref = node["$ref"]
        if not isinstance(ref, str) or not ref.startswith("#/"):
            raise ValidationError("schema.$ref", ref, "only local references (#/...) are supported")
        target: Any = root
        for part in ref[2:].split("/"):
            target = target[part.replace("~1", "/").replace("~0", "~")]
        node = target
        seen += 1
    return node


def _with_default_max_items(schema: dict[str, Any], limit: int) -> dict[str, Any]:
    """Copy of ``schema`` where every array without ``maxItems`` gets ``limit``."""
    schema = copy.deepcopy(schema)

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            t = node.get("type")
            if (t == "array" or (isinstance(t, list) and "array" in t) or "items" in node) and "maxItems" not in node:
                node["maxItems"] = limit
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(schema)
    return schema


def cap_arrays(data: Any, schema: dict[str, Any], root: dict[str, Any] | None = None) -> Any:
    """Truncate arrays in ``data`` to their schema's ``maxItems`` (in place, also returned)."""
    root = root if root is not None else schema
    node = _resolve(schema, root) if isinstance(schema, dict) else {}
    if isinstance(data, list):
        limit = node.get("maxItems")
        if isinstance(limit, int) and len(data) > limit:
            del data[limit:]
        items = node.get("items")
        if isinstance(items, dict):
            for x in data:
                cap_arrays(x, items, root)
    elif isinstance(data, dict):
        props = node.get("properties") or {}
        for k, v in data.items():
            sub = props.get(k)
            if isinstance(sub, dict):
                cap_arrays(v, sub, root)
    for key in ("anyOf", "oneOf", "allOf"):
        for alt in node.get(key, []) or []:
            if isinstance(alt, dict):
                cap_arrays(data, alt, root)
    return data


_TYPES: dict[str, Any] = {
    "object": dict,
    "array": list,
    "string": str,
    "boolean": bool,
    "null": type(None),
}


def _type_ok(value: Any, t: str) -> bool:
    if t == "integer":
        return isinstance(value, int) and not isinstance(value, bool) or (
            isinstance(value, float) and value.is_integer()
        )
    if t == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    py = _TYPES.get(t)
    return True if py is None else isinstance(value, py) and not (t != "boolean" and isinstance(value, bool))


def validate_instance(data: Any, schema: dict[str, Any], root: dict[str, Any] | None = None, path: str = "$") -> list[str]:
    """Validate ``data`` against a JSON-schema subset; return a list of errors (empty = valid).

    Supported: ``type`` (also lists), ``enum``, ``const``, ``properties``,
    ``required``, ``additionalProperties`` (bool or schema), ``prefixItems``
    and ``items`` (for the items after them), ``minItems``/``maxItems``, ``minLength``/``maxLength``, ``minimum``/
    ``maximum``, ``anyOf``/``oneOf``/``allOf`` and local ``$ref``.  Other
    keywords are ignored.
    """
    root = root if root is not None else schema
    s = _resolve(schema, root)
    errs: list[str] = []
    if not isinstance(s, dict) or not s:
        return errs
    t = s.get("type")
    if t is not None:
        types = t if isinstance(t, list) else [t]
        if not any(_type_ok(data, x) for x in types):
            return [f"{path}: expected {'/'.join(types)}, got {type(data).__name__}"]
    if "enum" in s and data not in s["enum"]:
        errs.append(f"{path}: {data!r} is not one of {s['enum']}")
    if "const" in s and data != s["const"]:
        errs.append(f"{path}: must be {s['const']!r}")
    if isinstance(data, dict):
        props = s.get("properties") or {}
        for req in s.get("required", []) or []:
            if req not in data:
                errs.append(f"{path}: missing required property {req!r}")
        extra = s.get("additionalProperties", True)
        for k, v in data.items():
            if k in props:
                errs.extend(validate_instance(v, props[k], root, f"{path}.{k}"))
            elif extra is False:
                errs.append(f"{path}: unexpected property {k!r}")
            elif isinstance(extra, dict):
                errs.extend(validate_instance(v, extra, root, f"{path}.{k}"))
    if isinstance(data, list):
        if "minItems" in s and len(data) < s["minItems"]:
            errs.append(f"{path}: fewer than {s['minItems']} items")
        if "maxItems" in s and len(data) > s["maxItems"]:
            errs.append(f"{path}: more than {s['maxItems']} items")
        prefix = s.get("prefixItems")
        prefix = prefix if isinstance(prefix, list) else []
        for i, (x, sub) in enumerate(zip(data, prefix)):  # the line slots of extraction v3+ replies
            if isinstance(sub, dict):
                errs.extend(validate_instance(x, sub, root, f"{path}[{i}]"))
        items = s.get("items")
        if isinstance(items, dict):
            for i, x in enumerate(data[len(prefix):], start=len(prefix)):
                errs.extend(validate_instance(x, items, root, f"{path}[{i}]"))
        elif items is False and len(data) > len(prefix):
            errs.append(f"{path}: more than {len(prefix)} items")
    if isinstance(data, str):
        if "minLength" in s and len(data) < s["minLength"]:
            errs.append(f"{path}: shorter than {s['minLength']}")
        if "maxLength" in s and len(data) > s["maxLength"]:
            errs.append(f"{path}: longer than {s['maxLength']}")
    if isinstance(data, (int, float)) and not isinstance(data, bool):
        if "minimum" in s and data < s["minimum"]:
            errs.append(f"{path}: {data} < minimum {s['minimum']}")
        if "maximum" in s and data > s["maximum"]:
            errs.append(f"{path}: {data} > maximum {s['maximum']}")
    for key in ("anyOf", "oneOf"):
        alts = s.get(key)
        if alts:
            results = [validate_instance(data, a, root, path) for a in alts]
            if all(results):
                errs.append(f"{path}: matches none of {key}: " + " | ".join(r[0] for r in results if r))
    for a in s.get("allOf", []) or []:
        errs.extend(validate_instance(data, a, root, path))
    return errs


def _is_pydantic_model(obj: Any) -> bool:
    return isinstance(obj, type) and hasattr(obj, "model_json_schema") and hasattr(obj, "model_validate")


@dataclass(slots=True)
class OutputSchema:
    """A schema the reply must satisfy, in both forms: JSON schema and (optionally) pydantic."""

    json_schema: dict[str, Any]
    model: type | None = None
    name: str = "output"
    _plain_root: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def of(cls, schema: SchemaLike, *, default_max_items: int | None = None) -> OutputSchema:
        """Build from a JSON-schema dict or a pydantic ``BaseModel`` subclass.

        ``default_max_items`` adds ``maxItems`` to arrays that have none, so a
        looping model is cut off by the grammar and by :func:`cap_arrays`.
        """
        if _is_pydantic_model(schema):
            js: dict[str, Any] = schema.model_json_schema()  # type: ignore[union-attr]
            model: type | None = schema  # type: ignore[assignment]
            name = schema.__name__  # type: ignore[union-attr]
        elif isinstance(schema, dict):
            js, model, name = schema, None, str(schema.get("title") or "output")
        else:
            raise ValidationError("schema", schema, "expected a JSON schema dict or a pydantic model class")
        if default_max_items is not None:
            js = _with_default_max_items(js, default_max_items)
        name = re.sub(r"[^A-Za-z0-9_-]", "_", name)[:64] or "output"
        return cls(json_schema=js, model=model, name=name)

    def fingerprint(self) -> str:
        """Stable text of the schema, for cache keys."""
        return json.dumps(self.json_schema, sort_keys=True, separators=(",", ":"))

    def validate(self, data: Any) -> Any:
        """Cap arrays, validate, and return the data (a pydantic instance for a model schema)."""
        cap_arrays(data, self.json_schema)
        if self.model is not None:
            from pydantic import ValidationError as PydanticValidationError

            try:
                return self.model.model_validate(data)  # type: ignore[attr-defined]
            except PydanticValidationError as e:
                raise SchemaMismatch(
                    [f"$.{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in e.errors()]
                ) from None
        errors = validate_instance(data, self.json_schema)
        if errors:
            raise SchemaMismatch(errors)
        return data

    def parse(self, text: str) -> tuple[Any, bool]:
        """Extract, repair, cap and validate ``text``; return ``(data, repaired)``.

        Raises :class:`NoJSONFound` or :class:`SchemaMismatch`.
        """
        value, repaired = extract_json(text)
        try:
            return self.validate(value), repaired
        except SchemaMismatch:
            if not repaired:
                raise
            # a truncated list item was dropped whole; maybe keeping its complete members validates
            alt, _ = extract_json(text, drop_partial=False)
            if alt == value:
                raise
            return self.validate(alt), True


def to_plain(data: Any) -> Any:
    """JSON-compatible form of validated data (pydantic instances dumped)."""
    if hasattr(data, "model_dump"):
        return data.model_dump(mode="json")
    return data
