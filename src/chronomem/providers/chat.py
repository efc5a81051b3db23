"""The one place every chat call goes through: schema handling, repair, retries, usage.

Concrete providers (:mod:`.openai_compat`, :mod:`.local_llama`) subclass
:class:`ChatLLM` and implement only :meth:`ChatLLM._complete`, one raw request
to their engine.  :meth:`ChatLLM.chat` adds structured output on top:

- the schema (dict or pydantic class) is sent for constrained decoding, with
  ``maxItems`` added to unbounded arrays (``default_max_items``);
- the reply is repaired (fences, trailing text, truncation), arrays are capped
  and the result validated;
- on failure it asks again, showing the model what was wrong, at most
  ``structured_retries`` more times; a reply cut off by the token limit is
  retried with a larger ``max_tokens`` (up to ``max_tokens_cap``), and so is one that stops
  mid-value before its arrays were full (closing it would silently drop the items after the
  cut); a reply cut only where the array caps would drop the rest anyway is accepted;
- then it raises :class:`~chronomem.errors.StructuredOutputError` carrying the
  raw output (:class:`~chronomem.errors.TruncatedOutputError` when the last reply was cut off).

What each attempt got wrong is logged at WARNING in words that quote nothing of the reply (no
JSON value in N characters, the schema paths that failed, a cut-off): the reply echoes the
user's turns, and logs cannot be forgotten.  The reply itself and the full problem are logged
at DEBUG only; the raised error keeps the reply in ``raw``, out of its message.

Usage of all attempts is summed into the returned :class:`CallUsage`.
"""

from __future__ import annotations

import json
import logging
import re
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

from ..errors import StructuredOutputError, TruncatedOutputError, ValidationError
from .base import CallUsage, ChatResult, Messages, Penalties
from .structured import NoJSONFound, OutputSchema, SchemaLike, SchemaMismatch, loses_data_to_truncation

log = logging.getLogger(__name__)


@dataclass(slots=True)
class RawCompletion:
    """One engine reply before any parsing."""

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    finish_reason: str = "stop"  # "stop" | "length" | ...
    cached_prompt_tokens: int = 0  # prompt tokens the engine reused from its KV/prefix cache


_FEEDBACK = (
    "Your previous reply could not be used: {problem}. Reply again with only one JSON value "
    "that matches the required schema: no code fences, no explanation{shorter}."
)


