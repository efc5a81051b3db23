"""The in-process buffer drops abandoned sessions as time passes, as Redis expires their keys.

It used to drop an expired session only when that same session was read or appended to again, or when
something listed every session (the idle sweep, ``open_sessions``): without an idle timeout, every
abandoned session's turns stayed in memory for the life of the process.  These tests look at the
buffer's own dict (``_sessions``) because what is held in memory is the point.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from chronomem.model import Message
from chronomem.summarize.buffer import InMemorySessionBuffer

T0 = datetime(2024, 3, 1, 12, 0, tzinfo=timezone.utc)
TTL = 60


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def turn(user: str, session: str = "s1", i: int = 0) -> Message:
    return Message(id=f"{user}-{session}-{i}", user_id=user, session_id=session, speaker="user",
                   text=f"turn {i} of {user}", timestamp=T0, recorded_at=T0, seq=i)


def failing_write(batch: list[Message]) -> None:
    raise RuntimeError("store down")


@pytest.fixture()
def clock() -> Clock:
    return Clock()


@pytest.fixture()
def buf(clock: Clock) -> InMemorySessionBuffer:
    return InMemorySessionBuffer(ttl_seconds=TTL, clock=clock)


def test_abandoned_sessions_are_dropped_while_other_users_chat(buf: InMemorySessionBuffer, clock: Clock) -> None:
    for i in range(200):
        buf.append(turn(f"gone{i}"))
    clock.now += TTL + 1
    buf.append(turn("active"))  # another user's ordinary append: the abandoned ones go
    assert set(buf._sessions) == {("active", "s1")}
    buf.flush("active", "s1", lambda batch: None)
    assert buf._sessions == {}


def test_reads_drop_abandoned_sessions_too(buf: InMemorySessionBuffer, clock: Clock) -> None:
    for i in range(50):
        buf.append(turn(f"gone{i}"))
    clock.now += TTL
    assert buf.read("someone", "else") == []
    assert buf._sessions == {}


def test_only_sessions_past_their_ttl_go_counted_from_their_last_append(buf: InMemorySessionBuffer,
                                                                        clock: Clock) -> None:
    buf.append(turn("old"))
    buf.append(turn("kept"))  # appended to again below: its TTL starts over
    clock.now += 30
    buf.append(turn("young"))
    buf.append(turn("kept", i=1))
    clock.now += TTL - 29  # "old" is 61 s quiet; "kept" and "young" 31 s
    buf.append(turn("other"))
    assert set(buf._sessions) == {("kept", "s1"), ("young", "s1"), ("other", "s1")}
    assert [m.id for m in buf.read("kept", "s1")] == ["kept-s1-0", "kept-s1-1"]
    clock.now += 30  # "kept" and "young" are 61 s quiet now
    buf.read("other", "s1")
    assert set(buf._sessions) == {("other", "s1")}


def test_pending_turns_never_expire_and_the_rest_expires_once_written(buf: InMemorySessionBuffer,
                                                                      clock: Clock) -> None:
    buf.append(turn("u", i=0))
    with pytest.raises(RuntimeError):
        buf.flush("u", "s1", failing_write)  # the turn stays pending
    clock.now += 10
    buf.append(turn("u", i=1))  # buffered behind the pending one
    clock.now += 5 * TTL
    buf.append(turn("other"))
    assert [m.id for m in buf.read("u", "s1")] == ["u-s1-0", "u-s1-1"]
    written: list[Message] = []
    assert buf.recover("u", written.extend) == {"s1": 1}
    assert [m.id for m in written] == ["u-s1-0"]
    # the turn appended during the failed flush has been quiet for longer than the TTL: it goes now
    buf.append(turn("other", i=1))
    assert set(buf._sessions) == {("other", "s1")}


def test_a_sweep_looks_only_at_what_can_have_expired(buf: InMemorySessionBuffer, clock: Clock,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    for i in range(1000):
        buf.append(turn(f"live{i}"))
    looked = 0
    expired = buf._expired

    def counting(*args: object) -> bool:
        nonlocal looked
        looked += 1
        return expired(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(buf, "_expired", counting)
    for i in range(100):
        clock.now += 0.1
        buf.append(turn("chatty", i=i))
        buf.read("chatty", "s1")
    assert len(buf._sessions) == 1001
    assert looked <= 300  # the session's own check per call, not a walk over the 1,000 live ones
