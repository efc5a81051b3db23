"""Model settings: spec strings and the precedence arguments > env > config file > defaults."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from chronomem.errors import ConfigError
from chronomem.providers import make_llm, parse_spec, resolve_embedder_settings, resolve_llm_settings
from chronomem.providers.openai_compat import OpenAICompatLLM

ENV = [
    "CHRONOMEM_LLM",
    "CHRONOMEM_LLM_BASE_URL",
    "OPENAI_BASE_URL",
    "CHRONOMEM_LLM_API_KEY",
    "OPENAI_API_KEY",
    "CHRONOMEM_LLM_TIMEOUT",
    "CHRONOMEM_LLM_CTX",
    "CHRONOMEM_THREADS",
    "CHRONOMEM_LLM_CACHE",
    "CHRONOMEM_EMBEDDER",
    "CHRONOMEM_EMBEDDER_BASE_URL",
    "CHRONOMEM_EMBEDDER_API_KEY",
    "CHRONOMEM_EMBEDDER_CACHE",
    "CHRONOMEM_FAST_FORWARD",
]


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    for name in ENV:
        monkeypatch.delenv(name, raising=False)
    cfg = tmp_path / "config.toml"
    cfg.touch()  # an empty config file: CHRONOMEM_CONFIG must name one that exists
    monkeypatch.setenv("CHRONOMEM_CONFIG", str(cfg))
    monkeypatch.setenv("CHRONOMEM_CACHE_DIR", str(tmp_path / "cache"))
    return cfg


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("local", {"provider": "local", "model": None}),
        ("local:0.5b", {"provider": "local", "model": "0.5b"}),
        ("local:/m/x.gguf", {"provider": "local", "model": "/m/x.gguf"}),
        ("openai:gpt-4o-mini", {"provider": "openai", "model": "gpt-4o-mini"}),
        ("none", {"provider": "none"}),
        ("None", {"provider": "none"}),
        (
            "openai:qwen2.5:7b@http://host:11434/v1",
            {"provider": "openai", "model": "qwen2.5:7b", "base_url": "http://host:11434/v1"},
        ),
    ],
)
def test_parse_spec(spec: str, expected: dict) -> None:
    assert parse_spec(spec) == expected


@pytest.mark.parametrize("spec", ["", "gpt-4o", "openai:", "openai:m@ftp://x", "hf:some/model"])
def test_parse_spec_rejects(spec: str) -> None:
    with pytest.raises(ConfigError):
        parse_spec(spec)


def test_none_is_no_model_in_every_place_that_reads_a_spec(monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from chronomem import Memory
    from chronomem.cli.models import app

    monkeypatch.setenv("CHRONOMEM_LLM", "none")
    monkeypatch.setenv("CHRONOMEM_EMBEDDER", "none")
    assert resolve_llm_settings().spec == "none" and resolve_embedder_settings().spec == "none"
    with pytest.raises(ConfigError, match="no chat model"):
        make_llm()
    r = CliRunner().invoke(app, ["check"])
    assert r.exit_code == 0 and "LLM: none configured" in r.output and "embedder: none configured" in r.output
    r = CliRunner().invoke(app, ["show"])
    assert r.exit_code == 0 and "LLM: none" in r.output
    with Memory(":memory:") as mem:  # structured facts, search and the stored summary need no model
        mem.add_facts([{"subject": "Maya", "relation": "lives_in", "object": "Porto"}], user_id="u1")
        assert [f.object for f in mem.search("Where does Maya live?", user_id="u1").facts] == ["Porto"]
        assert mem.summary(user_id="u1") == ""
        with pytest.raises(ConfigError, match="no chat model"):
            mem.answer("Where does Maya live?", user_id="u1")


def test_defaults() -> None:
    s = resolve_llm_settings()
    assert (s.provider, s.model, s.n_ctx, s.cache) == ("local", None, 8192, None)
    assert s.spec == "local" and s.sources == {}
    e = resolve_embedder_settings()
    assert e.provider == "local" and e.spec == "local"


def test_precedence_args_env_file_defaults(clean_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clean_env.write_text(
        '[llm]\nspec = "openai:file-model@http://file:1/v1"\ntimeout = 11\nmax_retries = 7\n'
        '[embedder]\nspec = "openai:file-emb@http://file:1/v1"\n'
    )
    s = resolve_llm_settings()
    assert (s.model, s.base_url, s.timeout, s.max_retries) == ("file-model", "http://file:1/v1", 11.0, 7)
    assert s.sources["model"].startswith("config:")

    monkeypatch.setenv("CHRONOMEM_LLM", "openai:env-model")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://openai-env:2/v1")
    monkeypatch.setenv("CHRONOMEM_LLM_TIMEOUT", "22")
    s = resolve_llm_settings()
    assert (s.model, s.base_url, s.timeout, s.max_retries) == ("env-model", "http://openai-env:2/v1", 22.0, 7)
    assert s.sources["base_url"] == "env:OPENAI_BASE_URL"

    monkeypatch.setenv("CHRONOMEM_LLM_BASE_URL", "http://chronomem-env:3/v1")
    assert resolve_llm_settings().base_url == "http://chronomem-env:3/v1"  # beats OPENAI_BASE_URL

    s = resolve_llm_settings("openai:arg-model@http://arg:4/v1", timeout=33)
    assert (s.model, s.base_url, s.timeout) == ("arg-model", "http://arg:4/v1", 33.0)
    assert s.sources["timeout"] == "argument"

    e = resolve_embedder_settings()
    assert (e.model, e.base_url) == ("file-emb", "http://openai-env:2/v1")


def test_local_spec_ignores_lower_layer_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHRONOMEM_LLM", "openai:gpt-4o-mini")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-x")
    s = resolve_llm_settings("local")
    assert (s.provider, s.model) == ("local", None)


def test_memory_table_spec_and_api_key_env(clean_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_KEY", "sk-from-file-env")
    clean_env.write_text('[memory]\nllm = "openai:m@http://h:5/v1"\n[llm]\napi_key_env = "MY_KEY"\n')
    s = resolve_llm_settings()
    assert (s.model, s.api_key) == ("m", "sk-from-file-env")
    assert s.describe()["api_key"]["value"] == "sk-…nv"


def test_unknown_file_key_and_missing_openai_key(clean_env: Path) -> None:
    with pytest.raises(ConfigError, match="no API key"):
        resolve_llm_settings("openai:gpt-4o-mini")
    clean_env.write_text("[llm]\ntemprature = 1\n")
    with pytest.raises(ConfigError, match="temprature"):
        resolve_llm_settings()


def test_cache_settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CHRONOMEM_LLM_CACHE", "1")
    assert resolve_llm_settings().cache == "default"
    monkeypatch.setenv("CHRONOMEM_LLM_CACHE", "off")
    assert resolve_llm_settings().cache is None
    monkeypatch.setenv("CHRONOMEM_LLM_CACHE", str(tmp_path / "x.sqlite"))
    assert resolve_llm_settings().cache == str(tmp_path / "x.sqlite")


def test_make_llm_builds_remote_tracked(tmp_path: Path) -> None:
    llm = make_llm("openai:m@http://127.0.0.1:9/v1", cache=tmp_path / "r.sqlite", timeout=3)
    assert isinstance(llm.inner, OpenAICompatLLM)
    assert llm.name == "openai:m@http://127.0.0.1:9/v1"
    assert llm.inner.http.timeout == 3.0
    assert llm.cache is not None and llm.cache.path == tmp_path / "r.sqlite"
    assert make_llm("openai:m@http://127.0.0.1:9/v1", cache=False).cache is None


def test_local_llm_reports_its_thread_count(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from chronomem.providers.local_llama import LocalLlamaLLM

    gguf = tmp_path / "tiny.gguf"
    gguf.write_bytes(b"GGUF" + bytes(12))  # the engine is not loaded until first use
    assert LocalLlamaLLM(gguf, n_threads=3).threads == 3
    monkeypatch.setenv("CHRONOMEM_THREADS", "2")
    assert LocalLlamaLLM(gguf).threads == 2
    monkeypatch.setenv("CHRONOMEM_THREADS", "many")  # unreadable: falls back to the CPU count
    assert LocalLlamaLLM(gguf).threads == (os.cpu_count() or 1)


def test_fast_forward_is_a_yes_no_setting_from_env_or_file(clean_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert resolve_llm_settings().fast_forward is False
    monkeypatch.setenv("CHRONOMEM_FAST_FORWARD", "yes")
    s = resolve_llm_settings()
    assert s.fast_forward is True and s.sources["fast_forward"] == "env:CHRONOMEM_FAST_FORWARD"
    assert resolve_llm_settings(fast_forward=False).fast_forward is False  # an argument beats the environment
    monkeypatch.setenv("CHRONOMEM_FAST_FORWARD", "sometimes")
    with pytest.raises(ConfigError, match="fast_forward='sometimes'"):
        resolve_llm_settings()
    monkeypatch.delenv("CHRONOMEM_FAST_FORWARD")
    clean_env.write_text("[llm]\nfast_forward = true\n")
    assert resolve_llm_settings().fast_forward is True


def test_a_memory_resolves_its_model_as_models_show_does(clean_env: Path, monkeypatch: pytest.MonkeyPatch,
                                                         tmp_path: Path) -> None:
    """``[memory] llm`` in the config file ranks under the environment for a Memory too: it used to be
    passed on as an argument, so the file's URL beat CHRONOMEM_LLM_BASE_URL in add/answer while
    ``chronomem models show`` (and ``models check``) reported the environment's."""
    from chronomem import Memory

    clean_env.write_text('[memory]\nllm = "openai:a@http://cfg:1/v1"\nembedder = "openai:e@http://cfg:1/v1"\n')
    monkeypatch.setenv("CHRONOMEM_LLM_BASE_URL", "http://env:2/v1")
    monkeypatch.setenv("CHRONOMEM_EMBEDDER_BASE_URL", "http://env:3/v1")
    shown = resolve_llm_settings()
    with Memory(tmp_path / "m.db") as mem:
        assert mem.llm.base_url == shown.base_url == "http://env:2/v1"  # type: ignore[attr-defined]
        assert mem.llm.model == "a"  # type: ignore[attr-defined]
        assert mem.models.embedder.inner.base_url == "http://env:3/v1"  # type: ignore[attr-defined]
    with Memory(tmp_path / "m.db", llm="openai:b@http://arg:4/v1") as mem:  # an argument still wins
        assert mem.llm.base_url == "http://arg:4/v1"  # type: ignore[attr-defined]