class ChatLLM(ABC):
    """Base of chronomem's LLM providers; implements the :class:`~.base.LLM` protocol."""

    name: str
    context_window: int
    structured_retries: int = 2
    default_max_items: int | None = 64
    max_tokens_cap: int = 4096

    @abstractmethod
    def _complete(
        self,
        messages: Messages,
        *,
        json_schema: dict[str, Any] | None,
        schema_name: str,
        max_tokens: int,
        temperature: float,
        stop: list[str] | None,
        penalties: Penalties | None = None,
        grammar: str | None = None,
    ) -> RawCompletion:
        """One request to the engine; raise :class:`~chronomem.errors.ModelError` on failure.

        ``penalties``: send only the fields that are set (:meth:`Penalties.request_fields`).
        ``grammar``: a GBNF grammar for a plain-text reply; an engine that cannot enforce one
        ignores it (the prompt states the format)."""

    @abstractmethod
    def count_tokens(self, text: str) -> int: ...

    def chat(
        self,
        messages: Messages,
        *,
        schema: SchemaLike | None = None,
        max_tokens: int = 512,
        temperature: float = 0.0,
        stop: list[str] | None = None,
        purpose: str = "",
        penalties: Penalties | None = None,
        grammar: str | None = None,
    ) -> ChatResult:
        """Run one chat completion; see :class:`~.base.LLM`.

        With ``schema``, ``ChatResult.data`` is the validated value: a plain
        JSON value for a dict schema, an instance for a pydantic class.
        ``grammar`` constrains a plain-text reply instead (not both).
        """
        if grammar is not None and schema is not None:
            raise ValidationError("grammar", grammar[:60], "chat() takes a schema or a grammar, not both")
        t0 = time.perf_counter()
        usage = CallUsage(purpose=purpose)
        if schema is None:
            raw = self._complete(
                messages, json_schema=None, schema_name="", max_tokens=max_tokens, temperature=temperature, stop=stop,
                penalties=penalties, **({"grammar": grammar} if grammar is not None else {}),
            )
            usage.prompt_tokens, usage.completion_tokens = raw.prompt_tokens, raw.completion_tokens
            usage.latency_s = time.perf_counter() - t0
            return ChatResult(text=raw.text, usage=usage)

        out = OutputSchema.of(schema, default_max_items=self.default_max_items)
        attempt_messages = list(messages)
        budget = max_tokens
        last_raw = ""
        problem = reason = ""
        for attempt in range(1 + max(0, self.structured_retries)):
            raw = self._complete(
                attempt_messages,
                json_schema=out.json_schema,
                schema_name=out.name,
                max_tokens=budget,
                temperature=temperature,
                stop=stop,
                penalties=penalties,
            )
            usage.prompt_tokens += raw.prompt_tokens
            usage.completion_tokens += raw.completion_tokens
            last_raw = raw.text
            truncated = raw.finish_reason == "length"
            cut = False
            # ``problem`` goes back to the model and may quote its reply; ``reason`` is for logs and
            # the raised error's message, and quotes nothing of it
            try:
                data, repaired = out.parse(raw.text)
            except NoJSONFound as e:
                problem = str(e)
                reason = json_problem(raw.text)
            except SchemaMismatch as e:
                problem = "it does not match the schema: " + str(e)
                reason = schema_problem(e, out.json_schema)
            else:
                cut = loses_data_to_truncation(raw.text, out.json_schema)
                if not cut:  # complete, or cut only where the array caps would drop the rest anyway
                    if repaired or truncated:
                        log.info("%s: repaired structured output (truncated=%s, attempt %d)",
                                 self.name, truncated, attempt + 1)
                    usage.latency_s = time.perf_counter() - t0
                    return ChatResult(text=raw.text, usage=usage, data=data)
                problem = reason = "it stops in the middle: the items after the cut are missing"
            if truncated or cut:
                problem = f"it was cut off at {budget} tokens ({problem})"
                reason = f"it was cut off at {budget} tokens ({reason})"
                budget = min(budget * 2, self.max_tokens_cap)
            log.warning("%s: invalid structured output (attempt %d): %s", self.name, attempt + 1, reason)
            # DEBUG only: the problem may quote the reply, and the reply echoes the user's turns
            log.debug("%s: attempt %d's reply (%s): %r", self.name, attempt + 1, problem, raw.text[:2000])
            attempt_messages = [
                *messages,
                {"role": "assistant", "content": raw.text[:2000]},
                {
                    "role": "user",
                    "content": _FEEDBACK.format(
                        problem=problem, shorter=", and keep it short" if truncated else ""
                    ),
                },
            ]
        usage.latency_s = time.perf_counter() - t0
        kind = TruncatedOutputError if (truncated or cut) else StructuredOutputError
        err = kind(
            f"{self.name}: no valid structured output after {1 + max(0, self.structured_retries)} attempts ({reason})",
            last_raw,
        )
        err.usage = usage  # type: ignore[attr-defined]  # so wrappers can still account for the spent tokens
        raise err


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def json_problem(text: str) -> str:
    """Why ``text`` holds no JSON value, in words that quote none of it (for logs and errors)."""
    body = text.strip()
    if not body:
        return "the reply is empty"
    try:
        json.loads(body)
    except json.JSONDecodeError as e:  # its msg is the decoder's fixed wording, never the text
        return f"no JSON value found in {len(text)} chars of output: not valid JSON at char {e.pos} ({e.msg})"
    return f"no JSON value found in {len(text)} chars of output"


_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
_PATH_PART = re.compile(r"\[(\d+)\]|\.([^.\[]*)")


def schema_problem(error: SchemaMismatch, schema: dict[str, Any], most: int = 3) -> str:
    """Which parts of a reply failed ``schema``, as paths ("$.facts[2].relation"), quoting none of
    its values: a key the schema does not name (the model may write a word of the turns as one)
    reads ``<key>``."""
    known = _property_names(schema)
    paths: list[str] = []
    for err in error.errors:
        head = err.split(": ", 1)[0] if err.startswith("$") else "$"
        path = "$"
        for index, key in _PATH_PART.findall(head[1:]):
            if index or key.isdigit():
                path += f"[{index or key}]"
            else:
                path += "." + (key if key in known and _KEY.fullmatch(key) else "<key>")
        if path not in paths:
            paths.append(path)
    shown = ", ".join(paths[:most]) + (f" and {len(paths) - most} more" if len(paths) > most else "")
    return f"it does not match the schema at {shown} ({len(error.errors)} error(s))"


def _property_names(schema: Any) -> set[str]:
    names: set[str] = set()
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            props = node.get("properties")
            if isinstance(props, dict):
                names.update(k for k in props if isinstance(k, str))
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return names
