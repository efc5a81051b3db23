"""Any OpenAI-compatible endpoint: OpenAI, DeepSeek, vLLM, SGLang, Ollama, llama.cpp server, LM Studio.

:class:`OpenAICompatLLM` posts to ``{base_url}/chat/completions`` and
:class:`OpenAICompatEmbedder` to ``{base_url}/embeddings`` through
:class:`OpenAIHTTP`, which owns the transport policy:

- timeouts (``timeout`` seconds per request, ``connect_timeout`` to connect);
- retries on 429, 408, 5xx, timeouts and connection errors, up to
  ``max_retries`` times, sleeping ``Retry-After`` when the server sends it
  (seconds or an HTTP date, capped at ``max_retry_after``) and otherwise an
  exponential backoff with jitter (``backoff_base * 2**n``, capped at
  ``backoff_max``);
- no retry on 401/403/404: :class:`~chronomem.errors.ModelUnavailableError`
  names the URL and the model; other 4xx raise
  :class:`~chronomem.errors.ModelError` with the server's message.

Structured output uses ``response_format={"type": "json_schema", ...}``; if
the server rejects that (HTTP 400 naming ``response_format``/``json_schema``)
the client falls back to ``{"type": "json_object"}`` and then to no
``response_format``, putting the schema into the prompt instead, and remembers
the downgrade for later calls.

Repetition penalties (:class:`~.base.Penalties`) are sent only when set:
``frequency_penalty`` and ``presence_penalty`` as OpenAI defines them, and
``repeat_penalty`` as given (llama.cpp's server reads it; OpenAI itself does not).
"""

from __future__ import annotations

import email.utils
import json
import logging
import random
import re
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx

from ..errors import ModelError, ModelUnavailableError
from .base import Messages, Penalties
from .chat import ChatLLM, RawCompletion

log = logging.getLogger(__name__)

DEFAULT_OPENAI_BASE_URL = "https://api.openai.com/v1"
_RETRY_STATUS = {408, 409, 425, 429}
_STRUCTURED_MODES = ("json_schema", "json_object", "none")


def estimate_tokens(text: str) -> int:
    """Offline token estimate for models whose tokenizer is not available locally.

    Counts words and punctuation the way BPE tokenizers roughly split English
    (long words count for several tokens); typically within ~15 % of
    OpenAI's tokenizers on English prose.
    """
    n = 0
    for piece in re.findall(r"\w+|[^\w\s]", text):
        n += 1 + (len(piece) - 1) // 6 if piece[0].isalnum() or piece[0] == "_" else 1
    return n


def _retry_after_seconds(value: str | None) -> float | None:
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _error_message(resp: httpx.Response) -> str:
    try:
        body = resp.json()
    except ValueError:
        return resp.text[:300]
    err = body.get("error", body) if isinstance(body, dict) else body
    if isinstance(err, dict):
        return str(err.get("message") or err)[:300]
    return str(err)[:300]


