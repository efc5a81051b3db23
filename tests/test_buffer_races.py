"""Buffered mode under concurrency and without a chat model.

- An id reused for other words is a ValidationError that writes nothing, in buffered mode too, and
  when the clashing adds race: ``Memory.add`` checked the buffer and then appended, so concurrent adds
  of one id all passed the check, one was kept and the others were reported stored-as-skipped while
  their words were dropped.  The buffers now check and append in one atomic step (a Lua script in
  Redis, the lock in process).
- ``Memory(llm=False)`` in buffered mode buffers turns (that needs no model) for a model given later;
  it used to raise ConfigError before buffering anything, since the session lifecycle built the
  summary memory, which needs the chat model, up front.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
import redis
from test_buffer import redis_url  # noqa: F401 - the Redis fixture
from test_extract_pipeline import conv
from test_memory_sessions import SessionLLM

import chronomem.extract.pipeline as pipeline
from chronomem import Memory
from chronomem.errors import ConfigError, ValidationError
from chronomem.model import Message
from chronomem.summarize.buffer import InMemorySessionBuffer, RedisSessionBuffer, SessionBuffer

T0 = datetime(2024, 3, 1, 12, 0, tzinfo=timezone.utc)
WRITERS = 4


@pytest.fixture()
def prefix(redis_url: str) -> Iterator[str]:  # noqa: F811
    """A key prefix of this test's own; its keys deleted after."""
    p = f"chronomem-test:{uuid.uuid4().hex}:"
    yield p
    client = redis.Redis.from_url(redis_url)
    keys = list(client.scan_iter(match=p + "*", count=1000))
    if keys:
        client.delete(*keys)


@pytest.fixture(params=["memory", "redis"])
def make_buffer(request: pytest.FixtureRequest) -> Callable[[], SessionBuffer]:
    """A function making the buffer under test: each call a new one, in process, or a new client
    on the same Redis keys (as separate server processes see them)."""
    if request.param == "memory":
        return lambda: InMemorySessionBuffer(ttl_seconds=600)
    url, p = request.getfixturevalue("redis_url"), request.getfixturevalue("prefix")
    return lambda: RedisSessionBuffer(redis.Redis.from_url(url), ttl_seconds=600, prefix=p)


def turn(mid: str, text: str, *, session: str = "s1", speaker: str = "Maya") -> Message:
    return Message(id=mid, user_id="u1", session_id=session, speaker=speaker, text=text,
                   timestamp=T0, recorded_at=T0 + timedelta(microseconds=7))


# --------------------------------------------------------------------------- the buffers


def test_an_id_reused_for_other_words_is_refused_and_buffers_nothing(
        make_buffer: Callable[[], SessionBuffer]) -> None:
    buf = make_buffer()
    assert buf.append(turn("x1", "I live in Oslo.")) is True
    assert buf.append(turn("x1", "I live in Oslo.")) is False  # the same turn again: a no-op
    for other in (turn("x1", "I live in Rome."), turn("x1", "I live in Oslo.", speaker="Tom")):
        with pytest.raises(ValidationError) as err:
            buf.append(other)
        assert err.value.field == "message.id" and err.value.value == "x1"
        assert "I live in Oslo." in err.value.reason  # names the turn that holds the id
    # a batch with a clash in it buffers none of its turns
    with pytest.raises(ValidationError) as err:
        buf.extend([turn("x2", "A new turn."), turn("x1", "I live in Rome.")])
    assert err.value.value == "x1"
    assert [(m.id, m.text) for m in buf.read("u1", "s1")] == [("x1", "I live in Oslo.")]
    assert buf.extend([turn("x2", "A new turn."), turn("x1", "I live in Oslo.")]) == 1


def test_a_pending_turn_keeps_its_id(make_buffer: Callable[[], SessionBuffer]) -> None:
    """While a flush writes the turns (pending), their ids still refuse other words."""
    buf = make_buffer()
    buf.append(turn("x1", "I live in Oslo."))

    def write(batch: list[Message]) -> None:
        with pytest.raises(ValidationError):
            buf.append(turn("x1", "I live in Rome."))
        assert buf.append(turn("x1", "I live in Oslo.")) is False

    assert [m.id for m in buf.flush("u1", "s1", write)] == ["x1"]
    assert buf.read("u1", "s1") == []


def test_concurrent_appends_of_one_id_keep_one_and_refuse_the_others(
        make_buffer: Callable[[], SessionBuffer]) -> None:
    shared = make_buffer()
    bufs = [shared if isinstance(shared, InMemorySessionBuffer) else make_buffer() for _ in range(WRITERS)]
    for rnd in range(5):
        start = threading.Barrier(WRITERS)

        def post(k: int) -> bool | str:
            start.wait()
            try:
                return bufs[k].append(turn(f"r{rnd}", f"I live in City{k}."))
            except ValidationError as e:
                return e.field

        with ThreadPoolExecutor(WRITERS) as pool:
            out = list(pool.map(post, range(WRITERS)))
        assert sorted(out, key=str) == [True] + ["message.id"] * (WRITERS - 1)
        held = [m.text for m in shared.read("u1", "s1") if m.id == f"r{rnd}"]
        assert held == [f"I live in City{out.index(True)}."]


