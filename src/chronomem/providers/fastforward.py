"""Schema-guided decoding that feeds a JSON reply's fixed text to the model as prompt.

Under a JSON-schema grammar every token of the reply is a decoding step, keys, punctuation
and constants included, although the schema alone fixes them.  On a CPU a decoding step is
the expensive part of a call (the 1.5B model writes ≈ 11–14 tokens/s on these 2 cores), and
in extraction v3's slot replies about 30 of a filled slot's ≈ 50 tokens are fixed text.

For a schema of fixed shape, :func:`fill` writes the reply piece by piece instead: the fixed
text is appended to the prompt — evaluated with the rest of the prompt's new tokens, the
cached prefix reused — and the model decodes only the free parts, each under a small grammar:
a string's characters, a choice among an enum's values, ``true``/``false``, null or an object.
The engine primitive it needs is "continue this raw prompt under this grammar" (:data:`Continue`),
which llama.cpp's completion endpoint provides; a provider without it sends the schema in one call.

Supported (:func:`supports`): ``const``; ``null``; ``boolean``; ``string`` (``maxLength``
honoured) and string ``enum``; ``object`` whose properties are all required, written in
schema order, without additional properties; ``array`` with ``prefixItems`` and exactly that
many items; ``anyOf`` whose alternatives open differently (null or an object, say).

Token boundaries: fixed text never ends with the space before a value — the tokenizer joins
that space to the value (`` null``, `` {"``), so the value's first decoding step includes it —
and a string's grammar accepts the JSON punctuation after its closing quote, so a merged token
such as ``",`` stays available to the model; decoding stops at the quote (a stop string) and
the fixed text continues from there.  The reply is formatted as llama.cpp's JSON grammar lets
the 1.5B model write it (``{"key": value, …}``, array items one per line, and one property per line
in an object of several properties that are all objects or null).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

#: one character of a JSON string, as llama.cpp's JSON grammar spells it
_CHAR = r'[^"\\\x7F\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4})'
#: what may follow a closing quote or a literal in the reply: the merged tokens stay legal
_TAIL = r"tail ::= [ ,:}\]\n]*"
#: decoding steps allowed for a string without ``maxLength``
DEFAULT_STRING_TOKENS = 200


@dataclass(slots=True)
class Step:
    """One engine call: the decoded text (a stop string not included) and its cost."""

    text: str
    prompt_tokens: int = 0  # tokens the engine evaluated for the prompt (the cached prefix not counted)
    completion_tokens: int = 0
    finish_reason: str = "stop"


#: ``(prompt, grammar, max_tokens, stop) -> Step``: continue a raw prompt, decoding under a GBNF grammar
Continue = Callable[[str, str, int, "list[str] | None"], Step]


@dataclass(slots=True)
class Filled:
    """The reply :func:`fill` wrote and what it cost."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    calls: int
    truncated: bool  # the token budget ran out: ``text`` stops mid-value


class UnsupportedSchema(ValueError):
    """The schema has a part whose shape is not fixed (see :func:`supports`)."""


class _Budget(Exception):
    """The token budget ran out."""


def supports(schema: Any) -> bool:
    """Whether :func:`fill` can write replies for ``schema``."""
    try:
        _check(schema)
    except UnsupportedSchema:
        return False
    return True


def _check(s: Any) -> None:
    if not isinstance(s, dict):
        raise UnsupportedSchema(f"not a schema: {s!r}")
    if "const" in s:
        return
    if "anyOf" in s:
        alts = s["anyOf"]
        for a in alts:
            _check(a)
        openings = [_opening(a) for a in alts]
        for i, o in enumerate(openings):
            if any(j != i and p.startswith(o) for j, p in enumerate(openings)):
                raise UnsupportedSchema("anyOf alternatives that open alike")
        return
    t = s.get("type")
    if t in ("null", "boolean"):
        return
    if t == "string":
        if "enum" in s and not all(isinstance(e, str) and e and '"' not in e and "\\" not in e for e in s["enum"]):
            raise UnsupportedSchema("a string enum needs plain non-empty values")
        if any(k in s for k in ("pattern", "format", "minLength")):
            raise UnsupportedSchema("string constraints other than maxLength")
        return
    if t == "object":
        props = s.get("properties") or {}
        if not props or set(s.get("required", [])) != set(props) or s.get("additionalProperties", True) is not False:
            raise UnsupportedSchema("an object needs every property required and no additional ones")
        for v in props.values():
            _check(v)
        return
    if t == "array":
        items = s.get("prefixItems")
        if not items or s.get("minItems") != len(items) or s.get("maxItems") != len(items):
            raise UnsupportedSchema("an array needs prefixItems and exactly that many items")
        for v in items:
            _check(v)
        return
    raise UnsupportedSchema(f"unsupported type {t!r}")


def _opening(s: dict[str, Any]) -> str:
    """The fixed text an ``anyOf`` alternative starts with (after its lead, the space before a value)."""
    if "const" in s:
        return json.dumps(s["const"])
    t = s.get("type")
    if t == "null":
        return "null"
    if t == "object":
        key, sub = next(iter(s["properties"].items()))
        return "{" + json.dumps(key) + ":" + (' "' if sub.get("type") == "string" else "")
    if t == "string":
        return '"'
    if t == "array":
        return "["
    raise UnsupportedSchema(f"an anyOf alternative of type {t!r}")