class OpenAIHTTP:
    """HTTP transport with the retry/timeout/error policy described in the module docstring."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None,
        model: str,
        *,
        timeout: float = 60.0,
        connect_timeout: float = 10.0,
        max_retries: int = 4,
        backoff_base: float = 0.5,
        backoff_max: float = 20.0,
        max_retry_after: float = 120.0,
        headers: dict[str, str] | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self.max_retry_after = max_retry_after
        self._sleep = sleep
        hdrs = {"Content-Type": "application/json", **(headers or {})}
        if api_key:
            hdrs["Authorization"] = f"Bearer {api_key}"
        self._client = httpx.Client(
            headers=hdrs, timeout=httpx.Timeout(timeout, connect=min(connect_timeout, timeout))
        )

    def close(self) -> None:
        self._client.close()

    def _backoff(self, attempt: int) -> float:
        delay = min(self.backoff_max, self.backoff_base * (2**attempt))
        return delay * (0.5 + random.random() / 2)  # jitter: 50–100 % of the step

    def post(self, path: str, payload: dict[str, Any]) -> dict[str, Any]:
        """POST JSON and return the decoded reply, applying the retry policy."""
        full = f"{self.base_url}/{path.lstrip('/')}"
        url = shown_url(full)  # what errors and logs say: no user, password or query
        last: Exception | None = None
        for attempt in range(self.max_retries + 1):
            delay: float | None = None
            try:
                resp = self._client.post(full, json=payload)
            except httpx.TimeoutException as e:
                last = ModelError(f"request to {url} (model {self.model!r}) timed out after {self.timeout:g}s")
                last.__cause__ = e
                what = f"timed out after {self.timeout:g}s"
            except httpx.TransportError as e:
                last = ModelUnavailableError(f"cannot reach {url} (model {self.model!r}): {e}")
                last.__cause__ = e
                what = f"cannot reach {url}"
            else:
                status = resp.status_code
                if status < 300:
                    try:
                        data = resp.json()
                    except ValueError as e:
                        raise ModelError(f"{url} returned a non-JSON body: {resp.text[:200]!r}") from e
                    if not isinstance(data, dict):
                        raise ModelError(f"{url} returned unexpected JSON: {str(data)[:200]}")
                    return data
                msg = _error_message(resp)
                if status in (401, 403):
                    raise ModelUnavailableError(
                        f"{url} refused the request for model {self.model!r} (HTTP {status}: {msg}); "
                        "check the API key (CHRONOMEM_LLM_API_KEY / OPENAI_API_KEY)"
                    )
                if status == 404:
                    raise ModelUnavailableError(
                        f"{url} answered HTTP 404 for model {self.model!r} ({msg}); check the model name and "
                        "that the base URL is the API root (usually ending in /v1)"
                    )
                if status in _RETRY_STATUS or status >= 500:
                    last = ModelError(f"{url} answered HTTP {status} for model {self.model!r}: {msg}")
                    what = f"{url} answered HTTP {status}"
                    ra = _retry_after_seconds(resp.headers.get("Retry-After"))
                    if ra is not None:
                        delay = min(ra, self.max_retry_after)
                else:
                    err = ModelError(f"{url} answered HTTP {status} for model {self.model!r}: {msg}")
                    err.status_code = status  # type: ignore[attr-defined]
                    raise err
            if attempt < self.max_retries:
                delay = self._backoff(attempt) if delay is None else delay
                # the provider's words may quote the request (the user's turns): DEBUG only, as log_reason
                log.warning("model call: %s; retry %d/%d in %.2fs", what, attempt + 1, self.max_retries, delay)
                log.debug("model call failed: %s", last)
                self._sleep(delay)
        assert last is not None
        if self.max_retries:
            raise type(last)(f"{last} (gave up after {self.max_retries + 1} attempts)") from last.__cause__
        raise last


def shown_url(url: str) -> str:
    """``url`` as an error or a log line may show it: without the user and password a base URL may carry
    (``http://svc:hunter2@host/v1``) or its query (``?api-key=…``), which reached API clients in a
    model error's text.  Pure.

    >>> shown_url("http://svc:hunter2@10.1.2.3:8000/v1/chat/completions?api-key=sk-1")
    'http://10.1.2.3:8000/v1/chat/completions?…'
    >>> shown_url("https://api.openai.com/v1/chat/completions")
    'https://api.openai.com/v1/chat/completions'
    """
    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit((parts.scheme, host, parts.path, "…" if parts.query else "", ""))


class OpenAICompatLLM(ChatLLM):
    """Chat model behind an OpenAI-compatible ``/chat/completions`` endpoint."""

    def __init__(
        self,
        model: str,
        base_url: str = DEFAULT_OPENAI_BASE_URL,
        api_key: str | None = None,
        *,
        timeout: float = 60.0,
        connect_timeout: float = 10.0,
        max_retries: int = 4,
        backoff_base: float = 0.5,
        backoff_max: float = 20.0,
        context_window: int = 128_000,
        structured_mode: str = "json_schema",
        structured_retries: int = 2,
        seed: int | None = None,
        headers: dict[str, str] | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if structured_mode not in _STRUCTURED_MODES:
            raise ValueError(f"structured_mode must be one of {_STRUCTURED_MODES}, got {structured_mode!r}")
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.name = f"openai:{model}@{shown_url(self.base_url)}"
        self.context_window = context_window
        self.structured_mode = structured_mode
        self.structured_retries = structured_retries
        self.seed = seed
        self.http = OpenAIHTTP(
            self.base_url,
            api_key,
            model,
            timeout=timeout,
            connect_timeout=connect_timeout,
            max_retries=max_retries,
            backoff_base=backoff_base,
            backoff_max=backoff_max,
            headers=headers,
            sleep=sleep,
        )

    def __repr__(self) -> str:
        return f"OpenAICompatLLM(model={self.model!r}, base_url={shown_url(self.base_url)!r})"

    def close(self) -> None:
        self.http.close()

    def count_tokens(self, text: str) -> int:
        """An offline estimate (:func:`estimate_tokens`); remote tokenizers are not downloaded."""
        return estimate_tokens(text)

    def _payload(
        self,
        messages: Messages,
        json_schema: dict[str, Any] | None,
        schema_name: str,
        max_tokens: int,
        temperature: float,
        stop: list[str] | None,
        penalties: Penalties | None = None,
    ) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "max_tokens": max_tokens,
            "temperature": temperature,
        }
        if stop:
            payload["stop"] = stop
        if penalties is not None:
            payload.update(penalties.request_fields())  # only the ones set; repeat_penalty is no OpenAI field
        if self.seed is not None:
            payload["seed"] = self.seed
        if json_schema is not None:
            if self.structured_mode == "json_schema":
                payload["response_format"] = {
                    "type": "json_schema",
                    "json_schema": {"name": schema_name or "output", "schema": json_schema, "strict": False},
                }
            else:
                if self.structured_mode == "json_object":
                    payload["response_format"] = {"type": "json_object"}
                hint = "Reply with only a JSON value matching this JSON schema:\n" + json.dumps(json_schema)
                payload["messages"] = [*messages, {"role": "system", "content": hint}]
        return payload

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
        grammar: str | None = None,  # not part of the OpenAI API: the prompt states the format
    ) -> RawCompletion:
        while True:
            payload = self._payload(messages, json_schema, schema_name, max_tokens, temperature, stop, penalties)
            try:
                data = self.http.post("chat/completions", payload)
                break
            except ModelError as e:
                status = getattr(e, "status_code", None)
                text = str(e).lower()
                if (
                    json_schema is not None
                    and status == 400
                    and ("response_format" in text or "json_schema" in text or "json_object" in text)
                    and self.structured_mode != "none"
                ):
                    nxt = _STRUCTURED_MODES[_STRUCTURED_MODES.index(self.structured_mode) + 1]
                    log.warning("%s rejected response_format=%s; falling back to %s", self.name, self.structured_mode, nxt)
                    self.structured_mode = nxt
                    continue
                raise
        try:
            choice = data["choices"][0]
            text = choice.get("message", {}).get("content") or ""
        except (KeyError, IndexError, TypeError, AttributeError) as e:
            raise ModelError(f"{self.name}: reply without choices: {str(data)[:300]}") from e
        usage = data.get("usage") or {}
        prompt_tokens = usage.get("prompt_tokens")
        if prompt_tokens is None:
            prompt_tokens = sum(estimate_tokens(m.get("content") or "") + 4 for m in payload["messages"])
        completion_tokens = usage.get("completion_tokens")
        if completion_tokens is None:
            completion_tokens = estimate_tokens(text)
        cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
        return RawCompletion(
            text=text,
            prompt_tokens=int(prompt_tokens),
            completion_tokens=int(completion_tokens),
            finish_reason=str(choice.get("finish_reason") or "stop"),
            cached_prompt_tokens=int(cached),
        )


class OpenAICompatEmbedder:
    """Embeddings from an OpenAI-compatible ``/embeddings`` endpoint, batched and unit-normalised."""

    def __init__(
        self,
        model: str,
        base_url: str = DEFAULT_OPENAI_BASE_URL,
        api_key: str | None = None,
        *,
        dim: int | None = None,
        batch_size: int = 128,
        timeout: float = 60.0,
        max_retries: int = 4,
        backoff_base: float = 0.5,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.name = f"openai:{model}@{shown_url(self.base_url)}"
        self.batch_size = batch_size
        self._dim = dim
        self.http = OpenAIHTTP(
            self.base_url, api_key, model, timeout=timeout, max_retries=max_retries, backoff_base=backoff_base, sleep=sleep
        )

    @property
    def dim(self) -> int:
        """Vector dimension; asked of the server with one probe when not configured."""
        if self._dim is None:
            self._dim = len(self.embed(["dimension probe"])[0])
        return self._dim

    def embed(self, texts: list[str]) -> list[list[float]]:
        import numpy as np

        out: list[list[float]] = []
        for i in range(0, len(texts), self.batch_size):
            batch = texts[i : i + self.batch_size]
            data = self.http.post("embeddings", {"model": self.model, "input": batch})
            try:
                rows = sorted(data["data"], key=lambda r: r.get("index", 0))
                vecs = np.asarray([r["embedding"] for r in rows], dtype=np.float32)
            except (KeyError, TypeError, ValueError) as e:
                raise ModelError(f"{self.name}: malformed embeddings reply: {str(data)[:300]}") from e
            if vecs.shape[0] != len(batch):
                raise ModelError(f"{self.name}: asked for {len(batch)} embeddings, got {vecs.shape[0]}")
            norms = np.linalg.norm(vecs, axis=1, keepdims=True)
            unit = vecs / np.where(norms == 0, 1.0, norms)
            out.extend(unit.tolist())
        if out and self._dim is None:
            self._dim = len(out[0])
        return out