# --------------------------------------------------------------------------- Memory


@pytest.fixture(params=["memory", "redis"])
def buffer_spec(request: pytest.FixtureRequest) -> Any:
    """``Memory(buffer=…)``: True (in process) or a Redis buffer under this test's prefix."""
    if request.param == "memory":
        return True
    url, p = request.getfixturevalue("redis_url"), request.getfixturevalue("prefix")
    return RedisSessionBuffer(redis.Redis.from_url(url), prefix=p)


def test_concurrent_buffered_adds_of_one_id_store_one_and_refuse_the_rest(
        tmp_path: Path, buffer_spec: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """One Memory used by several threads (as ``chronomem serve`` runs its sync routes); every add
    passes the pre-check before any appends (a barrier after it), the race that dropped words."""
    checked = threading.Barrier(WRITERS)
    real_check = pipeline.refuse_id_clashes

    def check_then_wait(*args: Any, **kwargs: Any) -> None:
        real_check(*args, **kwargs)
        checked.wait(timeout=10)

    llm: Any = SessionLLM()
    with Memory(tmp_path / "m.db", llm=llm, embedder=False, buffer=buffer_spec) as mem:
        monkeypatch.setattr(pipeline, "refuse_id_clashes", check_then_wait)

        def post(k: int) -> tuple[Any, ...]:
            try:
                res = mem.add([{"id": "x1", "speaker": "Maya", "text": f"I live in City{k}.",
                                "timestamp": "2023-02-01T10:00:00Z"}], user_id="u1", session_id="s1")
                return ("stored", res.messages_stored, res.messages_skipped)
            except ValidationError as e:
                return ("refused", e.field, e.value)

        with ThreadPoolExecutor(WRITERS) as pool:
            out = list(pool.map(post, range(WRITERS)))
        monkeypatch.setattr(pipeline, "refuse_id_clashes", real_check)
        assert sorted(out) == [("refused", "messages[0].id", "x1")] * (WRITERS - 1) + [("stored", 1, 0)]
        kept = f"I live in City{out.index(('stored', 1, 0))}."
        assert mem._buffer is not None
        assert [m.text for m in mem._buffer.read("u1", "s1")] == [kept]
        # the winner's words re-sent are a no-op; other words are still refused, naming the id
        again = mem.add([{"id": "x1", "speaker": "Maya", "text": kept, "timestamp": "2023-02-01T10:00:00Z"}],
                        user_id="u1", session_id="s1")
        assert (again.messages_stored, again.messages_skipped) == (0, 1)
        with pytest.raises(ValidationError, match="x1"):
            mem.add([{"id": "x1", "speaker": "Maya", "text": "I live in Nowhere.",
                      "timestamp": "2023-02-01T10:00:00Z"}], user_id="u1", session_id="s1")
        assert [m.text for m in mem.end_session(user_id="u1", session_id="s1").stored] == [kept]
        assert [m.text for m in mem.messages(user_id="u1")] == [kept]


def test_llm_false_buffers_turns_for_a_model_given_later(tmp_path: Path, buffer_spec: Any) -> None:
    with Memory(tmp_path / "m.db", llm=False, embedder=False, buffer=buffer_spec) as mem:
        res = mem.add(conv("I live in Berlin and work at Acme."), user_id="u1", session_id="s1")
        assert res.messages_stored == 1
        assert any("llm=False" in w for w in res.warnings)
        job = mem.submit_messages(conv("My dog Pixel is the best.", prefix="b"), user_id="u1", session_id="s1")
        assert job.status.value == "done"
        assert mem._buffer is not None
        assert [m.text for m in mem._buffer.read("u1", "s1")] == ["I live in Berlin and work at Acme.",
                                                                 "My dog Pixel is the best."]
        # ending the session needs the model: refused, and the turns are kept (stored, pending extraction)
        with pytest.raises(ConfigError):
            mem.end_session(user_id="u1", session_id="s1")
        kept = [m for m in mem.messages(user_id="u1")] + mem._buffer.read("u1", "s1")
        assert sorted(m.text for m in kept) == ["I live in Berlin and work at Acme.", "My dog Pixel is the best."]
        assert not any(m.extracted for m in kept) and mem.facts(user_id="u1") == []
        mem.use_models(llm=SessionLLM())  # type: ignore[arg-type]
        end = mem.end_session(user_id="u1", session_id="s1")
        assert end.ended and end.checkpoint is not None
        assert sorted(f.object for f in mem.facts(user_id="u1")) == ["Acme", "Berlin", "Pixel"]
        assert "Berlin" in mem.summary(user_id="u1")
        assert all(m.extracted for m in mem.messages(user_id="u1"))
