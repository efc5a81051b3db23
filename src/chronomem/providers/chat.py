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

Usage of all attempts is summed into the returned :class:`CallUsage`.
"""

from __future__ import annotations

import json
import logging
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
        problem = ""
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
            try:
                data, repaired = out.parse(raw.text)
            except NoJSONFound as e:
                problem = str(e)
            except SchemaMismatch as e:
                problem = "it does not match the schema: " + str(e)
            else:
                cut = loses_data_to_truncation(raw.text, out.json_schema)
                if not cut:  # complete, or cut only where the array caps would drop the rest anyway
                    if repaired or truncated:
                        log.info("%s: repaired structured output (truncated=%s, attempt %d)",
                                 self.name, truncated, attempt + 1)
                    usage.latency_s = time.perf_counter() - t0
                    return ChatResult(text=raw.text, usage=usage, data=data)
                problem = "it stops in the middle: the items after the cut are missing"
            if truncated or cut:
                problem = f"it was cut off at {budget} tokens ({problem})"
                budget = min(budget * 2, self.max_tokens_cap)
            log.warning("%s: invalid structured output (attempt %d): %s", self.name, attempt + 1, problem)
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
            f"{self.name}: no valid structured output after {1 + max(0, self.structured_retries)} attempts ({problem})",
            last_raw,
        )
        err.usage = usage  # type: ignore[attr-defined]  # so wrappers can still account for the spent tokens
        raise err


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