def _holds_objects(s: dict[str, Any]) -> bool:
    """Whether an object schema has several properties and every one is (or may be) an object:
    such an object is a container of records and is written one property per line."""
    def may_be_object(v: dict[str, Any]) -> bool:
        return v.get("type") == "object" or any(a.get("type") == "object" for a in v.get("anyOf", []))

    return len(s["properties"]) > 1 and all(may_be_object(v) for v in s["properties"].values())


class _Writer:
    def __init__(self, engine: Continue, max_tokens: int) -> None:
        self.engine = engine
        self.left = max_tokens
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.calls = 0

    def _call(self, prompt: str, grammar: str, n: int, stop: list[str] | None) -> Step:
        if self.left <= 0:
            raise _Budget
        step = self.engine(prompt, grammar, min(n, self.left), stop)
        self.calls += 1
        self.prompt_tokens += step.prompt_tokens
        self.completion_tokens += step.completion_tokens
        self.left -= max(1, step.completion_tokens)
        return step

    def choice(self, prompt: str, options: list[str]) -> str:
        """The option the model picks, decoding one token at a time until only one fits."""
        got = ""
        while True:
            left = [o for o in options if o.startswith(got) or got.startswith(o)]
            done = [o for o in left if got.startswith(o)]
            if done:
                return max(done, key=len)
            if len(left) == 1:
                return left[0]
            grammar = "root ::= (" + " | ".join(json.dumps(o[len(got):]) for o in left) + ") tail\n" + _TAIL
            step = self._call(prompt + got, grammar, 1, None)
            if not step.text:
                return left[0]
            got += step.text

    def string(self, prompt: str, max_chars: int | None) -> str:
        """A string's characters and its closing quote (the opening quote is in ``prompt``)."""
        out = ""
        while True:
            bound = "*" if max_chars is None else f"{{0,{max(0, max_chars - len(out))}}}"
            grammar = f'root ::= char{bound} "\\"" tail\nchar ::= {_CHAR}\n{_TAIL}'
            n = DEFAULT_STRING_TOKENS if max_chars is None else max_chars + 2
            step = self._call(prompt + out, grammar, n, ['"'])
            out += step.text
            if step.finish_reason == "length":
                self.left = 0
                raise _Budget
            backslashes = len(out) - len(out.rstrip("\\"))
            if backslashes % 2 == 1:  # the stop string met an escaped quote: the string goes on
                out += '"'
                continue
            return out + '"'

    def value(self, prompt: str, s: dict[str, Any], lead: str, out: list[str]) -> None:
        """Append the value's text to ``out`` (``lead``: the space after a key's colon, or "")."""
        emit = out.append

        def here() -> str:  # the prompt and the reply so far: what the next call continues
            return prompt + "".join(out)

        if "const" in s:
            emit(lead + json.dumps(s["const"]))
            return
        if "anyOf" in s:
            alts = s["anyOf"]
            openings = [lead + _opening(a) for a in alts]
            pick = self.choice(here(), openings)
            alt = alts[openings.index(pick)]
            if alt.get("type") == "null" or "const" in alt:
                emit(pick)
            else:
                self.value(prompt, alt, lead, out)
            return
        t = s.get("type")
        if t == "null":
            emit(lead + "null")
        elif t == "boolean":
            emit(self.choice(here(), [lead + "true", lead + "false"]))
        elif t == "string":
            emit(lead + '"')
            if "enum" in s:
                emit(self.choice(here(), [e + '"' for e in s["enum"]]))
            else:
                emit(self.string(here(), s.get("maxLength")))
        elif t == "object":
            rows = _holds_objects(s)  # a container of records: one property per line, like an array's items
            emit(lead + ("{\n" if rows else "{"))
            for i, (key, sub) in enumerate(s["properties"].items()):
                emit(("" if i == 0 else ",\n" if rows else ", ") + json.dumps(key) + ":")
                self.value(prompt, sub, " ", out)
            emit("\n}" if rows else "}")
        elif t == "array":
            emit(lead + "[\n")
            for i, sub in enumerate(s["prefixItems"]):
                if i:
                    emit(",\n")
                self.value(prompt, sub, "", out)
            emit("\n]")
        else:  # pragma: no cover - _check rejects it first
            raise UnsupportedSchema(f"unsupported type {t!r}")


def fill(schema: dict[str, Any], prompt: str, engine: Continue, *, max_tokens: int) -> Filled:
    """Write a reply to ``prompt`` (the raw text the model continues) that matches ``schema``.

    Raises :class:`UnsupportedSchema` when the schema's shape is not fixed.  ``max_tokens``
    bounds the decoded tokens; when it runs out the text stops mid-value and ``truncated`` is set
    (the caller's repair and retry logic takes it from there, as for a reply cut by ``max_tokens``).
    """
    _check(schema)
    w = _Writer(engine, max_tokens)
    out: list[str] = []
    truncated = False
    try:
        w.value(prompt, schema, "", out)
    except _Budget:
        truncated = True
    return Filled(text="".join(out), prompt_tokens=w.prompt_tokens, completion_tokens=w.completion_tokens,
                  calls=w.calls, truncated=truncated)
