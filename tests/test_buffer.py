"""Session buffers: one contract, run against the in-process buffer and a REAL Redis.

Redis: ``$CHRONOMEM_REDIS_URL`` when set, else 127.0.0.1:6379 when it answers,
else a ``redis-server`` started here on a free port.  Without any of these the
Redis tests fail (they are never skipped).  Every test uses its own key
prefix and deletes its keys afterwards.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone

import pytest
import redis

from chronomem.errors import ValidationError
from chronomem.model import Message
from chronomem.summarize.buffer import (
    ENV_REDIS_URL,
    InMemorySessionBuffer,
    RedisSessionBuffer,
    SessionBuffer,
    make_buffer,
    message_from_json,
    message_to_json,
    tenant_prefix,
)

UTC = timezone.utc
T0 = datetime(2024, 3, 1, 12, 0, tzinfo=UTC)


def _answers(url: str) -> bool:
    try:
        return bool(redis.Redis.from_url(url, socket_connect_timeout=0.5).ping())
    except redis.RedisError:
        return False


@pytest.fixture(scope="module")
def redis_url() -> Iterator[str]:
    for url in (os.environ.get(ENV_REDIS_URL), "redis://127.0.0.1:6379/0"):
        if url and _answers(url):
            yield url
            return
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.fail("no Redis reachable and no redis-server binary to start one (apt-get install redis-server)")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"redis://127.0.0.1:{port}/0"
    try:
        deadline = time.monotonic() + 10
        while not _answers(url):
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"redis-server on port {port} did not start")
            time.sleep(0.05)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture()
def redis_client(redis_url: str) -> redis.Redis:
    return redis.Redis.from_url(redis_url)


@pytest.fixture()
def prefix(redis_client: redis.Redis) -> Iterator[str]:
    p = f"chronomem-test:{uuid.uuid4().hex}:"
    yield p
    keys = list(redis_client.scan_iter(match=p + "*", count=1000))
    if keys:
        redis_client.delete(*keys)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(params=["memory", "redis"])
def buffer(request: pytest.FixtureRequest) -> SessionBuffer:
    if request.param == "memory":
        return InMemorySessionBuffer(ttl_seconds=60)
    client = request.getfixturevalue("redis_client")
    return RedisSessionBuffer(client, ttl_seconds=60, prefix=request.getfixturevalue("prefix"))


def msg(i: int, user: str = "u1", session: str = "s1", text: str | None = None) -> Message:
    return Message(
        id=f"{session}-m{i}",
        user_id=user,
        session_id=session,
        speaker="user" if i % 2 == 0 else "assistant",
        text=text if text is not None else f"turn {i} ünïcode ✓",
        timestamp=T0 + timedelta(seconds=i),
        recorded_at=T0 + timedelta(seconds=i, microseconds=7),
        seq=i,
    )


class Sink:
    """An idempotent long-term write, like ``store.add_messages`` (by message id)."""

    def __init__(self) -> None:
        self.rows: dict[tuple[str, str], Message] = {}
        self.calls = 0

    def __call__(self, batch: list[Message]) -> list[Message]:
        self.calls += 1
        new = [m for m in batch if (m.user_id, m.id) not in self.rows]
        for m in batch:
            self.rows[(m.user_id, m.id)] = m
        return new


# --------------------------------------------------------------------------- contract


def test_message_json_round_trip() -> None:
    m = msg(3)
    m.agent_id, m.extracted = "agent-7", True
    assert message_from_json(message_to_json(m)) == m


def test_append_is_idempotent_and_read_keeps_order(buffer: SessionBuffer) -> None:
    assert [buffer.append(msg(i)) for i in range(5)] == [True] * 5
    assert buffer.append(msg(2)) is False  # a retried append
    assert buffer.extend([msg(4), msg(5), msg(6)]) == 2
    got = buffer.read("u1", "s1")
    assert [m.id for m in got] == [f"s1-m{i}" for i in range(7)]
    assert got[3] == msg(3)  # every field survives, times to the microsecond
    assert buffer.read("u1", "other") == [] and buffer.read("u2", "s1") == []


def test_active_sessions_are_listed_per_user(buffer: SessionBuffer) -> None:
    buffer.append(msg(0, session="b"))
    buffer.append(msg(0, session="a"))
    buffer.append(msg(0, user="u2", session="c"))
    assert buffer.active_sessions("u1") == ["a", "b"]
    assert buffer.active_sessions("u2") == ["c"]
    assert buffer.active_sessions("nobody") == []


def test_ids_with_separators_do_not_collide(buffer: SessionBuffer) -> None:
    buffer.append(msg(0, user="a:b", session="c"))
    buffer.append(msg(1, user="a", session="b:c"))
    buffer.append(msg(2, user="{a}", session="}{"))
    assert [m.id for m in buffer.read("a:b", "c")] == ["c-m0"]
    assert [m.id for m in buffer.read("a", "b:c")] == ["b:c-m1"]
    assert buffer.active_sessions("a") == ["b:c"] and buffer.active_sessions("{a}") == ["}{"]


def test_flush_writes_everything_once_and_forgets_the_session(buffer: SessionBuffer) -> None:
    sink = Sink()
    buffer.extend(msg(i) for i in range(4))
    written = buffer.flush("u1", "s1", sink)
    assert [m.id for m in written] == [f"s1-m{i}" for i in range(4)]
    assert len(sink.rows) == 4 and sink.calls == 1
    assert buffer.read("u1", "s1") == [] and buffer.active_sessions("u1") == []
    assert buffer.pending_sessions("u1") == []
    assert buffer.flush("u1", "s1", sink) == [] and sink.calls == 1  # nothing to write


def test_a_failed_write_loses_nothing_and_the_next_flush_resumes(buffer: SessionBuffer) -> None:
    buffer.extend(msg(i) for i in range(3))

    def crash(batch: list[Message]) -> None:
        raise ConnectionError("database went away")

    with pytest.raises(ConnectionError):
        buffer.flush("u1", "s1", crash)
    assert buffer.pending_sessions("u1") == ["s1"]
    assert buffer.active_sessions("u1") == ["s1"]
    buffer.append(msg(3))  # the session goes on meanwhile
    assert [m.id for m in buffer.read("u1", "s1")] == [f"s1-m{i}" for i in range(4)]
    sink = Sink()
    assert len(buffer.flush("u1", "s1", sink)) == 4
    assert sorted(m.id for (_, _), m in sink.rows.items()) == [f"s1-m{i}" for i in range(4)]
    assert buffer.pending_sessions("u1") == [] and buffer.active_sessions("u1") == []


def test_a_crash_after_the_write_rewrites_idempotently(buffer: SessionBuffer) -> None:
    buffer.extend(msg(i) for i in range(3))
    sink = Sink()

    def write_then_crash(batch: list[Message]) -> None:
        sink(batch)
        raise KeyboardInterrupt  # the process dies before the pending turns are deleted

    with pytest.raises(KeyboardInterrupt):
        buffer.flush("u1", "s1", write_then_crash)
    assert buffer.recover("u1", sink) == {"s1": 3}
    assert len(sink.rows) == 3 and sink.calls == 2
    assert buffer.pending_sessions("u1") == [] and buffer.read("u1", "s1") == []


def test_turns_appended_during_a_flush_stay_buffered(buffer: SessionBuffer) -> None:
    buffer.extend(msg(i) for i in range(2))
    sink = Sink()

    def write_while_user_types(batch: list[Message]) -> None:
        buffer.append(msg(9))
        sink(batch)

    assert len(buffer.flush("u1", "s1", write_while_user_types)) == 2
    assert [m.id for m in buffer.read("u1", "s1")] == ["s1-m9"]
    assert buffer.active_sessions("u1") == ["s1"] and buffer.pending_sessions("u1") == []
    assert buffer.append(msg(9)) is False  # still deduplicated
    buffer.flush("u1", "s1", sink)
    assert len(sink.rows) == 3


def test_discard_forgets_buffered_and_pending_turns(buffer: SessionBuffer) -> None:
    buffer.extend(msg(i) for i in range(3))
    with pytest.raises(RuntimeError):
        buffer.flush("u1", "s1", lambda b: (_ for _ in ()).throw(RuntimeError("x")))
    buffer.append(msg(5))
    assert buffer.discard("u1", "s1") == 4
    assert buffer.read("u1", "s1") == [] and buffer.active_sessions("u1") == []
    assert buffer.pending_sessions("u1") == []
    assert buffer.append(msg(0)) is True  # the id set went too


def test_open_sessions_lists_every_users_buffered_and_pending_sessions(buffer: SessionBuffer) -> None:
    assert buffer.open_sessions() == []
    buffer.extend([msg(0), msg(0, session="s2"), msg(0, user="u:2", session="s{1}"), msg(0, user="u3")])
    with pytest.raises(RuntimeError):  # u3's turns stay pending
        buffer.flush("u3", "s1", lambda b: (_ for _ in ()).throw(RuntimeError("x")))
    assert buffer.open_sessions() == [("u1", "s1"), ("u1", "s2"), ("u3", "s1"), ("u:2", "s{1}")]
    buffer.flush("u1", "s1", Sink())
    buffer.discard("u:2", "s{1}")
    assert buffer.open_sessions() == [("u1", "s2"), ("u3", "s1")]


@pytest.mark.parametrize(
    ("bad", "field"),
    [
        ("not a message", "message"),
        (Message("", "u", "s", "x", "t", T0, T0), "message.id"),
        (Message("i", " ", "s", "x", "t", T0, T0), "message.user_id"),
        (Message("i", "u", "", "x", "t", T0, T0), "message.session_id"),
        (Message("i", "u", "s", "x", None, T0, T0), "message.text"),  # type: ignore[arg-type]
        (Message("i", "u", "s", "x", "t", "yesterday", T0), "message.timestamp"),  # type: ignore[arg-type]
    ],
)
def test_bad_messages_are_rejected_with_the_field(buffer: SessionBuffer, bad: object, field: str) -> None:
    with pytest.raises(ValidationError) as e:
        buffer.append(bad)  # type: ignore[arg-type]
    assert e.value.field == field
    with pytest.raises(ValidationError) as e2:
        buffer.read("", "s1")
    assert e2.value.field == "user_id"


# --------------------------------------------------------------------------- TTL


def test_in_memory_ttl_expires_abandoned_sessions_but_not_pending_turns() -> None:
    clock = Clock()
    buf = InMemorySessionBuffer(ttl_seconds=60, clock=clock)
    buf.append(msg(0, session="idle"))
    buf.append(msg(0, session="flushing"))
    with pytest.raises(RuntimeError):
        buf.flush("u1", "flushing", lambda b: (_ for _ in ()).throw(RuntimeError("x")))
    clock.now += 59
    buf.append(msg(1, session="busy"))
    assert buf.active_sessions("u1") == ["busy", "flushing", "idle"]
    clock.now += 2
    assert buf.active_sessions("u1") == ["busy", "flushing"]
    assert buf.read("u1", "idle") == []
    sink = Sink()
    assert buf.recover("u1", sink) == {"flushing": 1}
    with pytest.raises(ValidationError):
        InMemorySessionBuffer(ttl_seconds=0)


def test_redis_ttl_expires_abandoned_sessions_but_not_pending_turns(
    redis_url: str, redis_client: redis.Redis, prefix: str
) -> None:
    buf = RedisSessionBuffer(redis_client, ttl_seconds=1, prefix=prefix)
    buf.append(msg(0, session="idle"))
    buf.append(msg(0, session="flushing"))
    with pytest.raises(RuntimeError):
        buf.flush("u1", "flushing", lambda b: (_ for _ in ()).throw(RuntimeError("x")))
    ttls = [redis_client.pttl(k) for k in redis_client.scan_iter(match=prefix + "*:buf:*")]
    assert ttls and all(0 < t <= 1000 for t in ttls)
    time.sleep(1.3)
    assert buf.read("u1", "idle") == []
    assert buf.active_sessions("u1") == ["flushing"]
    # the idle sweep still finds the interrupted flush, though its "active" index expired
    assert buf.idle_sessions(datetime.now(timezone.utc) + timedelta(seconds=10)) == [("u1", "flushing")]
    # a new process (new connection) finds the interrupted flush and finishes it
    restarted = RedisSessionBuffer(redis.Redis.from_url(redis_url), ttl_seconds=1, prefix=prefix)
    sink = Sink()
    assert restarted.recover("u1", sink) == {"flushing": 1}
    assert [m.id for m in sink.rows.values()] == ["flushing-m0"]
    assert list(redis_client.scan_iter(match=prefix + "*")) == []


# --------------------------------------------------------------------------- Redis specifics


def test_redis_append_and_read_are_one_round_trip_each(redis_client: redis.Redis, prefix: str,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    # Their latency is measured by benchmarks/bench_rsum_msc.py latency (BENCHMARKS.md "Rsum (MSC)");
    # what a test can check without a clock is that each is a single command (a Lua script) on the wire.
    buf = RedisSessionBuffer(redis_client, prefix=prefix)
    buf.append(msg(0))  # loads the scripts
    buf.read("u1", "s1")
    sent: list[str] = []
    real = redis_client.execute_command

    def counting(*args: object, **kwargs: object) -> object:
        sent.append(str(args[0]))
        return real(*args, **kwargs)

    monkeypatch.setattr(redis_client, "execute_command", counting)
    for i in range(1, 20):
        buf.append(msg(i))
    assert sent == ["EVALSHA"] * 19
    sent.clear()
    assert len(buf.read("u1", "s1")) == 20
    assert sent == ["EVALSHA"]


def test_redis_tenants_are_found_from_their_key_prefixes(redis_client: redis.Redis, prefix: str) -> None:
    """Every tenant's buffer shares the Redis under ``tenant_prefix``: an admin lists the tenants with
    waiting turns from the keys alone (here under a test root instead of ``chronomem:``)."""
    def buf(tenant: str) -> RedisSessionBuffer:
        return RedisSessionBuffer(redis_client, prefix=tenant_prefix(tenant, prefix))

    assert tenant_prefix("default", prefix) == prefix and tenant_prefix("acme", prefix) == f"{prefix}t:acme:"
    assert buf("default").tenants(prefix) == []
    buf("default").append(msg(0))
    buf("acme").append(msg(0, user="u{1}:x"))
    pending = buf("beta.2")  # a flush that failed; the "active" index expired since, the pending set never does
    pending.append(msg(0))
    with pytest.raises(RuntimeError):
        pending.flush("u1", "s1", lambda b: (_ for _ in ()).throw(RuntimeError("x")))
    redis_client.delete(f"{pending.prefix}{{u:u1}}:active")
    RedisSessionBuffer(redis_client, prefix=f"{prefix}other:").append(msg(0))  # not laid out per tenant
    assert buf("acme").tenants(prefix) == ["acme", "beta.2", "default"]
    assert pending.open_sessions() == [("u1", "s1")]
    buf("acme").flush("u{1}:x", "s1", Sink())
    assert buf("default").tenants(prefix) == ["beta.2", "default"]


def test_make_buffer_picks_redis_from_the_environment(redis_url: str, prefix: str) -> None:
    assert isinstance(make_buffer(env={}), InMemorySessionBuffer)
    buf = make_buffer(env={ENV_REDIS_URL: redis_url}, prefix=prefix, ttl_seconds=30)
    assert isinstance(buf, RedisSessionBuffer) and buf.ttl_seconds == 30
    buf.append(msg(0))
    assert [m.id for m in buf.read("u1", "s1")] == ["s1-m0"]
    buf.discard("u1", "s1")
    with pytest.raises(ValidationError) as e:
        make_buffer("ftp://nowhere")
    assert e.value.field == "redis_url"


# --------------------------------------------------------------------------- lifecycle


class EchoLLM:
    """Test double for Rsum: the new memory lists the last turn of the session it was shown."""

    name = "echo"
    context_window = 8192

    def __init__(self) -> None:
        self.calls = 0

    def chat(self, messages, *, schema=None, max_tokens=512, temperature=0.0, stop=None, purpose="", penalties=None):
        from chronomem.providers.base import CallUsage, ChatResult

        self.calls += 1
        prompt = messages[-1]["content"]
        prev = prompt.split("Previous memory:\n", 1)[1].split("\n\nNew session", 1)[0].strip()
        last = prompt.split("\n\nUpdated memory (")[0].strip().splitlines()[-1]
        lines = [] if prev == "none" else prev.splitlines()
        return ChatResult(text="\n".join([*lines, f"Heard {last.split(': ', 1)[1]}"]), usage=CallUsage())

    def count_tokens(self, text: str) -> int:
        return len(text.split())


@pytest.fixture(params=["memory", "redis"])
def lifecycle_parts(request: pytest.FixtureRequest, tmp_path):
    from chronomem.store import open_store

    if request.param == "memory":
        buf: SessionBuffer = InMemorySessionBuffer()
    else:
        buf = RedisSessionBuffer(request.getfixturevalue("redis_client"), prefix=request.getfixturevalue("prefix"))
    store = open_store(tmp_path / "life.db")
    yield store, buf
    close = getattr(store, "close", None)
    if callable(close):
        close()


def test_session_lifecycle_buffers_flushes_summarises_and_restores(lifecycle_parts) -> None:
    from chronomem.summarize.lifecycle import SessionLifecycle
    from chronomem.summarize.rsum import RsumMemory

    store, buf = lifecycle_parts
    llm = EchoLLM()
    extracted: list[tuple[str, str, int]] = []

    def extract(user_id: str, session_id: str) -> int:
        n = len(store.messages(user_id, session_id=session_id))
        extracted.append((user_id, session_id, n))
        return n

    life = SessionLifecycle(store, buf, RsumMemory(store, llm), extract=extract)
    assert life.add(msg(i) for i in range(4)) == 4
    assert life.add([msg(3)]) == 0
    assert store.messages("u1") == []  # nothing long-term while the session is active
    end = life.end("u1", "s1", ended_at=T0 + timedelta(hours=1))
    assert [m.id for m in end.flushed] == [f"s1-m{i}" for i in range(4)] and len(end.stored) == 4
    assert extracted == [("u1", "s1", 4)] and end.extraction == 4
    assert end.checkpoint is not None and end.checkpoint.seq == 1
    assert "Heard turn 3" in end.checkpoint.memory
    [session] = [s for s in store.sessions("u1") if s.id == "s1"]
    assert session.ended_at == T0 + timedelta(hours=1) and session.started_at == T0
    assert buf.active_sessions("u1") == []

    # a new session is restored with the memory injected first
    life.add([msg(0, session="s2", text="I'm back")])
    restored = life.restore("u1", "s2", instructions="Be brief.")
    assert restored[0]["role"] == "system" and restored[0]["content"].startswith("Be brief.")
    assert "Heard turn 3" in restored[0]["content"]
    assert restored[1:] == [{"role": "user", "content": "I'm back"}]

    # ending s1 again is harmless: nothing to flush, same chain
    again = life.end("u1", "s1")
    assert again.flushed == [] and [c.seq for c in store.checkpoints("u1")] == [1]


def test_session_lifecycle_recovers_an_interrupted_flush(lifecycle_parts) -> None:
    from chronomem.summarize.lifecycle import SessionLifecycle
    from chronomem.summarize.rsum import RsumMemory

    store, buf = lifecycle_parts
    life = SessionLifecycle(store, buf, RsumMemory(store, EchoLLM()))
    life.add(msg(i) for i in range(3))

    def crash(batch: list[Message]) -> None:
        store.add_messages("u1", batch[:1])  # part of the write happened, then the process died
        raise SystemExit(1)

    with pytest.raises(SystemExit):
        buf.flush("u1", "s1", crash)
    assert life.recover("u1") == {"s1": 3}
    assert [m.id for m in store.messages("u1", session_id="s1")] == [f"s1-m{i}" for i in range(3)]
    assert buf.pending_sessions("u1") == []
    with pytest.raises(ValidationError) as e:
        life.end("u1", "")
    assert e.value.field == "session_id"
