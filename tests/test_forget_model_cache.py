"""forget() also empties the opt-in model caches of what it forgot.

The response cache keeps model replies (extracted statements, summaries, answers) and the
embedding cache keeps vectors of the user's words.  Entries are tagged with the tenant and user
they were made or reused for; forgetting the user (or any of their facts or sessions) deletes
every tagged entry, zeroes the freed pages and truncates the WAL, so the raw bytes of the cache
file no longer hold the forgotten words.  Untagged entries (benchmark runs) and other users'
entries stay.  Test doubles only, no model.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_memory_sessions import SessionLLM, conv
from test_providers_cache import CountingEmbedder

from chronomem import Memory
from chronomem.providers.base import UsageTracker
from chronomem.providers.cache import CachedResponse, EmbeddingCache, ResponseCache, cache_owner
from chronomem.providers.embeddings import CachedEmbedder
from chronomem.providers.tracked import TrackedLLM

MARKER = "Zanzibarquux"


def file_bytes(path: Path) -> bytes:
    """The cache file with its WAL and shared memory, as raw bytes."""
    return b"".join(p.read_bytes() for p in sorted(path.parent.glob(path.name + "*")))


def reply(text: str) -> CachedResponse:
    return CachedResponse(text=text, data=None, prompt_tokens=1, completion_tokens=1, latency_s=0.0)


def test_purge_owner_deletes_what_the_owner_wrote_or_reused(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "c.sqlite")
    cache.put("bench", "m", reply("an untagged benchmark reply"))
    with cache_owner("A"):
        cache.put("a1", "m", reply(f"Maya lives in {MARKER}"))
        cache.put("shared", "m", reply("Maya likes tea"))
    with cache_owner("B"):
        cache.put("b1", "m", reply("Tom lives in Oslo"))
        assert cache.get("shared") is not None
        cache.own("shared")  # a hit under B: B's words too
    assert cache.purge_owner("A") == 2
    assert [k for k in ("bench", "a1", "shared", "b1") if cache.get(k) is not None] == ["bench", "b1"]
    assert MARKER.encode() not in file_bytes(cache.path)  # secure_delete + WAL truncated
    assert cache.purge_owner("A") == 0
    with cache_owner("B"):
        cache.put("shared", "m", reply("Maya likes tea"))
    assert cache.purge_owner("B") == 2 and len(cache) == 1  # the benchmark's entry is never purged
    cache.close()


def cached_embedder(tmp_path: Path) -> tuple[EmbeddingCache, CountingEmbedder, CachedEmbedder]:
    """An embedder double behind the in-memory copy and a disk cache: (the disk, the double, the cached one)."""
    disk = EmbeddingCache(tmp_path / "c.sqlite")
    inner = CountingEmbedder()
    return disk, inner, CachedEmbedder(inner, disk)


def test_embedding_purge_and_the_in_memory_copy(tmp_path: Path) -> None:
    disk, inner, emb = cached_embedder(tmp_path)
    emb.embed(["untagged"])
    with cache_owner("A"):
        emb.embed([f"I moved to {MARKER}", "hello"])
    with cache_owner("B"):
        emb.embed(["hello", "bye"])  # "hello" is a hit for B (in memory): B owns it on disk too
    assert emb.purge_owner("B") == 2 and len(disk) == 2
    inner.seen.clear()
    assert emb.embed(["untagged", "hello"]) and inner.seen == ["hello"]  # the in-memory copy is gone too
    assert emb.purge_owner("A") == 1 and len(disk) == 2  # "hello" came back untagged, as did "untagged"
    assert MARKER.lower().encode() not in file_bytes(disk.path).lower()
    disk.close()


def talk(mem: Memory, user: str, text: str, prefix: str = "t") -> None:
    """A session of one turn, ended: its extraction reply and Rsum summary go through the cache."""
    mem.add(conv(text, prefix=prefix), user_id=user, session_id="s1")
    mem.end_session(user_id=user, session_id="s1")


@pytest.fixture
def cached_memory(tmp_path: Path):  # type: ignore[no-untyped-def]
    path = tmp_path / "model-cache.sqlite"
    llm = TrackedLLM(SessionLLM(), usage=UsageTracker(), cache=ResponseCache(path))
    emb = CachedEmbedder(CountingEmbedder(), EmbeddingCache(path))
    with Memory(tmp_path / "m.db", llm=llm, embedder=emb) as mem:
        yield mem, path


def test_forgetting_a_user_purges_their_cached_replies_and_vectors(cached_memory) -> None:  # type: ignore[no-untyped-def]
    mem, path = cached_memory
    talk(mem, "u1", f"I live in {MARKER} and work at Acme.")
    talk(mem, "u2", "I moved to Munich last week.", prefix="b")
    assert mem.answer(f"Where is {MARKER}?", user_id="u1").text
    assert MARKER.encode() in file_bytes(path)
    res = mem.forget(user_id="u1", everything=True)
    # extraction, summary and answer replies; the question's and the facts' vectors
    assert res.cache_entries_deleted >= 5 and res.warnings == []
    assert MARKER.lower().encode() not in file_bytes(path).lower()
    assert mem.purge_model_cache(user_id="u1") == 0
    assert mem.purge_model_cache(user_id="u2") == 2  # u2's extraction and summary replies, kept till now


def test_forgetting_one_fact_purges_the_users_cached_entries(cached_memory) -> None:  # type: ignore[no-untyped-def]
    mem, path = cached_memory
    talk(mem, "u1", f"I live in {MARKER} and work at Acme.")
    assert MARKER.encode() in file_bytes(path)
    fact = next(f for f in mem.facts(user_id="u1") if f.object == MARKER)
    assert mem.forget(user_id="u1", fact_id=fact.id).cache_entries_deleted >= 1
    assert MARKER.lower().encode() not in file_bytes(path).lower()


def test_a_tenant_view_purges_only_its_own_users(cached_memory) -> None:  # type: ignore[no-untyped-def]
    mem, path = cached_memory
    other = mem.for_tenant("acme")
    talk(other, "u1", "I moved to Munich last week.", prefix="b")
    talk(mem, "u1", f"I live in {MARKER} and work at Acme.")
    other.forget(user_id="u1", everything=True)
    assert MARKER.encode() in file_bytes(path)  # the default tenant's u1 is another user
    assert mem.forget(user_id="u1", everything=True).cache_entries_deleted >= 1
    assert MARKER.lower().encode() not in file_bytes(path).lower()


def test_a_configured_cache_is_purged_without_loading_a_model(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "llm-cache.sqlite"
    cache = ResponseCache(path)
    with cache_owner(json.dumps(["default", "u1"])):
        cache.put("k", "m", reply(f"Maya lives in {MARKER}"))
    cache.close()
    monkeypatch.setenv("CHRONOMEM_LLM_CACHE", str(path))
    with Memory(tmp_path / "m.db", llm="local", embedder=False) as mem:
        mem.add_facts([{"subject": "Maya", "relation": "lives_in", "object": MARKER}], user_id="u1")
        assert mem.forget(user_id="u1", everything=True).cache_entries_deleted == 1
        assert isinstance(mem.models._llm, str)  # resolved to its settings, never created
    assert MARKER.encode() not in file_bytes(path)


def test_a_cache_that_cannot_be_purged_is_reported_and_the_memory_still_forgotten(cached_memory) -> None:  # type: ignore[no-untyped-def]
    mem, path = cached_memory
    talk(mem, "u1", f"I live in {MARKER} and work at Acme.")

    def broken(owner: str) -> int:
        raise OSError("disk I/O error")

    mem.models.purge_cached = broken  # type: ignore[method-assign]
    res = mem.forget(user_id="u1", everything=True)
    assert mem.facts(user_id="u1") == [] and res.cache_entries_deleted == 0
    assert "purge_model_cache" in res.warnings[-1] and "disk I/O error" in res.warnings[-1]


def test_a_block_that_began_before_a_purge_writes_no_reply(tmp_path: Path) -> None:
    """A call racing a forget (begun before the purge, answered after it) must not put the forgotten
    user's reply back; reads still work, a reused entry is still tagged (forgetting its user later must
    find it), and a block begun after the purge writes again."""
    cache = ResponseCache(tmp_path / "c.sqlite")
    cache.put("shared", "m", reply("another user's reply, the same prompt"))
    with cache_owner("A"):
        cache.put("a0", "m", reply("Maya likes tea"))
        assert ResponseCache(cache.path).purge_owner("B") == 0  # another process's forget of anyone
        cache.put("a1", "m", reply(f"Maya lives in {MARKER}"))
        assert cache.get("shared") is not None
        cache.own("shared")  # A reused it
        assert cache.get("a1") is None and len(cache) == 2
        with cache_owner(None):
            cache.put("bench", "m", reply("untagged, never purged"))  # outside any owner: written
    assert MARKER.encode() not in file_bytes(cache.path)
    assert ResponseCache(cache.path).purge_owner("A") == 2  # what A wrote before, and what it reused after
    with cache_owner("A"):
        cache.put("a2", "m", reply("Maya likes coffee"))
    assert cache.get("a2") is not None and len(cache) == 2
    cache.close()


def test_an_embedding_call_racing_a_purge_keeps_its_vectors_out_of_both_caches(tmp_path: Path) -> None:
    disk, inner, emb = cached_embedder(tmp_path)
    emb.embed(["hello"])
    with cache_owner("A"):
        emb.purge_owner("B")  # any purge: the file does not say whose
        emb.embed([f"I moved to {MARKER}", "hello"])
    assert len(disk) == 1 and MARKER.lower().encode() not in file_bytes(disk.path).lower()
    inner.seen.clear()
    emb.embed([f"I moved to {MARKER}"])
    assert inner.seen == [f"I moved to {MARKER}"]  # not kept in memory either
    disk.close()


def test_an_extraction_racing_forget_leaves_nothing_in_the_cache(tmp_path: Path) -> None:
    """A turn's extraction is waiting on the model when the user is forgotten (a worker's job and a
    REST forget, say): the reply that arrives afterwards is not cached."""
    import threading

    asked, answer = threading.Event(), threading.Event()

    class SlowLLM(SessionLLM):
        def chat(self, messages, **kw):  # type: ignore[no-untyped-def]
            if kw.get("purpose") == "extract" and MARKER in str(messages):
                asked.set()
                assert answer.wait(30)
            return super().chat(messages, **kw)

    path = tmp_path / "model-cache.sqlite"
    llm = TrackedLLM(SlowLLM(), usage=UsageTracker(), cache=ResponseCache(path))
    with Memory(tmp_path / "m.db", llm=llm, embedder=False) as mem:
        talk(mem, "u1", "I moved to Munich last week.", prefix="b")  # a reply of u1's cached before the forget
        assert len(llm.cache) == 2
        worker = threading.Thread(target=mem.add, args=(conv(f"I live in {MARKER} and work at Acme."),),
                                  kwargs={"user_id": "u1", "session_id": "s2"})
        worker.start()
        assert asked.wait(30)
        assert mem.forget(user_id="u1", everything=True).cache_entries_deleted == 2
        answer.set()
        worker.join(30)
        assert not worker.is_alive()
        assert len(llm.cache) == 0 and MARKER.lower().encode() not in file_bytes(path).lower()


def test_a_forget_before_the_cache_file_exists_still_fences_a_call_racing_it(tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The configured cache file does not exist yet when the user is forgotten (its first use is a worker's
    call still running): the forget creates it to record the purge, and the racing call caches nothing."""
    path = tmp_path / "sub" / "llm-cache.sqlite"
    monkeypatch.setenv("CHRONOMEM_LLM_CACHE", str(path))
    with cache_owner(json.dumps(["default", "u1"])):  # the worker's call, begun before the forget
        with Memory(tmp_path / "m.db", llm="local", embedder=False) as mem:
            mem.add_facts([{"subject": "Maya", "relation": "lives_in", "object": MARKER}], user_id="u1")
            assert mem.forget(user_id="u1", everything=True).cache_entries_deleted == 0
        assert path.exists()
        late = ResponseCache(path)
        late.put("k", "m", reply(f"Maya lives in {MARKER}"))  # its reply arrives after the forget
        assert len(late) == 0
        late.close()
    assert MARKER.encode() not in file_bytes(path)
