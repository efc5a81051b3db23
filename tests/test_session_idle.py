"""The idle timeout: sessions without a new turn for ``session_idle`` seconds are ended (flush,
extract, Rsum update) by ``Memory.end_idle_sessions``, from the store and from the in-process
and Redis buffers.  The clock is injected (``now=``); nothing sleeps."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from datetime import timedelta

import pytest
import redis
from test_buffer import redis_url  # noqa: F401 - the Redis fixture
from test_extract_pipeline import conv
from test_memory_sessions import SessionLLM

from chronomem import Config, Memory
from chronomem.errors import ConfigError, ModelError, ValidationError
from chronomem.summarize.buffer import InMemorySessionBuffer, RedisSessionBuffer
from chronomem.summarize.idle import IdleSweeper, sweep_interval
from chronomem.timeutil import utcnow

IDLE = 600.0


@pytest.fixture
def redis_buffer(redis_url: str) -> Iterator[RedisSessionBuffer]:  # noqa: F811
    client = redis.Redis.from_url(redis_url)
    prefix = f"chronomem-test:{uuid.uuid4().hex}:"
    yield RedisSessionBuffer(client, prefix=prefix)
    keys = list(client.scan_iter(match=prefix + "*", count=1000))
    if keys:
        client.delete(*keys)


def _mem(location: str, buffer: object) -> Memory:
    return Memory(location, llm=SessionLLM(), embedder=False, buffer=buffer,  # type: ignore[arg-type]
                  config=Config(session_idle=IDLE))


@pytest.fixture(params=["store-sqlite", "store-postgres", "buffer-memory", "buffer-redis"])
def mem(request: pytest.FixtureRequest, url_factory: Callable[[str], str]) -> Iterator[Memory]:
    kind, where = request.param.split("-")
    if kind == "store":
        m = _mem(url_factory(where), False)
    else:
        buf = InMemorySessionBuffer() if where == "memory" else request.getfixturevalue("redis_buffer")
        m = _mem(url_factory("sqlite"), buf)
    yield m
    m.close()


def test_quiet_sessions_are_ended_with_their_last_turn_time(mem: Memory) -> None:
    mem.add(conv("I live in Berlin and work at Acme.", ts="2023-01-10T10:00:00Z"), user_id="u1", session_id="s1")
    mem.add(conv("I moved to Munich last week.", prefix="b", ts="2023-06-10T10:00:00Z"), user_id="u2",
            session_id="s2")
    start = utcnow()

    early = mem.end_idle_sessions(now=start + timedelta(seconds=IDLE / 2))
    assert early.ended == [] and early.failed == {}
    assert all(s.ended_at is None for u in ("u1", "u2") for s in mem.store.sessions(u))

    sweep = mem.end_idle_sessions(now=start + timedelta(seconds=2 * IDLE))
    assert sweep.ended == [("u1", "s1"), ("u2", "s2")] and sweep.failed == {}
    (s1,) = mem.store.sessions("u1")
    assert s1.ended_at is not None and s1.ended_at.isoformat().startswith("2023-01-10T10:00:00")
    # flushed and extracted (buffered mode too), and folded into the summary
    assert [m.text for m in mem.store.messages("u1", session_id="s1")] == ["I live in Berlin and work at Acme."]
    assert {f.object for f in mem.facts(user_id="u1")} == {"Berlin", "Acme"}
    assert "Berlin" in mem.summary(user_id="u1") and "Munich" in mem.summary(user_id="u2")

    again = mem.end_idle_sessions(now=start + timedelta(seconds=3 * IDLE))
    assert again.ended == []  # an ended session is not ended twice


def test_a_new_turn_keeps_a_session_open(mem: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    t0 = utcnow()
    arrival = [t0]
    monkeypatch.setattr("chronomem.extract.pipeline.utcnow", lambda: arrival[0])  # when turns reach memory
    mem.add(conv("I live in Berlin and work at Acme.", ts="2023-01-10T10:00:00Z"), user_id="u1", session_id="s1")
    arrival[0] = t0 + timedelta(seconds=0.9 * IDLE)
    mem.add(conv("My dog Pixel is the best.", prefix="c", ts="2023-01-10T10:05:00Z"), user_id="u1",
            session_id="s1")
    # quiet for 1.5 × IDLE since the first turn, but only 0.6 × IDLE since the last one
    assert mem.end_idle_sessions(now=t0 + timedelta(seconds=1.5 * IDLE)).ended == []
    assert mem.end_idle_sessions(now=t0 + timedelta(seconds=1.9 * IDLE)).ended == [("u1", "s1")]
    (s1,) = mem.store.sessions("u1")
    assert s1.ended_at is not None and s1.ended_at.isoformat().startswith("2023-01-10T10:05:00")
    assert len(mem.store.messages("u1", session_id="s1")) == 2


class FlakyLLM(SessionLLM):
    def __init__(self) -> None:
        super().__init__()
        self.down = True

    def chat(self, messages, **kw):  # type: ignore[no-untyped-def]
        if self.down and kw.get("purpose") == "rsum":
            raise ModelError("model server unreachable")
        return super().chat(messages, **kw)


class ReturningUserLLM(SessionLLM):
    """Runs ``hook`` once, from inside the first summary the sweep writes."""

    def __init__(self, hook: Callable[[], object]) -> None:
        super().__init__()
        self.hook: Callable[[], object] | None = hook

    def chat(self, messages, *, purpose: str = "", **kw):  # type: ignore[no-untyped-def]
        if purpose == "rsum" and self.hook is not None:
            hook, self.hook = self.hook, None
            hook()
        return super().chat(messages, purpose=purpose, **kw)


def test_a_turn_arriving_during_the_sweep_keeps_its_session_open(mem: Memory) -> None:
    mem.add(conv("I live in Berlin and work at Acme.", ts="2023-01-10T10:00:00Z"), user_id="u1", session_id="s1")
    mem.add(conv("Nice!", prefix="a", ts="2023-01-10T10:00:00Z"), user_id="u1", session_id="s2")
    mem.use_models(llm=ReturningUserLLM(lambda: mem.add(  # while s1 is summarised, s2's user is back
        conv("I moved to Munich last week.", prefix="b", ts="2023-06-10T10:00:00Z"), user_id="u1", session_id="s2")))
    sweep = mem.end_idle_sessions(now=utcnow() + timedelta(seconds=IDLE))  # both were idle when it began
    assert sweep.ended == [("u1", "s1")]
    later = mem.end_idle_sessions(now=utcnow() + timedelta(seconds=2 * IDLE))
    assert later.ended == [("u1", "s2")] and "Munich" in mem.summary(user_id="u1")


def test_a_failed_end_is_reported_and_retried_by_the_next_sweep(tmp_path) -> None:
    llm = FlakyLLM()
    with Memory(tmp_path / "m.db", llm=llm, embedder=False, config=Config(session_idle=IDLE)) as mem:
        mem.add(conv("I live in Berlin and work at Acme.", ts="2023-01-10T10:00:00Z"), user_id="u1",
                session_id="s1")
        later = utcnow() + timedelta(seconds=2 * IDLE)
        sweep = mem.end_idle_sessions(now=later)
        assert sweep.ended == [] and "unreachable" in sweep.failed[("u1", "s1")]
        llm.down = False
        assert mem.end_idle_sessions(now=later).ended == [("u1", "s1")]
        assert "Berlin" in mem.summary(user_id="u1")


def test_settings_and_bad_input(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHRONOMEM_CONFIG", os.devnull)
    monkeypatch.setenv("CHRONOMEM_SESSION_IDLE", "90")
    assert Config.load().session_idle == 90.0
    monkeypatch.setenv("CHRONOMEM_SESSION_IDLE", "0")
    assert Config.load().session_idle is None  # 0: off
    for bad in ("soon", "-5", "nan"):
        monkeypatch.setenv("CHRONOMEM_SESSION_IDLE", bad)
        with pytest.raises(ValidationError, match="session_idle"):
            Config.load()
    monkeypatch.delenv("CHRONOMEM_SESSION_IDLE")
    monkeypatch.setenv("CHRONOMEM_CHUNK_SIZE", "4")  # the other setting this issue added
    assert Config.load().chunk_size == 4
    for bad in ("four", "0", "2.5"):
        monkeypatch.setenv("CHRONOMEM_CHUNK_SIZE", bad)
        with pytest.raises(ValidationError, match="chunk_size"):
            Config.load()
    monkeypatch.delenv("CHRONOMEM_CHUNK_SIZE")
    with Memory(tmp_path / "m.db", llm=SessionLLM(), embedder=False) as mem:
        with pytest.raises(ConfigError, match="CHRONOMEM_SESSION_IDLE"):
            mem.end_idle_sessions()
        with pytest.raises(ValidationError, match="idle_seconds"):
            mem.end_idle_sessions(idle_seconds=-1)
        with pytest.raises(ValidationError, match="now"):
            mem.end_idle_sessions(idle_seconds=5, now="whenever")


def test_the_background_sweeper_survives_a_failing_sweep() -> None:
    calls: list[int] = []

    def sweep() -> str:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("boom")
        return "ok"

    sweeper = IdleSweeper(sweep, interval=3600)
    assert sweeper.run_once() is None and sweeper.run_once() == "ok"  # the loop body, driven by hand
    with sweeper:  # starts and stops the thread without waiting for a tick
        pass
    assert len(calls) == 2
    assert sweep_interval(20) == 5 and sweep_interval(1) == 1 and sweep_interval(86400) == 60
    with pytest.raises(ValueError):
        IdleSweeper(sweep, interval=0)


def test_start_idle_sweeper_only_when_configured(tmp_path) -> None:
    from chronomem.summarize.idle import start_idle_sweeper

    with Memory(tmp_path / "a.db", llm=SessionLLM(), embedder=False, config=Config()) as mem:
        assert start_idle_sweeper(mem) is None
    with Memory(tmp_path / "b.db", llm=SessionLLM(), embedder=False, config=Config(session_idle=IDLE)) as mem:
        sweeper = start_idle_sweeper(mem)
        assert sweeper is not None and sweeper.interval == 60
        sweeper.stop()
